// The speed model: bounds it must respect, how each term scales, MoE expert activation, and the
// published measurements of shared/fixtures/speed_measurements.md pinned within the errors that
// docs/speed-model.md reports.
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>

#include "kvcap/planner/engine.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/params.hpp"
#include "kvcap/planner/speed.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

namespace {
ModelSpec builtin(const char* n) { return profiles::resolve_model(n); }
GpuSpec gpu(const char* n) { return profiles::resolve_gpu(n); }
SpeedContext ctx(const char* model, const char* g, i64 tp = 1, DType q = DType::auto_, DType kv = DType::auto_,
                 SpeedOptions o = {}, i64 pp = 1) {
  Deployment d;
  d.tensor_parallel_size = tp;
  d.pipeline_parallel_size = pp;
  d.quantization = q;
  d.kv_cache_dtype = kv;
  d.max_model_len = 8192;
  return make_speed_context(builtin(model), gpu(g), d, o);
}
/// value(b) for b = 1..last never falls as b grows (a batch's step time, its experts' time).
template <class F>
void check_never_falls(F value, i64 last) {
  double prev = 0;
  for (i64 b = 1; b <= last; ++b) {
    const double v = value(b);
    INFO("batch " << b << ": " << v << " after " << prev);
    CHECK(v >= prev);
    prev = v;
  }
}
}  // namespace

TEST_CASE("batch-1 TPOT is never faster than reading the weights at datasheet bandwidth", "[speed]") {
  for (const char* g : {"h100-sxm", "a100-80gb", "l40s"}) {
    const auto c = ctx("llama-3.1-8b", g);
    const auto st = decode_step(c, 1, 1024);
    const double bound = static_cast<double>(c.plan.stages[0].weights_bytes) / c.gpu.memory_bandwidth_bytes_per_s;
    INFO(g << ": tpot " << st.tpot_s << " s, weights / datasheet " << bound << " s");
    // The bytes read exclude only the embedding table (a gather), so they are close to the stored weights.
    CHECK(st.stage.weight_bytes > 0.9 * static_cast<double>(c.plan.stages[0].weights_bytes));
    CHECK(st.tpot_s >= st.stage.weight_bytes / c.gpu.memory_bandwidth_bytes_per_s);
    CHECK(st.tpot_s > 0.9 * bound);
    CHECK(st.bound == Bound::memory);
    CHECK(st.source.memory == "datasheet");
    CHECK(st.stage.total_s == Approx(std::max(st.stage.memory_s, st.stage.compute_s) + st.stage.communication_s +
                                     st.stage.overhead_s));
  }
}

TEST_CASE("doubling the bandwidth halves the memory-bound terms", "[speed]") {
  const auto a = ctx("llama-3.1-8b", "h100-sxm");
  auto faster = a;
  faster.gpu.memory_bandwidth_bytes_per_s *= 2;
  const auto s1 = decode_step(a, 8, 4096), s2 = decode_step(faster, 8, 4096);
  CHECK(s2.stage.weights_read_s == Approx(s1.stage.weights_read_s / 2));
  CHECK(s2.stage.kv_read_s == Approx(s1.stage.kv_read_s / 2));
  CHECK(s2.stage.memory_s == Approx(s1.stage.memory_s / 2));
  CHECK(s2.stage.weight_bytes == s1.stage.weight_bytes);
  CHECK(s2.tpot_s < s1.tpot_s);
}

TEST_CASE("MoE reads only the experts a batch activates", "[speed][moe]") {
  SECTION("expected distinct experts: E (1 - (1 - k/E)^B), approaching E") {
    CHECK(expected_active_experts(8, 2, 1) == Approx(2));
    CHECK(expected_active_experts(8, 2, 2) == Approx(8 * (1 - 0.75 * 0.75)));
    CHECK(expected_active_experts(256, 8, 0) == Approx(0).margin(1e-12));
    double prev = 0;
    for (double b : {1.0, 2.0, 4.0, 16.0, 64.0, 256.0}) {
      const double e = expected_active_experts(8, 2, b);
      CHECK(e > prev);
      CHECK(e <= 8);
      prev = e;
    }
    CHECK(expected_active_experts(8, 2, 64) == Approx(8).epsilon(1e-6));
    CHECK(expected_active_experts(256, 8, 4096) == Approx(256).epsilon(1e-6));
    CHECK(expected_active_experts(8, 8, 1) == Approx(8));
    CHECK_THROWS_AS(expected_active_experts(8, 9, 1), SpecError);
  }
  SECTION("mixtral-8x7b at batch 1 reads far less than a dense model of the same total size") {
    const auto c = ctx("mixtral-8x7b", "h100-sxm", 2);
    const auto b1 = decode_step(c, 1, 1024);
    const double stored = static_cast<double>(c.plan.stages[0].weights_bytes);
    // Top-2 of 8 experts: about 13B of 47B parameters are touched by one token.
    CHECK(b1.stage.weight_bytes < 0.35 * stored);
    CHECK(b1.stage.weight_bytes > 0.20 * stored);
    // A dense model of the same total size reads all of it.
    CHECK(b1.stage.weights_read_s < 0.35 * stored / (c.options.bandwidth_efficiency * c.gpu.memory_bandwidth_bytes_per_s));
    // Large batches activate every expert: the read approaches the stored weights.
    const auto b64 = decode_step(c, 64, 1024);
    CHECK(b64.stage.weight_bytes > 0.97 * stored);
    CHECK(b64.stage.weight_bytes <= stored);
    CHECK(decode_step(c, 2, 1024).stage.weight_bytes > b1.stage.weight_bytes);
  }
}

TEST_CASE("routed experts: a grouped GEMM at W / (W + half width) of the dense rate, in series", "[speed][moe]") {
  // One 8192-token prefill chunk, where every expert is busy and the GEMMs dominate.
  const std::vector<StepSequence> chunk{{0, 8192, true}};
  auto step = [&](const char* model, i64 tp, double half_width) {
    SpeedOptions o;
    o.expert_gemm_half_width = half_width;
    return mixed_step(ctx(model, "h200", tp, DType::auto_, DType::auto_, o), chunk).stage;
  };
  SECTION("DeepSeek-V3 on TP 8: experts 2048 wide, 256 per rank, run at 256 / 556 of the dense rate") {
    const StepBreakdown off = step("deepseek-v3", 8, 0), near_dense = step("deepseek-v3", 8, 1e-9),
                        grouped = step("deepseek-v3", 8, 300), wider = step("deepseek-v3", 8, 600);
    CHECK(off.experts_s == 0);
    // What the routed experts read and compute, from the same step with the factor off (overlapped) and at ~1.
    const double read_s = off.weights_read_s - near_dense.weights_read_s;
    const double gemm_s = off.gemm_s - near_dense.gemm_s;
    REQUIRE(read_s > 0);
    REQUIRE(gemm_s > 0);
    CHECK(near_dense.experts_s == Approx(read_s + gemm_s).epsilon(1e-6));
    CHECK(grouped.experts_s == Approx(read_s + gemm_s * (1 + 300.0 / 256)).epsilon(1e-6));
    CHECK(wider.experts_s == Approx(read_s + gemm_s * (1 + 600.0 / 256)).epsilon(1e-6));
    // The rest of the step is untouched; the total adds the experts in series.
    CHECK(grouped.gemm_s == Approx(near_dense.gemm_s));
    CHECK(grouped.total_s == Approx(std::max(grouped.memory_s, grouped.compute_s) + grouped.experts_s +
                                    grouped.communication_s + grouped.overhead_s));
    CHECK(grouped.total_s > off.total_s);
  }
  SECTION("wider shards run closer to the dense rate: TP 2 loses less than TP 8 of the same experts") {
    auto loss = [&](i64 tp) {
      const StepBreakdown a = step("qwen3-30b-a3b", tp, 300), b = step("qwen3-30b-a3b", tp, 1e-9);
      return a.experts_s / b.experts_s;
    };
    CHECK(loss(2) < loss(8));
    CHECK(loss(2) > 1);
  }
  SECTION("the bound counts the experts' read as memory and their GEMMs as compute") {
    const StepBreakdown decode = mixed_step(ctx("deepseek-v3", "h200", 8), {{1024, 1, true}}).stage;
    REQUIRE(decode.experts_read_s > decode.compute_s + (decode.experts_s - decode.experts_read_s) - decode.memory_s);
    CHECK(decode.bound == Bound::memory);
    const StepBreakdown grouped = step("deepseek-v3", 8, 300);
    CHECK(grouped.compute_s + grouped.experts_s - grouped.experts_read_s > grouped.memory_s + grouped.experts_read_s);
    CHECK(grouped.bound == Bound::compute);
  }
  SECTION("with a calibration, the experts' FLOPs take its compute-bound class, not a memory-bound small-M one") {
    // As kvcap calibrate measures an H200 (profiles/calibrations/h200-2026-11-27-full.yaml): a GEMM of a few rows runs
    // at the rate its weight read allows, and the experts' time holds their read already.
    Calibration k;
    k.source = "test";
    k.device = "NVIDIA H200";
    k.stream.read_bytes_per_s = 4.0e12;
    k.gemm = {{1, 16, 1.85e13}, {17, 256, 2.0e14}, {257, 1 << 20, 6.5e14}};
    const auto base = ctx("deepseek-v3", "h200", 8);
    const auto c = make_speed_context(base.model, base.gpu, base.plan, {}, k);
    // More tokens, more experts read and more FLOPs: never less time.
    check_never_falls([&](i64 b) { return decode_step(c, b, 2048).stage.experts_s; }, 64);
    // At batch 16 the rest of the GEMMs run at 16 x the stream bandwidth (the 1-16 class's 1.85e13 is a
    // read-limited rate: its floor), the experts' at 6.5e14 x 256 / 556 (fp8 weights: both x the datasheet's
    // fp8 / bf16 ratio).
    const double fp8 = base.gpu.fp8_dense_flops / base.gpu.bf16_dense_flops;
    const StepBreakdown on16 = decode_step(c, 16, 2048).stage;
    const double routed_flops = on16.gemm_flops - on16.gemm_s * 16 * 4.0e12 * fp8;
    REQUIRE(routed_flops > 0);  // (the fp8 weights' block scales put the floor a hair lower: 1e-3)
    CHECK(on16.experts_s - on16.experts_read_s == Approx(routed_flops / (6.5e14 * fp8 * 256.0 / 556.0)).epsilon(1e-3));
  }
  SECTION("a dense model has no routed experts: the factor changes nothing") {
    const StepBreakdown a = step("llama-3.1-70b", 4, 300), b = step("llama-3.1-70b", 4, 0);
    CHECK(a.experts_s == 0);
    CHECK(a.total_s == b.total_s);
  }
}

