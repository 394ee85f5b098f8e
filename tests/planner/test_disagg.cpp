// Disaggregated prefill/decode (planner/disagg.hpp): the bytes one rank moves per request for each attention kind and
// parallel layout, the transfer time over the link, and which link the GPU profiles give.
#include <catch2/catch.hpp>

#include "kvcap/planner/disagg.hpp"
#include "kvcap/planner/error.hpp"
#include "kvcap/planner/sizing.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

namespace {
MemoryPlan plan_for(const char* model, const char* gpu, i64 tp) {
  Deployment d;
  d.tensor_parallel_size = tp;
  d.max_model_len = 8192;
  return plan_memory(profiles::resolve_model(model), profiles::resolve_gpu(gpu), d);
}
}  // namespace

TEST_CASE("a rank moves its own heads' KV of every prompt token", "[disagg]") {
  SECTION("Llama 3.1 8B, GQA: 32 layers x 8 KV heads x 128 x K and V x bf16 = 128 KiB per token, split over TP") {
    const MemoryPlan tp1 = plan_for("llama-3.1-8b", "h100-sxm", 1);
    const MemoryPlan tp2 = plan_for("llama-3.1-8b", "h100-sxm", 2);
    CHECK(kv_transfer_bytes_per_rank(tp1, 1000) == 1000ull * 131072);
    CHECK(kv_transfer_bytes_per_rank(tp2, 1000) == 1000ull * 65536);
    CHECK(kv_transfer_bytes_per_rank(tp1, 0) == 0);
    const KvTransferLink link{"test", 50e9, 5e-6};
    // The side whose ranks hold more sets the time: TP1 prefill to TP2 decode is as slow as TP1 to TP1.
    CHECK(kv_transfer_s(tp1, tp1, link, 1000) == Approx(5e-6 + 131072e3 / 50e9));
    CHECK(kv_transfer_s(tp1, tp2, link, 1000) == Approx(kv_transfer_s(tp1, tp1, link, 1000)));
    CHECK(kv_transfer_s(tp2, tp2, link, 1000) == Approx(5e-6 + 65536e3 / 50e9));
    CHECK(kv_transfer_s(tp1, tp1, link, 0) == 0);
  }
  SECTION("DeepSeek-V3, MLA: every TP rank holds the whole latent (61 layers x (512 + 64) x bf16), whatever the TP") {
    const MemoryPlan tp8 = plan_for("deepseek-v3", "h200", 8);
    CHECK(kv_transfer_bytes_per_rank(tp8, 4096) == 4096ull * 61 * 576 * 2);
  }
  SECTION("gpt-oss-20b: its sliding-window layers move at most their 128-token window") {
    const MemoryPlan p = plan_for("gpt-oss-20b", "h100-sxm", 1);
    const u64 per_layer_token = 2ull * 8 * 64 * 2;  // K and V, 8 KV heads x 64, bf16
    CHECK(kv_transfer_bytes_per_rank(p, 100) == 24 * 100 * per_layer_token);
    CHECK(kv_transfer_bytes_per_rank(p, 4000) == 12 * (4000 + 128) * per_layer_token);
  }
}

TEST_CASE("the KV link comes from the GPU profiles: the slower NIC, or NVLink in one domain", "[disagg]") {
  const GpuSpec h100 = profiles::resolve_gpu("h100-sxm");
  const GpuSpec a100 = profiles::resolve_gpu("a100-80gb");
  const KvTransferLink net = kv_transfer_link(h100, h100, KvLinkKind::network);
  CHECK(net.bandwidth_bytes_per_s == 50e9);  // ConnectX-7 400 Gb/s per GPU
  CHECK(kv_transfer_link(h100, a100, KvLinkKind::network).bandwidth_bytes_per_s == 25e9);  // ConnectX-6 200 Gb/s
  CHECK(kv_transfer_link(h100, h100, KvLinkKind::nvlink).bandwidth_bytes_per_s == 450e9);
  GpuSpec bare = h100;
  bare.name = "no-nic";
  bare.network_bandwidth_bytes_per_s = 0;
  try {
    kv_transfer_link(h100, bare, KvLinkKind::network);
    FAIL("a profile without a network gave a link");
  } catch (const SpecError& e) {
    CHECK(e.field() == "network");
    CHECK_THAT(e.reason(), Catch::Contains("no-nic") && Catch::Contains("--kv-transfer-bandwidth"));
  }
  const MemoryPlan p = plan_for("llama-3.1-8b", "h100-sxm", 1);
  CHECK_THROWS_AS(kv_transfer_s(p, p, KvTransferLink{"x", 0, 0}, 10), SpecError);
}

namespace {
/// Llama 3.1 70B, 4K / 512 at 6 req/s on H100 and H200, fp8 weights and KV, TP 1-8, PP 1.
SizingRequest xpyd_request(double rate) {
  SizingRequest q;
  q.model = profiles::resolve_model("llama-3.1-70b");
  q.workload.prompt_tokens = 4096;
  q.workload.output_tokens = 512;
  q.workload.arrival_rate_per_s = rate;
  q.targets.ttft_s = 2.0;
  q.targets.ttft_percentile = 0.9;
  q.targets.tpot_s = 0.04;
  q.space.gpus = {profiles::resolve_gpu("h100-sxm"), profiles::resolve_gpu("h200")};
  q.space.weight_dtypes = {DType::fp8};
  q.space.kv_dtypes = {DType::fp8};
  q.space.max_pp = 1;
  q.space.disaggregated = true;
  return q;
}
}  // namespace

