// The capacity figures vLLM logged at start-up (shared/fixtures/vllm_startup_logs.md): given the
// logged available KV memory, predict the logged token count exactly and the concurrency to 0.01.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "kvcap/planner/memory.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

namespace {
const std::string kHf = std::string(KVCAP_FIXTURES) + "/hf/";
constexpr double kGiB = 1073741824.0;

// Every whole-byte value within +-0.005 GiB of a GiB figure printed to two decimals.
std::pair<u64, u64> gib_range(double printed) {
  return {static_cast<u64>(std::ceil((printed - 0.005) * kGiB)), static_cast<u64>(std::floor((printed + 0.005) * kGiB))};
}

// Token capacity is monotonic in the available bytes: bisect [lo, hi] for a byte count that gives
// `want` tokens; returns 0 when no value in the range does.
u64 bytes_giving(u64 lo, u64 hi, u64 want, const std::function<u64(u64)>& tokens) {
  if (tokens(lo) > want || tokens(hi) < want) return 0;
  while (lo < hi) {
    const u64 mid = lo + (hi - lo) / 2;
    if (tokens(mid) < want) lo = mid + 1; else hi = mid;
  }
  return tokens(lo) == want ? lo : 0;
}
}  // namespace

TEST_CASE("vLLM log A: Mistral-7B (32 x 8 x 128) fp16, exact bytes -> 451,744 tokens, 110.29x", "[vllm]") {
  auto m = profiles::load_model_file(kHf + "Mistral-7B-Instruct-v0.3.json");
  m.dtype = DType::fp16;
  const auto g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.max_model_len = 4096;
  d.kv_cache_memory_bytes = {59'212'694'937ull};
  const auto p = plan_memory(m, g, d, {4096});
  CHECK(p.kv_bytes_per_token_per_rank == 131'072);
  CHECK(p.kv_capacity_tokens == 451'744);
  CHECK(std::round(p.max_concurrency * 100) / 100 == Approx(110.29));
}

TEST_CASE("vLLM log B: Llama-3.1-70B TP4, 32.06 GiB -> 420,208 tokens, 3.21x at 131,072", "[vllm]") {
  const auto m = profiles::load_model_file(kHf + "Llama-3.1-70B.json");
  const auto g = profiles::resolve_gpu("h100-sxm");
  auto run = [&](u64 bytes) {
    Deployment d;
    d.tensor_parallel_size = 4;
    d.max_model_len = 131072;
    d.kv_cache_memory_bytes = {bytes};
    return plan_memory(m, g, d, {131072});
  };
  const auto [lo, hi] = gib_range(32.06);
  const u64 bytes = bytes_giving(lo, hi, 420'208, [&](u64 b) { return run(b).kv_capacity_tokens; });
  REQUIRE(bytes != 0);
  const auto p = run(bytes);
  CHECK(p.kv_bytes_per_token_per_rank == 81'920);  // 2 x 80 x (8 / 4) x 128 x 2
  CHECK(p.num_blocks == 26'263);
  CHECK(std::round(p.max_concurrency * 100) / 100 == Approx(3.21));
}

TEST_CASE("vLLM log C: DeepSeek-V2-Lite TP2 x PP2 on L4, stages 14/13 -> 807,792 tokens, 788.86x", "[vllm]") {
  const auto m = profiles::load_model_file(kHf + "DeepSeek-V2-Lite.json");
  const auto g = profiles::resolve_gpu("l4");
  const auto [lo1, hi1] = gib_range(11.33);
  auto run = [&](u64 b0, u64 b1) {
    Deployment d;
    d.tensor_parallel_size = 2;
    d.pipeline_parallel_size = 2;
    d.max_model_len = 1024;
    d.kv_cache_memory_bytes = {b0, b1};
    return plan_memory(m, g, d, {1024});
  };
  const auto [lo0, hi0] = gib_range(12.13);
  // Stage 1 at any value of its range; stage 0 binds.
  const u64 b0 = bytes_giving(lo0, hi0, 807'792, [&](u64 b) { return run(b, lo1).kv_capacity_tokens; });
  REQUIRE(b0 != 0);
  for (u64 b1 : {lo1, hi1}) {
    const auto p = run(b0, b1);
    REQUIRE(p.stages.size() == 2);
    CHECK(p.stages[0].num_layers == 14);
    CHECK(p.stages[1].num_layers == 13);
    CHECK(p.stages[0].kv_bytes_per_token == 14 * 576 * 2);  // MLA latent + rope key, replicated on both TP ranks
    CHECK(p.binding_stage == 0);
    CHECK(p.kv_capacity_tokens == 807'792);
    CHECK(std::round(p.max_concurrency * 100) / 100 == Approx(788.86));
  }
}