TEST_CASE("all-reduce: the ring formula where the GPU profile has no measurements", "[speed][tp]") {
  const auto g = gpu("a100-80gb");
  REQUIRE(g.allreduce_measured.empty());
  CHECK(allreduce_time_s(g, 1, 1e6) == 0);
  // NCCL reaches 370 of NVLink's 450 GB/s (NVIDIA/nccl-tests#212): the ring moves 2(tp-1)/tp of the message.
  CHECK(allreduce_time_s(g, 2, 1e6) ==
        Approx(1e6 / (370.0 / 450.0 * g.interconnect_bandwidth_bytes_per_s) + g.interconnect_latency_s));
  CHECK(allreduce_time_s(g, 8, 1e6) ==
        Approx(1.75e6 / (370.0 / 450.0 * g.interconnect_bandwidth_bytes_per_s) + g.interconnect_latency_s));
}

TEST_CASE("all-reduce: the measured times of the H100 profile, interpolated", "[speed][tp]") {
  const auto g = gpu("h100-sxm");
  REQUIRE(!g.allreduce_measured.empty());
  // At a measured point, the measurement (sgl-project/sglang#2904, float32 elements x 4 bytes: TP 8, 1 MiB, 16.7 us;
  // TP 2, 4 MiB, 19.9 us).
  CHECK(allreduce_time_s(g, 8, 1048576) == Approx(16.7e-6));
  CHECK(allreduce_time_s(g, 2, 4194304) == Approx(19.9e-6));
  // Below the smallest size, its time; between sizes, linear (TP 8: 22.1 us at 2 MiB, 33.8 us at 4 MiB).
  CHECK(allreduce_time_s(g, 8, 100) == Approx(5.9e-6));
  CHECK(allreduce_time_s(g, 8, 3145728) == Approx((22.1e-6 + 33.8e-6) / 2));
  // Between TP sizes, linear in TP (TP 6: halfway between TP 4's 13.9 us and TP 8's 16.7 us at 1 MiB).
  CHECK(allreduce_time_s(g, 6, 1048576) == Approx((13.9e-6 + 16.7e-6) / 2));
  // Past the largest size, the ring's bandwidth term for the bytes beyond it.
  const double extra = 2.0 * 7 / 8 * (8e6 - 4194304) / (370.0 / 450.0 * g.interconnect_bandwidth_bytes_per_s);
  CHECK(allreduce_time_s(g, 8, 8e6) == Approx(33.8e-6 + extra));
  // Beyond the largest measured TP: at least TP 8's time, and at least the formula.
  CHECK(allreduce_time_s(g, 16, 1048576) >= allreduce_time_s(g, 8, 1048576));
  // A decode-sized message (batch 32 of Llama-70B's hidden 8192, bf16: 512 KiB) costs more than the ring formula at
  // the link rate would say: that is what the measurements add.
  CHECK(allreduce_time_s(g, 8, 524288) > 1.5 * (1.75 * 524288 / g.interconnect_bandwidth_bytes_per_s + 5e-6));
  // A message that is no number of bytes is refused, not turned into NaN.
  CHECK_THROWS_AS(allreduce_time_s(g, 3, std::numeric_limits<double>::infinity()), SpecError);
  CHECK_THROWS_AS(allreduce_time_s(g, 8, -1), SpecError);
}

TEST_CASE("tensor-parallel all-reduce time grows with TP", "[speed][tp]") {
  const auto g = gpu("h100-sxm");
  CHECK(allreduce_time_s(g, 1, 1e6) == 0);
  CHECK(allreduce_time_s(g, 4, 1e6) > allreduce_time_s(g, 2, 1e6));
  CHECK(allreduce_time_s(g, 8, 1e6) > allreduce_time_s(g, 4, 1e6));
  double prev = 0;
  for (i64 tp : {1, 2, 4, 8}) {
    const auto st = decode_step(ctx("llama-3.1-70b", "h100-sxm", tp), 64, 2048);
    INFO("TP" << tp << ": communication " << st.stage.communication_s);
    if (tp == 1) CHECK(st.stage.communication_s == 0);
    else CHECK(st.stage.communication_s > prev);
    prev = st.stage.communication_s;
  }
}

TEST_CASE("fp8 KV reads half the KV bytes of bf16", "[speed][kv]") {
  const auto bf = decode_step(ctx("llama-3.1-8b", "h100-sxm", 1, DType::auto_, DType::bf16), 16, 4096);
  const auto f8 = decode_step(ctx("llama-3.1-8b", "h100-sxm", 1, DType::auto_, DType::fp8), 16, 4096);
  CHECK(f8.stage.kv_bytes == Approx(bf.stage.kv_bytes / 2));
  // 16 requests x 4096 tokens x 128 KiB per token (32 layers x 2 x 8 heads x 128 x 2 B).
  CHECK(bf.stage.kv_bytes == Approx(16.0 * 4096 * 131072));
  CHECK(f8.stage.weight_bytes == bf.stage.weight_bytes);
}

TEST_CASE("sliding-window KV read stops growing past the window", "[speed][kv]") {
  const auto c = ctx("mistral-7b-v0.1", "h100-sxm");  // every layer slides over 4096 tokens
  REQUIRE(c.model.sliding_window == 4096);
  const double at_2k = decode_step(c, 4, 2048).stage.kv_bytes;
  const double at_4k = decode_step(c, 4, 4096).stage.kv_bytes;
  CHECK(at_4k == Approx(2 * at_2k));
  CHECK(decode_step(c, 4, 8000).stage.kv_bytes == Approx(at_4k));
  CHECK(decode_step(c, 4, 32000).stage.kv_bytes == Approx(at_4k));
  // A full-attention model keeps growing.
  const auto full = ctx("mistral-7b-v0.3", "h100-sxm");
  CHECK(decode_step(full, 4, 8000).stage.kv_bytes > 1.9 * decode_step(full, 4, 4096).stage.kv_bytes);
}

