// The seed texts' worked numbers (shared/seeds/), from the parameters each seed states.
#include <catch2/catch.hpp>

#include "kvcap/planner/memory.hpp"

using namespace kvcap;

namespace {
// A dense GQA model with the seed's stated parameters (other fields only need to be valid).
ModelSpec seed_model(i64 layers, i64 heads, i64 kv_heads, i64 head_dim) {
  ModelSpec m;
  m.name = "seed";
  m.num_layers = layers;
  m.num_heads = heads;
  m.num_kv_heads = kv_heads;
  m.head_dim = head_dim;
  m.hidden_size = heads * head_dim;
  m.intermediate_size = 4 * m.hidden_size;
  m.vocab_size = 32000;
  m.max_position_embeddings = 131072;
  return m;
}
u64 bytes_per_token(const ModelSpec& m, DType kv, i64 tp = 1) {
  return kv_bytes(kv, static_cast<u64>(kv_elements_per_token_per_layer(m, tp))) * static_cast<u64>(m.num_layers);
}
}  // namespace

TEST_CASE("seed 000: LLaMA 3.1 405B with the seed's 16 KV heads holds 1,008 KiB per token", "[seeds]") {
  const auto m = seed_model(126, 128, 16, 128);
  CHECK(bytes_per_token(m, DType::bf16) == 1'032'192);
  CHECK(bytes_per_token(m, DType::bf16) == 1008 * 1024);
  // 131,072 tokens: 126 GiB ("adds another 126 GB", in the seed's 1024^3 units).
  CHECK(bytes_per_token(m, DType::bf16) * 131072 == 126ull << 30);
  // Full MHA (128 KV heads) would be 8x: ~1 TiB.
  CHECK(bytes_per_token(seed_model(126, 128, 128, 128), DType::bf16) * 131072 == 1008ull << 30);
}

TEST_CASE("seed 000: LLaMA 3 8B and 70B, 128 KiB and 320 KiB per token", "[seeds]") {
  CHECK(bytes_per_token(seed_model(32, 32, 8, 128), DType::bf16) == 128 * 1024);
  CHECK(bytes_per_token(seed_model(80, 64, 8, 128), DType::bf16) == 327'680);
}

TEST_CASE("seed 000: DeepSeek-V3 MLA caches 70,272 bytes per token", "[seeds]") {
  ModelSpec m = seed_model(61, 128, 128, 128);
  m.attention = AttentionType::mla;
  m.mla = {512, 1536, 64, 128, 128};
  CHECK(bytes_per_token(m, DType::bf16) == 70'272);
  // Replicated on every TP rank, not divided.
  CHECK(bytes_per_token(m, DType::bf16, 8) == 70'272);
  // The seed's "hypothetical GQA with 16 KV heads" is 7.1x larger.
  CHECK(bytes_per_token(seed_model(61, 128, 16, 128), DType::bf16) == 499'712);
}

TEST_CASE("seed 000: 400 GiB of KV for LLaMA 3 70B serves 655 requests of 2,000 tokens", "[seeds]") {
  const u64 per_token = bytes_per_token(seed_model(80, 64, 8, 128), DType::bf16);
  CHECK((400ull << 30) / (per_token * 2000) == 655);
  CHECK((400ull << 30) / (per_token * 128000) == 10);
}

TEST_CASE("seed 001: LLaMA 2 7B holds half a MiB per token", "[seeds]") {
  CHECK(bytes_per_token(seed_model(32, 32, 32, 128), DType::bf16) == 512 * 1024);
  // 28,672 tokens fill 14 GiB.
  CHECK(bytes_per_token(seed_model(32, 32, 32, 128), DType::bf16) * 28672 == 14ull << 30);
}

TEST_CASE("seed 002: 70B MHA at 32K is 80 GiB, 40 GiB holds 16,384 tokens, 16-token pages", "[seeds]") {
  const auto mha = seed_model(80, 64, 64, 128);
  CHECK(bytes_per_token(mha, DType::bf16) * 32768 == 85'899'345'920ull);
  CHECK((40ull << 30) / bytes_per_token(mha, DType::bf16) == 16384);
  // MQA: 1.25 GiB; GQA-8: 10 GiB; INT8 halves the MHA figure (payload only, as the seed does).
  CHECK(bytes_per_token(seed_model(80, 64, 1, 128), DType::bf16) * 32768 == 1342177280ull);
  CHECK(bytes_per_token(seed_model(80, 64, 8, 128), DType::bf16) * 32768 == 10ull << 30);
  CHECK(payload_bits(DType::int8, static_cast<u64>(kv_elements_per_token_per_layer(mha, 1))) / 8 * 80 * 32768 == 40ull << 30);
  // A 16-token block of GQA-8, head 128, bf16 is 64 KiB per layer and 5 MiB over 80 layers; 900 tokens need 57 blocks.
  const auto gqa = seed_model(80, 64, 8, 128);
  const u64 layer_block = 16 * kv_bytes(DType::bf16, static_cast<u64>(kv_elements_per_token_per_layer(gqa, 1)));
  CHECK(layer_block == 64 * 1024);
  CHECK(layer_block * 80 == 5ull << 20);
  CHECK(spec_blocks_per_request(KvLayerSpec{KvSpecKind::full, 16, layer_block, 0}, 900, 8192) == 57);
  // The int8 scale overhead the seed quotes: 2 bytes per 128-value head, 1.5625%.
  CHECK(kv_bytes(DType::int8, 128) == 130);
}

TEST_CASE("seed 000: quantised KV, payload 1 / 0.5 / 0.25 bytes per value", "[seeds]") {
  const auto m = seed_model(80, 64, 8, 128);
  const u64 e = static_cast<u64>(kv_elements_per_token_per_layer(m, 1));
  CHECK(payload_bits(DType::bf16, e) == 16 * e);
  CHECK(payload_bits(DType::fp8, e) == 8 * e);
  CHECK(payload_bits(DType::int4, e) == 4 * e);
  CHECK(payload_bits(DType::int2, e) == 2 * e);
  // With the group metadata kvcap adds (KIVI: fp16 scale + zero per 32 values), int4 costs 5 bits.
  CHECK(kv_bytes(DType::int4, e) == e * 5 / 8);
  CHECK(kv_bytes(DType::fp8, e) == e);
}
