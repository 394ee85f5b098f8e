// vLLM V1's KV cache groups, block counts and logged capacity. Each case ports a vLLM unit test with
// the same inputs and expected values (vllm-project/vllm tests/v1/core/test_kv_cache_utils.py, the
// function named per case), then the hybrid models of issue 15 end to end.
#include <catch2/catch.hpp>

#include "kvcap/planner/kv_cache.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

namespace {
const std::string kHf = std::string(KVCAP_FIXTURES) + "/hf/";
// new_kv_cache_spec(): block_size 16, num_kv_heads 2, head_size 64, float32 -> 16 x 2 x 2 x 64 x 4 bytes.
constexpr u64 kPage = 16 * 2 * 2 * 64 * 4;
const KvLayerSpec kFull{KvSpecKind::full, 16, kPage, 0};
// new_sliding_window_spec(): the same shapes, sliding_window = 1.
const KvLayerSpec kSliding{KvSpecKind::sliding, 16, kPage, 1};

std::vector<std::vector<i64>> layers_of(const std::vector<KvCacheGroup>& gs) {
  std::vector<std::vector<i64>> r;
  for (const auto& g : gs) r.push_back(g.layers);
  return r;
}
u64 one_worker_blocks(const std::vector<KvLayerSpec>& specs, bool hybrid, u64 avail, std::vector<KvCacheGroup>* out = nullptr) {
  const auto gs = kv_cache_groups(specs, hybrid);
  if (out) *out = gs;
  return worker_num_blocks(worker_layout(gs, specs, std::vector<bool>(specs.size(), true)), static_cast<i64>(avail));
}
using L = std::vector<std::vector<i64>>;
}  // namespace

TEST_CASE("vLLM test_get_kv_cache_config_one_worker: groups and num_blocks", "[kv_cache][vllm-port]") {
  std::vector<KvCacheGroup> gs;
  // all layers are full attention -> single group
  CHECK(one_worker_blocks({kFull, kFull}, true, kPage * 2 * 32, &gs) == 32);
  CHECK(layers_of(gs) == L{{0, 1}});
  // all layers are sliding window -> single group
  CHECK(one_worker_blocks({kSliding, kSliding}, true, kPage * 2 * 32, &gs) == 32);
  CHECK(gs.size() == 1);
  CHECK(gs[0].spec.kind == KvSpecKind::sliding);
  // full + sliding, but disable_hybrid_kv_cache_manager: one full-attention group
  CHECK(one_worker_blocks({kFull, kSliding}, false, kPage * 2 * 32, &gs) == 32);
  REQUIRE(gs.size() == 1);
  CHECK(gs[0].spec.kind == KvSpecKind::full);
  // full + sliding, with hybrid_kv_cache_manager: two groups of one layer, 64 blocks
  CHECK(one_worker_blocks({kFull, kSliding}, true, kPage * 2 * 32, &gs) == 64);
  CHECK(layers_of(gs) == L{{0}, {1}});
  // 2 full + 4 sliding, 2 layers per group: (full.0, full.1), (sw.0, sw.2), (sw.1, sw.3)
  CHECK(one_worker_blocks({kFull, kFull, kSliding, kSliding, kSliding, kSliding}, true, kPage * 2 * 32, &gs) == 32);
  CHECK(layers_of(gs) == L{{0, 1}, {2, 4}, {3, 5}});
  // 3 full + 7 sliding, pad to 3 full + 9 sliding
  std::vector<KvLayerSpec> s3(3, kFull);
  s3.insert(s3.end(), 7, kSliding);
  CHECK(one_worker_blocks(s3, true, kPage * 3 * 32, &gs) == 32);
  CHECK(layers_of(gs) == L{{0, 1, 2}, {3, 6, 9}, {4, 7}, {5, 8}});
  // 6 full + 5 sliding, pad to 6 full + 6 sliding (gpt-oss + EAGLE)
  std::vector<KvLayerSpec> s6(6, kFull);
  s6.insert(s6.end(), 5, kSliding);
  CHECK(one_worker_blocks(s6, true, kPage * 6 * 32, &gs) == 32);
  CHECK(layers_of(gs) == L{{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}});
  // different hidden size but same type, use UniformTypeKVCacheSpecs: one group, a block id costs both pages
  // (head size 128: twice kPage), 32 blocks in kPage x 3 x 32.
  const KvLayerSpec full128{KvSpecKind::full, 16, 2 * kPage, 0};
  CHECK(one_worker_blocks({full128, kFull}, true, kPage * 3 * 32, &gs) == 32);
  REQUIRE(gs.size() == 1);
  CHECK(gs[0].uniform_type);
  CHECK(gs[0].layers == std::vector<i64>{0, 1});
  // Different hidden size and different type, align by different block size: sliding head size 32 (half the page)
  // runs 32-token blocks, two groups share 32 blocks of kPage x 32.
  const KvLayerSpec sliding32{KvSpecKind::sliding, 16, kPage / 2, 1};
  CHECK(one_worker_blocks({kFull, sliding32}, true, kPage * 32, &gs) == 32);
  REQUIRE(gs.size() == 2);
  CHECK(gs[0].spec.block_size == 16);
  CHECK(gs[1].spec.block_size == 32);
  CHECK(gs[1].spec.page_size_bytes == kPage);
  // different hidden size that cannot be aligned by using different block size: head size 96 next to 64
  // (pytest.raises(NotImplementedError)).
  const KvLayerSpec sliding96{KvSpecKind::sliding, 16, kPage / 64 * 96, 1};
  CHECK_THROWS_WITH(kv_cache_groups({kFull, sliding96}, true), Catch::Contains("NotImplementedError"));
}

