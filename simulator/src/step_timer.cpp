#include "kvcap/simulator/step_timer.hpp"

#include <cmath>
#include <stdexcept>

namespace kvcap::sim {

StepTimer StepTimer::roofline(const SpeedContext& c) {
  StepTimer t;
  t.model_ = std::make_shared<const StepCostModel>(c);
  return t;
}

StepTimer StepTimer::linear(double fixed_s, double per_token_s, double per_kv_token_s) {
  for (double v : {fixed_s, per_token_s, per_kv_token_s})
    if (!(std::isfinite(v) && v >= 0)) throw std::invalid_argument("linear step time: coefficients must be finite and >= 0");
  if (!(fixed_s > 0 || per_token_s > 0)) throw std::invalid_argument("linear step time: a step must take some time");
  StepTimer t;
  t.fixed_s_ = fixed_s;
  t.per_token_s_ = per_token_s;
  t.per_kv_token_s_ = per_kv_token_s;
  return t;
}

StepCost StepTimer::cost(const StepLoad& load) const {
  if (model_) return model_->cost(load);
  StepCost c;
  c.overhead_s = fixed_s_;
  c.gemm_s = per_token_s_ * static_cast<double>(load.tokens);
  c.kv_read_s = per_kv_token_s_ * load.kv_read_tokens[0];
  c.step_s = c.overhead_s + c.gemm_s + c.kv_read_s;
  c.bound = c.kv_read_s >= c.gemm_s ? Bound::memory : Bound::compute;
  return c;
}

}  // namespace kvcap::sim
