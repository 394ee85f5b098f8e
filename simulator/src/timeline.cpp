#include "kvcap/simulator/timeline.hpp"

#include <cstdio>

namespace kvcap::sim {

TimelineRowLimit::TimelineRowLimit(std::uint64_t max_rows, double at_s)
    : std::runtime_error("timeline row limit reached"), rows(max_rows), time_s(at_s) {}

TimelineCsvWriter::TimelineCsvWriter(std::ostream& out, Observer* next, std::uint64_t max_rows)
    : out_(out), next_(next), max_rows_(max_rows) {
  out_ << kTimelineHeader << '\n';
}

void TimelineCsvWriter::on_sample(const TimelineSample& s) {
  if (max_rows_ > 0 && rows_ >= max_rows_) throw TimelineRowLimit(max_rows_, s.time_s);
  ++rows_;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%.6f,%u,%lld,%lld,%llu,%llu,%.6f,%llu\n", s.time_s, s.replica,
                static_cast<long long>(s.running), static_cast<long long>(s.waiting),
                static_cast<unsigned long long>(s.kv_used_blocks), static_cast<unsigned long long>(s.kv_total_blocks),
                s.kv_utilization, static_cast<unsigned long long>(s.preemptions));
  out_ << buf;
  if (next_) next_->on_sample(s);
}

}  // namespace kvcap::sim
