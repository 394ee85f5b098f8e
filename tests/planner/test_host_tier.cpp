// The host KV tier (planner/host_tier.hpp): vLLM's CPU offloading capacity formula, the single-group rule, and the
// reload time over the host link against recomputing the same tokens.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "kvcap/planner/host_tier.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

namespace {
constexpr double kGiB = 1073741824.0;

MemoryPlan plan_for(const char* model, const char* gpu, i64 tp = 1, i64 pp = 1, bool hybrid_off = false) {
  Deployment d;
  d.tensor_parallel_size = tp;
  d.pipeline_parallel_size = pp;
  if (hybrid_off) d.hybrid_kv_cache_manager = Deployment::Hybrid::off;
  return plan_memory(profiles::resolve_model(model), profiles::resolve_gpu(gpu), d);
}

Calibration link_calibration(double per_copy_s, double bandwidth) {
  Calibration c;
  c.stream.read_bytes_per_s = 4.4e12;
  c.host_to_device = {per_copy_s, bandwidth};
  return c;
}
}  // namespace

TEST_CASE("the host tier holds what vLLM's CPUOffloadingSpec allocates", "[host_tier]") {
  SECTION("Llama 3.1 8B, one rank: a block is 32 layers x 64 KiB (16 tokens x 8 KV heads x 128 x bf16 x K and V)") {
    const auto t = plan_host_tier(plan_for("llama-3.1-8b", "h200"), profiles::resolve_gpu("h200"), std::nullopt, 64);
    CHECK(t.world_size == 1);
    CHECK(t.copies_per_block == 32);
    CHECK(t.page_bytes == 65536);
    CHECK(t.block_bytes_all_ranks == 2097152);  // 2 MiB
    CHECK(t.num_blocks == 32768);               // 64 GiB // 2 MiB
    CHECK(t.tokens == 524288);
  }
  SECTION("Llama 3.1 70B, TP 2 x PP 2 (vLLM's test: the GiB are summed over the 4 ranks)") {
    const auto t = plan_for("llama-3.1-70b", "h100-sxm", 2, 2);
    const auto tier = plan_host_tier(t, profiles::resolve_gpu("h100-sxm"), std::nullopt, 8);
    CHECK(tier.world_size == 4);
    CHECK(tier.copies_per_block == 40);  // 80 layers over 2 stages
    CHECK(tier.page_bytes == 32768);     // 16 tokens x 4 of the 8 KV heads per rank x 128 x bf16 x K and V
    CHECK(tier.block_bytes_all_ranks == tier.page_bytes * 40 * 4);
    CHECK(tier.num_blocks == static_cast<u64>(8 * kGiB) / tier.block_bytes_all_ranks);  // 1,638
    CHECK(tier.num_blocks == 1638);
  }
  SECTION("fractional GiB are truncated to bytes as int(size x 2^30)") {
    const auto t = plan_host_tier(plan_for("llama-3.1-8b", "h200"), profiles::resolve_gpu("h200"), std::nullopt, 0.5);
    CHECK(t.offloading_bytes == 536870912u);
    CHECK(t.num_blocks == 256);
  }
}

TEST_CASE("the host tier refuses what vLLM would refuse", "[host_tier][errors]") {
  const GpuSpec h100 = profiles::resolve_gpu("h100-sxm");
  const MemoryPlan llama = plan_for("llama-3.1-8b", "h100-sxm");
  for (double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    CHECK_THROWS_AS(plan_host_tier(llama, h100, std::nullopt, bad), SpecError);
  }
  CHECK_THROWS_AS(plan_host_tier(llama, h100, std::nullopt, 1e-6), SpecError);  // smaller than one block
  // gpt-oss has sliding-window and full-attention groups: vLLM's transfers handle one group.
  const MemoryPlan oss = plan_for("gpt-oss-20b", "h100-sxm");
  REQUIRE(oss.kv_groups.size() == 2);
  try {
    plan_host_tier(oss, h100, std::nullopt, 64);
    FAIL("a two-group model was accepted");
  } catch (const SpecError& e) {
    CHECK(e.field() == "kv_offloading_size");
    CHECK(std::string(e.what()).find("--disable-hybrid-kv-cache-manager") != std::string::npos);
  }
  const auto one_group = plan_host_tier(plan_for("gpt-oss-20b", "h100-sxm", 1, 1, true), h100, std::nullopt, 64);
  CHECK(one_group.copies_per_block == 24);
}