TEST_CASE("MLA decode reads the replicated latent, not per-head K and V", "[speed][kv][mla]") {
  const auto c = ctx("deepseek-v3", "h200", 8);
  const auto st = decode_step(c, 1, 4096);
  // (512 + 64) x 1 B (bf16 dtype -> kv auto = bf16: 2 B) per token per layer, 61 layers, on every rank.
  CHECK(st.stage.kv_bytes == Approx(4096.0 * 576 * 2 * 61));
  CHECK(st.stage.attention_flops > 0);
}

TEST_CASE("prefill is never faster than reading the weights once per chunk", "[speed][prefill]") {
  for (i64 s : {1, 16, 128, 2048, 20000}) {
    const auto c = ctx("llama-3.1-8b", "a100-80gb");  // 2048-token chunks on A100
    const auto p = prefill(c, s);
    INFO("S = " << s);
    CHECK(p.chunks.size() == static_cast<std::size_t>((s + 2047) / 2048));
    for (const auto& ch : p.chunks) CHECK(ch.total_s >= ch.weights_read_s);
    CHECK(p.ttft_s >= static_cast<double>(p.chunks.size()) * p.chunks[0].weight_bytes /
                          (c.options.bandwidth_efficiency * c.gpu.memory_bandwidth_bytes_per_s));
    CHECK(p.total.tokens == s);
  }
  // Long prompts are compute-bound; causal attention grows with S^2.
  const auto c = ctx("llama-3.1-8b", "h100-sxm");
  const auto p8k = prefill(c, 8192);
  CHECK(p8k.bound == Bound::compute);
  CHECK(p8k.total.attention_flops == Approx(4.0 * 32 * 128 * 32 * (8192.0 * 8193 / 2)));
  CHECK(ttft_s(c, 8192) > ttft_s(c, 4096));
  // fp8 weights run on fp8 tensor cores: compute-bound prefill gets faster.
  CHECK(ttft_s(ctx("llama-3.1-8b", "h100-sxm", 1, DType::fp8), 8192) < 0.8 * ttft_s(c, 8192));
}

TEST_CASE("largest batch meeting a TPOT target is monotone and bounded by memory", "[speed][batch]") {
  const auto c = ctx("llama-3.1-8b", "h100-sxm");
  const i64 s = 4096;
  const i64 mem = static_cast<i64>(std::floor(concurrency_at(c.model, c.plan, s)));
  i64 prev = 0;
  for (double target : {0.004, 0.006, 0.008, 0.012, 0.020, 0.040, 0.080, 1.0}) {
    const auto lim = max_batch_for_tpot(c, target, s);
    INFO("target " << target << ": batch " << lim.batch << " (" << lim.limited_by << ")");
    CHECK(lim.batch >= prev);
    CHECK(lim.batch <= lim.memory_limit);
    CHECK(lim.memory_limit <= mem);
    if (lim.batch > 0) CHECK(lim.step.tpot_s <= target);
    if (lim.batch > 0 && lim.batch < lim.memory_limit) CHECK(tpot_s(c, lim.batch + 1, s) > target);
    prev = lim.batch;
  }
  CHECK(max_batch_for_tpot(c, 0.001, s).batch == 0);
  const auto loose = max_batch_for_tpot(c, 10.0, s);
  CHECK(loose.batch == loose.memory_limit);
  CHECK(loose.limited_by == "memory");
  CHECK(max_batch_for_tpot(c, 10.0, 64).limited_by == "max_num_seqs");
  CHECK_THROWS_AS(max_batch_for_tpot(c, 0.0, s), SpecError);
  CHECK_THROWS_AS(max_batch_for_tpot(c, -0.01, s), SpecError);
  CHECK_THROWS_AS(max_batch_for_tpot(c, std::numeric_limits<double>::quiet_NaN(), s), SpecError);
  CHECK_THROWS_AS(max_batch_for_tpot(c, 0.01, 0), SpecError);
  CHECK_THROWS_AS(decode_step(c, 0, 128), SpecError);
  CHECK_THROWS_AS(prefill(c, 0), SpecError);
  SpeedOptions bad;
  bad.bandwidth_efficiency = 1.5;
  CHECK_THROWS_AS(ctx("llama-3.1-8b", "h100-sxm", 1, DType::auto_, DType::auto_, bad), SpecError);
}

TEST_CASE("throughput-latency curve: throughput and TPOT rise with the batch up to the memory limit", "[speed][batch]") {
  const auto c = ctx("llama-3.1-8b", "h100-sxm");
  const auto curve = throughput_latency_curve(c, 2048);
  REQUIRE(curve.size() > 3);
  CHECK(curve.front().batch == 1);
  CHECK(curve.back().batch == max_batch_for_tpot(c, 100.0, 2048).memory_limit);
  for (std::size_t i = 1; i < curve.size(); ++i) {
    CHECK(curve[i].tpot_s >= curve[i - 1].tpot_s);
    CHECK(curve[i].tokens_per_s > curve[i - 1].tokens_per_s);
    CHECK(curve[i].tokens_per_s == Approx(static_cast<double>(curve[i].batch) / curve[i].tpot_s));
  }
  CHECK(throughput_latency_curve(c, 2048, 10).back().batch == 10);
}

TEST_CASE("a request's estimate: TTFT, mean TPOT between the first and last step, end-to-end", "[speed]") {
  const auto c = ctx("llama-3.1-8b", "h100-sxm");
  const auto r = estimate_request(c, 32, 1000, 500);
  CHECK(r.ttft_s == Approx(ttft_s(c, 1000)));
  CHECK(r.mean_tpot_s >= r.first_step.tpot_s);
  CHECK(r.mean_tpot_s <= r.last_step.tpot_s);
  CHECK(r.e2e_s == Approx(r.ttft_s + 499 * r.mean_tpot_s));
  CHECK_THROWS_AS(estimate_request(c, 32, 1000, 0), SpecError);
}

TEST_CASE("pipeline parallelism: PP micro-batches, bubbles when the batch is smaller", "[speed][pp]") {
  const auto c = ctx("llama-3.1-70b", "h100-sxm", 2, DType::auto_, DType::auto_, {}, 2);
  const auto one = decode_step(c, 1, 1024);
  CHECK(one.micro_batches == 1);
  CHECK(one.pipeline_bubble_s > 0);
  CHECK(one.tpot_s == Approx(2 * (one.stage.total_s + one.pipeline_p2p_s)));
  const auto full = decode_step(c, 8, 1024);
  CHECK(full.micro_batches == 2);
  CHECK(full.micro_batch_size == 4);
  CHECK(full.pipeline_bubble_s == 0);
  // Each stage holds half the layers: a stage step reads about half the weights of one TP2 rank.
  const auto flat = decode_step(ctx("llama-3.1-70b", "h100-sxm", 2), 1, 1024);
  CHECK(one.stage.weight_bytes < 0.55 * flat.stage.weight_bytes);
}

