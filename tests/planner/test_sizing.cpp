// Cluster sizing: the queueing formulas against their closed forms, the search against hand-checked
// cases (which GPU is cheapest, how many replicas), minimality of the replica count, and clear errors
// for bad or impossible targets. docs/sizing.md documents every formula.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "kvcap/planner/engine.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/sizing.hpp"
#include "kvcap/planner/sweep.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

namespace {
constexpr double kGiB = 1073741824.0;

/// A GPU with round numbers: 200 GiB (no memory limit in the hand cases), `bw` bytes/s, 1 PFLOP/s bf16.
GpuSpec round_gpu(const char* name, double bw, double price) {
  GpuSpec g;
  g.name = name;
  g.display_name = name;
  g.memory_bytes = static_cast<u64>(200 * kGiB);
  g.memory_bandwidth_bytes_per_s = bw;
  g.bf16_dense_flops = 1e15;
  g.fp16_dense_flops = 1e15;
  g.interconnect_bandwidth_bytes_per_s = 450e9;
  g.interconnect_latency_s = 5e-6;
  g.price_per_gpu_hour_usd = price;
  return g;
}

/// Ideal rates: datasheet bandwidth and FLOP/s, no overheads, so TPOT(N) = (W + N x S x kv) / BW exactly.
SpeedOptions ideal() {
  SpeedOptions o;
  o.bandwidth_efficiency = 1;
  o.compute_efficiency_16bit = 1;
  o.compute_efficiency_8bit = 1;
  o.layer_overhead_s = 0;
  o.step_overhead_s = 0;
  return o;
}

/// One GPU per replica, bf16 weights and KV only: the hand cases vary the GPU and the replica count.
SizingSpace single_gpu_space(std::vector<GpuSpec> gpus) {
  SizingSpace s;
  s.gpus = std::move(gpus);
  s.weight_dtypes = {DType::bf16};
  s.kv_dtypes = {DType::bf16};
  s.max_tp = 1;
  s.max_pp = 1;
  s.speed = ideal();
  return s;
}

const SizingCandidate& find(const SizingResult& r, const std::string& gpu, i64 tp = 1, i64 pp = 1) {
  for (const auto& c : r.candidates)
    if (c.gpu == gpu && c.tp == tp && c.pp == pp) return c;
  FAIL("no candidate " << gpu << " TP" << tp << " PP" << pp);
  return r.candidates.front();
}
}  // namespace

TEST_CASE("queueing formulas: Kingman / Pollaczek-Khinchine mean and the exponential-tail percentile",
          "[sizing][queue]") {
  // M/D/1 at rho 0.5, service 1 s: E[W] = rho / (1 - rho) x (1 + 0) / 2 x 1 = 0.5 s.
  CHECK(kingman_mean_wait_s(0.5, 1.0, 1.0, 0.0) == Approx(0.5));
  // M/M/1 (ca2 = cs2 = 1), mu = 1, lambda = 0.5: E[W] = rho / (mu - lambda) = 1 s, and the tail is exactly
  // P(W > t) = rho e^{-(mu - lambda) t}, so the p90 wait is ln(rho / 0.1) / 0.5 = 2 ln 5 s: exact here.
  CHECK(kingman_mean_wait_s(0.5, 1.0, 1.0, 1.0) == Approx(1.0));
  CHECK(wait_percentile_s(0.5, 1.0, 0.9) == Approx(2 * std::log(5.0)));
  // Fewer than 1 - p of the arrivals wait at all: the percentile is 0.
  CHECK(wait_percentile_s(0.05, 1.0, 0.9) == 0);
  CHECK(kingman_mean_wait_s(0, 1.0, 1.0, 1.0) == 0);
  CHECK(std::isinf(kingman_mean_wait_s(1.0, 1.0, 1.0, 0.0)));
  CHECK(std::isinf(wait_percentile_s(0.99, std::numeric_limits<double>::infinity(), 0.9)));
  // Deterministic arrivals and service (D/D/1) never queue.
  CHECK(kingman_mean_wait_s(0.9, 1.0, 0.0, 0.0) == 0);
  // The wait grows with the load and with the percentile.
  CHECK(kingman_mean_wait_s(0.8, 1.0, 1.0, 0.0) > kingman_mean_wait_s(0.6, 1.0, 1.0, 0.0));
  CHECK(wait_percentile_s(0.8, 2.0, 0.99) > wait_percentile_s(0.8, 2.0, 0.9));
}

