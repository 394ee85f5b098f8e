// The simulation loop and the replica scheduler. vLLM V1 sources for each policy are cited where the
// policy is implemented; docs/simulator.md describes the whole model.
#include "kvcap/simulator/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>

#include "kvcap/planner/error.hpp"
#include "kvcap/simulator/event_queue.hpp"
#include "kvcap/simulator/random.hpp"

namespace kvcap::sim {

std::string_view to_string(RouterPolicy p) {
  switch (p) {
    case RouterPolicy::round_robin: return "round-robin";
    case RouterPolicy::least_outstanding: return "lor";
    case RouterPolicy::least_kv: return "kv";
  }
  return "?";
}

std::optional<RouterPolicy> parse_router(std::string_view s) {
  if (s == "round-robin" || s == "rr") return RouterPolicy::round_robin;
  if (s == "lor" || s == "least-outstanding-requests" || s == "least-outstanding") return RouterPolicy::least_outstanding;
  if (s == "kv" || s == "least-kv" || s == "least-kv-utilization") return RouterPolicy::least_kv;
  return std::nullopt;
}

std::pair<double, double> offered_and_served_per_s(const SimResult& r, bool closed_loop) {
  const double arrivals_span = r.last_arrival_s - r.first_arrival_s;
  const std::uint64_t admitted = r.requests_arrived - r.requests_rejected;  // rejected ones cost no service
  if (closed_loop || admitted < 2 || !(arrivals_span > 0) || r.requests_completed == 0) return {0, 0};
  const double offered = static_cast<double>(admitted - 1) / arrivals_span;
  const double service = std::max(0.0, r.e2e_s.mean - r.queue_s.mean);
  const double window = r.end_s - r.first_arrival_s - service;
  if (!(window > 0)) return {offered, 0};
  return {offered, static_cast<double>(r.requests_completed) / window};
}

bool overloaded(const SimResult& r, bool closed_loop) {
  const auto [offered, served] = offered_and_served_per_s(r, closed_loop);
  const double service = std::max(0.0, r.e2e_s.mean - r.queue_s.mean);
  return offered > 1.02 * served && r.queue_s.mean > 0.25 * service;
}

double closed_loop_cycle_s(const SpeedContext& c, i64 clients, i64 prompt_tokens, i64 output_tokens, double think_time_s) {
  const i64 prompt = std::max<i64>(1, std::min(prompt_tokens, c.plan.dep.max_model_len - 1));
  const i64 output = std::max<i64>(1, std::min(output_tokens, c.plan.dep.max_model_len - prompt));
  // At most what the engine runs at once: max_num_seqs and the requests its KV cache holds at full length.
  const double fit = concurrency_at(c.model, c.plan, prompt + output);
  const i64 cap = std::max<i64>(1, std::min<i64>(c.plan.dep.max_num_seqs, std::isfinite(fit) ? static_cast<i64>(fit) : clients));
  const i64 batch = std::max<i64>(1, std::min(clients, cap));
  // Little's law: beyond what runs at once, the clients wait their turn, and a cycle takes clients / throughput.
  const double e2e = estimate_request(c, batch, prompt, output).e2e_s;
  const double cycle = clients > batch ? e2e * static_cast<double>(clients) / static_cast<double>(batch) : e2e;
  return cycle + think_time_s;
}

i64 ReplicaConfig::side_blocks(i64 tokens, i64 step_tokens) const {
  if (local_groups.empty() && state_blocks_per_request == 0) return 0;
  u64 blocks = static_cast<u64>(state_blocks_per_request);
  for (const auto& g : local_groups)
    blocks = add(blocks, spec_blocks_per_request(g, std::max<i64>(1, tokens), std::max<i64>(1, step_tokens)), "side blocks");
  return static_cast<i64>(ceil_div(blocks, static_cast<u64>(std::max<i64>(1, full_groups))));
}

void apply_speed_model(SimConfig& cfg, const SpeedContext& c, i64 mean_prompt_tokens, i64 mean_output_tokens, bool staggered) {
  cfg.request_overhead_s = c.options.request_overhead_s;
  if (cfg.max_concurrency > 0 && staggered)
    cfg.client_stagger_s = closed_loop_cycle_s(c, cfg.max_concurrency, mean_prompt_tokens, mean_output_tokens, cfg.think_time_s);
}

ReplicaConfig replica_config(const MemoryPlan& plan) {
  ReplicaConfig c;
  if (plan.num_blocks >= UINT32_MAX) throw SpecError("num_blocks", "more than 2^32 - 1 KV blocks per replica");
  // vLLM's hybrid KV cache manager: groups share one pool. The block table is the full-attention groups' (a table
  // entry = one block in each of them); sliding-window and chunked-local groups hold a bounded number of blocks
  // per request (the planner's spec_blocks_per_request: the window plus one step's tokens), linear-attention
  // groups a fixed one or two; both are taken beside the table, in entries. Without a full-attention group the
  // first group is the table (its tokens charged as full attention would charge them: conservative).
  const KvCacheGroup* table = nullptr;
  i64 full = 0;
  for (const auto& g : plan.kv_groups)
    if (g.spec.kind == KvSpecKind::full) table = table ? table : &g, ++full;
  if (!table && !plan.kv_groups.empty()) table = &plan.kv_groups.front(), full = 1;
  for (const auto& g : plan.kv_groups) {
    if (&g == table || g.spec.kind == KvSpecKind::full) continue;
    if (g.spec.kind == KvSpecKind::mamba) c.state_blocks_per_request += g.spec.state_blocks;
    else c.local_groups.push_back(g.spec);
  }
  c.full_groups = std::max<i64>(1, full);
  c.num_blocks = static_cast<std::uint32_t>(plan.num_blocks / static_cast<u64>(c.full_groups));
  c.block_size = table ? table->spec.block_size : plan.dep.block_size;
  c.max_num_batched_tokens = plan.dep.max_num_batched_tokens;
  c.max_num_seqs = plan.dep.max_num_seqs;
  c.max_model_len = plan.dep.max_model_len;
  return c;
}

namespace {

/// What the metrics of finished requests accumulate into (shared by the replicas).
struct Collector {
  LogHistogram ttft, tpot, e2e, queue;
  std::uint64_t completed = 0, slo_met = 0, prompt_tokens = 0, output_tokens = 0;
  double last_completion_s = 0;
  LatencyTargets slo;
  Observer* observer = nullptr;
};

enum class Outcome : std::uint8_t { stepped, idle, retry };

class Replica {
 public:
  Replica(std::uint32_t index, const ReplicaConfig& c, const StepTimer& t, Collector& out, bool check)
      : index_(index), cfg_(c), timer_(t), kv_(c.num_blocks, c.block_size, c.allocator, c.max_model_len, c.prefix_caching),
        out_(out), check_(check) {}