TEST_CASE("a calibration replaces datasheet x efficiency and says so", "[speed][calibration]") {
  Calibration k;
  k.source = "test";
  k.device = "NVIDIA H100 80GB HBM3";
  k.decode = {5e-6, 3.0e12};
  k.stream.read_bytes_per_s = 2.9e12;
  k.gemm = {{1, 64, 300e12}, {65, 1 << 20, 700e12}};
  k.prefill_attention.flops_per_s = 400e12;
  const auto base = ctx("llama-3.1-8b", "h100-sxm");
  const auto c = make_speed_context(base.model, base.gpu, base.plan, {}, k);
  const auto st = decode_step(c, 8, 2048);
  CHECK(st.source.memory == "calibrated");
  CHECK(st.source.compute == "calibrated");
  CHECK(st.stage.weights_read_s == Approx(st.stage.weight_bytes / 2.9e12));
  CHECK(st.stage.kv_read_s == Approx(st.stage.kv_bytes / 3.0e12 + 32 * 5e-6));
  CHECK(st.stage.gemm_s == Approx(st.stage.gemm_flops / 300e12));
  CHECK(gemm_flops_for(k, 4096) == 700e12);
  CHECK(gemm_flops_for(k, 0) == 300e12);
  // A read-limited small-M class (its rate at least m_min x the stream bandwidth) is not a FLOP rate: the read is
  // weights_read_s's, so a step of 16 tokens never takes longer than one of 17 (the next class).
  Calibration small_m = k;
  small_m.gemm = {{1, 16, 1.85e13}, {17, 256, 2.45e14}, {257, 1 << 20, 7.7e14}};  // as h200-2026-11-27-full.yaml
  const auto big = ctx("llama-3.1-70b", "h100-sxm", 8);
  const auto c70 = make_speed_context(big.model, big.gpu, big.plan, {}, small_m);
  check_never_falls([&](i64 b) { return decode_step(c70, b, 2048).tpot_s; }, 64);
  // int4 weights (weight-only) read a quarter of bf16's bytes: the floor is 4 x M x the bandwidth, else the 1-16
  // class made batch 16 compute-bound at 1.8x batch 17's step.
  const auto q4 = ctx("llama-3.1-70b", "h100-sxm", 4, DType::int4);
  const auto c4 = make_speed_context(q4.model, q4.gpu, q4.plan, {}, small_m);
  check_never_falls([&](i64 b) { return decode_step(c4, b, 2048).tpot_s; }, 64);
  // Across a class's lower edge the GEMM time does not fall (7.0e14 up to 2,048 tokens, 7.7e14 beyond): a prompt of
  // 2,049 tokens is never quicker than one of 2,048.
  small_m.gemm = {{1, 16, 1.85e13}, {17, 256, 2.45e14}, {257, 2048, 7.0e14}, {2049, 1 << 20, 7.7e14}};
  const auto c8 = make_speed_context(base.model, base.gpu, base.plan, {}, small_m);
  double before = 0;
  for (const i64 prompt : {2000, 2047, 2048, 2049, 2050, 2200, 2300, 4096}) {
    const double t = prefill(c8, prompt).ttft_s;
    INFO("prompt " << prompt << ": " << t << " after " << before);
    CHECK(t >= before);
    before = t;
  }
  const StepBreakdown at16 = decode_step(c70, 16, 2048).stage;
  CHECK(at16.gemm_s == Approx(at16.gemm_flops / (16 * 2.9e12)));
  CHECK(at16.gemm_s <= at16.weights_read_s * 1.05);  // the FLOPs take about as long as the read: not twice
  CHECK(decode_step(c70, 1, 2048).stage.gemm_s == Approx(decode_step(c70, 1, 2048).stage.gemm_flops / 1.85e13));
  Calibration bad = k;
  bad.gemm = {{10, 5, 1e12}};
  CHECK_THROWS_AS(make_speed_context(base.model, base.gpu, base.plan, {}, bad), SpecError);
  bad = k;
  bad.decode.bandwidth_bytes_per_s = -1;
  CHECK_THROWS_AS(make_speed_context(base.model, base.gpu, base.plan, {}, bad), SpecError);
}

// docs/speed-model.md, "Predictions against published measurements": every row, pinned within the
// error the document reports (so a change to the model or the defaults shows up here).
TEST_CASE("predictions against published measurements (shared/fixtures/speed_measurements.md)", "[speed][measured]") {
  struct Dec { const char* model; const char* gpu; i64 tp; i64 batch; i64 ctx; double tok_s; double max_err; };
  const Dec dec[] = {
      // gpt-fast (torch.compile + CUDA graphs), A100-80GB, bf16/fp16, batch 1, ~200 generated tokens.
      {"llama-2-7b", "a100-80gb", 1, 1, 128, 104.9, 0.03},
      {"llama-2-7b", "a100-80gb", 2, 1, 128, 168.8, 0.03},
      {"llama-2-7b", "a100-80gb", 4, 1, 128, 254.0, 0.03},
      {"llama-2-7b", "a100-80gb", 8, 1, 128, 328.4, 0.04},
      {"llama-2-70b", "a100-80gb", 2, 1, 128, 21.32, 0.03},
      {"llama-2-70b", "a100-80gb", 4, 1, 128, 38.01, 0.03},
      {"llama-2-70b", "a100-80gb", 8, 1, 128, 62.50, 0.05},
      // vLLM, Mistral-7B-v0.3, H100 SXM, <= 10 concurrent (modelled as 10 at 1024 tokens).
      {"mistral-7b-v0.3", "h100-sxm", 1, 10, 1024, 141.7, 0.06},
      // llama.cpp: a different engine; the defaults are not fitted to it.
      {"llama-3-8b", "rtx-4090", 1, 1, 256, 54.84, 0.11},
      {"llama-2-7b", "a100-80gb", 1, 1, 256, 73.83, 0.40},
      {"llama-2-7b", "h100-pcie", 1, 1, 256, 83.32, 0.22},
  };
  for (const auto& d : dec) {
    const auto c = ctx(d.model, d.gpu, d.tp);
    const double pred = decode_step(c, d.batch, d.ctx).tokens_per_s_per_user;
    INFO(d.model << " on " << d.gpu << " TP" << d.tp << ": predicted " << pred << " tok/s, measured " << d.tok_s);
    CHECK(std::fabs(pred / d.tok_s - 1) <= d.max_err);
  }
  struct Pre { const char* model; const char* gpu; i64 tp; DType q; i64 s; double ttft_ms; double max_err; };
  const Pre pre[] = {
      // TensorRT-LLM 0.5 TTFT tables (LLaMA-7B modelled by llama-2-7b, LLaMA-70B by llama-2-70b).
      {"llama-2-7b", "h100-sxm", 1, DType::fp8, 2048, 36, 0.09},
      {"llama-2-7b", "a100-80gb", 1, DType::auto_, 2048, 133, 0.05},
      {"llama-2-7b", "l40s", 1, DType::fp8, 2048, 73, 0.20},
      {"llama-2-70b", "h100-sxm", 4, DType::fp8, 2048, 109, 0.03},
      {"llama-2-70b", "a100-80gb", 4, DType::auto_, 2048, 377, 0.04},
      // Short prompts: the model misses a fixed cost the engine pays (under-predicts by 39-47%).
      {"llama-2-7b", "h100-sxm", 1, DType::fp8, 128, 7, 0.42},
      {"llama-2-7b", "a100-80gb", 1, DType::auto_, 128, 16, 0.40},
      {"llama-2-70b", "h100-sxm", 4, DType::fp8, 128, 26, 0.48},
      {"llama-2-70b", "a100-80gb", 4, DType::auto_, 128, 47, 0.40},
  };
  for (const auto& p : pre) {
    const auto c = ctx(p.model, p.gpu, p.tp, p.q);
    const double pred = ttft_s(c, p.s) * 1e3;
    INFO(p.model << " on " << p.gpu << " TP" << p.tp << " S=" << p.s << ": predicted " << pred << " ms, measured "
                 << p.ttft_ms);
    CHECK(std::fabs(pred / p.ttft_ms - 1) <= p.max_err);
  }
}