TEST_CASE("a replica under load: Little's law holds at the operating point", "[sizing][queue]") {
  Deployment d;
  d.max_model_len = 4096;
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  SizingWorkload w;
  w.prompt_tokens = 1024;
  w.output_tokens = 256;
  w.arrival_rate_per_s = 1;
  const ReplicaModel rm(make_speed_context(m, g, d), w, 0.9);
  REQUIRE(rm.max_batch_memory() > 64);
  CHECK(rm.mean_context_tokens() == 1024 + 128);
  CHECK(rm.prefill_busy_s() > 0);
  CHECK(rm.prefill_busy_s() <= rm.prefill_s());
  double prev_rate = 0, prev_ttft = 0, prev_tpot = 0;
  for (i64 n : {1, 2, 8, 32, 64}) {
    const double rate = rm.rate_for_batch(n);
    const auto op = rm.open_loop(rate, n);
    INFO("N = " << n << ": rate " << rate << ", TTFT " << op.ttft_s << ", TPOT " << op.tpot_s);
    // N = rate x (O - 1) x TPOT_eff: requests decoding = arrivals x time spent decoding.
    CHECK(static_cast<double>(n) == Approx(rate * 255 * op.tpot_s));
    CHECK(op.prefill_utilization == Approx(rate * rm.prefill_busy_s()));
    CHECK(op.prefill_utilization < 1);
    CHECK(op.tpot_s == Approx(rm.decode_step_s(n) / (1 - op.prefill_utilization)));
    CHECK(op.ttft_s >= rm.prefill_s());
    CHECK(rate > prev_rate);
    CHECK(op.ttft_s >= prev_ttft);
    CHECK(op.tpot_s >= prev_tpot);
    CHECK(rm.batch_for_rate(rate, rm.max_batch_memory()) == n);
    prev_rate = rate, prev_ttft = op.ttft_s, prev_tpot = op.tpot_s;
  }
  // Closed loop: throughput x cycle = users (Little), and the cycle is TTFT + (O - 1) x TPOT.
  const auto cl = rm.closed_loop(16);
  CHECK(cl.rate_per_s * cl.e2e_s == Approx(16));
  CHECK(cl.e2e_s == Approx(cl.ttft_mean_s + 255 * cl.tpot_s));
}

TEST_CASE("a prefill merged into decode steps costs its compute, a MoE model's routed-expert GEMMs too",
          "[sizing][queue]") {
  // The decode step reads every weight anyway; the prompt adds its GEMMs, attention, the routed experts' grouped GEMM
  // (not their read) and its communication (docs/sizing.md).
  Deployment d;
  d.tensor_parallel_size = 8;
  d.max_model_len = 8192;
  const auto c = make_speed_context(profiles::resolve_model("deepseek-v3"), profiles::resolve_gpu("h200"), d);
  SizingWorkload w;
  w.prompt_tokens = 4096;
  w.output_tokens = 256;
  w.arrival_rate_per_s = 1;
  const ReplicaModel rm(c, w, 0.9);
  const PrefillResult pr = prefill(c, 4096);
  const StepBreakdown& t = pr.total;
  REQUIRE(t.experts_s > t.experts_read_s);
  REQUIRE(t.experts_read_s > 0);
  CHECK(rm.prefill_busy_s() == Approx(t.compute_s + (t.experts_s - t.experts_read_s) + t.communication_s));
  CHECK(rm.prefill_busy_s() > t.compute_s + t.communication_s);
}

TEST_CASE("a prefill-first engine stops the decodes for the whole prefill", "[sizing][queue]") {
  // SGLang (and vLLM V0) run a prompt in a step of its own: its weight reads and overheads stop the decodes too, and
  // it does not ride a decode step, so its own time is T_prefill (SpeedOptions::prefill_first).
  Deployment d;
  d.max_model_len = 8192;
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  SizingWorkload w;
  w.prompt_tokens = 4096;
  w.output_tokens = 256;
  w.arrival_rate_per_s = 1;
  SpeedOptions o = engine_profile("sglang").speed;
  REQUIRE(o.prefill_first);
  const ReplicaModel first(make_speed_context(m, g, d, o), w, 0.9);
  o.prefill_first = false;  // --enable-mixed-chunk
  const ReplicaModel mixed(make_speed_context(m, g, d, o), w, 0.9);
  CHECK(first.prefill_s() == mixed.prefill_s());
  CHECK(first.prefill_busy_s() == Approx(first.prefill_s() - o.request_overhead_s));
  CHECK(first.prefill_busy_s() > mixed.prefill_busy_s());
  // Closed loop: identical requests in lockstep (a wave of prompts, then N decodes together), TTFT the prompt's place
  // in the wave; lengths that vary spread the users, and the queueing model holds again.
  const auto lock = first.closed_loop(16);
  CHECK(lock.ttft_mean_s > 8 * first.prefill_s());
  CHECK(lock.e2e_s == Approx(lock.ttft_mean_s + 255 * lock.tpot_s));
  SizingWorkload varied = w;
  varied.output_scv = 0.3;
  o.prefill_first = true;
  const ReplicaModel spread(make_speed_context(m, g, d, o), varied, 0.9);
  const auto q = spread.closed_loop(16);
  CHECK(q.tpot_s == Approx(spread.decode_step_s(16) / (1 - q.prefill_utilization)));
  CHECK(q.ttft_mean_s < lock.ttft_mean_s / 2);
  SizingWorkload thinking = w;  // a workload file's exponential think times spread them too
  thinking.random_think_time = true;
  const ReplicaModel apart(make_speed_context(m, g, d, o), thinking, 0.9);
  CHECK(apart.closed_loop(16).ttft_mean_s < lock.ttft_mean_s / 2);
  for (const i64 n : {4, 16, 48}) {
    const double rate = mixed.rate_for_batch(n);
    const auto a = first.open_loop(rate, n), b = mixed.open_loop(rate, n);
    INFO("N = " << n << ", rate " << rate);
    CHECK(a.tpot_s > b.tpot_s);
    CHECK(first.rate_for_batch(n) < rate);
  }
}