TEST_CASE("reloading a cached prefix from the host against recomputing it", "[host_tier][speed]") {
  const ModelSpec m = profiles::resolve_model("llama-3.1-8b");
  const GpuSpec h200 = profiles::resolve_gpu("h200");
  const MemoryPlan plan = plan_memory(m, h200, Deployment{});
  const Calibration cal = link_calibration(2.7e-6, 53.7e9);
  const SpeedContext ctx = make_speed_context(m, h200, plan, {}, cal);
  const HostTier t = plan_host_tier(plan, h200, cal, 64);
  REQUIRE(t.link);
  CHECK(t.link->source == "calibrated");
  const double per_block = 32 * (2.7e-6 + 65536 / 53.7e9);
  // Only full blocks are cached (vLLM hashes full blocks): 17 tokens reload one block, 15 none.
  CHECK(reload_time_s(t, 15) == 0);
  CHECK(reload_time_s(t, 17) == Approx(per_block));
  double last_ratio = 1e9;
  for (i64 cached : {1024, 4096, 16384, 65536, 131072}) {
    const HostReload r = compare_reload(ctx, t, cached);
    CHECK(r.reload_s ==
          Approx(per_block * std::floor(static_cast<double>(cached) / 16)).epsilon(1e-12));  // linear in blocks
    CHECK(r.recompute_s == Approx(prefill(ctx, cached).total.total_s + prefill(ctx, cached).pipeline_p2p_s));
    CHECK(r.reload_s < r.recompute_s);
    if (cached >= 16384) {
      // Prefill grows faster than linearly (attention is quadratic), the reload linearly: the gain grows.
      CHECK(r.reload_s / r.recompute_s < last_ratio);
    }
    last_ratio = r.reload_s / r.recompute_s;
  }
  // Without a calibration: the GPU profile's datasheet link, no per-copy cost, so a lower bound.
  const HostTier sheet = plan_host_tier(plan, h200, std::nullopt, 64);
  REQUIRE(sheet.link);
  CHECK(sheet.link->source == "datasheet");
  CHECK(sheet.link->bandwidth_bytes_per_s == Approx(64e9));
  CHECK(reload_time_s(sheet, 4096) == Approx(256 * 32 * 65536 / 64e9));
  CHECK(reload_time_s(sheet, 4096) < reload_time_s(t, 4096));
  // A GPU profile without host_link and no calibration: capacity yes, reload time unknown.
  const GpuSpec b200 = profiles::resolve_gpu("b200");
  const HostTier none = plan_host_tier(plan_memory(m, b200, Deployment{}), b200, std::nullopt, 64);
  CHECK_FALSE(none.link);
  CHECK(reload_time_s(none, 4096) == 0);
}