// docs/speed-model.md, "Serving engines: Llama 3.1 8B / 70B and Mixtral 8x7B under vLLM": out-of-sample rows
// (the defaults were not fitted to them), pinned within the reported error. The model is optimistic for
// vLLM by 5-22%: its per-step overhead (scheduler, sampler, Python) exceeds the fitted 50 us per layer.
TEST_CASE("predictions against vLLM serving measurements of Llama 3.1 and Mixtral", "[speed][measured]") {
  auto at = [](const char* model, const char* g, i64 tp, DType q) {
    Deployment d;
    d.tensor_parallel_size = tp;
    d.quantization = q;
    d.max_model_len = 2000;  // the benchmark's --max-model-len
    d.gpu_memory_utilization = 0.95;
    return make_speed_context(builtin(model), gpu(g), d);
  };
  struct Itl { const char* model; i64 tp; DType q; i64 batch; i64 ctx; double itl_ms; double err; double max_err; };
  // LambdaLabsML/vllm-benchmark results/prompt_10/{1,2}xH100-80GB-SXM (vLLM, 2024-08-19): inter-token latency
  // in the phase of the run where `batch` requests were still generating, at the context they had reached.
  const Itl itl[] = {
      {"llama-3.1-8b", 1, DType::fp8, 1, 500, 5.93, -0.221, 0.23},
      {"llama-3.1-70b", 1, DType::fp8, 2, 600, 32.25, -0.055, 0.07},
      {"llama-3.1-70b", 1, DType::fp8, 7, 250, 33.2, -0.080, 0.09},
      {"mixtral-8x7b", 2, DType::auto_, 2, 480, 12.0, -0.178, 0.19},
      {"mixtral-8x7b", 2, DType::auto_, 4, 300, 15.8, -0.113, 0.13},
      {"mixtral-8x7b", 2, DType::auto_, 8, 150, 19.0, -0.066, 0.08},
  };
  for (const auto& r : itl) {
    const double pred = decode_step(at(r.model, "h100-sxm", r.tp, r.q), r.batch, r.ctx).tpot_s * 1e3;
    INFO(r.model << " TP" << r.tp << " B=" << r.batch << ": predicted " << pred << " ms, measured " << r.itl_ms);
    CHECK(pred / r.itl_ms - 1 == Approx(r.err).margin(0.01));
    CHECK(std::fabs(pred / r.itl_ms - 1) <= r.max_err);
    CHECK(pred < r.itl_ms);  // the model is a lower bound for this engine
  }
  // vLLM performance CI (buildkite vllm/performance-benchmark build 9515), H200, benchmark_latency: batch 8,
  // 32 prompt tokens, 128 output tokens, bf16; median end-to-end latency of the batch.
  struct E2e { const char* model; i64 tp; double e2e_ms; double err; };
  for (const E2e& r : {E2e{"llama-3.1-8b", 1, 833.53, -0.150}, E2e{"mixtral-8x7b", 2, 1916.58, -0.132},
                       E2e{"llama-3-70b", 4, 2077.56, -0.146}}) {
    Deployment d;
    d.tensor_parallel_size = r.tp;
    d.max_model_len = 8192;
    const auto c = make_speed_context(builtin(r.model), gpu("h200"), d);
    const double pred = estimate_request(c, 8, 32, 128).e2e_s * 1e3;
    INFO(r.model << " on H200 TP" << r.tp << ": predicted " << pred << " ms, measured " << r.e2e_ms);
    CHECK(pred / r.e2e_ms - 1 == Approx(r.err).margin(0.01));
  }
}

TEST_CASE("prefill refuses a prompt needing more than kMaxPrefillChunks chunks", "[speed][prefill][errors]") {
  Deployment d;
  d.max_model_len = 1 << 20;
  d.max_num_batched_tokens = 8;  // 2^20 / 8 = 131,072 chunks
  const auto c = make_speed_context(builtin("llama-3.1-8b"), gpu("h100-sxm"), d);
  CHECK_THROWS_AS(prefill(c, 1 << 20), SpecError);
  CHECK(prefill(c, 8 * kMaxPrefillChunks).chunks.size() == static_cast<std::size_t>(kMaxPrefillChunks));
}

TEST_CASE("engine profiles: datasheet is the plain roofline, the fitted ones stay within physical bounds", "[speed][engine]") {
  const auto& d = engine_profile("datasheet");
  CHECK(d.speed.bandwidth_efficiency == SpeedOptions{}.bandwidth_efficiency);
  CHECK(d.speed.request_overhead_s == 0);
  for (const char* n : {"vllm", "sglang", "trtllm"}) {
    const auto& e = engine_profile(n);
    INFO(n);
    CHECK(e.speed.bandwidth_efficiency >= 0.65);
    CHECK(e.speed.bandwidth_efficiency <= 0.90);
    CHECK(e.speed.compute_efficiency_16bit >= 0.45);
    CHECK(e.speed.compute_efficiency_8bit >= 0.35);
    CHECK(e.speed.request_overhead_s > 0);
    CHECK(e.speed.request_overhead_s <= 0.12);
  }
  // Step composition: SGLang runs prefills in steps of their own (its default without --enable-mixed-chunk); vLLM V1
  // and TensorRT-LLM mix prefill chunks into decode steps.
  CHECK(engine_profile("sglang").speed.prefill_first);
  CHECK(!engine_profile("vllm").speed.prefill_first);
  CHECK(!engine_profile("trtllm").speed.prefill_first);
  CHECK(!engine_profile("datasheet").speed.prefill_first);
  CHECK(engine_profile("TensorRT-LLM").name == "trtllm");
  CHECK(engine_profile_for("NIM (TensorRT-LLM backend)").name == "trtllm");
  CHECK(engine_profile_for("SGLang").name == "sglang");
  CHECK(engine_profile_for("lmdeploy").name == "datasheet");
  CHECK_THROWS_WITH(engine_profile("tgi"), Catch::Contains("expected one of datasheet, vllm, sglang, trtllm"));
  // The error band printed next to the latencies: only the metrics the fixtures measured.
  // The band on models the profile was not fitted on (the held-out measurements) follows the fitted one.
  CHECK(error_band(engine_profile("vllm")) ==
        "TPOT +-11%, TTFT +-21% (MAPE on published vLLM serving measurements of Llama 3.1 8B/70B, leave-one-out or "
        "in-sample if higher); other models: TPOT +-28%, TTFT +-24% (MAPE on held-out measurements, docs/accuracy.md)");
  EngineProfile fitted_only = engine_profile("vllm");
  fitted_only.other_models_tpot_error = fitted_only.other_models_ttft_error = 0;
  CHECK(error_band(fitted_only) ==
        "TPOT +-11%, TTFT +-21% (MAPE on published vLLM serving measurements of Llama 3.1 8B/70B, leave-one-out or "
        "in-sample if higher)");
  for (const auto& e : engine_profiles()) {
    INFO(e.name);
    CHECK(e.other_models_tpot_error > e.tpot_error);  // what the held-out models say: the fit does not transfer whole
  }
  EngineProfile none = engine_profile("datasheet");
  none.tpot_error = none.ttft_error = none.throughput_error = 0;
  CHECK(error_band(none).empty());
  // The front end's cost is part of TTFT.
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  SpeedOptions o;
  const double base = ttft_s(make_speed_context(m, g, Deployment{}, o), 1000);
  o.request_overhead_s = 0.04;
  CHECK(ttft_s(make_speed_context(m, g, Deployment{}, o), 1000) == Approx(base + 0.04));
}

TEST_CASE("NVFP4 weights: 4.5 bits each, fp4 GEMMs on Blackwell, weight-only on Hopper", "[speed][nvfp4]") {
  CHECK(parse_dtype("nvfp4") == DType::nvfp4);
  CHECK(parse_dtype("modelopt_fp4") == DType::nvfp4);
  // e2m1 values plus one e4m3 scale per 16: 16 weights in 16 x 4 + 8 = 72 bits.
  CHECK(weight_bytes(DType::nvfp4, 1'600'000) == 900'000);
  const auto m = profiles::resolve_model("llama-3.1-70b");
  Deployment d;
  d.quantization = DType::nvfp4;
  d.max_model_len = 8192;
  const auto b200 = make_speed_context(m, profiles::resolve_gpu("b200"), d);
  const auto h100 = make_speed_context(m, profiles::resolve_gpu("h100-sxm"), d);
  const auto pb = prefill(b200, 2048), ph = prefill(h100, 2048);
  // B200: fp4 tensor cores at 9 PFLOP/s dense x the low-precision efficiency; H100 has none: bf16 GEMMs.
  CHECK(pb.total.gemm_flops / pb.total.gemm_s == Approx(9.0e15 * SpeedOptions{}.compute_efficiency_8bit).epsilon(0.01));
  CHECK(ph.total.gemm_flops / ph.total.gemm_s == Approx(989.4e12 * SpeedOptions{}.compute_efficiency_16bit).epsilon(0.02));
  // A ModelOpt NVFP4 checkpoint imports as nvfp4 weights.
  const auto q = profiles::import_hf(
      R"({"model_type":"llama","hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,)"
      R"("num_key_value_heads":8,"vocab_size":128256,"max_position_embeddings":8192,)"
      R"("quantization_config":{"quant_method":"modelopt","quant_algo":"NVFP4"}})",
      "config.json");
  CHECK(q.quantization == DType::nvfp4);
}