  void start_clock(double t) { last_t_ = t; }
  bool busy() const { return busy_; }
  bool schedule_pending = false;
  bool empty() const { return running_.empty() && waiting_.empty(); }
  i64 outstanding() const { return static_cast<i64>(running_.size() + waiting_.size()); }
  /// KV load for the kv router: used blocks plus the blocks the waiting requests' tokens will need.
  i64 kv_load_blocks() const {
    return static_cast<i64>(kv_.num_used()) + static_cast<i64>(ceil_div(static_cast<u64>(waiting_tokens_),
                                                                          static_cast<u64>(cfg_.block_size)));
  }

  void enqueue(const RequestSpec& spec, std::uint64_t id, i64 output_tokens, bool truncated, double now) {
    integrate(now);
    std::uint32_t s = 0;
    if (!free_slots_.empty()) {
      s = free_slots_.back();
      free_slots_.pop_back();
    } else {
      s = static_cast<std::uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    Request& r = slots_[s];
    std::vector<std::uint32_t> keep = std::move(r.blocks);  // reuse the table's capacity
    keep.clear();
    r = Request{};
    r.blocks = std::move(keep);
    r.id = id;
    r.arrival_s = spec.arrival_s;
    r.prompt_tokens = spec.prompt_tokens;
    r.output_tokens = output_tokens;
    r.truncated = truncated;
    r.num_tokens = spec.prompt_tokens;
    r.prefix_group = spec.prefix_group;
    r.prefix_tokens = spec.prefix_tokens;
    waiting_.push_back(s);
    waiting_tokens_ += r.num_tokens;
    ++stats_.routed;
    stats_.waiting_max = std::max<i64>(stats_.waiting_max, static_cast<i64>(waiting_.size()));
  }

  /// Forms the next batch at `now` (vllm/v1/core/sched/scheduler.py, Scheduler.schedule()).
  Outcome schedule(double now, double& step_s, Observer* obs) {
    integrate(now);
    StepLoad load;
    i64 budget = cfg_.max_num_batched_tokens;
    bool preempted = false;
    // 1. RUNNING requests first, in admission order (decode-first: a running request's decode token or
    //    next prefill chunk is scheduled before any waiting request is admitted).
    std::size_t i = 0;
    while (i < running_.size() && budget > 0) {
      const std::uint32_t s = running_[i];
      Request& r = slots_[s];
      const i64 n = std::min(r.num_tokens - r.computed, budget);  // chunked prefill: at most the budget
      bool can_schedule = true;
      while (true) {
        // kv_cache_manager.allocate_slots: all or nothing, in every group.
        const i64 table_need = kv_.blocks_to_allocate(r.blocks.size(), r.computed + n);
        const i64 side_want = cfg_.side_blocks(r.computed + n, n);
        const i64 side_need = std::max<i64>(0, side_want - static_cast<i64>(r.state_blocks.size()));
        const i64 need = table_need + side_need;
        if (need <= static_cast<i64>(kv_.num_free())) {
          if (table_need > 0) {
            kv_.allocate(r.blocks, table_need);
            sum_table_blocks_ += table_need;
          }
          if (side_need > 0) kv_.allocate(r.state_blocks, side_need);
          // Blocks that left the window go back (after a prefill chunk, a decode step needs fewer).
          if (side_want < static_cast<i64>(r.state_blocks.size()))
            kv_.free_tail(r.state_blocks, static_cast<i64>(r.state_blocks.size()) - side_want);
          break;
        }
        // Out of blocks: preempt the most recently admitted running request (self.running.pop()),
        // by recompute: its blocks are freed and it goes back to the front of the waiting queue.
        const std::uint32_t victim = running_.back();
        preempt(victim, now, r.id, need, obs);
        preempted = true;
        if (victim == s) {
          can_schedule = false;
          break;
        }
      }
      if (!can_schedule) break;
      add_to_step(r, n, load);
      budget -= n;
      ++i;
    }
    // 2. WAITING requests, only when nothing was preempted in this step (as vLLM), FCFS, while the token
    //    budget and max_num_seqs allow and their first chunk's blocks can be allocated. With multi-step
    //    scheduling only at the start of a burst of num_scheduler_steps steps (or when nothing runs).
    const bool burst_start = burst_left_ == 0 || running_.empty();
    burst_left_ = burst_start ? cfg_.num_scheduler_steps - 1 : burst_left_ - 1;
    if (!preempted && burst_start) {
      while (!waiting_.empty() && budget > 0 && static_cast<i64>(running_.size()) < cfg_.max_num_seqs) {
        const std::uint32_t s = waiting_.front();
        Request& r = slots_[s];
        // Prefix-cache hit (kv_cache_manager.get_computed_blocks): whole blocks, never the last token.
        i64 evictable = 0;
        hits_.clear();
        if (kv_.prefix_caching() && r.prefix_group >= 0)
          evictable = kv_.find_prefix(r.prefix_group, r.prefix_tokens, r.num_tokens - 1, hits_);
        const i64 hit_tokens = static_cast<i64>(hits_.size()) * cfg_.block_size;
        const i64 n = std::min(r.num_tokens - hit_tokens, budget);
        const i64 need = kv_.blocks_to_allocate(hits_.size(), hit_tokens + n);
        const i64 side = cfg_.side_blocks(hit_tokens + n, n);
        if (need + side + evictable > static_cast<i64>(kv_.num_free())) break;  // cannot be scheduled: stop admitting
        kv_.take_prefix(r.blocks, hits_);
        kv_.allocate(r.blocks, need);
        kv_.allocate(r.state_blocks, side);
        sum_table_blocks_ += static_cast<i64>(r.blocks.size());
        waiting_.pop_front();
        waiting_tokens_ -= r.num_tokens;
        running_.push_back(s);
        r.computed = hit_tokens;
        r.registered_prefix_blocks = static_cast<i64>(hits_.size());
        sum_slot_tokens_ += hit_tokens;
        if (r.first_scheduled_s < 0) {
          r.first_scheduled_s = now;
          r.cached_tokens = hit_tokens;
        }
        stats_.prefix_cache_hit_tokens += static_cast<std::uint64_t>(hit_tokens);
        add_to_step(r, n, load);
        budget -= n;
      }
    }
    if (load.sequences == 0) {
      if (!waiting_.empty() && !preempted)
        throw std::logic_error("scheduler stalled: replica " + std::to_string(index_) + " has " +
                               std::to_string(waiting_.size()) + " waiting requests and cannot admit one");
      return preempted ? Outcome::retry : Outcome::idle;
    }
    const StepCost c = timer_.cost(load);
    step_s = c.step_s;
    busy_ = true;
    ++stats_.steps;
    stats_.busy_s += c.step_s;
    accumulate(c);
    const std::uint64_t used = kv_.num_used();
    peak_used_ = std::max<std::uint64_t>(peak_used_, used);
    stats_.running_max = std::max<i64>(stats_.running_max, static_cast<i64>(running_.size()));
    const double waste = static_cast<double>(sum_table_blocks_ * cfg_.block_size - sum_slot_tokens_);
    waste_per_request_max_ = std::max(waste_per_request_max_, waste / static_cast<double>(running_.size()));
    if (check_ && (!kv_.check_invariants() || used > kv_.num_blocks()))
      throw std::logic_error("block manager invariant broken on replica " + std::to_string(index_));
    if (obs) {
      StepRecord rec;
      rec.start_s = now;
      rec.duration_s = c.step_s;
      rec.replica = index_;
      rec.sequences = load.sequences;
      rec.tokens = load.tokens;
      rec.kv_used_blocks = used;
      rec.kv_total_blocks = kv_.num_blocks();
      rec.kv_slot_tokens = sum_slot_tokens_;
      rec.kv_table_blocks = sum_table_blocks_;
      obs->on_step(rec);
    }
    return Outcome::stepped;
  }

  /// The step in flight ends at `now` (Scheduler.update_from_output): tokens computed, one sampled per
  /// request whose KV caught up with its tokens, finished requests release their blocks (kv_cache_manager.free).
  void finish_step(double now) {
    integrate(now);
    busy_ = false;
    std::size_t out = 0;
    for (std::size_t k = 0; k < running_.size(); ++k) {
      const std::uint32_t s = running_[k];
      Request& r = slots_[s];
      if (r.scheduled > 0) {
        count_tokens(r, r.computed, r.computed + r.scheduled);
        r.computed += r.scheduled;
        r.scheduled = 0;
        if (r.prefix_group >= 0)
          kv_.register_prefix(r.blocks, r.prefix_group, r.prefix_tokens, r.computed, r.registered_prefix_blocks);
        if (r.computed == r.num_tokens) {
          ++r.generated;
          ++r.num_tokens;
          if (r.first_token_s < 0) r.first_token_s = now;
          if (r.generated >= r.output_tokens) {
            complete(s, now);
            continue;
          }
        }
      }
      running_[out++] = s;
    }
    running_.resize(out);
  }

  TimelineSample sample(double now) const {
    TimelineSample t;
    t.time_s = now;
    t.replica = index_;
    t.running = static_cast<i64>(running_.size());
    t.waiting = static_cast<i64>(waiting_.size());
    t.kv_used_blocks = kv_.num_used();
    t.kv_total_blocks = kv_.num_blocks();
    t.kv_utilization = kv_.num_blocks() ? static_cast<double>(t.kv_used_blocks) / static_cast<double>(t.kv_total_blocks) : 0;
    t.preemptions = stats_.preemptions;
    return t;
  }

  /// Closes the time integrals at `end` and returns the statistics over [start, end].
  ReplicaStats finish(double start, double end) {
    integrate(end);
    ReplicaStats s = stats_;
    const double span = end - start;
    if (span > 0) {
      s.kv_utilization_mean = area_used_ / (static_cast<double>(kv_.num_blocks()) * span);
      s.running_mean = area_running_ / span;
      s.waiting_mean = area_waiting_ / span;
    }
    s.kv_utilization_max = kv_.num_blocks() ? static_cast<double>(peak_used_) / static_cast<double>(kv_.num_blocks()) : 0;
    s.kv_used_blocks_end = kv_.num_used();
    if (kv_.num_used() != 0)
      throw std::logic_error("KV blocks leaked on replica " + std::to_string(index_));
    return s;
  }
  double area_waste() const { return area_waste_; }
  double area_alloc() const { return area_alloc_; }
  double waste_per_request_max() const { return waste_per_request_max_; }
  const StepCost& breakdown() const { return breakdown_; }
  bool blocks_consistent() const { return kv_.check_invariants(); }
  /// Blocks still referenced by a request (0 at the end: nothing leaked; cached prefix blocks are free).
  std::uint64_t referenced_blocks() const { return kv_.num_used(); }

 private:
  void add_to_step(Request& r, i64 n, StepLoad& load) {
    r.scheduled = n;
    sum_slot_tokens_ += n;
    timer_.add(load, r.computed, n, r.computed + n == r.num_tokens);
  }

  void preempt(std::uint32_t victim, double now, std::uint64_t for_id, i64 need, Observer* obs) {
    Request& v = slots_[victim];
    running_.pop_back();
    if (obs) {
      PreemptionRecord p;
      p.time_s = now;
      p.replica = index_;
      p.victim_id = v.id;
      p.for_request_id = for_id;
      p.free_blocks = static_cast<i64>(kv_.num_free());
      p.blocks_needed = need;
      p.victim_computed_tokens = v.computed;
      obs->on_preemption(p);
    }
    sum_table_blocks_ -= static_cast<i64>(v.blocks.size());
    sum_slot_tokens_ -= v.computed;
    kv_.free(v.blocks);
    kv_.free(v.state_blocks);
    v.computed = 0;
    v.registered_prefix_blocks = 0;
    ++v.preemptions;
    ++stats_.preemptions;
    waiting_.push_front(victim);  // self.waiting.prepend_request
    waiting_tokens_ += v.num_tokens;
  }

  void count_tokens(Request& r, i64 from, i64 to) {
    // Positions below the request's high-water mark were computed before a preemption: recomputed.
    const i64 again = std::max<i64>(0, std::min(to, r.computed_high_water) - from);
    stats_.recomputed_tokens += static_cast<std::uint64_t>(again);
    const i64 first = std::max(from, r.computed_high_water);
    if (to > first) {
      const i64 prompt_part = std::max<i64>(0, std::min(to, r.prompt_tokens) - first);
      stats_.prefill_tokens += static_cast<std::uint64_t>(prompt_part);
      stats_.decode_tokens += static_cast<std::uint64_t>(to - first - prompt_part);
      r.computed_high_water = to;
    }
  }

  void complete(std::uint32_t s, double now) {
    Request& r = slots_[s];
    sum_table_blocks_ -= static_cast<i64>(r.blocks.size());
    sum_slot_tokens_ -= r.computed;
    kv_.free(r.blocks);
    kv_.free(r.state_blocks);
    ++stats_.completed;
    const double ttft = r.first_token_s - r.arrival_s, e2e = now - r.arrival_s;
    out_.ttft.add(ttft);
    out_.e2e.add(e2e);
    out_.queue.add(r.first_scheduled_s - r.arrival_s);
    bool met = !out_.slo.ttft_s || ttft <= *out_.slo.ttft_s;
    if (r.output_tokens > 1) {
      // TPOT: time per output token after the first (vLLM benchmarks' definition).
      const double tpot = (e2e - ttft) / static_cast<double>(r.output_tokens - 1);
      out_.tpot.add(tpot);
      met = met && (!out_.slo.tpot_s || tpot <= *out_.slo.tpot_s);
    }
    ++out_.completed;
    out_.slo_met += met ? 1 : 0;
    out_.prompt_tokens += static_cast<std::uint64_t>(r.prompt_tokens);
    out_.output_tokens += static_cast<std::uint64_t>(r.output_tokens);
    out_.last_completion_s = std::max(out_.last_completion_s, now);
    if (out_.observer) {
      RequestRecord rec;
      rec.id = r.id;
      rec.replica = index_;
      rec.arrival_s = r.arrival_s;
      rec.first_scheduled_s = r.first_scheduled_s;
      rec.first_token_s = r.first_token_s;
      rec.finish_s = now;
      rec.prompt_tokens = r.prompt_tokens;
      rec.output_tokens = r.generated;
      rec.cached_prompt_tokens = r.cached_tokens;
      rec.preemptions = r.preemptions;
      rec.truncated = r.truncated;
      out_.observer->on_request_done(rec);
    }
    free_slots_.push_back(s);
  }

  void integrate(double now) {
    const double dt = now - last_t_;
    if (dt > 0) {
      const double used = static_cast<double>(kv_.num_used());
      area_used_ += used * dt;
      area_running_ += static_cast<double>(running_.size()) * dt;
      area_waiting_ += static_cast<double>(waiting_.size()) * dt;
      area_waste_ += static_cast<double>(sum_table_blocks_ * cfg_.block_size - sum_slot_tokens_) * dt;
      area_alloc_ += used * static_cast<double>(cfg_.block_size) * dt;
      last_t_ = now;
    }
  }

  void accumulate(const StepCost& c) {
    breakdown_.step_s += c.step_s;
    breakdown_.weights_read_s += c.weights_read_s;
    breakdown_.kv_read_s += c.kv_read_s;
    breakdown_.gemm_s += c.gemm_s;
    breakdown_.attention_s += c.attention_s;
    breakdown_.communication_s += c.communication_s;
    breakdown_.overhead_s += c.overhead_s;
    breakdown_.pipeline_p2p_s += c.pipeline_p2p_s;
  }

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

class Router {
 public:
  explicit Router(RouterPolicy p) : p_(p) {}
  std::uint32_t pick(const std::vector<Replica>& rs) {
    const auto n = static_cast<std::uint32_t>(rs.size());
    std::uint32_t best = next_;
    if (p_ != RouterPolicy::round_robin) {
      // Scan from the round-robin pointer so that ties rotate instead of piling onto replica 0.
      i64 best_v = std::numeric_limits<i64>::max();
      for (std::uint32_t k = 0; k < n; ++k) {
        const std::uint32_t i = (next_ + k) % n;
        const i64 v = p_ == RouterPolicy::least_outstanding ? rs[i].outstanding() : rs[i].kv_load_blocks();
        if (v < best_v) {
          best_v = v;
          best = i;
        }
      }
    }
    next_ = (best + 1) % n;
    return best;
  }

 private:
  RouterPolicy p_;
  std::uint32_t next_ = 0;
};

}  // namespace

SimResult simulate(const SimConfig& cfg, const StepTimer& timer, RequestSource& source) {
  const ReplicaConfig& rc = cfg.replica;
  if (cfg.num_replicas < 1) throw SpecError("replicas", "must be >= 1");
  if (rc.num_blocks < 1) throw SpecError("num_blocks", "a replica needs at least one KV block");
  if (rc.block_size < 1) throw SpecError("block_size", "must be >= 1");
  if (rc.max_num_batched_tokens < 1) throw SpecError("max_num_batched_tokens", "must be >= 1");
  if (rc.max_num_seqs < 1) throw SpecError("max_num_seqs", "must be >= 1");
  if (rc.max_model_len < 2) throw SpecError("max_model_len", "must be >= 2 (a prompt token and an output token)");
  if (cfg.timeline_interval_s < 0 || !std::isfinite(cfg.timeline_interval_s))
    throw SpecError("timeline_interval_s", "must be a finite number >= 0");
  if (rc.full_groups < 1) throw SpecError("full_groups", "must be >= 1");
  const i64 side_max = rc.side_blocks(rc.max_model_len, rc.max_num_batched_tokens);
  if (rc.state_blocks_per_request < 0 || side_max >= static_cast<i64>(rc.num_blocks))
    throw SpecError("num_blocks", "a replica's " + std::to_string(rc.num_blocks) + " KV blocks cannot hold one request's " +
                                      std::to_string(side_max) + " sliding-window / state blocks and a token");
  // A request can grow to what one replica's blocks hold beside its local-attention and state blocks, and to
  // max_model_len.
  const u64 capacity_tokens = mul(static_cast<u64>(rc.num_blocks) - static_cast<u64>(side_max),
                                  static_cast<u64>(rc.block_size), "KV capacity in tokens");
  const i64 max_len = std::min<i64>(rc.max_model_len, to_signed(capacity_tokens, "KV capacity in tokens"));
  if (rc.allocator == Allocator::contiguous &&
      ceil_div(static_cast<u64>(rc.max_model_len), static_cast<u64>(rc.block_size)) > rc.num_blocks)
    throw SpecError("max_model_len", "the contiguous allocator reserves max_model_len (" + std::to_string(rc.max_model_len) +
                                         " tokens) per request, more than a replica's " + std::to_string(capacity_tokens) +
                                         " KV tokens: not even one request fits");

  Collector col;
  col.slo = cfg.slo;
  col.observer = cfg.observer;
  std::vector<Replica> replicas;
  replicas.reserve(cfg.num_replicas);
  for (std::uint32_t i = 0; i < cfg.num_replicas; ++i) replicas.emplace_back(i, rc, timer, col, cfg.check_invariants);
  Router router(cfg.router);
  EventQueue q;
  SimResult res;

  if (!(std::isfinite(cfg.think_time_s) && cfg.think_time_s >= 0))
    throw SpecError("think_time_s", "must be a finite number of seconds >= 0");
  std::optional<RequestSpec> pending = source.next();
  if (!pending) return res;
  const double start = pending->arrival_s;
  for (auto& r : replicas) r.start_clock(start);
  // Closed loop: the times at which clients are free to send (non-decreasing: releases come in time order and
  // the think time is fixed). Empty while all N are busy: the pending request then waits (`stalled`).
  const bool closed = cfg.max_concurrency > 0;
  if (!(std::isfinite(cfg.request_overhead_s) && cfg.request_overhead_s >= 0))
    throw SpecError("request_overhead_s", "must be a finite number of seconds >= 0");
  if (rc.num_scheduler_steps < 1) throw SpecError("num_scheduler_steps", "must be >= 1");
  if (!(std::isfinite(cfg.client_stagger_s) && cfg.client_stagger_s >= 0))
    throw SpecError("client_stagger_s", "must be a finite number of seconds >= 0");
  std::deque<double> free_at;
  for (std::uint32_t i = 0; closed && i < cfg.max_concurrency; ++i)
    free_at.push_back(start + cfg.client_stagger_s * static_cast<double>(i) / static_cast<double>(cfg.max_concurrency));
  bool stalled = false;
  auto send_pending = [&](double t) {
    if (!closed) {
      if (!(pending->arrival_s >= t)) throw std::logic_error("request source went back in time");
      q.push(pending->arrival_s + cfg.request_overhead_s, EventKind::arrival);
    } else if (free_at.empty()) {
      stalled = true;
    } else {
      q.push(std::max({pending->arrival_s, free_at.front(), t}) + cfg.request_overhead_s, EventKind::arrival);
      free_at.pop_front();
    }
  };
  Rng think_rng(stream_seed(cfg.think_seed, 7));
  auto release = [&](std::uint64_t n, double t) {
    if (!closed) return;
    for (std::uint64_t i = 0; i < n; ++i) {
      const double think = cfg.think_time_exponential && cfg.think_time_s > 0 ? think_rng.exponential(1.0 / cfg.think_time_s)
                                                                                : cfg.think_time_s;
      // Keep free_at sorted: with random think times a later release can free its client earlier.
      free_at.insert(std::upper_bound(free_at.begin(), free_at.end(), t + think), t + think);
    }
    if (stalled && pending) {
      stalled = false;
      send_pending(t);
    }
  };
  send_pending(start);
  if (cfg.timeline_interval_s > 0 && cfg.observer) q.push(start, EventKind::sample);
  auto wake = [&](std::uint32_t r, double now) {
    Replica& rep = replicas[r];
    if (!rep.busy() && !rep.schedule_pending) {
      rep.schedule_pending = true;
      q.push(now, EventKind::schedule, r);
    }
  };
  double now = start;
  std::uint64_t arrived = 0;
  auto report = [&] {
    if (cfg.progress) cfg.progress(Progress{arrived, col.completed, source.size_hint(), now});
  };
  while (!q.empty()) {
    const Event e = q.pop();
    now = e.time_s;
    ++res.events;
    switch (e.kind) {
      case EventKind::step_end: {
        const std::uint64_t done_before = col.completed;
        replicas[e.target].finish_step(now);
        release(col.completed - done_before, now);
        wake(e.target, now);
        break;
      }
      case EventKind::arrival: {
        RequestSpec spec = *pending;
        // The send time (later than the source's arrival time when a closed loop waited): the engine sees the
        // request request_overhead_s later, and its TTFT counts from the send.
        spec.arrival_s = now - cfg.request_overhead_s;
        res.last_arrival_s = spec.arrival_s;
        const std::uint64_t id = arrived++;
        pending = source.next();
        if (spec.prompt_tokens >= max_len) {
          ++res.requests_rejected;  // vLLM rejects a prompt that leaves no room for one output token
          release(1, now);
        } else {
          i64 out = spec.output_tokens;
          const bool truncated = spec.prompt_tokens + out > max_len;  // generation stops at max_model_len
          if (truncated) {
            out = max_len - spec.prompt_tokens;
            ++res.requests_truncated;
          }
          const std::uint32_t r = router.pick(replicas);
          replicas[r].enqueue(spec, id, out, truncated, now);
          wake(r, now);
        }
        if (pending && !stalled) send_pending(spec.arrival_s);
        break;
      }
      case EventKind::schedule: {
        Replica& rep = replicas[e.target];
        rep.schedule_pending = false;
        if (rep.busy()) break;
        double step_s = 0;
        const Outcome o = rep.schedule(now, step_s, cfg.observer);
        if (o == Outcome::stepped) q.push(now + step_s, EventKind::step_end, e.target);
        else if (o == Outcome::retry) wake(e.target, now);
        break;
      }
      case EventKind::sample: {
        for (const auto& rep : replicas) cfg.observer->on_sample(rep.sample(now));
        bool done = !pending;
        for (const auto& rep : replicas) done = done && rep.empty() && !rep.busy();
        if (!done) q.push(now + cfg.timeline_interval_s, EventKind::sample);
        break;
      }
    }
    if ((res.events & 0xFFFF) == 0) report();
  }
  report();

  res.requests_arrived = arrived;
  res.requests_completed = col.completed;
  res.first_arrival_s = start;
  res.end_s = std::max(start, col.last_completion_s);
  const double span = res.end_s - res.first_arrival_s;
  res.ttft_s = col.ttft.summary();
  res.tpot_s = col.tpot.summary();
  res.e2e_s = col.e2e.summary();
  res.queue_s = col.queue.summary();
  res.prompt_tokens = col.prompt_tokens;
  res.output_tokens = col.output_tokens;
  res.slo_met = col.slo_met;
  if (span > 0) {
    res.requests_per_s = static_cast<double>(col.completed) / span;
    res.output_tokens_per_s = static_cast<double>(col.output_tokens) / span;
    res.prompt_tokens_per_s = static_cast<double>(col.prompt_tokens) / span;
    res.goodput_requests_per_s = static_cast<double>(col.slo_met) / span;
  }
  double waste = 0, alloc = 0;
  for (auto& rep : replicas) {
    ReplicaStats s = rep.finish(res.first_arrival_s, res.end_s);
    res.preemptions += s.preemptions;
    res.recomputed_tokens += s.recomputed_tokens;
    res.steps += s.steps;
    res.kv_utilization_mean += s.kv_utilization_mean / cfg.num_replicas;
    res.kv_utilization_max = std::max(res.kv_utilization_max, s.kv_utilization_max);
    res.running_mean += s.running_mean / cfg.num_replicas;
    res.running_max = std::max(res.running_max, s.running_max);
    res.waiting_mean += s.waiting_mean / cfg.num_replicas;
    res.waiting_max = std::max(res.waiting_max, s.waiting_max);
    res.kv_waste_tokens_per_request_max = std::max(res.kv_waste_tokens_per_request_max, rep.waste_per_request_max());
    waste += rep.area_waste();
    alloc += rep.area_alloc();
    const StepCost& b = rep.breakdown();
    res.busy_breakdown_s.step_s += b.step_s;
    res.busy_breakdown_s.weights_read_s += b.weights_read_s;
    res.busy_breakdown_s.kv_read_s += b.kv_read_s;
    res.busy_breakdown_s.gemm_s += b.gemm_s;
    res.busy_breakdown_s.attention_s += b.attention_s;
    res.busy_breakdown_s.communication_s += b.communication_s;
    res.busy_breakdown_s.overhead_s += b.overhead_s;
    res.busy_breakdown_s.pipeline_p2p_s += b.pipeline_p2p_s;
    res.replicas.push_back(s);
  }
  res.kv_waste_fraction = alloc > 0 ? waste / alloc : 0;
  double max_done = 0;
  for (const auto& s : res.replicas) max_done = std::max(max_done, static_cast<double>(s.completed));
  const double mean_done = static_cast<double>(col.completed) / cfg.num_replicas;
  res.balance_max_over_mean = mean_done > 0 ? max_done / mean_done : 0;
  return res;
}

}  // namespace kvcap::sim
