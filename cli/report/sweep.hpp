#pragma once
// Streaming CSV / JSON writer for `kvcap sweep`: 10^6 rows without building a document in memory.
// Numbers via std::to_chars (shortest form at 6 significant digits), output flushed in 1 MiB blocks.
#include <ostream>
#include <string>

#include "kvcap/planner/sweep.hpp"

namespace kvcap::cli {

/// The fixed columns of one deployment in the grid.
struct SweepSeries {
  std::string model, gpu;
  i64 tp = 1, pp = 1;
  i64 dp = 1;  ///< data-parallel replicas of the deployment (each row is one replica's)
  i64 ep = 1;  ///< GPUs the routed experts are split over (1: no expert parallelism)
  std::string weight_dtype, kv_dtype;
  /// false when a finding leaves only `fits` meaningful (no KV memory, E101): the speed columns are empty (CSV) or
  /// null (JSON), as check leaves such promises unevaluated (docs/exit-codes-and-warnings.md).
  bool speed_meaningful = true;
};

class SweepWriter {
 public:
  SweepWriter(std::ostream& out, bool json);
  ~SweepWriter();
  SweepWriter(const SweepWriter&) = delete;
  SweepWriter& operator=(const SweepWriter&) = delete;
  /// Starts the rows of a deployment (cached prefix of every row).
  void series(const SweepSeries& s);
  void point(const SweepPoint& p);
  /// Closes the JSON array and flushes; called by the destructor when not called before.
  void finish();
  std::size_t rows() const { return rows_; }

 private:
  void flush_if_full();
  std::ostream& out_;
  bool json_;
  bool finished_ = false;
  std::size_t rows_ = 0;
  std::string buf_;
  std::string prefix_;
  bool speed_ = true;  ///< the series' speed_meaningful
};

}  // namespace kvcap::cli
