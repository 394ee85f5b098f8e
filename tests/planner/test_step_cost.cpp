// Mixed engine steps: the reference mixed_step() agrees with decode_step() and prefill() where they
// overlap, and the cached StepCostModel (the simulator's clock) agrees with mixed_step() to rounding for
// PP = 1 on dense, MoE, MLA and sliding-window models, with and without a calibration.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "kvcap/planner/speed.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

namespace {
SpeedContext ctx(const char* model, const char* g, i64 tp = 1, i64 pp = 1, std::optional<Calibration> cal = std::nullopt) {
  Deployment d;
  d.tensor_parallel_size = tp;
  d.pipeline_parallel_size = pp;
  d.max_model_len = 16384;
  return make_speed_context(profiles::resolve_model(model), profiles::resolve_gpu(g), d, SpeedOptions{}, cal);
}

double fast(const SpeedContext& c, const std::vector<StepSequence>& seqs, StepCost* out = nullptr) {
  const StepCostModel m(c);
  StepLoad load;
  for (const auto& q : seqs) m.add(load, q.past_tokens, q.new_tokens, q.samples);
  const StepCost cost = m.cost(load);
  if (out) *out = cost;
  return cost.step_s;
}

// A decode batch at assorted contexts, a prefill chunk continuing a prompt, and a fresh prompt.
std::vector<StepSequence> mixed_load() {
  std::vector<StepSequence> s;
  for (i64 i = 0; i < 37; ++i) s.push_back({100 + 97 * i, 1, true});
  s.push_back({2048, 1500, false});  // middle chunk of a long prompt: no sample
  s.push_back({0, 700, true});       // a whole short prompt: samples its first token
  return s;
}
}  // namespace

TEST_CASE("mixed_step of a pure decode batch is decode_step", "[speed][step_cost]") {
  const auto c = ctx("llama-3.1-8b", "h100-sxm");
  const std::vector<i64> contexts = {513, 1024, 4000, 77};
  std::vector<StepSequence> seqs;
  for (i64 s : contexts) seqs.push_back({s - 1, 1, true});
  CHECK(mixed_step(c, seqs).step_s == Approx(decode_step(c, contexts).tpot_s).epsilon(1e-12));
}

TEST_CASE("mixed_step of one prompt within the budget is prefill", "[speed][step_cost]") {
  const auto c = ctx("llama-3.1-70b", "h100-sxm", 4);
  const auto m = mixed_step(c, {{0, 3000, true}});
  CHECK(m.step_s == Approx(prefill(c, 3000).ttft_s).epsilon(1e-12));
  CHECK(m.tokens == 3000);
}

TEST_CASE("StepCostModel matches mixed_step for PP = 1", "[speed][step_cost]") {
  struct Case {
    const char* model;
    const char* gpu;
    i64 tp;
  };
  // dense GQA, dense TP, MoE (expected experts), MLA (absorbed decode / decompressing prefill),
  // sliding window (min(held, window) reads), MHA.
  for (const auto& k : {Case{"llama-3.1-8b", "h100-sxm", 1}, Case{"llama-3.1-70b", "h100-sxm", 4},
                        Case{"mixtral-8x7b", "a100-80gb", 2}, Case{"deepseek-v2-lite", "h100-sxm", 1},
                        Case{"mistral-7b-v0.1", "l40s", 1}, Case{"llama-2-7b", "a100-80gb", 1}}) {
    const auto c = ctx(k.model, k.gpu, k.tp);
    INFO(k.model << " on " << k.gpu << " TP " << k.tp);
    for (const auto& seqs : {mixed_load(), std::vector<StepSequence>{{5000, 1, true}},
                             std::vector<StepSequence>{{0, 8192, true}}, std::vector<StepSequence>{{6000, 2000, true}}}) {
      StepCost fc;
      const double f = fast(c, seqs, &fc);
      const MixedStep ref = mixed_step(c, seqs);
      CHECK(f == Approx(ref.step_s).epsilon(1e-9));
      CHECK(fc.weights_read_s == Approx(ref.stage.weights_read_s).epsilon(1e-9));
      CHECK(fc.kv_read_s == Approx(ref.stage.kv_read_s).epsilon(1e-9));
      CHECK(fc.gemm_s == Approx(ref.stage.gemm_s).epsilon(1e-9));
      CHECK(fc.attention_s == Approx(ref.stage.attention_s).epsilon(1e-9));
      CHECK(fc.communication_s == Approx(ref.stage.communication_s).epsilon(1e-9).margin(1e-15));
      CHECK(fc.bound == ref.bound);
    }
  }
}

