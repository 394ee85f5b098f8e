// The simulator's share of vLLM's hybrid KV cache manager: one pool, the full-attention groups' block table, and
// the blocks sliding-window (and linear-attention) groups hold beside it (kv_cache.hpp, docs/simulator.md).
#include <catch2/catch.hpp>

#include <limits>

#include "kvcap/planner/memory.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/simulator/simulator.hpp"

using namespace kvcap;

TEST_CASE("gpt-oss: the sliding group holds its window, not the context", "[sim][hybrid]") {
  const auto m = profiles::load_model_file(std::string(KVCAP_FIXTURES) + "/hf/gpt-oss-20b.json");
  Deployment d;
  d.max_model_len = 16384;
  d.kv_cache_memory_bytes = {4ull << 30};
  const auto plan = plan_memory(m, profiles::resolve_gpu("h100-sxm"), d, {16384});
  const auto rc = sim::replica_config(plan);
  CHECK(rc.full_groups == 1);
  REQUIRE(rc.local_groups.size() == 1);
  CHECK(rc.num_blocks ==
        plan.num_blocks - 1);  // the table is the full group's; the pool is shared, less the null block
  // Window 128, block 16: a decode step needs cdiv(127 + 1, 16) + 1 = 9 blocks, an 8,192-token chunk 521.
  CHECK(rc.side_blocks(9000, 1) == 9);
  CHECK(rc.side_blocks(9000, 8192) == 521);
  CHECK(rc.side_blocks(50, 50) == (50 + 15) / 16 + 1);

  // 64 clients of 4K + 256 tokens: each holds 272 table blocks and 9 window blocks while decoding, so about
  // num_blocks / 281 run at once, twice what charging both groups as full attention (num_blocks / 2 / 272) allows.
  sim::SimConfig cfg;
  cfg.replica = rc;
  cfg.max_concurrency = 64;
  WorkloadSpec w;
  w.arrival.rate_per_s = std::numeric_limits<double>::infinity();
  w.prompt = LengthDistribution::fixed_tokens(4096);
  w.output = LengthDistribution::fixed_tokens(256);
  auto src = sim::synthetic_source(w, 1, sim::SourceLimits{256, std::nullopt});
  cfg.check_invariants = true;
  const auto r = sim::simulate(cfg, sim::StepTimer::linear(0.01, 1e-6), *src);
  CHECK(r.requests_completed == 256);
  const double conservative = static_cast<double>(plan.num_blocks) / 2 / 272;
  CHECK(static_cast<double>(r.running_max) > 1.5 * conservative);
  // No more than the pool holds at the least a running request takes: its prompt's 256 blocks and 9 window blocks.
  CHECK(static_cast<double>(r.running_max) <= static_cast<double>(plan.num_blocks) / (256 + 9));
}

TEST_CASE("KV eviction what-if: a request holds the kept tokens and one step's, and more requests run",
          "[sim][eviction]") {
  const auto m = profiles::resolve_model("llama-3.1-8b");
  Deployment d;
  d.max_model_len = 16384;
  d.kv_cache_memory_bytes = {4ull << 30};  // 2,048 blocks of 16 tokens (128 KiB per token)
  Deployment e = d;
  e.kv_eviction.kind = Deployment::Eviction::Kind::streaming;
  e.kv_eviction.sink_tokens = 4;
  e.kv_eviction.window_tokens = 1020;  // keeps 1,024 tokens
  const auto gpu = profiles::resolve_gpu("h100-sxm");
  const auto base_plan = plan_memory(m, gpu, d, {16384});
  const auto plan = plan_memory(m, gpu, e, {16384});
  const auto rc = sim::replica_config(plan);
  CHECK(rc.table_evicts);
  REQUIRE(rc.local_groups.size() == 1);
  // Nothing evicted yet: every token's block. Past the kept 1,024 tokens: 64 blocks of kept tokens and the step's
  // (a decode token's block: 65, the planner's count; a 2,048-token chunk: 64 + 128, held until the policy evicts).
  CHECK(rc.side_blocks(1000, 1000) == 63);
  CHECK(rc.side_blocks(1025, 1) == 65);  // 1,024 before the step: nothing evicted yet, 65 blocks for 1,025
  CHECK(rc.side_blocks(9000, 1) == 65);
  CHECK(static_cast<u64>(rc.side_blocks(9000, 1)) == spec_blocks_per_request(plan.kv_groups[0].spec, 9000, 8192));
  CHECK(rc.side_blocks(6144, 2048) == 64 + 128);
  CHECK(rc.side_blocks(2048, 2048) == 128);  // a first chunk: nothing kept yet to evict from

  // 64 clients of 4K + 256 tokens at once: without eviction each holds 272 blocks (7 fit in 2,047), with it 65
  // while decoding; the simulated runs follow, and no block leaks (check_invariants, the replica's final check).
  WorkloadSpec w;
  w.arrival.rate_per_s = std::numeric_limits<double>::infinity();
  w.prompt = LengthDistribution::fixed_tokens(4096);
  w.output = LengthDistribution::fixed_tokens(256);
  const auto run = [&](const sim::ReplicaConfig& c) {
    sim::SimConfig cfg;
    cfg.replica = c;
    cfg.max_concurrency = 64;
    cfg.check_invariants = true;
    auto src = sim::synthetic_source(w, 1, sim::SourceLimits{256, std::nullopt});
    return sim::simulate(cfg, sim::StepTimer::linear(0.01, 1e-6), *src);
  };
  const auto kept = run(rc);
  const auto full = run(sim::replica_config(base_plan));
  CHECK(kept.requests_completed == 256);
  CHECK(full.requests_completed == 256);
  CHECK(full.running_max <= 2047 / 257);  // at least a prompt's 256 blocks and its first output token's
  CHECK(kept.running_max > 3 * full.running_max);
  // The pool never holds more than its blocks: requests decoding take 65 each, one prefilling its chunk more.
  CHECK(static_cast<double>(kept.running_max) <= 2047.0 / 65.0 + 1);
  CHECK_FALSE(kept.kv_waste_measured);
  CHECK(full.kv_waste_measured);
}
