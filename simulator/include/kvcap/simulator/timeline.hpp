#pragma once
// The timeline CSV (--timeline out.csv): one row per replica per sample, header exactly
//   time_s,replica,running,waiting,kv_used_blocks,kv_total_blocks,kv_utilization,preemptions
// sampled every --timeline-interval simulated seconds (default 1 s) from the first arrival until the
// last request completes. preemptions is cumulative per replica. Read by the GUI's KV chart.
#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string_view>

#include "kvcap/simulator/metrics.hpp"

namespace kvcap::sim {

inline constexpr std::string_view kTimelineHeader =
    "time_s,replica,running,waiting,kv_used_blocks,kv_total_blocks,kv_utilization,preemptions";

/// Thrown by TimelineCsvWriter when a sample would exceed its row limit: the run stops there.
class TimelineRowLimit : public std::runtime_error {
 public:
  TimelineRowLimit(std::uint64_t rows, double time_s);
  std::uint64_t rows;  ///< the limit
  double time_s;       ///< the simulated time the run had reached
};

/// Writes the header on construction and one row per sample; forwards every event to `next` when set. With
/// `max_rows` > 0 a row beyond it throws TimelineRowLimit: a closed loop's or a conversation's run outlasts its
/// arrivals' span, so no estimate before the run bounds its file.
class TimelineCsvWriter : public Observer {
 public:
  explicit TimelineCsvWriter(std::ostream& out, Observer* next = nullptr, std::uint64_t max_rows = 0);
  void on_sample(const TimelineSample& s) override;
  void on_request_done(const RequestRecord& r) override { if (next_) next_->on_request_done(r); }
  void on_preemption(const PreemptionRecord& p) override { if (next_) next_->on_preemption(p); }
  void on_step(const StepRecord& s) override { if (next_) next_->on_step(s); }

 private:
  std::ostream& out_;
  Observer* next_;
  std::uint64_t max_rows_, rows_ = 0;
};

}  // namespace kvcap::sim