TEST_CASE("the search returns the hand-checked cheapest GPU and replica count (closed loop)", "[sizing][search]") {
  // Llama 3.1 8B, bf16, one GPU per replica, ideal rates. Prompt 1 token, output 16,000: the mean context
  // is 1 + 8,000 = 8,001 tokens and prefill is negligible (u ~ 10^-6), so
  //   TPOT(N) = (W + N x 8,001 x 131,072 B) / BW,  W = 15.01 GB read per step (16.06 GB less the embedding).
  // Target 30 ms:  N* = floor((0.030 BW - W) / 1.0487e9):
  //   slow (1.0 TB/s, $1.00/h): (30e9 - 15.01e9) / 1.0487e9 = 14.3 -> 14 users per replica
  //   fast (2.0 TB/s, $2.50/h): (60e9 - 15.01e9) / 1.0487e9 = 42.9 -> 42 users per replica
  // 28 users: slow 2 x $1 = $2.00 < fast 1 x $2.50.   29 users: slow 3 x $1 = $3.00 > fast $2.50.
  // 100 users: slow 8 x $1 = $8.00 > fast 3 x $2.50 = $7.50.
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto slow = round_gpu("slow", 1.0e12, 1.0), fast = round_gpu("fast", 2.0e12, 2.5);
  Deployment probe;
  probe.max_model_len = 16001;
  const auto c = make_speed_context(m, slow, probe, ideal());
  const double w_read = decode_step(c, 1, 8001).stage.weight_bytes;
  REQUIRE(w_read == Approx(15.01e9).epsilon(0.002));
  REQUIRE(c.plan.kv_bytes_per_token_per_rank == 131072);
  const double per_req = 8001.0 * 131072;
  REQUIRE(static_cast<i64>(std::floor((0.030 * 1.0e12 - w_read) / per_req)) == 14);
  REQUIRE(static_cast<i64>(std::floor((0.030 * 2.0e12 - w_read) / per_req)) == 42);

  SizingWorkload w;
  w.prompt_tokens = 1;
  w.output_tokens = 16000;
  SizingTargets t;
  t.ttft_s = 10;
  t.tpot_s = 0.030;
  auto run = [&](i64 users, std::vector<GpuSpec> gpus) {
    w.concurrent_users = users;
    return size_cluster(m, w, t, single_gpu_space(std::move(gpus)));
  };

  SECTION("28 users: two slow GPUs; 29 users: one fast GPU") {
    const auto r28 = run(28, {slow, fast});
    REQUIRE(r28.feasible == 2);
    CHECK(find(r28, "slow").max_batch_targets == 14);
    CHECK(find(r28, "fast").max_batch_targets == 42);
    CHECK(find(r28, "slow").replicas == 2);
    CHECK(r28.candidates.front().gpu == "slow");
    CHECK(r28.candidates.front().cost_per_hour_usd == Approx(2.0));
    CHECK(r28.candidates.front().batch == 14);
    CHECK(r28.candidates.front().tpot_s <= t.tpot_s);
    CHECK(r28.candidates.front().prefill_utilization < 1e-4);
    const auto r29 = run(29, {slow, fast});
    CHECK(find(r29, "slow").replicas == 3);
    CHECK(find(r29, "fast").replicas == 1);
    CHECK(r29.candidates.front().gpu == "fast");
    CHECK(r29.candidates.front().cost_per_hour_usd == Approx(2.5));
    // Cost per million output tokens = $/h / (tokens per hour / 10^6); tokens/s = users / cycle x output.
    const auto& f = r29.candidates.front();
    CHECK(f.output_tokens_per_s == Approx(29.0 / f.e2e_s * 16000));
    CHECK(f.cost_per_million_output_tokens_usd == Approx(2.5 / (f.output_tokens_per_s * 3600 / 1e6)));
  }
  SECTION("100 users: three fast GPUs ($7.50) beat eight slow ones ($8)") {
    const auto r = run(100, {slow, fast});
    CHECK(find(r, "slow").replicas == 8);
    CHECK(find(r, "fast").replicas == 3);
    CHECK(find(r, "slow").cost_per_hour_usd == Approx(8.0));
    CHECK(r.candidates.front().gpu == "fast");
    CHECK(r.candidates.front().cost_per_hour_usd == Approx(7.5));
    CHECK(r.candidates.front().batch == 34);  // ceil(100 / 3) on the fullest replica
  }
  SECTION("a price override flips the answer back") {
    auto cheap_slow = slow;
    cheap_slow.price_per_gpu_hour_usd = 0.8;  // 29 users: 3 x $0.80 = $2.40 < $2.50
    const auto r = run(29, {cheap_slow, fast});
    CHECK(r.candidates.front().gpu == "slow");
    CHECK(r.candidates.front().cost_per_hour_usd == Approx(2.4));
  }
  SECTION("a TPOT target the slow GPU cannot meet at batch 1 leaves only the fast one") {
    t.tpot_s = 0.012;  // slow: W / BW alone is 15 ms
    const auto r = run(28, {slow, fast});
    REQUIRE(r.feasible == 1);
    CHECK(r.candidates.front().gpu == "fast");
    const auto& a = find(r, "slow");
    CHECK(a.status == CandidateStatus::tpot_too_high);
    CHECK_THAT(a.reason, Catch::Contains("TPOT 16.1 ms at batch 1 (context 8001) > target 12.0 ms"));
  }
}