TEST_CASE("the sizing search ranks xPyD candidates beside aggregated ones, each pool sized by its own queue",
          "[disagg][sizing]") {
  const SizingRequest q = xpyd_request(6);
  const SizingResult r = size_cluster(q);
  std::size_t agg = 0, disagg = 0;
  for (std::size_t i = 0; i < r.feasible; ++i) {
    const SizingCandidate& c = r.candidates[i];
    if (!c.prefill) {
      ++agg;
      continue;
    }
    ++disagg;
    const SizingPrefillPool& p = *c.prefill;
    CHECK(xpyd(c) == std::to_string(p.replicas) + "P" + std::to_string(c.replicas) + "D");
    CHECK(c.gpus == p.gpus + c.replicas * c.gpus_per_replica);
    CHECK(p.gpus == p.replicas * p.tp);
    // The TTFT is the prefill queue, the prefill, the KV transfer and two decode steps; the TPOT a decode step of
    // its batch with no prefill beside it.
    CHECK(c.ttft_s == Approx(p.ttft_wait_s + p.prefill_s + p.kv_transfer_s + 2 * c.decode_step_s));
    CHECK(c.tpot_s == c.decode_step_s);
    CHECK(c.ttft_s <= q.targets.ttft_s);
    CHECK(c.tpot_s <= q.targets.tpot_s);
    CHECK(p.kv_transfer_s > 0);
    // The pools balance: the prefill workers are below saturation, the decode batch within memory.
    CHECK(p.utilization < 1);
    CHECK(p.utilization == Approx(q.workload.arrival_rate_per_s / static_cast<double>(p.replicas) *
                                  (p.prefill_s - make_speed_context(q.model, profiles::resolve_gpu(p.gpu),
                                                                    plan_memory(q.model, profiles::resolve_gpu(p.gpu),
                                                                                *p.deployment, {}),
                                                                    q.space.speed, std::nullopt)
                                                     .options.request_overhead_s)));
    CHECK(c.batch <= c.max_batch_memory);
    REQUIRE(p.deployment);
    CHECK(p.deployment->num_gpus == p.gpus);
    CHECK(c.deployment->num_gpus == c.replicas * c.gpus_per_replica);
    // The cost adds both pools at their GPUs' prices.
    const double price_d = profiles::resolve_gpu(c.gpu).price_per_gpu_hour_usd;
    CHECK(c.cost_per_hour_usd == Approx(static_cast<double>(p.gpus) * p.price_per_gpu_hour_usd +
                                        static_cast<double>(c.replicas * c.gpus_per_replica) * price_d));
  }
  CHECK(agg > 0);
  CHECK(disagg > 0);
  // Frontier: the decode-only TPOT puts an xPyD candidate on it at this prompt-heavy load.
  bool xpyd_on_frontier = false;
  for (std::size_t i : r.pareto) xpyd_on_frontier = xpyd_on_frontier || r.candidates[i].prefill.has_value();
  CHECK(xpyd_on_frontier);

  SECTION("twice the rate needs at least as many workers in each pool of the same deployments") {
    const SizingResult r2 = size_cluster(xpyd_request(12));
    for (std::size_t i = 0; i < r.feasible; ++i) {
      const SizingCandidate& a = r.candidates[i];
      if (!a.prefill) continue;
      for (std::size_t j = 0; j < r2.feasible; ++j) {
        const SizingCandidate& b = r2.candidates[j];
        if (!b.prefill || b.gpu != a.gpu || b.tp != a.tp || b.prefill->gpu != a.prefill->gpu ||
            b.prefill->tp != a.prefill->tp)
          continue;
        CHECK(b.gpus > a.gpus);
      }
    }
  }
  SECTION("a closed loop of users is refused: it has no arrival rate to split between the pools") {
    SizingRequest c = q;
    c.workload.arrival_rate_per_s = 0;
    c.workload.concurrent_users = 64;
    CHECK_THROWS_AS(size_cluster(c), SpecError);
  }
  SECTION("without a network in the GPU profiles there is no xPyD candidate over the network, but over NVLink") {
    SizingRequest n = q;
    for (auto& g : n.space.gpus) g.network_bandwidth_bytes_per_s = 0;
    const SizingResult rn = size_cluster(n);
    for (std::size_t i = 0; i < rn.feasible; ++i) CHECK_FALSE(rn.candidates[i].prefill);
    n.space.kv_link = KvLinkKind::nvlink;
    const SizingResult rv = size_cluster(n);
    bool any = false;
    for (std::size_t i = 0; i < rv.feasible; ++i) any = any || rv.candidates[i].prefill.has_value();
    CHECK(any);
  }
}