TEST_CASE("expert parallelism: experts split over DP x TP ranks, each replica keeps its own KV", "[speed][ep]") {
  const auto m = profiles::resolve_model("deepseek-v3");
  const auto g = profiles::resolve_gpu("h200");
  Deployment tp8;
  tp8.tensor_parallel_size = 8;
  tp8.max_model_len = 131072;
  const auto a = plan_memory(m, g, tp8, {131072});
  Deployment ep;
  ep.num_gpus = 8;
  ep.enable_expert_parallel = true;
  ep.max_model_len = 131072;
  const auto b = plan_memory(m, g, ep, {131072});
  CHECK(b.dep.expert_parallel_size == 8);
  CHECK(b.dep.replicas == 8);
  // Each rank: the whole of attention, shared experts and dense layers, and 256 / 8 = 32 routed experts per layer.
  i64 routed = 0, expert_rank = 0;
  for (const auto& w : layer_tensors(m, 5))
    if (w.routed_expert) routed += w.elements, expert_rank += elements_per_rank(m, w, 1, 8);
  CHECK(expert_rank * 8 == routed);
  CHECK(elements_per_rank(m, layer_tensors(m, 5)[0], 1, 6) == layer_tensors(m, 5)[0].elements);  // attention untouched
  // With MLA the latent is replicated on every TP rank: TP 8 holds one copy of the cache across 8 GPUs, DP 8 eight.
  CHECK(a.cluster_kv_capacity_tokens == 629'952);  // 9,843 blocks of 64 tokens (FlashMLA on Hopper)
  CHECK(b.cluster_kv_capacity_tokens > 5 * a.cluster_kv_capacity_tokens);
  // Uneven splits round up: 256 experts over 6 ranks is 43 per rank.
  for (const auto& w : layer_tensors(m, 5))
    if (w.routed_expert) CHECK(elements_per_rank(m, w, 1, 6) == w.elements / 256 * 43);
  // Dense models ignore the flag (vLLM does the same).
  Deployment dense = ep;
  CHECK(plan_memory(profiles::resolve_model("llama-3.1-8b"), g, dense, {8192}).dep.expert_parallel_size == 1);
  // The step pays the dispatch/combine all-to-all per MoE layer only with EP.
  Deployment small = ep;
  small.max_model_len = 8192;
  const auto with_ep = decode_step(make_speed_context(m, g, small), 16, 4096);
  Deployment no_ep = small;
  no_ep.enable_expert_parallel = false;
  no_ep.num_gpus = 0;
  no_ep.tensor_parallel_size = 8;
  const auto without = decode_step(make_speed_context(m, g, no_ep), 16, 4096);
  CHECK(with_ep.stage.communication_s > 0);
  CHECK(with_ep.stage.weight_bytes < 0.5 * static_cast<double>(plan_memory(m, g, Deployment{}, {8192}).stages[0].weights_bytes));
  CHECK(without.stage.communication_s > 0);  // TP all-reduces
}

namespace {
/// 8 GPUs as 8 data-parallel replicas with the routed experts over all of them (vLLM --data-parallel-size 8
/// --enable-expert-parallel), max_model_len 8K.
Deployment ep8_on_8_gpus() {
  Deployment d;
  d.num_gpus = 8;
  d.enable_expert_parallel = true;
  d.max_model_len = 8192;
  return d;
}
}  // namespace

TEST_CASE("weights are conserved across layouts: every rank's share adds up to the model plus its replicated parts",
          "[memory][ep]") {
  // Summed over all GPUs of a deployment, each tensor is held once per copy its layout makes: routed experts once
  // under expert parallelism (EPLB's redundant copies on top), TP-sharded tensors once per data-parallel replica,
  // replicated tensors (norms, router, MLA down-projections) on every GPU.
  struct Layout {
    const char* model;
    i64 tp, replicas, redundant;
    bool ep;
  };
  for (const Layout& L : {Layout{"deepseek-v3", 8, 1, 0, false}, Layout{"deepseek-v3", 1, 8, 0, true},
                          Layout{"deepseek-v3", 1, 8, 32, true}, Layout{"qwen3-30b-a3b", 2, 4, 0, true},
                          Layout{"qwen3-30b-a3b", 4, 2, 0, false}, Layout{"mixtral-8x7b", 2, 4, 0, true},
                          Layout{"qwen3-30b-a3b", 1, 6, 0, true}}) {  // 128 experts over 6: 22 per rank
    const auto m = profiles::resolve_model(L.model);
    const i64 gpus = L.tp * L.replicas, ep = L.ep ? gpus : 1;
    INFO(L.model << " TP " << L.tp << " x " << L.replicas << (L.ep ? " EP" : "") << " redundant " << L.redundant);
    for (const i64 layer : {i64{0}, m.num_layers - 1}) {
      for (const auto& t : layer_tensors(m, layer)) {
        INFO(t.name);
        const i64 held = gpus * elements_per_rank(m, t, L.tp, ep, L.redundant);
        if (t.routed_expert && L.ep && (m.moe.num_experts + L.redundant) % ep != 0)
          CHECK((held > t.elements && held < t.elements + ep * (t.elements / m.moe.num_experts)));  // ceil per rank
        else if (t.routed_expert && L.ep)
          CHECK(held * m.moe.num_experts == t.elements * (m.moe.num_experts + L.redundant));
        else if (t.shard == Shard::replicated)
          CHECK(held == gpus * t.elements);
        else if (t.shard == Shard::q_heads || t.shard == Shard::columns)
          CHECK(held == L.replicas * t.elements);
      }
    }
    // The plan's layout is the one whose shares were summed (kv_heads and vocab tensors are not checked here).
    Deployment d;
    d.tensor_parallel_size = L.tp;
    d.num_gpus = gpus;
    d.enable_expert_parallel = L.ep;
    d.enable_eplb = L.redundant > 0;
    d.num_redundant_experts = L.redundant;
    d.max_model_len = 4096;
    const auto plan = plan_memory(m, profiles::resolve_gpu("h200"), d, {});
    CHECK(plan.dep.expert_parallel_size == ep);
    CHECK(plan.dep.replicas == L.replicas);
  }
}

TEST_CASE("expert parallelism: MLA capacity grows with the DP size, the all-to-all with the EP size", "[speed][ep]") {
  // DeepSeek-V3 at TP 8 with 1, 2, 4 data-parallel replicas, experts over all of them: each replica keeps its own
  // latent cache and every rank holds fewer experts, so the cluster's KV more than doubles with each doubling.
  const auto m = profiles::resolve_model("deepseek-v3");
  const auto g = profiles::resolve_gpu("h200");
  u64 last = 0;
  for (const i64 dp : {1, 2, 4}) {
    Deployment d;
    d.tensor_parallel_size = 8;
    d.num_gpus = 8 * dp;
    d.enable_expert_parallel = true;
    d.max_model_len = 131072;
    const auto plan = plan_memory(m, g, d, {});
    INFO("DP " << dp << ": " << plan.cluster_kv_capacity_tokens);
    CHECK(plan.cluster_kv_capacity_tokens > 2 * last);
    last = plan.cluster_kv_capacity_tokens;
  }
  // Mixtral 8x7B at TP 1 over 2, 4, 8 replicas: the per-layer exchange grows with the group for either backend
  // (all-gather: DP - 1 copies of the tokens; DeepEP: top-k x (EP - 1)/EP).
  const auto mix = profiles::resolve_model("mixtral-8x7b");
  for (const auto b : {Deployment::All2All::allgather_reducescatter, Deployment::All2All::deepep_high_throughput}) {
    double prev = 0;
    for (const i64 ep : {2, 4, 8}) {
      Deployment d;
      d.num_gpus = ep;
      d.enable_expert_parallel = true;
      d.all2all_backend = b;
      d.max_model_len = 4096;
      const double comm = decode_step(make_speed_context(mix, g, d), 32, 2048).stage.communication_s;
      INFO(all2all_backend_name(b) << " EP " << ep << ": " << comm);
      CHECK(comm > prev);
      prev = comm;
    }
  }
}

TEST_CASE("all2all backends: DeepEP's buffers per rank and each backend's traffic", "[speed][ep][memory]") {
  const auto m = profiles::resolve_model("deepseek-v3");
  const auto g = profiles::resolve_gpu("h200");
  const Deployment ep = ep8_on_8_gpus();
  using A = Deployment::All2All;
  constexpr u64 kMiB = u64{1} << 20;
  const auto plan_with = [&](A b, i64 gpus) {
    Deployment d = ep;
    d.all2all_backend = b;
    d.num_gpus = gpus;
    return plan_memory(m, g, d, {});
  };
  const auto agrs = plan_with(A::allgather_reducescatter, 8), ht = plan_with(A::deepep_high_throughput, 8),
             ll = plan_with(A::deepep_low_latency, 8), ht16 = plan_with(A::deepep_high_throughput, 16);
  // NCCL's allgather / reduce-scatter take no buffer of their own: the communicating rank's 133 + 430 MiB.
  CHECK(agrs.stages[0].non_torch_bytes == (133 + 430) * kMiB);
  // High throughput: VLLM_DEEPEP_BUFFER_SIZE_MB = 1024 for NVLink, and as much again for RDMA across nodes (EP > 8).
  CHECK(ht.stages[0].non_torch_bytes - agrs.stages[0].non_torch_bytes == 1024 * kMiB);
  CHECK(all2all_buffer_bytes(m, ht16.dep) == 2048 * kMiB);
  // Low latency: DeepEP's LowLatencyLayout for 256 tokens per rank, hidden 7,168, 256 experts over 8 ranks.
  // Dispatch message 16 + 7,168 x 2 = 14,352 B; combine 56 x 4 + 14,336 = 14,560 B; send and receive buffers
  // 256 x 256 x 14,560 = 954,204,160 B each, signalling 256 x 8 + 32 x 4 = 2,176 B; twice over: 3,816,820,992 B,
  // aligned up past it to 3,816,821,120; plus the 1 GiB NVLink buffer.
  CHECK(all2all_buffer_bytes(m, ll.dep) == 3'816'821'120ULL + 1024 * kMiB);
  CHECK(ll.kv_capacity_tokens < ht.kv_capacity_tokens);
  CHECK(ht.kv_capacity_tokens < agrs.kv_capacity_tokens);
  // Without expert parallelism there is nothing to exchange: a DeepEP backend is refused, naming the flag.
  Deployment tp = ep;
  tp.enable_expert_parallel = false;
  tp.num_gpus = 0;
  tp.tensor_parallel_size = 8;
  tp.all2all_backend = A::deepep_low_latency;
  CHECK_THROWS_WITH(plan_memory(m, g, tp, {}), Catch::Contains("all2all_backend"));
  // Nor with one replica: vLLM builds its all-to-all only across data-parallel replicas (use_all2all_kernels), the
  // experts of TP 8 with --enable-expert-parallel share their tokens through the TP all-reduce.
  tp.enable_expert_parallel = true;
  CHECK_THROWS_WITH(plan_memory(m, g, tp, {}), Catch::Contains("data-parallel"));
  tp.all2all_backend = A::allgather_reducescatter;
  Deployment tp_no_ep = tp;
  tp_no_ep.enable_expert_parallel = false;
  CHECK(decode_step(make_speed_context(m, g, tp), 16, 4096).stage.communication_s ==
        Approx(decode_step(make_speed_context(m, g, tp_no_ep), 16, 4096).stage.communication_s));
  // Traffic per MoE layer: all-gather + reduce-scatter move (DP - 1) x the tokens each way, DeepEP top-k x (EP-1)/EP.
  // Mixtral 8x7B (top-2) over 8 replicas: 7 against 2 x 7/8 per token, so DeepEP's step communicates less.
  const auto mix = profiles::resolve_model("mixtral-8x7b");
  Deployment x = ep;
  x.max_model_len = 4096;
  const auto step_with = [&](A b) {
    Deployment d = x;
    d.all2all_backend = b;
    return decode_step(make_speed_context(mix, g, d), 64, 2048).stage.communication_s;
  };
  const double ag = step_with(A::allgather_reducescatter), dp = step_with(A::deepep_low_latency);
  const double bytes_per_token = 4096.0 * 2;  // hidden x bf16
  CHECK(ag - dp ==
        Approx(32 * 2 * 64 * (7 - 2.0 * 7 / 8) * bytes_per_token / g.interconnect_bandwidth_bytes_per_s).epsilon(1e-9));
}

TEST_CASE("EPLB's redundant experts: ceil((E + R) / EP) experts per rank", "[speed][ep][memory]") {
  const auto m = profiles::resolve_model("deepseek-v3");
  const auto g = profiles::resolve_gpu("h200");
  const Deployment ep = ep8_on_8_gpus();
  Deployment eplb = ep;
  eplb.enable_eplb = true;
  eplb.num_redundant_experts = 32;  // 288 physical experts, 36 per rank instead of 32
  const auto a = plan_memory(m, g, ep, {}), b = plan_memory(m, g, eplb, {});
  u64 extra = 0;
  for (i64 l = 0; l < m.num_layers; ++l)
    for (const auto& w : layer_tensors(m, l))
      if (w.routed_expert) {
        CHECK(elements_per_rank(m, w, 1, 8, 32) == w.elements / 256 * 36);
        extra += weight_bytes(DType::fp8, u64(elements_per_rank(m, w, 1, 8, 32))) -
                 weight_bytes(DType::fp8, u64(elements_per_rank(m, w, 1, 8)));
      }
  CHECK(extra > 0);
  CHECK(b.stages[0].weights_bytes - a.stages[0].weights_bytes == extra);
  CHECK(b.kv_capacity_tokens < a.kv_capacity_tokens);
  // Enabling EPLB alone adds no expert (its rearrangement buffer is not charged: docs/memory-model.md).
  Deployment on = ep;
  on.enable_eplb = true;
  CHECK(plan_memory(m, g, on, {}).stages[0].weights_bytes == a.stages[0].weights_bytes);
  // The copies share their experts' tokens: the same GEMM work per rank, more weights to read.
  const auto s0 = decode_step(make_speed_context(m, g, ep), 32, 1024),
             s32 = decode_step(make_speed_context(m, g, eplb), 32, 1024);
  CHECK(s32.stage.gemm_flops == Approx(s0.stage.gemm_flops).epsilon(1e-12));
  CHECK(s32.stage.weight_bytes > s0.stage.weight_bytes);
  // The E + R physical experts split evenly over EP (vLLM's and SGLang's EPLB assert it): 257 over 8 is refused.
  Deployment uneven = eplb;
  uneven.num_redundant_experts = 1;
  CHECK_THROWS_WITH(plan_memory(m, g, uneven, {}), Catch::Contains("num_redundant_experts 8"));
  // A dense model ignores the expert-parallel options, as it ignores --enable-expert-parallel.
  CHECK(plan_memory(profiles::resolve_model("llama-3.1-8b"), g, uneven, {}).dep.expert_parallel_size == 1);
  // vLLM's rules: redundant experts belong to EPLB, and EPLB to expert parallelism.
  Deployment no_eplb = ep;
  no_eplb.num_redundant_experts = 32;
  CHECK_THROWS_WITH(plan_memory(m, g, no_eplb, {}), Catch::Contains("num_redundant_experts"));
  Deployment no_ep = eplb;
  no_ep.enable_expert_parallel = false;
  no_ep.num_redundant_experts = 0;
  CHECK_THROWS_WITH(plan_memory(m, g, no_ep, {}), Catch::Contains("enable_eplb"));
}

TEST_CASE("decode context parallelism: each request's KV split over the DCP ranks of a TP group", "[speed][dcp]") {
  // vLLM: the KV cache manager runs on blocks of block_size x DCP tokens (scheduler_block_size in
  // vllm/v1/engine/core.py) of which each rank stores its interleaved block_size; max_memory_usage_bytes takes
  // cdiv(max_model_len, DCP) tokens per rank (vllm/v1/kv_cache_interface.py).
  const auto m = profiles::resolve_model("deepseek-v3");
  const auto g = profiles::resolve_gpu("h200");
  Deployment tp8;
  tp8.tensor_parallel_size = 8;
  tp8.max_model_len = 131072;
  Deployment dcp8 = tp8;
  dcp8.decode_context_parallel_size = 8;
  const auto a = plan_memory(m, g, tp8, {131072});
  const auto b = plan_memory(m, g, dcp8, {131072});
  // The same pool of blocks per rank (the latent is the same size), each block now standing for 8 x 64 tokens.
  CHECK(b.stages[0].num_blocks == a.stages[0].num_blocks);
  CHECK(a.cluster_kv_capacity_tokens == 629'952);  // 9,843 blocks of 64 tokens (FlashMLA on Hopper)
  CHECK(b.cluster_kv_capacity_tokens == 8 * a.cluster_kv_capacity_tokens);
  CHECK(b.stages[0].weights_bytes == a.stages[0].weights_bytes);

  // Where the DCP group must lie: inside TP, over ranks that hold the same KV heads (DCP <= TP / H_kv).
  Deployment bad = tp8;
  bad.decode_context_parallel_size = 3;
  CHECK_THROWS_WITH(plan_memory(m, g, bad, {4096}), Catch::Contains("must divide tensor_parallel_size"));
  const auto llama = profiles::resolve_model("llama-3.1-70b");  // 8 KV heads: TP 8 holds no replica to split
  Deployment gqa = tp8;
  gqa.decode_context_parallel_size = 2;
  CHECK_THROWS_WITH(plan_memory(llama, profiles::resolve_gpu("h100-sxm"), gqa, {4096}),
                    Catch::Contains("TP 8 / 8 KV heads = 1"));
  const auto qwen = profiles::resolve_model("qwen3-235b-a22b");  // 4 KV heads: TP 8 keeps 2 copies, DCP 2 splits them
  Deployment q8 = tp8;
  q8.decode_context_parallel_size = 2;
  const auto q2 = plan_memory(qwen, g, q8, {131072});
  q8.decode_context_parallel_size = 1;
  CHECK(q2.cluster_kv_capacity_tokens == 2 * plan_memory(qwen, g, q8, {131072}).cluster_kv_capacity_tokens);

  // Speed: a rank reads 1/DCP of each context; it attends with the whole group's queries, so its attention FLOPs
  // stay; the queries and partial outputs cross the interconnect each layer.
  Deployment small = tp8, small_dcp = dcp8;
  small.max_model_len = small_dcp.max_model_len = 32768;
  const auto c1 = make_speed_context(m, g, small), c8 = make_speed_context(m, g, small_dcp);
  const auto d1 = decode_step(c1, 32, 32768), d8 = decode_step(c8, 32, 32768);
  CHECK(d8.stage.kv_bytes == Approx(d1.stage.kv_bytes / 8).epsilon(1e-9));
  CHECK(d8.stage.attention_flops == Approx(d1.stage.attention_flops).epsilon(1e-12));
  CHECK(d8.stage.weight_bytes == Approx(d1.stage.weight_bytes).epsilon(1e-12));
  CHECK(d8.stage.communication_s > d1.stage.communication_s);
  // The exchange per layer: 7 x 32 tokens x 16 heads x (512 + 64 query + 512 + 1 output) bf16 elements.
  const double per_layer = 7.0 * 32 * 16 * (576 + 513) * 2;
  const double expect = 61 * (per_layer / g.interconnect_bandwidth_bytes_per_s + 2 * g.interconnect_latency_s);
  CHECK(d8.stage.communication_s - d1.stage.communication_s == Approx(expect).epsilon(1e-9));
  // A fresh prompt moves nothing more (its KV is computed on every rank); a later chunk gathers its earlier
  // context from the group: 3/4 x 16,384 tokens x 61 layers x 1,152 latent bytes ... x 8 / 8 ranks.
  const auto fresh = mixed_step(c8, {{0, 4096, true}}), later = mixed_step(c8, {{16384, 4096, true}});
  CHECK(fresh.stage.communication_s == Approx(mixed_step(c1, {{0, 4096, true}}).stage.communication_s).epsilon(1e-12));
  const double gathered = 16384.0 * 61 * 1152 * 7 / 8;  // the request's KV per token over the layers, (D-1)/D of it
  CHECK(later.stage.communication_s - mixed_step(c1, {{16384, 4096, true}}).stage.communication_s ==
        Approx(gathered / g.interconnect_bandwidth_bytes_per_s + 61 * 2 * g.interconnect_latency_s).epsilon(1e-6));

  // Not modelled for linear-attention hybrids: refused rather than guessed.
  Deployment hybrid;
  hybrid.tensor_parallel_size = 4;
  hybrid.decode_context_parallel_size = 2;
  CHECK_THROWS_WITH(plan_memory(profiles::resolve_model("qwen3-next-80b-a3b"), g, hybrid, {4096}),
                    Catch::Contains("linear-attention"));
}

TEST_CASE("expert parallelism: the busiest rank under uniform routing", "[speed][ep]") {
  // E[max of n standard normals]: published values (Tippett 1925; e.g. Harter's tables) 0.5642 (2), 1.0294 (4),
  // 1.4236 (8), 1.7660 (16), 2.0697 (32).
  CHECK(expected_max_std_normal(1) == 0);
  CHECK(expected_max_std_normal(2) == Approx(1.0 / std::sqrt(std::numbers::pi)).epsilon(1e-6));
  CHECK(expected_max_std_normal(4) == Approx(1.0294).epsilon(1e-4));
  CHECK(expected_max_std_normal(8) == Approx(1.4236).epsilon(1e-4));
  CHECK(expected_max_std_normal(16) == Approx(1.7660).epsilon(1e-4));
  CHECK(expected_max_std_normal(32) == Approx(2.0697).epsilon(1e-4));
  CHECK(expert_load_imbalance(1, 10) == 1);
  CHECK(expert_load_imbalance(8, 0) == 1);
  CHECK(expert_load_imbalance(8, 1) <= 8);  // never beyond one rank doing all the work (the normal approximation
                                            // is meant for picks >> EP; the direct simulation below checks 256+)
  CHECK(expert_load_imbalance(8, 1e4) < expert_load_imbalance(8, 1e3));
  CHECK(expert_load_imbalance(8, 1e9) == Approx(1).epsilon(1e-3));
  // Against a direct simulation of uniform routing: N picks over 8 ranks, the busiest rank's load / the mean.
  std::mt19937_64 rng(7);
  for (const int picks : {256, 1024, 8192}) {
    std::uniform_int_distribution<int> rank(0, 7);
    double sum = 0;
    constexpr int kTrials = 4000;
    for (int trial = 0; trial < kTrials; ++trial) {
      std::array<int, 8> load{};
      for (int i = 0; i < picks; ++i) ++load[static_cast<std::size_t>(rank(rng))];
      sum += *std::max_element(load.begin(), load.end()) / (picks / 8.0);
    }
    INFO(picks);
    CHECK(expert_load_imbalance(8, picks) == Approx(sum / kTrials).epsilon(0.02));
  }
  // In the step time: a DP 8 / EP 8 decode of DeepSeek-V3 does more GEMM work per token at batch 4 (256 picks over
  // 8 ranks: the busiest carries 1.24x the mean) than at batch 256 (1.03x); with TP 8 and no EP the work per token
  // does not depend on the batch.
  const auto m = profiles::resolve_model("deepseek-v3");
  const auto g = profiles::resolve_gpu("h200");
  const auto flops_per_token = [&](const Deployment& d, i64 batch) {
    const auto step = decode_step(make_speed_context(m, g, d), std::vector<i64>(static_cast<std::size_t>(batch), 1024));
    return step.stage.gemm_flops / static_cast<double>(batch);
  };
  Deployment ep;
  ep.num_gpus = 8;
  ep.enable_expert_parallel = true;
  ep.max_model_len = 32768;
  CHECK(expert_load_imbalance(8, 4.0 * 8 * 8) == Approx(1.24).epsilon(0.01));
  CHECK(flops_per_token(ep, 4) > 1.1 * flops_per_token(ep, 256));
  Deployment tp;
  tp.tensor_parallel_size = 8;
  tp.max_model_len = 32768;
  CHECK(flops_per_token(tp, 4) == Approx(flops_per_token(tp, 256)).epsilon(1e-9));
}
