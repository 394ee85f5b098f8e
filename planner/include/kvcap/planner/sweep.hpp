#pragma once
// A grid of speed-model evaluations (contexts x batches) on one deployment, for plotting: `kvcap sweep`.
// The memory plan and the speed context are built once per deployment by the caller; per context the
// TTFT and the concurrency limit are computed once; per (context, batch) one decode step.
#include <functional>
#include <vector>

#include "kvcap/planner/speed.hpp"

namespace kvcap {

struct SweepPoint {
  i64 context_tokens = 0;
  i64 batch = 0;
  bool fits = false;           ///< context <= max_model_len, batch <= floor(concurrency) and <= max_num_seqs
  double max_concurrency = 0;  ///< requests of this context one replica's KV cache holds
  double ttft_s = 0;           ///< prefill of a context_tokens prompt, batch 1
  double tpot_s = 0;           ///< decode step of `batch` requests at this context
  double tokens_per_s = 0;     ///< batch / tpot, per replica
  double tokens_per_s_per_user = 0;
  Bound bound = Bound::memory;
};

/// Calls `emit` for every (context, batch) in order, contexts outermost. Throws SpecError for a
/// context or batch < 1.
void sweep_grid(const SpeedContext& c, const std::vector<i64>& contexts, const std::vector<i64>& batches,
                const std::function<void(const SweepPoint&)>& emit);

}  // namespace kvcap
