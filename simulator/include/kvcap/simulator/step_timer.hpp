#pragma once
// How long a replica's engine step takes. Two clocks:
//   roofline  the planner's speed model for a mixed step (StepCostModel: mixed_step() with its
//             per-deployment constants precomputed), with the binding stage's per-operation breakdown;
//   linear    fixed_s + per_token_s x tokens + per_kv_token_s x KV tokens read: for what-if runs and for
//             the queueing tests (a constant step time makes a replica an M/D/1 server).
#include <memory>
#include <optional>

#include "kvcap/planner/speed.hpp"

namespace kvcap::sim {

class StepTimer {
 public:
  static StepTimer roofline(const SpeedContext& c);
  static StepTimer linear(double fixed_s, double per_token_s = 0, double per_kv_token_s = 0);

  /// Adds one scheduled sequence to the step's load (per request per step: inline and cheap).
  void add(StepLoad& load, i64 past_tokens, i64 new_tokens, bool samples) const {
    if (model_) {
      model_->add(load, past_tokens, new_tokens, samples);
      return;
    }
    load.sequences += 1;
    load.tokens += new_tokens;
    load.samples += samples ? 1 : 0;
    load.decode_tokens += new_tokens == 1 ? 1 : 0;
    load.kv_read_tokens[0] += static_cast<double>(past_tokens + new_tokens);
  }
  /// Whether add_decodes() may stand for add() of each decode sequence (StepCostModel::decode_reads_held).
  bool adds_decodes() const { return !model_ || model_->decode_reads_held(); }
  /// `count` decode sequences holding `sum_held` tokens in all: as `count` calls of add(load, held - 1, 1, true).
  void add_decodes(StepLoad& load, i64 count, i64 sum_held) const {
    if (model_) {
      model_->add_decodes(load, count, sum_held);
      return;
    }
    load.sequences += count;
    load.tokens += count;
    load.samples += count;
    load.decode_tokens += count;
    load.kv_read_tokens[0] += static_cast<double>(sum_held);
  }
  StepCost cost(const StepLoad& load) const;
  bool is_roofline() const { return model_ != nullptr; }

 private:
  std::shared_ptr<const StepCostModel> model_;
  double fixed_s_ = 0, per_token_s_ = 0, per_kv_token_s_ = 0;
};

/// Adds a step's time and its breakdown to `sum` (a replica's busy time, the cluster's); `bound` stays as it was.
/// The binding stage's terms count pipeline_depth times, as its time does in step_s (PP micro-batches each pass
/// every stage), so that the terms' shares of the busy time add up as they do without PP.
inline void add_step_cost(StepCost& sum, const StepCost& c) {
  const double k = c.pipeline_depth;
  sum.step_s += c.step_s;
  sum.weights_read_s += k * c.weights_read_s;
  sum.kv_read_s += k * c.kv_read_s;
  sum.gemm_s += k * c.gemm_s;
  sum.attention_s += k * c.attention_s;
  sum.experts_s += k * c.experts_s;
  sum.communication_s += k * c.communication_s;
  sum.overhead_s += k * c.overhead_s;
  sum.pipeline_p2p_s += k * c.pipeline_p2p_s;
}

}  // namespace kvcap::sim