TEST_CASE("open loop: the replica count is the smallest that meets the targets", "[sizing][search]") {
  const auto m = profiles::resolve_model("llama-3.1-8b");
  SizingWorkload w;
  w.prompt_tokens = 2048;
  w.output_tokens = 256;
  SizingTargets t;
  t.ttft_s = 1.0;
  t.ttft_percentile = 0.99;
  t.tpot_s = 0.030;
  SizingSpace s;
  s.gpus = {profiles::resolve_gpu("h100-sxm"), profiles::resolve_gpu("l40s")};
  double prev_best_cost = 0;
  for (double rate : {1.0, 5.0, 20.0, 80.0}) {
    w.arrival_rate_per_s = rate;
    const auto r = size_cluster(m, w, t, s);
    REQUIRE(r.feasible > 0);
    const auto& best = r.candidates.front();
    INFO("rate " << rate << ": " << best.replicas << " x " << best.gpu << " TP" << best.tp);
    CHECK(best.ttft_s <= t.ttft_s);
    CHECK(best.tpot_s <= t.tpot_s);
    CHECK(best.rate_per_replica_per_s * static_cast<double>(best.replicas) == Approx(rate));
    CHECK(best.output_tokens_per_s == Approx(rate * 256));
    CHECK(best.rate_per_replica_per_s <= best.max_rate_per_replica_per_s * (1 + 1e-9));
    // One replica fewer would exceed the per-replica capacity the search found.
    if (best.replicas > 1) CHECK(rate / static_cast<double>(best.replicas - 1) > best.max_rate_per_replica_per_s);
    // A deployment that serves more load also serves less: the cheapest cost never falls as the rate rises.
    CHECK(best.cost_per_hour_usd >= prev_best_cost);
    prev_best_cost = best.cost_per_hour_usd;
    // Every feasible candidate is ranked by cost.
    for (std::size_t i = 1; i < r.feasible; ++i)
      CHECK(r.candidates[i - 1].cost_per_hour_usd <= r.candidates[i].cost_per_hour_usd);
  }
  // Cost is monotone in the rate for a fixed candidate.
  double prev_cost = 0;
  for (double rate : {1.0, 5.0, 20.0, 80.0}) {
    w.arrival_rate_per_s = rate;
    const SizingResult r = size_cluster(m, w, t, s);  // keep the result alive: find() returns a reference into it
    const auto& c = find(r, "h100-sxm");
    CHECK(c.cost_per_hour_usd >= prev_cost);
    prev_cost = c.cost_per_hour_usd;
  }
}

TEST_CASE("open loop: Poisson bursts beyond the KV cache are flagged, never beyond max_num_seqs",
          "[sizing][search][burst]") {
  SizingCandidate c;
  c.status = CandidateStatus::ok;
  c.batch = 16;
  c.max_batch_memory = 25;
  c.kv_limited = true;
  // 16 + 3 x sqrt(16) = 28 requests in a burst against 25 the cache holds.
  CHECK(kv_burst_requests(c, true) == Approx(28));
  CHECK(kv_burst_requests(c, false) == 0);  // a closed loop holds its clients, no Poisson bursts
  c.max_batch_memory = 28;
  CHECK(kv_burst_requests(c, true) == 0);  // a burst that fits
  c.max_batch_memory = 25;
  c.kv_limited = false;  // max_num_seqs is the limit: vLLM queues, it does not preempt
  CHECK(kv_burst_requests(c, true) == 0);
  c.kv_limited = true;
  c.status = CandidateStatus::does_not_fit;
  CHECK(kv_burst_requests(c, true) == 0);

  // The search's own candidate: Mixtral 8x7B with 16K prompts at 2 req/s on single H100s.
  SizingWorkload w;
  w.prompt_tokens = 16384;
  w.output_tokens = 512;
  w.arrival_rate_per_s = 2;
  SizingTargets t;
  t.ttft_s = 2;
  t.ttft_percentile = 0.9;
  t.tpot_s = 0.05;
  SizingSpace s;
  s.gpus = {profiles::resolve_gpu("h100-sxm")};
  s.max_tp = 1;
  s.max_pp = 1;
  s.speed = engine_profile("vllm").speed;
  const auto r = size_cluster(profiles::resolve_model("mixtral-8x7b"), w, t, s);
  REQUIRE(r.feasible > 0);
  const auto& best = r.candidates.front();
  INFO(best.replicas << " x " << best.gpu << ": batch " << best.batch << ", KV holds " << best.max_batch_memory);
  REQUIRE(best.kv_limited);
  const double mean = static_cast<double>(best.batch);
  // A mean of 16 decoding against 25 the cache holds (docs/sizing.md): the burst, 28, is beyond it.
  CHECK(mean + 3 * std::sqrt(mean) > static_cast<double>(best.max_batch_memory));
  CHECK(kv_burst_requests(best, true) == Approx(mean + 3 * std::sqrt(mean)));
}

