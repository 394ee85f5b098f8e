// Hybrid models of attention and Gated DeltaNet linear-attention layers (Qwen3-Next, Qwen3.5/3.6):
// vLLM sizes each linear layer's per-request state as a MambaSpec page, raises the attention block size
// until one attention page holds it, pads the state page to the attention page, and charges one block
// per request per linear-layer group (mamba_cache_mode "none").
//   vllm/model_executor/layers/mamba/mamba_utils.py  gated_delta_net_state_shape / _state_dtype
//   vllm/model_executor/models/config.py             HybridAttentionMambaModelConfig.verify_and_update_config
//   vllm/v1/kv_cache_interface.py                    MambaSpec.page_size_bytes, max_memory_usage_bytes
#include <algorithm>
#include <catch2/catch.hpp>

#include "kvcap/planner/error.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/params.hpp"
#include "kvcap/planner/plausibility.hpp"
#include "kvcap/planner/speed.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/simulator/simulator.hpp"

using namespace kvcap;

namespace {
const std::string kData = std::string(KVCAP_TEST_DATA) + "/hf/";
ModelSpec qwen3_next() { return profiles::load_model_file(kData + "Qwen3-Next-80B-A3B-Instruct.json"); }
}  // namespace

TEST_CASE("Qwen3-Next imports as 36 Gated DeltaNet + 12 gated attention layers", "[linear][hf]") {
  const auto m = qwen3_next();
  REQUIRE(has_linear_layers(m));
  i64 linear = 0;
  for (i64 l = 0; l < m.num_layers; ++l) linear += layer_attention(m, l) == LayerAttention::linear;
  CHECK(linear == 36);
  CHECK(layer_attention(m, 3) == LayerAttention::full);  // (i + 1) % full_attention_interval == 0
  CHECK(m.attention_output_gate);
  CHECK(m.linear.conv_dim() == 128 * 16 * 2 + 128 * 32);
  // Published: 80B parameters in total (Qwen/Qwen3-Next-80B-A3B-Instruct model card; MTP layer not served).
  CHECK(static_cast<double>(param_counts(m).total) == Approx(80e9).epsilon(0.01));
  // The YAML profile round-trips every field of the linear layers.
  const auto back = profiles::parse_model(profiles::to_yaml(m), "round-trip.yaml");
  CHECK(back.layer_pattern == m.layer_pattern);
  CHECK(back.linear.num_value_heads == 32);
  CHECK(back.attention_output_gate);
  CHECK(param_counts(back).total == param_counts(m).total);
}

