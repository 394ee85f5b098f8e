// vLLM's KV-cache formats beyond one dtype per cache: the per-token-head scale pages, nvfp4 KV, and
// --kv-cache-dtype-skip-layers (some layers kept in the model dtype, the pool's pages unified).
// Expected values are worked by hand from the vLLM code cited in planner/src/dtype.cpp and
// planner/src/deployment.cpp (resolve_skip_layers); each case shows the arithmetic.
#include <catch2/catch.hpp>

#include "kvcap/planner/error.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/profiles/flags.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

namespace {
ModelSpec builtin(const char* n) {
  return profiles::resolve_model(n);
}
GpuSpec h100() {
  return profiles::resolve_gpu("h100-sxm");
}
Deployment kv(DType t, std::vector<std::string> skip = {}) {
  Deployment d;
  d.kv_cache_dtype = t;
  d.kv_cache_dtype_skip_layers = std::move(skip);
  d.max_model_len = 8192;
  d.kv_cache_memory_bytes = {16ull << 30};
  return d;
}
}  // namespace

TEST_CASE("per-token-head and nvfp4 KV pages follow AttentionSpec.page_size_bytes", "[kv_formats]") {
  // Llama 3.1 8B on one rank: 8 KV heads of 128, block 16.
  const auto m = builtin("llama-3.1-8b");
  const auto page = [&](DType t) { return attention_page_bytes(m, t, 1, 16); };
  CHECK(page(DType::bf16) == 16u * 2 * 8 * 128 * 2);  // 65536
  CHECK(page(DType::fp8) == 16u * 2 * 8 * 128);       // 32768: the per-tensor scale lives outside the cache
  // + 2 x block x kv_heads x sizeof(float32) of scales.
  CHECK(page(DType::fp8_per_token_head) == 32768u + 2 * 16 * 8 * 4);   // 33792
  CHECK(page(DType::int8_per_token_head) == 32768u + 2 * 16 * 8 * 4);  // 33792
  CHECK(page(DType::int4_per_token_head) == 16384u + 2 * 16 * 8 * 4);  // head_size // 2 bytes: 17408
  // nvfp4_kv_cache_full_dim(128) = 128 / 2 + 128 / 16 = 72 bytes per head, K and V.
  CHECK(page(DType::nvfp4) == 16u * 2 * 8 * 72);  // 18432
  CHECK_THROWS_WITH(resolve(m, h100(), kv(DType::nvfp4)),
                    Catch::Contains("nvfp4 KV needs a GPU with fp4 tensor cores"));
  CHECK(resolve(m, profiles::resolve_gpu("b200"), kv(DType::nvfp4)).kv_dtype == DType::nvfp4);
  // Under TP 8 each rank keeps one head, and one head's scales.
  CHECK(attention_page_bytes(m, DType::fp8_per_token_head, 8, 16) == 16u * 2 * 128 + 2 * 16 * 4);
  // The plan's block count follows the page: 16 GiB / (32 layers x page).
  const auto p = plan_memory(m, h100(), kv(DType::fp8_per_token_head), {8192});
  CHECK(p.num_blocks == (16ull << 30) / (32 * 33792));
}

TEST_CASE("per-token-head formats refuse MLA models, the names parse as vLLM spells them", "[kv_formats]") {
  CHECK_THROWS_WITH(resolve(builtin("deepseek-v3"), h100(), kv(DType::int8_per_token_head)),
                    Catch::Contains("MLA model caches one latent"));
  CHECK(parse_dtype("fp8_per_token_head") == DType::fp8_per_token_head);
  CHECK(parse_dtype("INT4_PER_TOKEN_HEAD") == DType::int4_per_token_head);
  CHECK(info(DType::nvfp4).kv_ok);
  CHECK_FALSE(info(DType::fp8_per_token_head).weights_ok);
}

