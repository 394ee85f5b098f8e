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