TEST_CASE("Qwen3-Next on vLLM: 544-token attention blocks, state pages padded 1.49%, 3 state groups + 1", "[linear][kv_cache]") {
  const auto m = qwen3_next();
  const auto g = profiles::resolve_gpu("h200");
  Deployment d;
  d.max_model_len = 32768;
  d.kv_cache_memory_bytes = {40ull << 30};
  auto p = plan_memory(m, g, d, {32768});
  // conv (4 - 1) x 8192 bf16 + recurrent 32 x 128 x 128 bf16 = 49,152 + 1,048,576 B.
  CHECK(p.dep.linear_state_bytes == 1'097'728);
  // One attention token: 2 x 2 KV heads x 256 x 2 B = 2 KiB; 16 x cdiv(1,097,728, 16 x 2,048) = 544
  // ("Setting attention block size to 544 tokens"), page 544 x 2 KiB; "Padding mamba page size by 1.49%".
  CHECK(p.dep.block_size == 544);
  CHECK(p.dep.linear_state_page_bytes == 544 * 2048);
  CHECK(100.0 * (544.0 * 2048 - 1'097'728) / 1'097'728 == Approx(1.49).margin(0.005));
  // 36 linear layers and 12 attention layers, one page size: groups of 12 (3 of states, 1 of attention).
  REQUIRE(p.kv_groups.size() == 4);
  int states = 0;
  for (const auto& grp : p.kv_groups) states += grp.spec.kind == KvSpecKind::mamba;
  CHECK(states == 3);
  CHECK(p.stages[0].layout.group_size == 12);
  CHECK(p.num_blocks == (40ull << 30) / (12ull * 544 * 2048));
  // A request holds cdiv(32768, 544) attention blocks and, with prefix caching (mamba_cache_mode align,
  // current vLLM), two state blocks in each state group: the running state and the last checkpoint.
  CHECK(p.blocks_per_max_len_request == 61 + 3 * 2);
  CHECK(p.max_concurrency == Approx(static_cast<double>(p.num_blocks) / 67));
  CHECK(p.kv_capacity_tokens == static_cast<u64>(static_cast<double>(p.num_blocks) / 67 * 32768));
  // --mamba-cache-mode none (and vLLM 0.10-0.11, which ran hybrid models without prefix caching): one.
  d.mamba_cache_mode = Deployment::MambaCache::none;
  p = plan_memory(m, g, d, {32768});
  CHECK(p.blocks_per_max_len_request == 61 + 3);
  CHECK(p.kv_capacity_tokens == static_cast<u64>(static_cast<double>(p.num_blocks) / 64 * 32768));
  d.mamba_cache_mode = Deployment::MambaCache::auto_;
  d.vllm_version = "0.11";
  p = plan_memory(m, g, d, {32768});
  CHECK(p.blocks_per_max_len_request == 61 + 3);
  // vLLM 0.11 logged num_blocks // groups x the smallest block size (544; the state's is max_model_len).
  CHECK(p.kv_capacity_tokens == p.num_blocks / 4 * 544);
  d.vllm_version = "current";
  d.mamba_cache_mode = Deployment::MambaCache::none;
  // The state costs the same at any context; only attention grows with it.
  const auto a = plan_memory(m, g, d, {1024, 2048});
  CHECK(a.curve[1].kv_bytes_per_request - a.curve[0].kv_bytes_per_request == 2ull * 12 * 544 * 2048);

  // TP 2 halves both the state and the attention token: the block stays 544.
  d.tensor_parallel_size = 2;
  p = plan_memory(m, g, d, {32768});
  CHECK(p.dep.linear_state_bytes == 548'864);
  CHECK(p.dep.block_size == 544);
  // A larger --block-size than needed is kept, as vLLM keeps it.
  d.tensor_parallel_size = 1;
  d.block_size = 1;
  CHECK(plan_memory(m, g, d, {32768}).dep.block_size == 544);
  // An fp8 KV cache halves the attention token, so twice the tokens fill a state page.
  d.kv_cache_dtype = DType::fp8;
  CHECK(plan_memory(m, g, d, {32768}).dep.block_size == 1072);
  // Linear-attention state cannot be held as full attention: vLLM refuses the model without the hybrid manager.
  d.kv_cache_dtype = DType::auto_;
  d.hybrid_kv_cache_manager = Deployment::Hybrid::off;
  CHECK_THROWS_AS(plan_memory(m, g, d, {32768}), SpecError);
  // Tensor parallelism must divide the linear heads.
  d.hybrid_kv_cache_manager = Deployment::Hybrid::auto_;
  auto odd = m;
  odd.linear.num_key_heads = 8, odd.linear.num_value_heads = 24;
  d.tensor_parallel_size = 16;
  CHECK_THROWS_WITH(plan_memory(odd, g, d, {32768}), Catch::Contains("linear_num_key_heads (8)"));
}

TEST_CASE("Qwen3.5/3.6-27B: a float32 recurrent state (mamba_ssm_dtype) gives vLLM's 784-token block", "[linear][kv_cache]") {
  // Text geometry of Qwen3.6-27B (Qwen3_5ForConditionalGeneration): 48 linear + 16 attention layers,
  // 4 KV heads x 256, linear heads 16 k / 48 v x 128, mamba_ssm_dtype float32. vLLM logged "Setting
  // attention block size to 784 tokens" for it (LMCache/LMCache pull request #5079).
  const auto m = profiles::load_model_file(kData + "qwen3_5-27b-geometry.json");
  CHECK(m.linear.state_dtype == DType::fp32);
  Deployment d;
  d.max_model_len = 32768;
  d.kv_cache_memory_bytes = {40ull << 30};
  const auto g = profiles::resolve_gpu("h200");
  auto p = plan_memory(m, g, d, {32768});
  CHECK(p.dep.linear_state_bytes == 3 * 10240 * 2 + 48ull * 128 * 128 * 4);
  CHECK(p.dep.block_size == 784);
  CHECK(p.kv_groups.size() == 4);  // 3 groups of 16 linear layers, 1 of 16 attention layers
  // An fp8 KV cache: a published vLLM config dump of this geometry (block_size 1568, cache_dtype fp8,
  // mamba_cache_mode align, num_gpu_blocks 1725, kv_cache_max_concurrency 19.1666..., kv_cache_size_tokens
  // 2512213 at max_model_len 131,072): 84 attention blocks + 3 groups x 2 state blocks = 90 per request.
  {
    Deployment f = d;
    f.kv_cache_dtype = DType::fp8;
    f.max_model_len = 131072;
    f.kv_cache_memory_bytes = {1725ull * 16 * 1568 * 2048};
    const auto q = plan_memory(m, g, f, {131072});
    CHECK(q.dep.block_size == 1568);
    REQUIRE(q.num_blocks == 1725);
    CHECK(q.blocks_per_max_len_request == 90);
    CHECK(q.max_concurrency == Approx(19.166666666666668));
    CHECK(q.kv_capacity_tokens == 2'512'213);
  }
  // --mamba-ssm-cache-dtype bfloat16 halves the recurrent state: 16 x cdiv(1,634,304, 65,536) = 400.
  d.mamba_ssm_cache_dtype = DType::bf16;
  CHECK(plan_memory(m, g, d, {32768}).dep.block_size == 400);
}

TEST_CASE("the speed model reads and writes each linear layer's state once per step", "[linear][speed]") {
  const auto m = qwen3_next();
  const auto g = profiles::resolve_gpu("h200");
  Deployment d;
  d.tensor_parallel_size = 2;
  d.max_model_len = 32768;
  const auto plan = plan_memory(m, g, d, {32768});
  const SpeedContext ctx = make_speed_context(m, g, plan);
  const double k1 = decode_step(ctx, 8, 1024).stage.kv_bytes, k2 = decode_step(ctx, 8, 2048).stage.kv_bytes;
  // Going from 1K to 2K of context adds only the 12 attention layers' KV (1 KiB per token per layer
  // on a TP-2 rank): the states do not grow.
  CHECK(k2 - k1 == Approx(8.0 * 1024 * 12 * 1024));
  // What does not grow is the 36 states, read and written back: 8 x 2 x 548,864 x 36 B (+ < 1 token of KV).
  CHECK(k1 - (k2 - k1) == Approx(8.0 * 2 * 548'864 * 36).epsilon(0.001));
}

TEST_CASE("Qwen3.6-35B-A3B: vLLM's 1056-token block, 0.76% padding, and a logged 3,274,229 tokens / 12.49x", "[linear][kv_cache]") {
  // Text config of Qwen3.6-35B-A3B (qwen3_5_moe_text: 30 Gated DeltaNet + 10 attention layers, 2 KV heads
  // x 256, linear heads 16 k / 32 v x 128, float32 recurrent state). Published vLLM start-up logs of the
  // Qwen3.5/3.6-35B-A3B family: "Setting attention block size to 1056 tokens ...", "Padding mamba page
  // size by 0.76% ...", and for max_model_len 262,144 "GPU KV cache size: 3,274,229 tokens",
  // "Maximum concurrency for 262,144 tokens per request: 12.49x".
  const auto m = profiles::load_model_file(kData + "qwen3_6-35b-a3b-text.json");
  REQUIRE(m.moe.enabled());
  Deployment d;
  const auto g = profiles::resolve_gpu("h200");
  // Size the pool at 3,185 blocks: a block id costs 10 pages of 1056 x 2 KiB.
  d.kv_cache_memory_bytes = {3185ull * 10 * 1056 * 2048};
  const auto p = plan_memory(m, g, d, {262144});
  CHECK(p.dep.max_model_len == 262144);
  CHECK(p.dep.linear_state_bytes == 3 * 8192 * 2 + 32ull * 128 * 128 * 4);
  CHECK(p.dep.block_size == 1056);
  CHECK(100.0 * static_cast<double>(p.dep.linear_state_page_bytes - p.dep.linear_state_bytes) /
            static_cast<double>(p.dep.linear_state_bytes) == Approx(0.76).margin(0.005));
  REQUIRE(p.num_blocks == 3185);
  // 249 attention blocks + 3 groups x 2 state blocks (align) = 255 per request of 262,144 tokens: both
  // logged figures follow; with one state block per group (252) no block count gives them.
  CHECK(p.blocks_per_max_len_request == 255);
  CHECK(p.kv_capacity_tokens == 3'274'229);
  CHECK(p.max_concurrency == Approx(12.49).margin(0.005));
}

TEST_CASE("the simulator charges each admitted request its state blocks from the shared pool", "[linear][simulator]") {
  const auto m = qwen3_next();
  Deployment d;
  d.tensor_parallel_size = 2;
  d.max_model_len = 32768;
  d.kv_cache_memory_bytes = {20ull << 30};
  const auto plan = plan_memory(m, profiles::resolve_gpu("h200"), d, {32768});
  const auto rc = sim::replica_config(plan);
  CHECK(rc.block_size == 544);
  CHECK(rc.num_blocks == plan.num_blocks - 1);  // one token group: the whole pool less vLLM's null block
  CHECK(rc.state_blocks_per_request == 3 * 2);  // three state groups, align mode
  d.mamba_cache_mode = Deployment::MambaCache::none;
  CHECK(sim::replica_config(plan_memory(m, profiles::resolve_gpu("h200"), d, {32768})).state_blocks_per_request == 3);
}

TEST_CASE("Mamba hybrids: Granite 4.0 H (Mamba-2) and Jamba (Mamba-1)", "[linear][kv_cache][hf]") {
  const auto g = profiles::resolve_gpu("h100-sxm");
  // Granite-4.0-H-Small: 36 Mamba-2 + 4 attention layers, 8 KV heads x 128, d_inner 8192, d_state 128, 1 group.
  // Published 32B total / 9B active; vLLM logged "Setting attention block size to 528 tokens" and "Padding mamba
  // page size by 0.69%" for ibm-granite/granite-4.0-h-small (a public start-up log of v0.11.1).
  const auto granite = profiles::load_model_file(kData + "granite-4.0-h-small-geometry.json");
  CHECK(granite.linear.kind == LinearAttentionSpec::Kind::mamba2);
  CHECK(static_cast<double>(param_counts(granite).total) == Approx(32e9).epsilon(0.01));
  CHECK(static_cast<double>(param_counts(granite).active) == Approx(9e9).epsilon(0.03));
  Deployment d;
  d.max_model_len = 32768;
  d.kv_cache_memory_bytes = {20ull << 30};
  d.vllm_version = "0.11";  // the log's release, which ran hybrid models without prefix caching
  auto p = plan_memory(granite, g, d, {32768});
  CHECK(p.dep.mamba_mode == Deployment::MambaCache::none);
  // conv 3 x (8192 + 2 x 128) + recurrent 128 heads x 64 x 128, bf16.
  CHECK(p.dep.linear_state_bytes == 2ull * (3 * 8448 + 128 * 64 * 128));
  CHECK(p.dep.block_size == 528);
  CHECK(100.0 * static_cast<double>(p.dep.linear_state_page_bytes - p.dep.linear_state_bytes) /
            static_cast<double>(p.dep.linear_state_bytes) == Approx(0.69).margin(0.005));
  CHECK(p.kv_groups.size() == 10);  // 9 groups of 4 state layers + 1 of the 4 attention layers
  // One group does not divide TP 2: vLLM pads the groups to 2 (extra_groups_for_head_shards).
  d.tensor_parallel_size = 2;
  p = plan_memory(granite, g, d, {32768});
  CHECK(p.dep.linear_state_bytes == 2ull * (3 * (8192 + 2 * 2 * 128) / 2 + 64 * 64 * 128));

  // Jamba 1.5 Mini: Mamba-1 with an attention layer every 8th (offset 4), MoE every 2nd (offset 1):
  // published 52B total / 12B active.
  const auto jamba = profiles::load_model_file(kData + "AI21-Jamba-1.5-Mini-geometry.json");
  CHECK(jamba.linear.kind == LinearAttentionSpec::Kind::mamba1);
  CHECK(layer_attention(jamba, 4) == LayerAttention::full);
  CHECK(layer_attention(jamba, 3) == LayerAttention::linear);
  CHECK(layer_is_moe(jamba, 1));
  CHECK_FALSE(layer_is_moe(jamba, 2));
  CHECK(static_cast<double>(param_counts(jamba).total) == Approx(52e9).epsilon(0.01));
  CHECK(static_cast<double>(param_counts(jamba).active) == Approx(12e9).epsilon(0.02));
  Deployment j;
  j.mamba_cache_mode = Deployment::MambaCache::none;
  j.tensor_parallel_size = 2;
  j.max_model_len = 32768;
  j.kv_cache_memory_bytes = {20ull << 30};
  p = plan_memory(jamba, g, j, {32768});
  // conv 8192 / 2 x 3 + recurrent 8192 / 2 x 16, bf16; a 2 KiB attention token on a TP-2 rank: 16 x cdiv(., 32 KiB).
  CHECK(p.dep.linear_state_bytes == 2ull * (4096 * 3 + 4096 * 16));
  CHECK(p.dep.block_size == 80);
  // Both round-trip through the YAML profile.
  for (const auto* mm : {&granite, &jamba}) {
    const auto back = profiles::parse_model(profiles::to_yaml(*mm), "round-trip.yaml");
    CHECK(back.linear.kind == mm->linear.kind);
    CHECK(param_counts(back).total == param_counts(*mm).total);
    CHECK(linear_state_bytes_per_rank(back, 1, DType::bf16) == linear_state_bytes_per_rank(*mm, 1, DType::bf16));
  }
}

TEST_CASE("mamba_cache_mode all: Mamba hybrids checkpoint their states every chunk-aligned block",
          "[linear][kv_cache][hf]") {
  // vLLM with prefix caching (its default since it caches hybrid models) runs a model whose class supports Mamba
  // prefix caching in mamba_cache_mode "all" (vllm/model_executor/models/config.py MambaModelConfig): the block is
  // a multiple of lcm(SSD chunk, 16) that holds the state (vllm/platforms/interface.py _align_hybrid_block_size),
  // and MambaSpec.max_memory_usage_bytes charges a state group cdiv(max_model_len, block) blocks.
  const auto g = profiles::resolve_gpu("h100-sxm");
  const auto granite = profiles::load_model_file(kData + "granite-4.0-h-small-geometry.json");
  CHECK(granite.linear.chunk_size == 256);  // GraniteMoeHybridConfig's mamba_chunk_size default
  Deployment d;
  d.max_model_len = 32768;
  d.kv_cache_memory_bytes = {20ull << 30};
  const auto p = plan_memory(granite, g, d, {32768});
  REQUIRE(p.dep.mamba_mode == Deployment::MambaCache::all);
  CHECK(p.dep.mamba_prefix_caching());
  // The state (2,147,840 B) is cdiv(., 4 KiB) = 525 attention tokens: 256 x cdiv(525, 256) = 768.
  CHECK(p.dep.block_size == 768);
  CHECK(p.dep.mamba_block_size == 768);
  CHECK(p.dep.linear_state_page_bytes == 768u * 4096);
  REQUIRE(p.kv_groups.size() == 10);  // 9 state groups of 4 layers and the 4 attention layers
  CHECK(p.num_blocks == (20ull << 30) / (4ull * 768 * 4096));
  // Every group, state or attention, is charged cdiv(32768, 768) = 43 blocks per request of max_model_len.
  CHECK(p.blocks_per_max_len_request == 10 * 43);
  CHECK(p.max_concurrency == Approx(static_cast<double>(p.num_blocks) / 430));
  CHECK(p.kv_capacity_tokens == static_cast<u64>(static_cast<double>(p.num_blocks) / 430 * 32768));
  for (const auto& grp : p.kv_groups)
    if (grp.spec.kind == KvSpecKind::mamba)
      CHECK(describe(grp.spec) == "linear-attention state, a checkpoint per 768 tokens");
  // The simulator charges a running request its running state and the block being written, as in align mode.
  CHECK(sim::replica_config(p).state_blocks_per_request == 9 * 2);

  // --mamba-cache-mode align: the smallest 16-token multiple, 2 state blocks per group: 43 + 9 x 2 = 61 per request.
  Deployment a = d;
  a.mamba_cache_mode = Deployment::MambaCache::align;
  const auto pa = plan_memory(granite, g, a, {32768});
  CHECK(pa.dep.block_size == 528);
  CHECK(pa.dep.mamba_block_size == 0);
  CHECK(pa.blocks_per_max_len_request == 63 + 9 * 2);  // cdiv(32768, 528) = 63
  CHECK(pa.max_concurrency > p.max_concurrency);

  // The longest context that fits follows the same charge (vLLM's binary search over max_memory_usage_bytes).
  Deployment tight = d;
  tight.kv_cache_memory_bytes = {200ull << 20};
  const auto pt = plan_memory(granite, g, tight, {32768});
  CHECK_FALSE(pt.fits());
  CHECK(pt.max_model_len_that_fits == 768 * (static_cast<i64>(pt.num_blocks) / 10));

  // Gated DeltaNet models have no "all" mode: asked for it, vLLM falls back to align.
  const auto next = qwen3_next();
  Deployment n;
  n.tensor_parallel_size = 2;
  n.max_model_len = 32768;
  n.kv_cache_memory_bytes = {20ull << 30};
  n.mamba_cache_mode = Deployment::MambaCache::all;
  const auto pn = plan_memory(next, profiles::resolve_gpu("h200"), n, {32768});
  CHECK(pn.dep.mamba_mode == Deployment::MambaCache::align);
  CHECK_THAT(pn.dep.mamba_mode_note, Catch::Contains("falls back to align"));
  CHECK(pn.dep.block_size == 544);

  // Jamba (Mamba-1) has no chunk: vLLM's 2048. The chunk survives the YAML profile.
  const auto jamba = profiles::load_model_file(kData + "AI21-Jamba-1.5-Mini-geometry.json");
  CHECK(jamba.linear.chunk_size == 0);
  Deployment j;
  j.tensor_parallel_size = 2;
  j.max_model_len = 32768;
  j.kv_cache_memory_bytes = {20ull << 30};
  CHECK(plan_memory(jamba, g, j, {32768}).dep.block_size == 2048);
  const std::string yaml = profiles::to_yaml(granite);
  const auto back = profiles::parse_model(yaml, "round-trip.yaml");
  CHECK(back.linear.chunk_size == 256);
  // A Mamba-2 profile must say its chunk (vLLM's 2048 without one is Mamba-1's, and would give a 2048-token block).
  std::string no_chunk = yaml;
  const auto at = no_chunk.find("  chunk_size:");
  REQUIRE(at != std::string::npos);
  no_chunk.erase(at, no_chunk.find('\n', at) + 1 - at);
  CHECK_THROWS_WITH(profiles::parse_model(no_chunk, "no-chunk.yaml"), Catch::Contains("chunk_size"));
  CHECK(plan_memory(back, g, d, {32768}).dep.block_size == 768);
}

TEST_CASE("vLLM 0.19+ refuses max_num_seqs above the pool's blocks for a model with states", "[linear][kv_cache]") {
  // vllm/config/compilation.py (vllm#38270): with full CUDA graphs each decode sequence needs a state block,
  // "max_num_seqs (1024) exceeds available Mamba cache blocks (N)" when max_num_seqs > kv_cache_config.num_blocks.
  const auto m = profiles::resolve_model("nemotron-3-nano-30b-a3b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.max_model_len = 131072;
  const auto p = plan_memory(m, g, d, {131072});
  REQUIRE(p.dep.max_num_seqs == 1024);  // vLLM's default on a GPU of 70 GiB or more
  REQUIRE(p.num_blocks < 1024);
  CHECK(p.max_num_seqs_limit == static_cast<i64>(p.num_blocks));
  CHECK(p.seqs_exceed_state_blocks());
  const auto findings = check_memory_plan(g, p);
  CHECK(std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.code == "KVCAP-E110"; }));
  // The launch command a sizing emits lowers it to the pool, which never binds (a request holds 9 blocks).
  CHECK(launchable_deployment(p).max_num_seqs == static_cast<i64>(p.num_blocks));
  // At a pinned pool (--kv-cache-memory: no activation peak to change with max_num_seqs) the limit is the pool's
  // blocks: equal starts, one more does not.
  Deployment pinned = d;
  pinned.kv_cache_memory_bytes = {500ull * 6 * 2176 * 1024};  // 500 blocks of 6 layers (one per group) x 2176 x 1 KiB
  pinned.max_num_seqs = 500;
  const auto pp = plan_memory(m, g, pinned, {131072});
  REQUIRE(pp.num_blocks == 500);
  CHECK_FALSE(pp.seqs_exceed_state_blocks());
  pinned.max_num_seqs = 501;
  CHECK(plan_memory(m, g, pinned, {131072}).seqs_exceed_state_blocks());
  // vLLM 0.18 had no such check.
  Deployment old = d;
  old.vllm_version = "0.18";
  const auto po = plan_memory(m, g, old, {131072});
  CHECK(po.max_num_seqs_limit == 0);
  CHECK_FALSE(po.seqs_exceed_state_blocks());
  // mamba_cache_mode all: vLLM's charge at max_model_len (5 groups x cdiv(131072, 2176) = 305 blocks) gives the
  // logged concurrency; a running request holds 61 attention blocks and 2 in each of the 4 state groups (69), which the
  // curve counts. In align mode the two charges are one.
  REQUIRE(p.dep.mamba_mode == Deployment::MambaCache::all);
  CHECK(p.blocks_per_max_len_request == 305);
  CHECK(p.max_concurrency == Approx(static_cast<double>(p.num_blocks) / 305));
  CHECK(concurrency_at(m, p, 131072) == Approx(static_cast<double>(p.num_blocks) / 69));
  Deployment al = d;
  al.mamba_cache_mode = Deployment::MambaCache::align;
  const auto pa = plan_memory(m, g, al, {131072});
  CHECK(concurrency_at(m, pa, 131072) == Approx(pa.max_concurrency));
  // A full-attention model has no such limit.
  const auto pl = plan_memory(profiles::resolve_model("llama-3.1-8b"), g, Deployment{}, {8192});
  CHECK(pl.max_num_seqs_limit == 0);
}

TEST_CASE("Mixer-only blocks: Nemotron-H imports one Mamba-2 / attention / MLP / MoE block per pattern character",
          "[linear][kv_cache][hf]") {
  const auto g = profiles::resolve_gpu("h100-sxm");
  // NVIDIA-Nemotron-3-Nano-30B-A3B (tests/data/hf/README.md): "MEMEM*EMEM..." = 23 Mamba-2, 23 MoE and 6 attention
  // blocks (vllm/model_executor/models/nemotron_h.py ALL_DECODER_LAYER_TYPES), 128 experts top-6 of 1,856, one shared
  // expert of 3,712, squared-ReLU up/down projections (not gated), float32 recurrent state from the config.
  const auto m = profiles::load_model_file(kData + "NVIDIA-Nemotron-3-Nano-30B-A3B.json");
  i64 mamba = 0, attention = 0, moe = 0;
  for (i64 l = 0; l < m.num_layers; ++l) {
    mamba += layer_has_linear(m, l) ? 1 : 0;
    attention += layer_has_attention(m, l) ? 1 : 0;
    moe += layer_is_moe(m, l) ? 1 : 0;
    CHECK(allreduces_per_layer(m, l) == 1);  // one mixer or one MLP per block
  }
  CHECK(m.num_layers == 52);
  CHECK(mamba == 23);
  CHECK(attention == 6);
  CHECK(moe == 23);
  CHECK(layer_mlp(m, 0) == LayerMlp::none);  // 'M'
  CHECK(layer_mlp(m, 1) == LayerMlp::moe);   // 'E'
  CHECK(layer_attention(m, 1) == LayerAttention::none);
  CHECK(layer_attention(m, 5) == LayerAttention::full);  // '*'
  CHECK(m.linear.intermediate_size == 64 * 64);          // mamba_num_heads x mamba_head_dim, not expand x hidden
  CHECK(m.linear.state_dtype == DType::fp32);
  // llama.cpp's load log of the GGUF conversion: "model params = 31.58 B"; model card: about 3.5B active.
  CHECK(static_cast<double>(param_counts(m).total) == Approx(31.58e9).epsilon(0.002));
  CHECK(static_cast<double>(param_counts(m).active) == Approx(3.5e9).epsilon(0.03));
  Deployment d;
  d.max_model_len = 32768;
  d.kv_cache_memory_bytes = {20ull << 30};
  d.mamba_cache_mode = Deployment::MambaCache::align;
  auto p = plan_memory(m, g, d, {32768});
  // conv 3 x (4096 + 2 x 8 x 128) bf16 + recurrent 64 x 64 x 128 fp32; a 1 KiB attention token (2 KV heads x 128).
  CHECK(p.dep.linear_state_bytes == 3ull * 6144 * 2 + 64ull * 64 * 128 * 4);
  CHECK(p.dep.block_size == 2096);  // 16 x cdiv(2,134,016, 16 x 1,024)
  CHECK(p.kv_groups.size() == 5);   // the 6 attention layers, the 23 state layers in 4 groups of 6 (one padded)
  // vLLM's default for this model (prefix caching, mamba_cache_mode all): a multiple of its 128-token chunk.
  d.mamba_cache_mode = Deployment::MambaCache::auto_;
  CHECK(plan_memory(m, g, d, {32768}).dep.block_size == 2176);  // 128 x cdiv(2,084 tokens, 128)
  d.mamba_ssm_cache_dtype = DType::bf16;
  CHECK(plan_memory(m, g, d, {32768}).dep.block_size == 1152);
  d.mamba_cache_mode = Deployment::MambaCache::align;
  CHECK(plan_memory(m, g, d, {32768}).dep.block_size == 1072);
  // From vLLM 0.19 (vllm#37467) the kernel alignment is max(16, --block-size): 128 x cdiv(2,084, 128) = 2176 with a
  // float32 state and --block-size 128; 0.18 aligned to 16 whatever the block (2096).
  d.mamba_ssm_cache_dtype = DType::auto_;
  d.block_size = 128;
  CHECK(plan_memory(m, g, d, {32768}).dep.block_size == 2176);
  d.vllm_version = "0.18";
  CHECK(plan_memory(m, g, d, {32768}).dep.block_size == 2096);
  d.vllm_version = "current";
  d.block_size = 16;

  // NVIDIA-Nemotron-Nano-9B-v2 (its geometry, tests/data/hf/README.md): vLLM issue #24280 (2025-09, when
  // NemotronHForCausalLMConfig defaulted the SSM cache to float16) quotes "672 tokens" as its attention block.
  const auto n9 = profiles::load_model_file(kData + "NVIDIA-Nemotron-Nano-9B-v2-geometry.json");
  Deployment d9;
  d9.vllm_version = "0.10";  // the time: no prefix caching for hybrid models
  d9.max_model_len = 32768;
  d9.kv_cache_memory_bytes = {20ull << 30};
  d9.mamba_ssm_cache_dtype = DType::fp16;
  CHECK(plan_memory(n9, g, d9, {32768}).dep.block_size == 672);
  d9.mamba_ssm_cache_dtype = DType::auto_;  // today's default state dtype, float32 (still without prefix caching)
  CHECK(plan_memory(n9, g, d9, {32768}).dep.block_size == 1312);

  // Nemotron-H-8B-Base-8K: the older spelling (attention_head_dim), dense '-' blocks of 21,504 without a gate.
  const auto h8 = profiles::load_model_file(kData + "Nemotron-H-8B-Base-8K.json");
  CHECK(h8.head_dim == 128);
  CHECK_FALSE(h8.mlp_gated);
  const auto t = layer_tensors(h8, 1);  // '-'
  REQUIRE(t.size() == 2);               // the norm and the MLP: no attention, no mixer
  CHECK(t[1].elements == 2 * 4096 * 21504);
  CHECK(layer_tensors(h8, 7).size() == 5);  // '*': q, k, v, o and the norm; no MLP

  Deployment rt;  // the engine's defaults: the profile's state dtype decides the state's bytes
  rt.max_model_len = 8192;
  rt.kv_cache_memory_bytes = {20ull << 30};
  for (const auto* mm : {&m, &n9, &h8}) {
    const auto back = profiles::parse_model(profiles::to_yaml(*mm), "round-trip.yaml");
    CHECK(back.linear.state_dtype == mm->linear.state_dtype);
    CHECK(param_counts(back).total == param_counts(*mm).total);
    CHECK(param_counts(back).active == param_counts(*mm).active);
    const auto a = plan_memory(back, g, rt, {8192}), b = plan_memory(*mm, g, rt, {8192});
    CHECK(a.dep.linear_state_bytes == b.dep.linear_state_bytes);
    CHECK(a.num_blocks == b.num_blocks);
  }
  // vLLM's MambaMixer2 asserts n_groups % tp == 0 unless n_groups is 1: Nemotron 3 Nano's 8 groups refuse TP 16.
  Deployment tp16 = rt;
  tp16.tensor_parallel_size = 16;
  CHECK_THROWS_WITH(plan_memory(m, g, tp16, {8192}), Catch::Contains("mamba_n_groups 8"));
}

TEST_CASE("Parallel hybrid: a Falcon-H1 layer keeps a KV cache and a Mamba-2 state", "[linear][kv_cache][hf]") {
  const auto g = profiles::resolve_gpu("h100-sxm");
  // Falcon-H1-0.5B-Instruct (tests/data/hf/README.md): 36 layers, each attention (8 q / 2 KV heads x 64) beside a
  // Mamba-2 mixer (24 heads x 64 = mamba_d_ssm 1536, one group, d_state 128) (vllm falcon_h1.py
  // FalconH1ParallelHybrid).
  const auto m = profiles::load_model_file(kData + "Falcon-H1-0.5B-Instruct.json");
  REQUIRE(m.linear.parallel);
  for (i64 l = 0; l < m.num_layers; ++l) {
    CHECK(layer_has_attention(m, l));
    CHECK(layer_has_linear(m, l));
    CHECK(allreduces_per_layer(m, l) == 3);  // o_proj, the mixer's out_proj, down_proj
  }
  CHECK_FALSE(m.linear.gated_norm);  // mamba_rms_norm false: no norm weight
  const auto t = layer_tensors(m, 0);
  CHECK(std::none_of(t.begin(), t.end(), [](const WeightTensor& w) { return w.name == "mamba_norm"; }));
  CHECK(std::any_of(t.begin(), t.end(), [](const WeightTensor& w) { return w.name == "q_proj"; }));
  CHECK(std::any_of(t.begin(), t.end(), [](const WeightTensor& w) { return w.name == "in_proj"; }));
  Deployment d;
  d.max_model_len = 16384;
  d.kv_cache_memory_bytes = {20ull << 30};
  d.mamba_cache_mode = Deployment::MambaCache::none;
  auto p = plan_memory(m, g, d, {16384});
  // conv 3 x (1536 + 2 x 128) + recurrent 24 x 64 x 128, bf16; a 512 B attention token: 16 x cdiv(., 8 KiB) = 800.
  CHECK(p.dep.linear_state_bytes == 2ull * (3 * 1792 + 24 * 64 * 128));
  CHECK(p.dep.block_size == 800);
  // Two groups of 36 layers (attention, state) in one pool: each block is one page of 800 x 512 B in each of 36
  // tensors shared by one layer of each group (kv_cache_utils.py get_kv_cache_config_from_groups).
  CHECK(p.kv_groups.size() == 2);
  CHECK(p.num_blocks == (20ll << 30) / (800 * 512 * 36));
  REQUIRE(p.stages.size() == 1);
  CHECK(p.kv_bytes_per_token_per_rank == 36u * 512);
  // TP 2: the single group is replicated to 2 (extra_groups_for_head_shards).
  d.tensor_parallel_size = 2;
  CHECK(plan_memory(m, g, d, {16384}).dep.linear_state_bytes == 2ull * (3 * (1536 + 2 * 2 * 128) / 2 + 12 * 64 * 128));
  // Three all-reduces per layer (attention, mixer, MLP) and one after the embedding, each of the step's hidden states.
  const auto ctx = make_speed_context(m, g, plan_memory(m, g, d, {}), SpeedOptions{});
  const auto step = decode_step(ctx, 8, 1024);
  const double msg = 8.0 * 1024 * 2;  // 8 tokens x hidden 1024 x bf16
  CHECK(step.stage.comm_bytes - 8.0 * 32784 * 2 / 2 == Approx((3 * 36 + 1) * 2.0 * (2 - 1) / 2 * msg));
  // The what-ifs that drop or share full-attention caches are refused: every layer also keeps a state.
  Deployment share = d;
  share.kv_layer_sharing.kind = Deployment::LayerSharing::Kind::cla;
  share.kv_layer_sharing.factor = 2;
  CHECK_THROWS_WITH(plan_memory(m, g, share, {16384}), Catch::Contains("full attention only; layer 0 does not"));
  const auto back = profiles::parse_model(profiles::to_yaml(m), "round-trip.yaml");
  CHECK(back.linear.parallel);
  CHECK(param_counts(back).total == param_counts(m).total);
  CHECK(plan_memory(back, g, d, {16384}).num_blocks == plan_memory(m, g, d, {16384}).num_blocks);
}
