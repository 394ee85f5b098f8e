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
  for (const auto& k :
       {Case{"llama-3.1-8b", "h100-sxm", 1}, Case{"llama-3.1-70b", "h100-sxm", 4}, Case{"mixtral-8x7b", "a100-80gb", 2},
        Case{"deepseek-v2-lite", "h100-sxm", 1}, Case{"mistral-7b-v0.1", "l40s", 1}, Case{"llama-2-7b", "a100-80gb", 1},
        Case{"deepseek-v3", "h200", 8}}) {
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
      CHECK(fc.experts_s == Approx(ref.stage.experts_s).epsilon(1e-9).margin(1e-15));
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

TEST_CASE("CUDA-graph padding: vLLM's capture sizes and what a padded step costs", "[speed][step_cost][cuda_graph]") {
  // vllm/config/vllm.py _set_cudagraph_sizes: 1, 2, 4, every 8 below 256, every 16 from 256, up to
  // min(2 x max_num_seqs, 512, max_num_batched_tokens).
  const auto sizes = cuda_graph_capture_sizes(1024, 8192);
  REQUIRE(sizes.size() == 3 + 31 + 17);
  CHECK(sizes[3] == 8);
  CHECK(sizes[33] == 248);
  CHECK(sizes[34] == 256);
  CHECK(sizes.back() == 512);
  CHECK(cuda_graph_capture_sizes(4, 8192) == std::vector<i64>{1, 2, 4, 8});
  // vllm#40734: max_num_batched_tokens itself is captured when within the bound (..., 272, 288, 300).
  const auto small = cuda_graph_capture_sizes(256, 300);
  CHECK(small.back() == 300);
  CHECK(small[small.size() - 2] == 288);

  Deployment d;
  d.max_model_len = 16384;
  d.tensor_parallel_size = 2;
  const auto m = profiles::resolve_model("mixtral-8x7b");
  const auto g = profiles::resolve_gpu("a100-80gb");
  SpeedOptions o;
  o.cuda_graph_padding = true;
  const auto padded = make_speed_context(m, g, d, o);
  const auto plain = make_speed_context(m, g, d, SpeedOptions{});
  CHECK(graph_tokens(padded, 5, false) == 8);
  CHECK(graph_tokens(padded, 513, false) == 513);  // beyond the largest graph: eager, unpadded
  CHECK(graph_tokens(plain, 5, false) == 5);
  // A decode batch of 5 runs the graph of 8: its GEMMs and the experts its router activates are those of 8 tokens
  // (the measured Mixtral steps of docs/speed-model.md: B = 5-7 take as long as B = 8), its KV read is its own.
  const auto b5 = decode_step(padded, 5, 1024), b8 = decode_step(padded, 8, 1024);
  CHECK(b5.stage.weight_bytes == Approx(b8.stage.weight_bytes).epsilon(1e-12));
  // ... but the LM head computes logits for the 5 real requests only (vLLM samples outside the graph).
  CHECK(b8.stage.gemm_flops - b5.stage.gemm_flops == Approx(2.0 * 3 * padded.stage_weights[0].head_elements));
  CHECK(b5.stage.kv_bytes < b8.stage.kv_bytes);
  CHECK(decode_step(plain, 5, 1024).stage.weight_bytes < b8.stage.weight_bytes);
  // The simulator's clock pads the same way, mixed steps included (vLLM V1 runs them as piecewise graphs).
  for (const auto& seqs :
       {std::vector<StepSequence>(5, {1000, 1, true}), std::vector<StepSequence>{{1000, 1, true}, {0, 100, true}}})
    CHECK(fast(padded, seqs) == Approx(mixed_step(padded, seqs).step_s).epsilon(1e-9));
  CHECK(graph_tokens(padded, 101, true) == 104);
  // With pipeline parallelism each micro-batch runs its own graph: the step never gets cheaper as the batch grows,
  // and the clock (equal shares) agrees with mixed_step (the heaviest micro-batch) on even batches, never above it.
  Deployment pp = d;
  pp.pipeline_parallel_size = 2;
  pp.tensor_parallel_size = 1;
  const auto pctx = make_speed_context(m, g, pp, o);
  double prev = 0;
  for (i64 b = 1; b <= 40; ++b) {
    const std::vector<StepSequence> seqs(static_cast<std::size_t>(b), {1000, 1, true});
    const double f = fast(pctx, seqs);
    INFO("decode batch " << b);
    CHECK(f >= prev);
    const double ref = mixed_step(pctx, seqs).step_s;
    if (b % 2 == 0) CHECK(f == Approx(ref).epsilon(1e-9));
    CHECK(f <= ref * (1 + 1e-9));
    prev = f;
  }
  // vLLM's V0 engine (0.7 and earlier) ran decode-only steps as graphs and steps with a prefill eagerly.
  o.cuda_graph_decode_only = true;
  const auto v0 = make_speed_context(m, g, d, o);
  CHECK(graph_tokens(v0, 5, false) == 8);
  CHECK(graph_tokens(v0, 101, true) == 101);  // a step with a prefill runs eagerly, unpadded
  CHECK(v0.cuda_graph_sizes.back() == 256);
  const std::vector<StepSequence> mixed = {{1000, 1, true}, {0, 100, true}};
  CHECK(fast(v0, mixed) == Approx(mixed_step(v0, mixed).step_s).epsilon(1e-9));
  CHECK(mixed_step(v0, mixed).step_s < mixed_step(padded, mixed).step_s);
}

TEST_CASE("the host's cost per sampled sequence: every clock adds it once per sequence that samples",
          "[speed][step_cost]") {
  Deployment d;
  d.max_model_len = 16384;
  const auto model = profiles::resolve_model("llama-3.1-8b");
  const auto gpu = profiles::resolve_gpu("h100-sxm");
  SpeedOptions o;
  const auto plain = make_speed_context(model, gpu, d, o);
  o.sequence_overhead_s = 20e-6;
  const auto with = make_speed_context(model, gpu, d, o);
  // mixed_load: 37 decodes and one whole prompt sample, the middle chunk of a long prompt does not.
  const double added = 38 * 20e-6;
  CHECK(mixed_step(with, mixed_load()).step_s - mixed_step(plain, mixed_load()).step_s == Approx(added));
  CHECK(fast(with, mixed_load()) - fast(plain, mixed_load()) == Approx(added));
  CHECK(fast(with, mixed_load()) == Approx(mixed_step(with, mixed_load()).step_s).epsilon(1e-9));
  // plan's decode step: TPOT grows by the cost of each sequence of the batch.
  const std::vector<i64> contexts(64, 2048);
  CHECK(decode_step(with, contexts).tpot_s - decode_step(plain, contexts).tpot_s == Approx(64 * 20e-6));
  // Under pipeline parallelism the step still pays for every sequence once (a PP-th on each of its PP stage times).
  d.pipeline_parallel_size = 2;
  d.num_gpus = 2;
  SpeedOptions o2;
  const auto plain_pp = make_speed_context(model, gpu, d, o2);
  o2.sequence_overhead_s = 20e-6;
  const auto with_pp = make_speed_context(model, gpu, d, o2);
  CHECK(decode_step(with_pp, contexts).tpot_s - decode_step(plain_pp, contexts).tpot_s == Approx(64 * 20e-6));
  CHECK(decode_step(with_pp, 64, 2048).tpot_s - decode_step(plain_pp, 64, 2048).tpot_s == Approx(64 * 20e-6));
  const std::vector<StepSequence> even(64, StepSequence{2047, 1, true});
  CHECK(mixed_step(with_pp, even).step_s - mixed_step(plain_pp, even).step_s == Approx(64 * 20e-6));
  CHECK(fast(with_pp, even) - fast(plain_pp, even) == Approx(64 * 20e-6));
  CHECK(prefill(with_pp, 3000).ttft_s - prefill(plain_pp, 3000).ttft_s == Approx(20e-6));  // one sample, at its end
  // A negative or non-finite cost is refused naming the option.
  o.sequence_overhead_s = -1e-6;
  CHECK_THROWS_WITH(make_speed_context(model, gpu, d, o), Catch::Contains("speed.sequence_overhead_s"));
}