TEST_CASE("sliding windows: the sizer's batch is what the replica decodes at once, not vLLM's worst case",
          "[sizing][search][sliding]") {
  // Gemma 3 27B (5 sliding layers of 1,024 tokens to 1 full): vLLM's logged concurrency charges each sliding group
  // a step's 8,192 tokens beyond its window; a decoding request holds its window (a red-team case: 8 per H100 sized
  // 32 GPUs where the simulator served 16 per replica without preemption).
  SizingWorkload w;
  w.prompt_tokens = 2048;
  w.output_tokens = 512;
  w.concurrent_users = 256;
  SizingTargets t;
  t.ttft_s = 2;
  t.ttft_percentile = 0.9;
  t.tpot_s = 0.06;
  SizingSpace s;
  s.gpus = {profiles::resolve_gpu("h100-sxm")};
  s.weight_dtypes = {DType::bf16};
  s.kv_dtypes = {DType::bf16};
  s.max_tp = 1;
  s.max_pp = 1;
  const auto m = profiles::resolve_model("gemma-3-27b");
  const auto r = size_cluster(m, w, t, s);
  REQUIRE(r.feasible > 0);
  const auto& c = r.candidates.front();
  REQUIRE(c.deployment);
  const auto plan = plan_memory(m, s.gpus.front(), *c.deployment, {});
  const i64 mean_context = 2048 + 256;
  CHECK(c.max_batch_memory == static_cast<i64>(std::floor(running_concurrency_at(plan, mean_context, mean_context))));
  // 15 decode at once where vLLM's charge says 8 (hand check: 7 groups of 10 layers, 1 full + 6 sliding of 1,024
  // tokens; at 2,304 tokens a request holds 144 + 6 x 65 blocks decoding, 7 x 144 by vLLM's charge).
  CHECK(c.max_batch_memory == 15);
  CHECK(std::floor(concurrency_at(m, plan, mean_context)) == 8);
}

TEST_CASE("rejected candidates say why", "[sizing][search]") {
  SizingWorkload w;
  w.prompt_tokens = 2048;
  w.output_tokens = 256;
  w.arrival_rate_per_s = 2;
  SizingTargets t;
  t.ttft_s = 2;
  t.tpot_s = 0.05;
  SECTION("weights that do not fit, and a KV cache too small for one request") {
    SizingSpace s;
    s.gpus = {profiles::resolve_gpu("l4")};
    s.weight_dtypes = {DType::bf16};
    s.kv_dtypes = {DType::bf16};
    s.max_pp = 1;
    const auto r = size_cluster(profiles::resolve_model("llama-3.1-70b"), w, t, s);
    const auto& tp1 = find(r, "l4", 1);
    CHECK(tp1.status == CandidateStatus::does_not_fit);
    CHECK_THAT(tp1.reason, Catch::Contains("weights 131.4 GiB") && Catch::Contains("exceed the 19.79 GiB requested"));
    CHECK(r.feasible == 0);
    CHECK_THAT(r.diagnosis, Catch::Contains("do not fit in memory"));
  }
  SECTION("tensor-parallel sizes the heads do not allow") {
    SizingSpace s;
    s.gpus = {profiles::resolve_gpu("h100-sxm")};
    s.max_tp = 32;
    s.max_pp = 1;
    s.max_gpus_per_replica = 32;
    const auto r = size_cluster(profiles::resolve_model("deepseek-v2-lite"), w, t, s);
    const auto& tp32 = find(r, "h100-sxm", 32);
    CHECK(tp32.status == CandidateStatus::invalid);
    CHECK_THAT(tp32.reason, Catch::Contains("num_attention_heads (16)"));
    CHECK(r.feasible > 0);
    CHECK(r.candidates.front().status == CandidateStatus::ok);
  }
  SECTION("a GPU budget") {
    SizingSpace s;
    s.gpus = {profiles::resolve_gpu("h100-sxm")};
    s.max_gpus = 2;
    w.arrival_rate_per_s = 500;
    const auto r = size_cluster(profiles::resolve_model("llama-3.1-8b"), w, t, s);
    CHECK(r.feasible == 0);
    CHECK(find(r, "h100-sxm").status == CandidateStatus::too_many_gpus);
    CHECK_THAT(find(r, "h100-sxm").reason, Catch::Contains("> max_gpus 2"));
  }
}

