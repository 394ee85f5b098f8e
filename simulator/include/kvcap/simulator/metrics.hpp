#pragma once
// Metrics kept in constant memory: streaming latency histograms (log-spaced buckets, bounded relative
// error) with exact count, mean, min and max; and the records an observer receives.
#include <cstdint>
#include <vector>

#include "kvcap/planner/checked.hpp"

namespace kvcap::sim {

struct LatencySummary {
  std::uint64_t count = 0;
  double mean = 0;  ///< exact
  double p50 = 0, p90 = 0, p99 = 0;  ///< nearest-rank, within LogHistogram::kRelativeError
  double max = 0;   ///< exact
};

/// Values >= 0 (seconds). Bucket i >= 1 holds [kMin x 2^((i-1)/128), kMin x 2^(i/128)); bucket 0 holds
/// [0, kMin). A percentile is the nearest-rank sample's bucket, reported as the bucket's geometric
/// middle clamped to [min, max]: relative error <= 2^(1/256) - 1 = 0.27% for values >= kMin.
class LogHistogram {
 public:
  static constexpr double kMin = 1e-9;               ///< 1 ns
  static constexpr int kPerOctave = 128;
  static constexpr int kOctaves = 64;                ///< up to 1e-9 x 2^64 s, far beyond any run
  static constexpr double kRelativeError = 0.0027;

  LogHistogram();
  void add(double v) { add(v, 1); }
  /// `n` samples of value `v` (the sum grows by v x n: the mean may differ in the last bits from n single adds).
  void add(double v, std::uint64_t n);
  std::uint64_t count() const { return count_; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0; }
  double min() const { return count_ ? min_ : 0; }
  double max() const { return count_ ? max_ : 0; }
  /// The q-quantile, q in [0, 1] (nearest rank: the smallest value with at least q x count values <= it).
  double quantile(double q) const;
  LatencySummary summary() const;

 private:
  std::vector<std::uint64_t> buckets_;
  std::uint64_t count_ = 0;
  double sum_ = 0, min_ = 0, max_ = 0;
};

/// A finished request (Observer::on_request_done).
struct RequestRecord {
  std::uint64_t id = 0;
  std::uint32_t replica = 0;
  double arrival_s = 0, first_scheduled_s = 0, first_token_s = 0, finish_s = 0;
  i64 prompt_tokens = 0;
  i64 output_tokens = 0;       ///< generated (= the target, after truncation)
  i64 cached_prompt_tokens = 0;
  std::uint32_t preemptions = 0;
  bool truncated = false;
  std::int64_t conversation = -1;  ///< the conversation it was a turn of (-1: none)
  std::uint32_t turn = 0;          ///< 0-based
};

/// One replica's state at a sampling instant (the timeline CSV row).
struct TimelineSample {
  double time_s = 0;
  std::uint32_t replica = 0;
  i64 running = 0;
  i64 waiting = 0;
  std::uint64_t kv_used_blocks = 0;
  std::uint64_t kv_total_blocks = 0;
  double kv_utilization = 0;  ///< used / total
  std::uint64_t preemptions = 0;  ///< cumulative on this replica
};

/// A preemption (recompute) as the scheduler decided it.
struct PreemptionRecord {
  double time_s = 0;
  std::uint32_t replica = 0;
  std::uint64_t victim_id = 0;      ///< the most recently admitted running request
  std::uint64_t for_request_id = 0; ///< the request whose allocation failed (may be the victim)
  i64 free_blocks = 0;              ///< free blocks when the allocation failed
  i64 blocks_needed = 0;            ///< blocks that allocation asked for (> free_blocks)
  i64 victim_computed_tokens = 0;   ///< KV tokens the victim loses (to be recomputed)
};

/// One engine step as scheduled.
struct StepRecord {
  double start_s = 0, duration_s = 0;
  std::uint32_t replica = 0;
  i64 sequences = 0, tokens = 0;
  i64 decode_tokens = 0;  ///< sequences computing one token (decodes, and prompt chunks of one token)
  std::uint64_t kv_used_blocks = 0, kv_total_blocks = 0;
  i64 kv_slot_tokens = 0;       ///< tokens the scheduled and running requests' tables hold (after this step)
  i64 kv_table_blocks = 0;      ///< sum over running requests of their table sizes
};

/// Hooks for tests, timelines and per-request output. Called synchronously; all default to no-ops.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_request_done(const RequestRecord&) {}
  virtual void on_sample(const TimelineSample&) {}
  virtual void on_preemption(const PreemptionRecord&) {}
  virtual void on_step(const StepRecord&) {}
};

}  // namespace kvcap::sim
