#include "kvcap/simulator/timeline.hpp"

#include <cstdio>

namespace kvcap::sim {

TimelineCsvWriter::TimelineCsvWriter(std::ostream& out, Observer* next) : out_(out), next_(next) {
  out_ << kTimelineHeader << '\n';
}

void TimelineCsvWriter::on_sample(const TimelineSample& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%.6f,%u,%lld,%lld,%llu,%llu,%.6f,%llu\n", s.time_s, s.replica,
                static_cast<long long>(s.running), static_cast<long long>(s.waiting),
                static_cast<unsigned long long>(s.kv_used_blocks), static_cast<unsigned long long>(s.kv_total_blocks),
                s.kv_utilization, static_cast<unsigned long long>(s.preemptions));
  out_ << buf;
  if (next_) next_->on_sample(s);
}

}  // namespace kvcap::sim