TEST_CASE("skip layers: primary block raised, skipped pages padded to it", "[kv_formats][skip]") {
  const auto m = builtin("llama-3.1-8b");
  // fp8 primary: 2048 bytes per token; bf16 skipped: 4096. The primary block becomes
  // 16 x cdiv(16 x 4096, 16 x 2048) = 32; skip_page_size_padded = 32 x 2048 = 65536 = 16 x 4096 (no padding).
  const auto r = resolve(m, h100(), kv(DType::fp8, {"0", "31"}));
  CHECK(r.block_size == 32);
  CHECK(r.skip_block_size == 16);
  CHECK(r.skip_page_bytes == 65536);
  const auto p = plan_memory(m, h100(), kv(DType::fp8, {"0", "31"}), {8192});
  REQUIRE(p.kv_layers.size() == 32);
  CHECK(p.kv_layers[0].block_size == 16);
  CHECK(p.kv_layers[1].block_size == 32);
  CHECK(p.kv_layers[31].page_size_bytes == p.kv_layers[1].page_size_bytes);
  CHECK(p.kv_groups.size() >= 2);  // the skipped layers hold their own block table
  // Every KV byte is one of 32 equal pages per block id: 16 GiB / (32 x 65536) block ids, wherever the
  // layers sit; without skipping the same memory holds 16 GiB / (32 x 32768) block ids of 16 tokens.
  const auto plain = plan_memory(m, h100(), kv(DType::fp8), {8192});
  CHECK(plain.num_blocks == (16ull << 30) / (32 * 32768));
  CHECK(p.kv_capacity_tokens < plain.kv_capacity_tokens);
  CHECK(p.kv_capacity_tokens > plain.kv_capacity_tokens / 2);

  // fp8_per_token_head: 2 x 8 x (128 + 4) = 2112 bytes per token; the primary block
  // 16 x cdiv(16 x 4096, 16 x 2112) = 32; the skipped pages padded from 65536 to 32 x 2112 = 67584.
  const auto h = resolve(m, h100(), kv(DType::fp8_per_token_head, {"5"}));
  CHECK(h.block_size == 32);
  CHECK(h.skip_page_bytes == 67584);

  // Nothing to unify when the KV format already is the model dtype.
  const auto same = resolve(m, h100(), kv(DType::auto_, {"0"}));
  CHECK(same.block_size == 16);
  CHECK(same.skip_page_bytes == 0);
}

TEST_CASE("skip layers by sliding_window, errors name the field", "[kv_formats][skip]") {
  const auto g = builtin("gpt-oss-20b");  // alternating sliding (128) and full layers
  Deployment d = kv(DType::fp8, {"sliding_window"});
  CHECK(kv_dtype_skipped(g, d, 0) == (layer_attention(g, 0) == LayerAttention::sliding));
  CHECK(kv_dtype_skipped(g, d, 1) == (layer_attention(g, 1) == LayerAttention::sliding));
  const auto r = resolve(g, h100(), d);
  CHECK(r.skip_page_bytes > 0);
  CHECK_THROWS_WITH(resolve(builtin("llama-3.1-8b"), h100(), kv(DType::fp8, {"32"})),
                    Catch::Contains("expected layer indices 0..31 or sliding_window, got '32'"));
  CHECK_THROWS_WITH(resolve(builtin("qwen3-next-80b-a3b"), h100(), kv(DType::fp8, {"3"})),
                    Catch::Contains("linear-attention"));
  profiles::FlagTexts f{{"kv-cache-dtype-skip-layers", "0 47,sliding_window"}};
  CHECK(profiles::deployment_from_flags(f).kv_cache_dtype_skip_layers ==
        std::vector<std::string>{"0", "47", "sliding_window"});
  f["kv-cache-dtype-skip-layers"] = "first";
  CHECK_THROWS_WITH(
      profiles::deployment_from_flags(f),
      Catch::Contains(
          "--kv-cache-dtype-skip-layers: expected layer indices (0, 1, ...) or sliding_window, got 'first'"));
}
