#pragma once
// One replica (one vLLM engine): a vLLM-V1-like continuous-batching scheduler over its own KV block manager
// (block_manager.hpp), its step times from the step timer. vLLM V1 sources are cited where each policy is
// implemented (replica.cpp); docs/simulator.md describes the model. Private to the simulator: the event loop
// (simulator.cpp) drives it, the router (router.hpp) reads its load.
#include <cstdint>
#include <deque>
#include <vector>

#include "collector.hpp"
#include "kvcap/simulator/block_manager.hpp"
#include "kvcap/simulator/metrics.hpp"
#include "kvcap/simulator/request.hpp"
#include "kvcap/simulator/simulator.hpp"
#include "kvcap/simulator/step_timer.hpp"

namespace kvcap::sim {

/// What Replica::schedule did: started a step, had nothing to run, or preempted without forming a step (the
/// freed blocks let it try again at the same instant).
enum class Outcome : std::uint8_t { stepped, idle, retry };

class Replica {
 public:
  /// `check`: verify the block manager after every step (SimConfig::check_invariants).
  Replica(std::uint32_t index, const ReplicaConfig& c, const StepTimer& t, Collector& out, bool check);

  void start_clock(double t) { last_t_ = t; }
  bool busy() const { return busy_; }
  bool schedule_pending = false;  ///< a schedule event is in the queue
  bool empty() const { return running_.empty() && waiting_.empty(); }
  i64 outstanding() const { return static_cast<i64>(running_.size() + waiting_.size()); }
  /// KV load for the kv router: used blocks plus the blocks the waiting requests' tokens will need.
  i64 kv_load_blocks() const {
    return static_cast<i64>(kv_.num_used()) +
           static_cast<i64>(ceil_div(static_cast<u64>(waiting_tokens_), static_cast<u64>(cfg_.block_size)));
  }

  /// A request routed here at `now` joins the back of the waiting queue; returns it (the event loop sets a
  /// disaggregated request's hand-off fields).
  Request& enqueue(const RequestSpec& spec, std::uint64_t id, i64 output_tokens, bool truncated, double now);
  /// Forms the next batch at `now` (vllm/v1/core/sched/scheduler.py, Scheduler.schedule()); `step_s` is the
  /// step's duration when it returns Outcome::stepped.
  Outcome schedule(double now, double& step_s, Observer* obs);
  /// The step in flight ends at `now` (Scheduler.update_from_output): tokens computed, one sampled per
  /// request whose KV caught up with its tokens, finished requests release their blocks (kv_cache_manager.free).
  void finish_step(double now);
  TimelineSample sample(double now) const;
  /// Closes the time integrals at `end` and returns the statistics over [start, end].
  ReplicaStats finish(double start, double end);

  /// The earliest time a request waiting for its host-tier load becomes ready (> now), or `now` when none waits:
  /// the event loop schedules the replica again then.
  double loading_until(double now) const;

  double area_waste() const { return area_waste_; }
  double area_alloc() const { return area_alloc_; }
  double waste_per_request_max() const { return waste_per_request_max_; }
  const StepCost& breakdown() const { return breakdown_; }

 private:
  bool schedule_running(double now, i64& budget, StepLoad& load, Observer* obs, bool decodes_only = false);
  bool has_prefill_work(double now, bool admission_point) const;
  bool schedule_prefills_only(double now, i64& budget, StepLoad& load, bool admission_point);
  /// Computing its prompt: no token sampled yet, or more than one token to compute (a prompt recomputed after
  /// preemption); a decoding request has exactly one.
  static bool in_prefill(const Request& r) { return r.generated == 0 || r.num_tokens - r.computed > 1; }
  // Decode steps in aggregate (replica.cpp).
  i64 take_due();
  i64 next_event_tick(const Request& r) const;
  bool aggregated_step_fits(double now, i64 budget, i64 lazy_blocks) const;
  void schedule_aggregated(double now, i64& budget, StepLoad& load);
  bool finish_request(std::uint32_t s, double now);  ///< true when it completed
  void aggregate_decodes(double now);
  void lazy_itl(double now);
  void materialize(std::uint32_t s);
  void materialize_all();
  void admit_waiting(double now, i64& budget, StepLoad& load);
  bool admit(std::uint32_t s, double now, i64& budget, StepLoad& load);
  double start_step(double now, const StepLoad& load, Observer* obs);
  void preempt(std::uint32_t victim, double now, std::uint64_t for_id, i64 need, Observer* obs);
  void complete(std::uint32_t s, double now);
  // Once per request per step (or per event): inline, defined in replica.cpp where they are called, so that
  // the scheduler's loops pay no call for them (as when the scheduler was one function).
  struct Growth {
    i64 table = 0, side_want = 0, side = 0;
  };
  inline Growth growth(const Request& r, i64 n) const;
  inline bool grow(std::uint32_t s, i64 n, double now, bool& preempted, Observer* obs);
  inline void add_to_step(Request& r, i64 n, StepLoad& load);
  inline void count_tokens(Request& r, i64 from, i64 to);
  inline void integrate(double now);

  std::uint32_t index_;
  i64 burst_left_ = 0;  ///< steps left in the current multi-step burst (no admission until 0)
  ReplicaConfig cfg_;
  const StepTimer& timer_;
  BlockManager kv_;
  Collector& out_;
  bool check_;
  std::vector<Request> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::vector<std::uint32_t> running_;
  std::deque<std::uint32_t> waiting_;
  std::vector<std::uint32_t> hits_;
  // Decode steps in aggregate: `active_` is running_ less its lazy requests, in running order, while `active_valid_`
  // (a per-request step clears it; finish_step rebuilds it). Lazy requests advance one token per tick; `ring_` has a
  // bucket per coming tick holding each lazy request once, at its next event (a block, its wake, or a hop when both
  // are further than the ring); `due_`: the lazy requests that get a block in this step.
  bool aggregate_ = false;
  bool active_valid_ = true;
  bool pressure_ = false;  ///< the last step was per request and spent its budget or preempted
  std::vector<std::uint32_t> active_;
  std::vector<std::uint32_t> done_;
  std::vector<std::uint32_t> due_;
  i64 tick_ = 0;
  i64 lazy_count_ = 0;
  i64 lazy_held_ = 0;           ///< sum over lazy requests of the tokens they hold in the coming step (computed + 1)
  double last_tick_end_s_ = 0;  ///< the end of the latest tick's step (lazy requests sampled then)
  std::vector<std::uint32_t> fresh_lazy_;  ///< made lazy since the latest tick (their previous token: last_token_s)
  std::uint64_t admitted_ = 0;
  std::vector<std::vector<std::uint32_t>> ring_;  ///< [tick mod size]: lazy requests with an event at that tick
  bool busy_ = false;
  i64 waiting_tokens_ = 0;
  i64 sum_table_blocks_ = 0;  ///< sum over running requests of their block-table sizes
  i64 sum_slot_tokens_ = 0;   ///< sum over running requests of tokens written or being written
  std::uint64_t peak_used_ = 0;
  double waste_per_request_max_ = 0;
  double last_t_ = 0, area_used_ = 0, area_running_ = 0, area_waiting_ = 0, area_waste_ = 0, area_alloc_ = 0;
  ReplicaStats stats_;
  StepCost breakdown_;
};

}  // namespace kvcap::sim