TEST_CASE("bad targets and workloads get clear errors", "[sizing][errors]") {
  const auto m = profiles::resolve_model("llama-3.1-8b");
  SizingSpace s;
  s.gpus = {profiles::resolve_gpu("h100-sxm")};
  SizingWorkload w;
  w.prompt_tokens = 1024;
  w.output_tokens = 128;
  w.arrival_rate_per_s = 1;
  SizingTargets t;
  t.ttft_s = 1;
  t.tpot_s = 0.05;
  auto field_of = [&](SizingWorkload ww, SizingTargets tt, SizingSpace ss = {}) -> std::string {
    if (ss.gpus.empty()) ss.gpus = s.gpus;
    try {
      size_cluster(m, ww, tt, ss);
    } catch (const SpecError& e) {
      return e.field();
    }
    return "";
  };
  for (double bad : {0.0, -0.05, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    auto tt = t;
    tt.tpot_s = bad;
    CHECK(field_of(w, tt) == "tpot_target_s");
    tt = t;
    tt.ttft_s = bad;
    CHECK(field_of(w, tt) == "ttft_target_s");
  }
  for (double bad : {0.0, 1.0, 90.0, -0.5}) {
    auto tt = t;
    tt.ttft_percentile = bad;
    CHECK(field_of(w, tt) == "ttft_percentile");
  }
  auto ww = w;
  ww.concurrent_users = 10;  // both a rate and users
  CHECK(field_of(ww, t) == "workload");
  ww = w;
  ww.arrival_rate_per_s = 0;  // neither
  CHECK(field_of(ww, t) == "workload");
  ww = w;
  ww.arrival_rate_per_s = -3;
  CHECK(field_of(ww, t) == "arrival_rate_per_s");
  ww = w;
  ww.prompt_tokens = 0;
  CHECK(field_of(ww, t) == "prompt_tokens");
  ww = w;
  ww.output_tokens = 0.5;
  CHECK(field_of(ww, t) == "output_tokens");
  SizingSpace none;
  none.gpus = {};
  CHECK_THROWS_WITH(size_cluster(m, w, t, none), Catch::Contains("gpus"));
  SizingSpace bad_tp = s;
  bad_tp.max_tp = 0;
  CHECK(field_of(w, t, bad_tp) == "max_tp");

  SECTION("impossible targets: no error in the search itself, a diagnosis naming the closest candidate") {
    auto tt = t;
    tt.tpot_s = 1e-5;  // 10 us: faster than reading the weights on any GPU
    const auto r = size_cluster(m, w, tt, s);
    CHECK(r.feasible == 0);
    CHECK_THAT(r.diagnosis, Catch::Contains("no candidate meets the targets") &&
                                Catch::Contains("miss the TPOT target even at batch 1 (fastest: ") &&
                                Catch::Contains("h100-sxm TP8"));
    tt = t;
    tt.ttft_s = 1e-4;
    const auto r2 = size_cluster(m, w, tt, s);
    CHECK(r2.feasible == 0);
    CHECK_THAT(r2.diagnosis, Catch::Contains("miss the TTFT target even unloaded"));
  }
}

TEST_CASE("the default search space: weight and KV formats, TP x PP within a node", "[sizing][search]") {
  SizingWorkload w;
  w.prompt_tokens = 1024;
  w.output_tokens = 256;
  w.arrival_rate_per_s = 4;
  SizingTargets t;
  t.ttft_s = 2;
  t.tpot_s = 0.05;
  SizingSpace s;
  s.gpus = {profiles::resolve_gpu("h200")};
  // Llama (bf16 checkpoint): bf16 and fp8 weights x bf16 and fp8 KV x (TP, PP) with TP x PP <= 8:
  // (1,1) (1,2) (1,4) (1,8) (2,1) (2,2) (2,4) (4,1) (4,2) (8,1) = 10 shapes -> 40 candidates.
  const auto r = size_cluster(profiles::resolve_model("llama-3.1-8b"), w, t, s);
  CHECK(r.candidates.size() == 40);
  // DeepSeek-V3 ships fp8 weights: only fp8 is searched for weights. A MoE model adds expert-parallel layouts: per
  // shape, EP groups of 1, 2, 4, 8 replicas within 8 GPUs, none whose experts would sit on one GPU (TP 1 x DP 1):
  // (1,1) 3 + (1,2) 2 + (1,4) 1 + (2,1) 3 + (2,2) 2 + (2,4) 1 + (4,1) 2 + (4,2) 1 + (8,1) 1 = 16, beside the 10 TP x PP
  // shapes: 26 layouts x 2 KV formats = 52 candidates.
  const auto d = size_cluster(profiles::resolve_model("deepseek-v3"), w, t, s);
  CHECK(d.candidates.size() == 52);
  CHECK(std::count_if(d.candidates.begin(), d.candidates.end(),
                      [](const SizingCandidate& c) { return c.ep_group_replicas > 0; }) == 32);
  CHECK(std::none_of(r.candidates.begin(), r.candidates.end(),
                     [](const SizingCandidate& c) { return c.ep_group_replicas > 0; }));
  for (const auto& c : d.candidates) CHECK(c.weight_dtype == DType::fp8);
  // The cheapest Llama-3.1-8B deployment for 4 req/s is a single H200 (a whole node would be wasted).
  REQUIRE(r.feasible > 0);
  CHECK(r.candidates.front().gpus == 1);

  // --dtype float32: vLLM casts an unquantised checkpoint's weights to it, so the searched formats are fp32 (served
  // without --quantization) and fp8, never bf16 weights beside fp32 activations.
  s.base.dtype = DType::fp32;
  const auto f = size_cluster(profiles::resolve_model("llama-3.1-8b"), w, t, s);
  CHECK(f.candidates.size() == 40);
  for (const auto& c : f.candidates) {
    CHECK((c.weight_dtype == DType::fp32 || c.weight_dtype == DType::fp8));
    CHECK((c.kv_dtype == DType::fp32 || c.kv_dtype == DType::fp8));
    if (c.deployment) CHECK(c.deployment->quantization == (c.weight_dtype == DType::fp32 ? DType::auto_ : DType::fp8));
  }
}

TEST_CASE("expert-parallel candidates come in whole groups, launch one group, and hold more KV than TP",
          "[sizing][search][ep]") {
  // DeepSeek-R1 on H200, 1,024 users of 1K / 2K (TensorRT-LLM's DeepSeek-R1 EP8 point, docs/accuracy.md).
  SizingWorkload w;
  w.prompt_tokens = 1000;
  w.output_tokens = 2000;
  w.concurrent_users = 1024;
  SizingTargets t;
  t.ttft_s = 10;
  t.tpot_s = 0.1;
  SizingSpace s;
  s.gpus = {profiles::resolve_gpu("h200")};
  s.kv_dtypes = {DType::fp8};
  const auto m = profiles::resolve_model("deepseek-r1");
  const auto r = size_cluster(m, w, t, s);
  const auto find = [&](i64 tp, i64 ep) {
    const auto it = std::find_if(r.candidates.begin(), r.candidates.end(), [&](const SizingCandidate& c) {
      return c.tp == tp && c.pp == 1 && c.ep_group_replicas == ep && !c.prefill;
    });
    REQUIRE(it != r.candidates.end());
    return *it;
  };
  const SizingCandidate ep8 = find(1, 8), tp8 = find(8, 0);
  REQUIRE(ep8.status == CandidateStatus::ok);
  REQUIRE(tp8.status == CandidateStatus::ok);
  CHECK(ep8.expert_parallel_size() == 8);
  CHECK(tp8.expert_parallel_size() == 1);
  CHECK(ep8.replicas % 8 == 0);
  CHECK(ep8.gpus == ep8.replicas * ep8.gpus_per_replica);
  // The command starts one group: 8 GPUs, data-parallel 8, experts split.
  REQUIRE(ep8.deployment);
  CHECK(ep8.deployment->num_gpus == 8);
  CHECK(ep8.deployment->enable_expert_parallel);
  CHECK_FALSE(tp8.deployment->enable_expert_parallel);
  const MemoryPlan plan = plan_memory(m, s.gpus[0], *ep8.deployment, {});
  CHECK(plan.dep.replicas == 8);
  CHECK(plan.dep.expert_parallel_size == 8);
  CHECK(plan.kv_capacity_tokens == u64(ep8.kv_capacity_tokens));
  // Each data-parallel rank keeps its own latent cache, where TP 8 replicates one cache on every rank: the 8 GPUs hold
  // several times the tokens (per-replica capacity x replicas per 8 GPUs).
  CHECK(double(ep8.kv_capacity_tokens) * 8 > 3.0 * double(tp8.kv_capacity_tokens));
  // --enable-expert-parallel in the base flags: only expert-parallel layouts; a dense model has none to search.
  s.base.enable_expert_parallel = true;
  const auto only = size_cluster(m, w, t, s);
  CHECK(std::all_of(only.candidates.begin(), only.candidates.end(),
                    [](const SizingCandidate& c) { return c.ep_group_replicas > 0; }));
  CHECK(std::none_of(only.candidates.begin(), only.candidates.end(),
                     [](const SizingCandidate& c) { return c.expert_parallel_size() == 1; }));  // no EP of one GPU
  // xPyD is searched without expert parallelism: asking for both is refused, not answered with nothing.
  SizingSpace both = s;
  both.disaggregated = true;
  SizingWorkload open = w;
  open.concurrent_users = 0;
  open.arrival_rate_per_s = 4;
  CHECK_THROWS_WITH(size_cluster(m, open, t, both), Catch::Contains("without expert parallelism"));
  const auto dense = size_cluster(profiles::resolve_model("llama-3.1-8b"), w, t, s);
  CHECK(std::none_of(dense.candidates.begin(), dense.candidates.end(),
                     [](const SizingCandidate& c) { return c.ep_group_replicas > 0; }));
}

TEST_CASE("a calibration replaces the datasheet rates for every candidate", "[sizing][calibration]") {
  SizingWorkload w;
  w.prompt_tokens = 1024;
  w.output_tokens = 256;
  w.concurrent_users = 64;
  SizingTargets t;
  t.ttft_s = 2;
  t.tpot_s = 0.02;
  SizingSpace s;
  s.gpus = {profiles::resolve_gpu("h100-sxm")};
  s.max_tp = 1;
  s.max_pp = 1;
  s.weight_dtypes = {DType::bf16};
  s.kv_dtypes = {DType::bf16};
  const auto base = size_cluster(profiles::resolve_model("llama-3.1-8b"), w, t, s);
  Calibration slow;
  slow.source = "test";
  slow.stream.read_bytes_per_s = 1.5e12;  // half of what the default efficiency assumes
  slow.decode.bandwidth_bytes_per_s = 1.5e12;
  s.calibration = slow;
  const auto cal = size_cluster(profiles::resolve_model("llama-3.1-8b"), w, t, s);
  REQUIRE(base.feasible == 1);
  REQUIRE(cal.feasible == 1);
  CHECK(cal.candidates.front().max_batch_targets < base.candidates.front().max_batch_targets);
  CHECK(cal.candidates.front().replicas > base.candidates.front().replicas);
}

TEST_CASE("workload files: means, max context and variability", "[sizing][workload]") {
  WorkloadSpec spec;
  spec.arrival.kind = ArrivalProcess::Kind::gamma;
  spec.arrival.rate_per_s = 3;
  spec.arrival.cv = 2;
  spec.prompt = LengthDistribution::uniform_tokens(100, 300);
  spec.output = LengthDistribution::empirical_tokens({100, 300}, {1, 1});
  const auto w = sizing_workload(spec);
  CHECK(w.prompt_tokens == Approx(200));
  CHECK(w.output_tokens == Approx(200));
  CHECK(w.max_context_tokens == 600);
  CHECK(w.arrival_rate_per_s == 3);
  CHECK(w.arrival_scv == Approx(4));
  // Uniform on 100..300: variance (201^2 - 1) / 12 = 3366.7, mean 200 -> SCV 0.0842.
  CHECK(w.prompt_scv == Approx((201.0 * 201 - 1) / 12 / 40000));
  spec.prompt = LengthDistribution::lognormal_tokens(1000, 0.5);  // unbounded
  const auto u = sizing_workload(spec);
  CHECK(u.max_context_tokens == -1);
  CHECK(u.prompt_scv == Approx(std::expm1(0.25)));
}

TEST_CASE("sweep: one row per (context, batch), equal to the speed model's own answers", "[sweep]") {
  Deployment d;
  d.tensor_parallel_size = 2;
  d.max_model_len = 65536;
  const auto c = make_speed_context(profiles::resolve_model("mixtral-8x7b"), profiles::resolve_gpu("h100-sxm"), d);
  const std::vector<i64> ctx{1024, 32768, 131072}, batch{1, 16, 600, 2000};
  // Every kind of model: dense GQA, sliding window, MLA, and a pipeline-parallel deployment (decode_step path).
  struct Other {
    const char* model;
    i64 tp;
    i64 pp;
  };
  for (const Other& o : {Other{"llama-3.1-70b", 4, 1}, Other{"mistral-7b-v0.1", 1, 1}, Other{"deepseek-v2-lite", 2, 1},
                         Other{"llama-3.1-70b", 2, 2}}) {
    Deployment e;
    e.tensor_parallel_size = o.tp;
    e.pipeline_parallel_size = o.pp;
    e.max_model_len = 65536;
    const auto oc = make_speed_context(profiles::resolve_model(o.model), profiles::resolve_gpu("h100-sxm"), e);
    sweep_grid(oc, {1, 1024, 5000, 65536}, {1, 3, 64, 1000}, [&](const SweepPoint& p) {
      INFO(o.model << " TP" << o.tp << " PP" << o.pp << ", S = " << p.context_tokens << ", B = " << p.batch);
      const auto st = decode_step(oc, p.batch, p.context_tokens);
      CHECK(p.tpot_s == Approx(st.tpot_s).epsilon(1e-9));
      CHECK(p.bound == st.bound);
    });
  }
  std::vector<SweepPoint> pts;
  sweep_grid(c, ctx, batch, [&](const SweepPoint& p) { pts.push_back(p); });
  REQUIRE(pts.size() == 12);
  for (const auto& p : pts) {
    INFO("S = " << p.context_tokens << ", B = " << p.batch);
    const auto st = decode_step(c, p.batch, p.context_tokens);
    CHECK(p.tpot_s == Approx(st.tpot_s).epsilon(1e-9));
    CHECK(p.tokens_per_s == Approx(st.tokens_per_s).epsilon(1e-9));
    CHECK(p.ttft_s == ttft_s(c, p.context_tokens));
    CHECK(p.max_concurrency == concurrency_at(c.model, c.plan, p.context_tokens));
    const bool fits = p.context_tokens <= 65536 && p.batch <= c.plan.dep.max_num_seqs &&
                      static_cast<double>(p.batch) <= std::floor(p.max_concurrency);
    CHECK(p.fits == fits);
  }
  CHECK(pts[0].context_tokens == 1024);
  CHECK(pts[3].batch == 2000);
  CHECK_FALSE(pts[3].fits);  // beyond max_num_seqs (1024)
  CHECK_FALSE(pts[8].fits);  // 128K > max_model_len
  CHECK(pts[0].fits);
  CHECK_THROWS_AS(sweep_grid(c, {0}, {1}, [](const SweepPoint&) {}), SpecError);
  CHECK_THROWS_AS(sweep_grid(c, {1024}, {0}, [](const SweepPoint&) {}), SpecError);
}