TEST_CASE("vLLM test_get_kv_cache_config_one_worker: num_gpu_blocks_override", "[kv_cache][vllm-port]") {
  // vllm_config.cache_config.num_gpu_blocks_override = 16 on the all-full case: 16 blocks, whatever the memory.
  // Through the plan: Llama 3.1 8B with 2 GiB of KV (1,024 blocks of 16 x 128 KiB) and --num-gpu-blocks-override 16.
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.kv_cache_memory_bytes = {2ull << 30};
  d.max_model_len = 256;
  d.num_gpu_blocks_override = 16;
  auto p = plan_memory(m, g, d, {256});
  CHECK(p.num_blocks == 16);
  CHECK(p.stages[0].num_blocks_from_memory == 1'024);
  CHECK(p.max_concurrency == Approx(1.0));
  CHECK(p.kv_capacity_tokens == 256);
  const auto warns_of_override = [](const MemoryPlan& q) {
    return std::any_of(q.warnings.begin(), q.warnings.end(),
                       [](const std::string& w) { return w.find("--num-gpu-blocks-override") != std::string::npos; });
  };
  CHECK_FALSE(warns_of_override(p));
  // More blocks than the memory holds: vLLM allocates them all (may_override_num_blocks comes after the memory
  // check), so kvcap plans with them and warns.
  d.num_gpu_blocks_override = 20'000;
  p = plan_memory(m, g, d, {256});
  CHECK(p.num_blocks == 20'000);
  CHECK(warns_of_override(p));
  // vLLM's start-up check runs on the memory, before the override: a pool the memory cannot hold does not make a
  // request of max_model_len fit (1,024 blocks hold 16,384 tokens; 32K needs 2,048) ...
  d.max_model_len = 32'768;
  p = plan_memory(m, g, d, {});
  CHECK(p.max_concurrency >= 1.0);              // what vLLM would log with the override
  CHECK(p.startup_concurrency == Approx(0.5));  // what its start-up check sees
  CHECK_FALSE(p.fits());
  CHECK(p.max_model_len_that_fits == 16'384);
  CHECK_FALSE(p.override_pool_too_small());
  // ... and a pool smaller than the memory's starts, but never schedules a request of max_model_len.
  d.kv_cache_memory_bytes = {8ull << 30};
  d.num_gpu_blocks_override = 100;
  p = plan_memory(m, g, d, {});
  CHECK(p.startup_concurrency >= 1.0);
  CHECK(p.max_concurrency == Approx(100.0 / 2048));
  CHECK_FALSE(p.fits());
  CHECK(p.override_pool_too_small());
  CHECK(p.max_model_len_that_fits == 32'768);
  // Pipeline stages: the figure and the warning are the stage whose memory holds the fewest blocks.
  d.pipeline_parallel_size = 2;
  d.num_gpus = 2;
  d.max_model_len = 8192;
  d.kv_cache_memory_bytes = {10ull << 30, 5ull << 30};
  d.num_gpu_blocks_override = 20'000;
  p = plan_memory(m, g, d, {});
  CHECK(p.num_blocks_from_memory == 5120);  // 5 GiB of 16 layers x 16 tokens x 128 KiB / 32 layers
  REQUIRE(warns_of_override(p));
  const auto w = std::find_if(p.warnings.begin(), p.warnings.end(), [](const std::string& x) {
    return x.find("--num-gpu-blocks-override") != std::string::npos;
  });
  CHECK_THAT(*w, Catch::StartsWith("stage 1: ") && Catch::Contains("5120 blocks"));
}

TEST_CASE("vLLM test_get_kv_cache_configs_multiple_workers: the minimum over workers, projected groups", "[kv_cache][vllm-port]") {
  // Different KV cache specs (PP): worker 0 holds layer1, worker 1 layers 2 and 3; 10 blocks bind.
  const std::vector<KvLayerSpec> three(3, kFull);
  const auto g1 = kv_cache_groups(three, true);
  const u64 w0 = worker_num_blocks(worker_layout(g1, three, {true, false, false}), kPage * 2 * 10);
  const u64 w1 = worker_num_blocks(worker_layout(g1, three, {false, true, true}), kPage * 2 * 10);
  CHECK(w0 == 20);
  CHECK(std::min(w0, w1) == 10);
  // Hybrid models + PP: (full, full) on worker 0, (sw, sw) on worker 1 -> 10 blocks each.
  const std::vector<KvLayerSpec> ffss{kFull, kFull, kSliding, kSliding};
  const auto g2 = kv_cache_groups(ffss, true);
  CHECK(layers_of(g2) == L{{0, 1}, {2, 3}});
  CHECK(worker_num_blocks(worker_layout(g2, ffss, {true, true, false, false}), kPage * 2 * 10) == 10);
  CHECK(worker_num_blocks(worker_layout(g2, ffss, {false, false, true, true}), kPage * 2 * 10) == 10);
  // Divided into several groups, layers per group stay balanced: (full1, full4), (sw2, sw5), (sw3, sw6).
  const std::vector<KvLayerSpec> fss{kFull, kSliding, kSliding, kFull, kSliding, kSliding};
  const auto g3 = kv_cache_groups(fss, true);
  CHECK(layers_of(g3) == L{{0, 3}, {1, 4}, {2, 5}});
  CHECK(worker_num_blocks(worker_layout(g3, fss, {true, true, true, false, false, false}), kPage * 10) == 10);
}

TEST_CASE("vLLM test_get_kv_cache_configs_pp_sharding: each worker sized by its own layers", "[kv_cache][vllm-port]") {
  const std::vector<KvLayerSpec> two(2, kFull);
  const auto gs = kv_cache_groups(two, true);
  const u64 expected = 512 / 16 + 1;
  const KvWorkerLayout w0 = worker_layout(gs, two, {true, false});
  CHECK(worker_num_blocks(w0, kPage * expected) == expected);
  CHECK(worker_request_bytes(w0, gs, 512, 8192) <= kPage * expected);  // check_enough_kv_cache_memory passes
}

TEST_CASE("vLLM test_estimate_max_model_len: Qwen1.5-7B shapes in 8 GiB", "[kv_cache][vllm-port]") {
  // 32 layers x FullAttentionSpec(16, 32 heads, 128, float16); "16384 model_len need 8GB".
  const std::vector<KvLayerSpec> specs(32, KvLayerSpec{KvSpecKind::full, 16, 16 * 2 * 32 * 128 * 2, 0});
  const auto gs = kv_cache_groups(specs, true);
  const auto w = worker_layout(gs, specs, std::vector<bool>(32, true));
  CHECK(worker_estimate_max_model_len(w, gs, 8ll << 30, 16385, 32768) == 16384);
  CHECK(worker_estimate_max_model_len(w, gs, 8ll << 30, 16383, 32768) == 16383);
}

TEST_CASE("vLLM test_init_kv_cache_without_kv_sharing (tests/v1/worker/test_gpu_model_runner.py)", "[kv_cache][vllm-port]") {
  // Two Attention layers of 8 heads x 64, float16, block 16: a 32 KiB page each.
  const std::vector<KvLayerSpec> specs(2, KvLayerSpec{KvSpecKind::full, 16, 16 * 2 * 8 * 64 * 2, 0});
  const auto gs = kv_cache_groups(specs, true);
  REQUIRE(gs.size() == 1);
  CHECK(gs[0].layers == std::vector<i64>{0, 1});
  const auto w = worker_layout(gs, specs, std::vector<bool>(2, true));
  // "num_expected_blocks = 327680  # 20GB / 32KB / 2 (num layers)"; one tensor per layer of available // 2.
  CHECK(worker_num_blocks(w, 20ll << 30) == 327'680);
  CHECK(w.block_bytes == 2 * 32768);
  // estimate_max_model_len(vllm_config, kv_cache_spec, 5 GiB) with max_model_len 3,000,000: 1,310,720.
  CHECK(worker_estimate_max_model_len(w, gs, 5ll << 30, 3'000'000, 8192) == 1'310'720);
}

TEST_CASE("vLLM test_init_kv_cache_with_kv_sharing_valid (tests/v1/worker/test_gpu_model_runner.py)",
          "[kv_cache][vllm-port]") {
  // Two Attention layers of 8 heads x 64, float16; layer 1 has kv_sharing_target_layer_name = layer 0, so
  // get_kv_cache_spec holds layer 0 only. Through the model path: attention.kv_shared_layers = 1.
  ModelSpec m;
  m.name = "kv-sharing";
  m.dtype = DType::fp16;
  m.hidden_size = 512, m.intermediate_size = 1024, m.num_layers = 2, m.vocab_size = 1024;
  m.max_position_embeddings = 4'000'000;
  m.num_heads = m.num_kv_heads = 8, m.head_dim = 64;
  m.kv_shared_layers = 1;
  validate(m);
  Deployment d;
  d.max_model_len = 3'000'000;
  d.kv_cache_memory_bytes = {20ull << 30};
  const auto p = plan_memory(m, profiles::resolve_gpu("h100-sxm"), d, {});
  CHECK(p.kv_layers.size() == 1);  // "assert len(kv_cache_spec) == 1"
  // "num_expected_blocks = 655360  # 20GB / 32KB", twice the 327,680 without sharing.
  CHECK(p.num_blocks == 655'360);
  // "max context len with KV sharing should be 2x as large as without": estimate_max_model_len(5 GiB) = 2 x 1,310,720.
  d.kv_cache_memory_bytes = {5ull << 30};
  CHECK(plan_memory(m, profiles::resolve_gpu("h100-sxm"), d, {}).max_model_len_that_fits == 2 * 1'310'720);
  m.kv_shared_layers = 2;
  CHECK_THROWS_WITH(validate(m), Catch::Contains("must leave at least one layer with its own KV cache"));
}

TEST_CASE("vLLM test_get_max_concurrency_for_kv_cache_config", "[kv_cache][vllm-port]") {
  // max_model_len 16384, max_num_batched_tokens 1024; specs of 32 KV heads x 128, float16, block 16.
  const u64 page = 16 * 2 * 32 * 128 * 2;
  const KvLayerSpec full{KvSpecKind::full, 16, page, 0}, sw{KvSpecKind::sliding, 16, page, 1024};
  std::vector<KvCacheGroup> full_only{{full, {}, false}}, sw_only{{sw, {}, false}}, hybrid{{full, {}, false}, {sw, {}, false}};
  for (i64 i = 0; i < 32; ++i) full_only[0].layers.push_back(i), sw_only[0].layers.push_back(i), hybrid[0].layers.push_back(i);
  for (i64 i = 32; i < 64; ++i) hybrid[1].layers.push_back(i);
  CHECK(max_concurrency(1536, full_only, 16384, 1024) == 1.5);
  CHECK(max_concurrency(129 * 3, sw_only, 16384, 1024) == 3);
  CHECK(max_concurrency((1024 + 129) * 3, hybrid, 16384, 1024) == 3);
  // get_kv_cache_capacity: num_tokens == max_concurrency x max_model_len
  CHECK(logged_kv_cache_tokens((1024 + 129) * 3, hybrid, 16384, 1024, false) == 3 * 16384);
  // Unequal group sizes: a request still needs 1024 + 129 blocks.
  std::vector<KvCacheGroup> unequal{hybrid[0], {sw, {32, 33}, false}};
  CHECK(max_concurrency(1153 * 3, unequal, 16384, 1024) == 3);
}

TEST_CASE("page sizes are unified by growing the block size of the smaller pages", "[kv_cache]") {
  // unify_kv_cache_spec_page_size: a sliding layer with half the page gets twice the block size.
  const KvLayerSpec big{KvSpecKind::full, 16, 4096, 0}, small{KvSpecKind::sliding, 16, 2048, 64};
  const auto gs = kv_cache_groups({big, small}, true);
  REQUIRE(gs.size() == 2);
  CHECK(gs[1].spec.block_size == 32);
  CHECK(gs[1].spec.page_size_bytes == 4096);
  CHECK_THROWS_AS(kv_cache_groups({big, KvLayerSpec{KvSpecKind::sliding, 16, 3000, 64}}, true), SpecError);
  // Same kind, different pages, one block size: vLLM's UniformTypeKVCacheSpecs (one group).
  const auto ut = kv_cache_groups({big, KvLayerSpec{KvSpecKind::full, 16, 1000, 0}}, true);
  REQUIRE(ut.size() == 1);
  CHECK(ut[0].uniform_type);
  CHECK(worker_layout(ut, {big, KvLayerSpec{KvSpecKind::full, 16, 1000, 0}}, {true, true}).block_bytes == 5096);
  CHECK_THROWS_AS(kv_cache_groups({kFull, kSliding, KvLayerSpec{KvSpecKind::chunked, 16, kPage, 8192}}, true), SpecError);
}

TEST_CASE("gpt-oss-20b: both figures of issue 15 come from one block count (87,130 blocks)", "[kv_cache][hybrid]") {
  auto m = profiles::load_model_file(kHf + "gpt-oss-20b.json");
  const auto g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  // 12 sliding (128) + 12 full layers, 8 KV heads x 64, bf16: a 16-token page is 32 KiB, a block id
  // costs 12 pages (group size 12, two groups).
  d.kv_cache_memory_bytes = {87'130ull * 12 * 32768};
  auto p = plan_memory(m, g, d, {131072});
  REQUIRE(p.kv_groups.size() == 2);
  CHECK(p.num_blocks == 87'130);
  CHECK(p.blocks_per_max_len_request == 8192 + 521);  // ceil(131072/16) + ceil((128 - 1 + 8192)/16) + 1
  CHECK(p.max_concurrency == Approx(10.0));
  CHECK(p.kv_capacity_tokens == 1'310'720);  // what current vLLM logs
  d.vllm_version = "0.11";
  p = plan_memory(m, g, d, {131072});
  CHECK(p.kv_capacity_tokens == 697'040);  // num_blocks // 2 x 16, as vLLM 0.10-0.19 logged
  // Without the hybrid manager every layer holds the whole context: half the blocks, ~half the concurrency.
  d.hybrid_kv_cache_manager = Deployment::Hybrid::off;
  p = plan_memory(m, g, d, {131072});
  CHECK(p.kv_groups.size() == 1);
  CHECK(p.num_blocks == 87'130 / 2);
  CHECK(p.max_concurrency == Approx(87'130.0 / 2 / 8192));
}

TEST_CASE("Gemma-3-27B: 52 sliding + 10 full layers make 7 groups of 10 (8 padding slots)", "[kv_cache][hybrid]") {
  auto m = profiles::load_model_file(kHf + "gemma-3-27b-it.json");
  Deployment d;
  d.kv_cache_memory_bytes = {40ull << 30};
  d.max_model_len = 32768;
  const auto p = plan_memory(m, profiles::resolve_gpu("h100-sxm"), d, {32768});
  REQUIRE(p.kv_groups.size() == 7);
  CHECK(p.kv_groups[0].spec.kind == KvSpecKind::sliding);
  CHECK(p.stages[0].layout.group_size == 10);
  // 16 KV heads x 128 x bf16 x 16 tokens = 128 KiB per page; a block id costs 10 pages.
  CHECK(p.num_blocks == (40ull << 30) / (10 * 131072));
  CHECK(p.blocks_per_max_len_request == 6 * (ceil_div(1024 - 1 + 8192, 16) + 1) + 32768 / 16);
}

TEST_CASE("Llama-4 Scout: chunked local attention keeps the hybrid manager off unless asked", "[kv_cache][hybrid]") {
  auto m = profiles::load_model_file(kHf + "Llama-4-Scout-17B-16E.json");
  Deployment d;
  d.kv_cache_memory_bytes = {40ull << 30};
  d.max_model_len = 131072;
  d.tensor_parallel_size = 8;
  auto p = plan_memory(m, profiles::resolve_gpu("h100-sxm"), d, {131072});
  CHECK_FALSE(p.hybrid_manager);
  CHECK(p.kv_groups.size() == 1);
  d.hybrid_kv_cache_manager = Deployment::Hybrid::on;
  p = plan_memory(m, profiles::resolve_gpu("h100-sxm"), d, {131072});
  // 36 chunked (8192) + 12 NoPE full layers: groups of 12, one full and three chunked.
  REQUIRE(p.kv_groups.size() == 4);
  CHECK(p.blocks_per_max_len_request == 131072 / 16 + 3 * ceil_div(8192 + 8192, 16));
}

TEST_CASE("DeepSeek-V3.2: the indexer key cache beside the MLA latent, one uniform-type group", "[kv_cache][mla]") {
  auto m = profiles::load_model_file(kHf + "DeepSeek-V3.2.json");
  Deployment d;
  d.tensor_parallel_size = 8;
  d.block_size = 64;
  d.kv_cache_memory_bytes = {40ull << 30};
  d.max_model_len = 131072;
  auto p = plan_memory(m, profiles::resolve_gpu("h200"), d, {131072});
  REQUIRE(p.kv_groups.size() == 1);
  CHECK(p.kv_groups[0].uniform_type);
  // Per token per layer: 576 bf16 latent values (1,152 B) + 128 + 4 indexer bytes.
  CHECK(p.stages[0].kv_bytes_per_token == 61u * (1152 + 132));
  CHECK(p.num_blocks == (40ull << 30) / (64ull * 61 * (1152 + 132)));
  d.kv_cache_dtype = DType::fp8;  // fp8_ds_mla: 656 B per token
  p = plan_memory(m, profiles::resolve_gpu("h200"), d, {131072});
  CHECK(p.stages[0].kv_bytes_per_token == 61u * (656 + 132));
}

TEST_CASE("the vLLM version accepts current and 0.10 onwards", "[kv_cache]") {
  CHECK_FALSE(legacy_kv_size_log("current"));
  CHECK(legacy_kv_size_log("0.10"));
  CHECK(legacy_kv_size_log("0.19.1"));
  CHECK_FALSE(legacy_kv_size_log("0.20"));
  CHECK_THROWS_AS(legacy_kv_size_log("0.9"), SpecError);
  CHECK_THROWS_AS(legacy_kv_size_log("1.x"), SpecError);
  CHECK_THROWS_AS(legacy_kv_size_log("0.11a"), SpecError);
}

TEST_CASE("MLA models run the block size their attention backend forces (vllm/platforms/cuda.py)", "[kv_cache][mla]") {
  const auto v3 = profiles::resolve_model("deepseek-v3");     // qk_nope_head_dim 128, dense MLA
  const auto v32 = profiles::resolve_model("deepseek-v3.2");  // sparse MLA (the indexer)
  const auto block = [](const ModelSpec& m, const char* gpu, i64 bs, i64 dcp = 1) {
    Deployment d;
    d.tensor_parallel_size = 8;
    d.block_size = bs;
    d.decode_context_parallel_size = dcp;
    return resolve(m, profiles::resolve_gpu(gpu), d);
  };
  // Hopper, FlashMLA: a multiple of 64.
  CHECK(block(v3, "h200", 16).block_size == 64);
  CHECK(block(v3, "h200", 16).block_size_note.find("FlashMLA (Hopper)") != std::string::npos);
  CHECK(block(v3, "h100-sxm", 128).block_size == 128);
  CHECK(block(v3, "h100-sxm", 128).block_size_note.empty());
  // Blackwell, dense, qk_nope_head_dim 128: FlashInfer MLA, 32 or a multiple of 64.
  CHECK(block(v3, "b200", 16).block_size == 64);
  CHECK(block(v3, "b200", 32).block_size == 32);
  // ... with DCP (FlashInfer MLA returns no LSE): CUTLASS MLA, a multiple of 128.
  CHECK(block(v3, "b200", 16, 8).block_size == 128);
  CHECK(block(v3, "gb200", 64, 2).block_size == 128);
  // Sparse MLA: exactly 64, even where the dense rule would keep the user's block.
  CHECK(block(v32, "h200", 128).block_size == 64);
  CHECK(block(v32, "b200", 16).block_size == 64);
  CHECK(block(v32, "a100-80gb", 16).block_size == 64);
  // Ampere, Ada (Triton MLA) and AMD keep the block: case C of the start-up logs runs 16 on L4s.
  CHECK(block(v3, "a100-80gb", 16).block_size == 16);
  CHECK(block(profiles::resolve_model("deepseek-v2-lite"), "l4", 16).block_size == 16);
  CHECK(block(v3, "mi300x", 16).block_size == 16);
  // vLLM 0.10-0.11: FlashMLA exactly 64 on Hopper, CUTLASS MLA exactly 128 on Blackwell.
  const auto legacy = [&](const char* gpu, i64 bs) {
    Deployment d;
    d.tensor_parallel_size = 8;
    d.block_size = bs;
    d.vllm_version = "0.10";
    return resolve(v3, profiles::resolve_gpu(gpu), d).block_size;
  };
  CHECK(legacy("h200", 128) == 64);
  CHECK(legacy("b200", 16) == 128);
  CHECK(legacy("b200", 64) == 128);
  // Not MLA: untouched on every GPU.
  CHECK(block(profiles::resolve_model("llama-3.1-70b"), "h200", 16).block_size == 16);
  // The forced block rounds the pool: DeepSeek-V3 TP 8 on H200 holds 9,843 blocks of 64.
  Deployment d;
  d.tensor_parallel_size = 8;
  d.max_model_len = 131072;
  const auto p = plan_memory(v3, profiles::resolve_gpu("h200"), d, {131072});
  CHECK(p.num_blocks == 9843);
  CHECK(p.kv_capacity_tokens == 629'952);
}