TEST_CASE("LMCache: chunks of the rank's KV, CPU and disk backends per rank, reload from each",
          "[host_tier][lmcache]") {
  // Llama 3.1 70B, TP 4 on H200: 80 layers x 2 of the 8 KV heads per rank x 128 x 2 x bf16 = 80 KiB per token on a
  // rank, so a chunk of 256 tokens is 20 MiB.
  const MemoryPlan plan = plan_for("llama-3.1-70b", "h200", 4);
  const GpuSpec h200 = profiles::resolve_gpu("h200");
  LmcacheSpec s;
  s.cpu_gib = 64;
  s.disk_gib = 500;
  const HostTier t = plan_lmcache_tier(plan, h200, std::nullopt, s);
  CHECK(t.connector == HostTier::Connector::lmcache);
  CHECK(t.chunk_bytes_per_rank == 256ull * 81920);
  CHECK(t.cpu_chunks == static_cast<u64>(64 * kGiB) / (256ull * 81920));  // 3,276
  CHECK(t.cpu_chunks == 3276);
  CHECK(t.disk_chunks == 25600);  // 500 GiB / 20 MiB
  CHECK(t.tokens == 3276ull * 256);
  CHECK(t.disk_tokens == 25600ull * 256);
  CHECK(t.num_blocks == 3276ull * 16);  // in vLLM blocks, for the simulator
  // Reload: whole chunks, one copy of 20 MiB per chunk and rank over its own PCIe link (datasheet 64 GB/s); from disk
  // the four ranks' shards go through the node's one disk first (6.9 GB/s by default).
  REQUIRE(t.link);
  REQUIRE(t.disk);
  const double chunk = 256.0 * 81920;
  CHECK(reload_time_s(t, 255) == 0);
  CHECK(reload_time_s(t, 1024) == Approx(4 * chunk / 64e9));
  CHECK(disk_reload_time_s(t, 1024) == Approx(4 * chunk * 4 / 6.9e9 + 4 * chunk / 64e9));
  CHECK(t.disk->read_bytes_per_s == kDefaultDiskReadBytesPerS);
  s.disk_read_bytes_per_s = 14e9;
  CHECK(plan_lmcache_tier(plan, h200, std::nullopt, s).disk->read_bytes_per_s == 14e9);
  // Without a disk backend there is no disk time; a CPU size alone is LMCache's default setup.
  LmcacheSpec cpu_only;
  const HostTier c = plan_lmcache_tier(plan, h200, std::nullopt, cpu_only);
  CHECK_FALSE(c.disk);
  CHECK(c.cpu_chunks == static_cast<u64>(5 * kGiB) / (256ull * 81920));  // LMCache's default 5 GiB
  CHECK(disk_reload_time_s(c, 1024) == 0);
  // Refused: no capacity, a chunk that is not whole blocks, a hybrid model.
  LmcacheSpec none;
  none.cpu_gib = 0;
  CHECK_THROWS_WITH(plan_lmcache_tier(plan, h200, std::nullopt, none), Catch::Contains("not both 0"));
  LmcacheSpec odd;
  odd.chunk_tokens = 100;
  CHECK_THROWS_WITH(plan_lmcache_tier(plan, h200, std::nullopt, odd), Catch::Contains("whole number of KV blocks"));
  CHECK_THROWS_WITH(plan_lmcache_tier(plan_for("gpt-oss-20b", "h200"), h200, std::nullopt, cpu_only),
                    Catch::Contains("one KV cache group"));
}

TEST_CASE("host tiers count in the block size as resolved: FlashMLA's 64-token blocks", "[host_tier][lmcache]") {
  // DeepSeek-V2-Lite: vLLM resolves MLA's block to 64 tokens; 27 layers x 576 bf16 values = 31,104 B per token.
  const MemoryPlan plan = plan_for("deepseek-v2-lite", "h200");
  REQUIRE(plan.dep.block_size == 64);
  const GpuSpec h200 = profiles::resolve_gpu("h200");
  const HostTier off = plan_host_tier(plan, h200, std::nullopt, 8);
  CHECK(off.unit_tokens == 64);
  CHECK(off.tokens == off.num_blocks * 64);
  LmcacheSpec s;
  s.cpu_gib = 8;
  const HostTier lm = plan_lmcache_tier(plan, h200, std::nullopt, s);
  CHECK(lm.chunk_bytes_per_rank == 256ull * 31104);  // 256 tokens, not 256 blocks' worth
  CHECK(lm.num_blocks == lm.cpu_chunks * 4);         // 4 blocks of 64 per chunk
  CHECK(reload_time_s(lm, 1024) == Approx(4 * 256.0 * 31104 / 64e9));
  LmcacheSpec small = s;
  small.chunk_tokens = 32;  // not whole blocks of 64
  CHECK_THROWS_WITH(plan_lmcache_tier(plan, h200, std::nullopt, small), Catch::Contains("blocks of 64 tokens"));
}
