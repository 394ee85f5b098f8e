#pragma once
// Reader for the simulator's KV-utilisation timeline (`kvcap simulate --timeline out.csv`) into the simulator's own
// row type (sim::TimelineSample); standard library otherwise. The header row must be exactly sim::kTimelineHeader,
//   time_s,replica,running,waiting,kv_used_blocks,kv_total_blocks,kv_utilization,preemptions
// and every problem is reported as "file:line: error: column: what was expected".
#include <cstdint>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "kvcap/simulator/metrics.hpp"

namespace kvcap::gui {

/// One row: the state of one replica at one instant of simulated time, as the simulator sampled it.
using TimelineSample = sim::TimelineSample;

struct Timeline {
  std::string file;                     ///< where it was read from, or what the run was (a run in the dashboard)
  std::vector<TimelineSample> samples;  ///< in file order
  std::int64_t num_replicas = 0;        ///< 1 + the largest replica index
};

/// A malformed timeline: what() is "file:line: error: ...".
class TimelineError : public std::runtime_error {
 public:
  TimelineError(const std::string& file, int line, const std::string& message);
  int line() const noexcept { return line_; }

 private:
  int line_;
};

/// The exact header the simulator writes (sim::kTimelineHeader).
const std::string& timeline_header();

Timeline parse_timeline_csv(std::istream& in, const std::string& file);
/// Throws TimelineError (also when the file cannot be opened, line 0).
Timeline read_timeline_csv(const std::string& path);

}  // namespace kvcap::gui
