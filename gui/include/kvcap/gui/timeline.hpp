#pragma once
// Reader for the simulator's KV-utilisation timeline (`kvcap simulate --timeline out.csv`). Standard
// library only. The header row must be exactly
//   time_s,replica,running,waiting,kv_used_blocks,kv_total_blocks,kv_utilization,preemptions
// and every problem is reported as "file:line: error: column: what was expected".
#include <cstdint>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvcap::gui {

/// One row: the state of one replica at one instant of simulated time.
struct TimelineSample {
  double time_s = 0;                 ///< simulated time, seconds
  std::int64_t replica = 0;          ///< replica index (0-based)
  std::int64_t running = 0;          ///< requests in the running batch
  std::int64_t waiting = 0;          ///< requests queued
  std::int64_t kv_used_blocks = 0;   ///< KV blocks held by requests
  std::int64_t kv_total_blocks = 0;  ///< KV blocks of the replica (num_blocks)
  double kv_utilization = 0;         ///< kv_used_blocks / kv_total_blocks, in [0, 1]
  std::int64_t preemptions = 0;      ///< preemptions so far, as the simulator writes them
};

struct Timeline {
  std::string file;                     ///< where it was read from
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

/// The exact header the simulator writes.
const std::string& timeline_header();

Timeline parse_timeline_csv(std::istream& in, const std::string& file);
/// Throws TimelineError (also when the file cannot be opened, line 0).
Timeline read_timeline_csv(const std::string& path);

}  // namespace kvcap::gui
