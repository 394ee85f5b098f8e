#include "kvcap/planner/sweep.hpp"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "kvcap/planner/error.hpp"
#include "kvcap/planner/text.hpp"

namespace kvcap {

void sweep_grid(const SpeedContext& c, const std::vector<i64>& contexts, const std::vector<i64>& batches,
                const std::function<void(const SweepPoint&)>& emit) {
  for (i64 b : batches)
    if (b < 1) throw SpecError("batch", "must be >= 1 (got " + std::to_string(b) + ")");
  for (i64 s : contexts)
    if (s < 1) throw SpecError("context_tokens", "must be >= 1 (got " + std::to_string(s) + ")");
  const i64 seqs = c.plan.dep.max_num_seqs, max_len = c.plan.dep.max_model_len;
  const bool starts = c.plan.fits() && !c.plan.seqs_exceed_state_blocks();
  // Without pipeline parallelism the precomputed step-cost model gives decode_step()'s time to rounding in
  // O(1) per point (tests/planner/test_step_cost.cpp); with PP, decode_step() itself (its micro-batches
  // are whole requests, the cost model's are equal shares).
  std::optional<StepCostModel> fast;
  if (c.plan.dep.d.pipeline_parallel_size == 1) fast.emplace(c);
  // Every context's prefill first: a context too long to prefill is an error before this deployment emits a row.
  std::vector<double> ttfts;
  ttfts.reserve(contexts.size());
  for (i64 s : contexts) {
    try {
      ttfts.push_back(ttft_s(c, s));
    } catch (const SpecError& e) {
      throw SpecError("contexts", human_tokens(s) + " (" + std::to_string(s) + " tokens): " + e.reason());
    }
  }
  for (std::size_t i = 0; i < contexts.size(); ++i) {
    const i64 s = contexts[i];
    SweepPoint p;
    p.context_tokens = s;
    p.max_concurrency = concurrency_at(c.model, c.plan, s);
    p.ttft_s = ttfts[i];
    // A batch fits what decodes at once (sliding windows hold their window), which for such models exceeds the
    // curve's concurrency, vLLM's charge.
    const double limit = std::floor(running_concurrency_at(c.plan, s, s));
    StepLoad one;  // one request decoding at context s; a batch of B identical ones is B times each sum
    if (fast) fast->add(one, s - 1, 1, true);
    for (i64 b : batches) {
      p.batch = b;
      // A deployment vLLM does not start fits nothing: one request of max_model_len beyond its pool, or (vLLM 0.19+,
      // states) max_num_seqs above its blocks.
      p.fits = starts && s <= max_len && b <= seqs && static_cast<double>(b) <= limit;
      if (fast) {
        StepLoad load = one;
        const double n = static_cast<double>(b);
        load.sequences = b;
        load.tokens = b;
        load.samples = b;
        for (int w = 0; w < 2; ++w) load.kv_read_tokens[w] *= n, load.decode_pairs[w] *= n;
        const StepCost st = fast->cost(load);
        p.tpot_s = st.step_s;
        p.bound = st.bound;
      } else {
        const DecodeStep st = decode_step(c, b, s);
        p.tpot_s = st.tpot_s;
        p.bound = st.bound;
      }
      p.tokens_per_s = static_cast<double>(b) / p.tpot_s;
      p.tokens_per_s_per_user = 1.0 / p.tpot_s;
      emit(p);
    }
  }
}

}  // namespace kvcap
