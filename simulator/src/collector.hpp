#pragma once
// What the metrics of finished requests accumulate into, one per run, shared by the replicas: streaming latency
// histograms (metrics.hpp), goodput against the targets, token counts; it forwards each finished request to the
// observer. Private to the simulator (simulator.cpp owns it, replica.cpp records into it).
#include <cstdint>
#include <utility>
#include <vector>

#include "kvcap/planner/workload.hpp"
#include "kvcap/simulator/metrics.hpp"
#include "kvcap/simulator/request.hpp"

namespace kvcap::sim {

struct SimResult;

class Collector {
 public:
  Collector(const LatencyTargets& slo, Observer* observer) : slo_(slo), observer_(observer) {}

  /// `r` finished at `now` on `replica`: TTFT, TPOT (requests with >= 2 output tokens), E2E and queueing delay,
  /// whether it met every target, its tokens; then Observer::on_request_done.
  void record(const Request& r, std::uint32_t replica, double now);

  /// `n` gaps of `gap_s` between two consecutive output tokens of a request (the inter-token latency as
  /// `vllm bench serve`, sglang.bench_serving and inference-perf pool it: one sample per gap, over every request).
  /// The requests of one step mostly share their gap: a run of equal gaps is counted once (one bucket lookup per
  /// run, not per token).
  void add_itl(double gap_s, std::uint64_t n = 1) {
    if (gap_s == itl_run_s_) {
      itl_run_n_ += n;
      return;
    }
    itl_.add(itl_run_s_, itl_run_n_);
    itl_run_s_ = gap_s;
    itl_run_n_ = n;
  }

  /// A disaggregated prefill worker finished `r` (its first token sampled at `now`): it goes on to a decode worker.
  void hand_off(const Request& r, double now);
  struct Handoff {
    RequestSpec spec;  ///< as sent (arrival, lengths, prefix, conversation)
    std::uint64_t id = 0;
    i64 output_tokens = 0;
    bool truncated = false;
    double first_scheduled_s = 0;
    i64 cached_tokens = 0;
  };
  /// Hand-offs since the event loop last cleared this.
  std::vector<Handoff>& handoffs() { return handoffs_; }

  std::uint64_t completed() const { return completed_; }
  /// Conversation turns finished since the event loop last cleared this: (conversation, tokens generated).
  std::vector<std::pair<std::int64_t, i64>>& finished_turns() { return finished_turns_; }
  double last_completion_s() const { return last_completion_s_; }
  /// Latency summaries, token counts, goodput and the rates over [res.first_arrival_s, res.end_s] into `res`.
  void summarize(SimResult& res) const;

 private:
  LogHistogram ttft_, tpot_, e2e_, queue_, itl_;
  double itl_run_s_ = 0;  ///< the gap of the run add_itl is counting (not yet in itl_)
  std::uint64_t itl_run_n_ = 0;
  std::uint64_t completed_ = 0, slo_met_ = 0, prompt_tokens_ = 0, output_tokens_ = 0;
  double last_completion_s_ = 0;
  LatencyTargets slo_;
  Observer* observer_;
  std::vector<std::pair<std::int64_t, i64>> finished_turns_;
  std::vector<Handoff> handoffs_;
};

}  // namespace kvcap::sim