TEST_CASE("StepCostModel matches mixed_step with decode context parallelism", "[speed][step_cost][dcp]") {
  Deployment d;
  d.tensor_parallel_size = 8;
  d.decode_context_parallel_size = 4;
  d.max_model_len = 16384;
  for (const char* model : {"deepseek-v3", "qwen3-235b-a22b"}) {
    if (std::string(model) == "qwen3-235b-a22b") d.decode_context_parallel_size = 2;
    const auto c = make_speed_context(profiles::resolve_model(model), profiles::resolve_gpu("h200"), d);
    INFO(model);
    for (const auto& seqs : {mixed_load(), std::vector<StepSequence>{{6000, 2000, true}}}) {
      StepCost fc;
      const double f = fast(c, seqs, &fc);
      const MixedStep ref = mixed_step(c, seqs);
      CHECK(f == Approx(ref.step_s).epsilon(1e-9));
      CHECK(fc.kv_read_s == Approx(ref.stage.kv_read_s).epsilon(1e-9));
      CHECK(fc.attention_s == Approx(ref.stage.attention_s).epsilon(1e-9));
      CHECK(fc.communication_s == Approx(ref.stage.communication_s).epsilon(1e-9));
    }
  }
}

TEST_CASE("StepCostModel follows a calibration's GEMM classes like mixed_step", "[speed][step_cost]") {
  Calibration cal;
  cal.decode = {4e-6, 2.5e12};
  cal.stream = {2.9e12};
  cal.gemm = {{1, 64, 2.0e14}, {65, 1024, 5.5e14}, {1025, 1 << 20, 7.0e14}};
  cal.prefill_attention = {3.0e14};
  const auto c = ctx("llama-3.1-8b", "h100-sxm", 1, 1, cal);
  for (i64 chunk : {16, 500, 4000})
    CHECK(fast(c, {{0, chunk, true}}) == Approx(mixed_step(c, {{0, chunk, true}}).step_s).epsilon(1e-9));
  CHECK(fast(c, mixed_load()) == Approx(mixed_step(c, mixed_load()).step_s).epsilon(1e-9));
}

TEST_CASE("StepCostModel with PP splits the load into equal micro-batches", "[speed][step_cost]") {
  const auto c = ctx("llama-3.1-70b", "h100-sxm", 4, 2);
  // Balanced: an even decode batch at one context gives the same micro-batches either way.
  std::vector<StepSequence> even(64, StepSequence{2047, 1, true});
  CHECK(fast(c, even) == Approx(mixed_step(c, even).step_s).epsilon(1e-9));
  CHECK(mixed_step(c, even).step_s == Approx(decode_step(c, 64, 2048).tpot_s).epsilon(1e-12));
  // Unbalanced (mixed): the mean micro-batch is never slower than the heaviest, and close to it here.
  const double f = fast(c, mixed_load()), ref = mixed_step(c, mixed_load()).step_s;
  CHECK(f <= ref * (1 + 1e-12));
  CHECK(f > 0.6 * ref);
}

TEST_CASE("step cost grows with tokens and with context", "[speed][step_cost]") {
  const auto c = ctx("llama-3.1-8b", "h100-sxm");
  CHECK(fast(c, {{1000, 1, true}, {1000, 1, true}}) > fast(c, {{1000, 1, true}}));
  CHECK(fast(c, {{100000 / 8, 1, true}}) > fast(c, {{100, 1, true}}));
  CHECK(fast(c, {{0, 4000, true}}) > fast(c, {{0, 400, true}}));
  CHECK_THROWS_AS(mixed_step(c, {}), SpecError);
  CHECK_THROWS_AS(mixed_step(c, {{0, 0, true}}), SpecError);
}
