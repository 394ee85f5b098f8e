// The memory budget, blocks and concurrency: the estimate against real vLLM profiles, sliding windows,
// replication, pipeline staging, prefix sharing, and arithmetic at cluster scale.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <optional>

#include "kvcap/planner/memory.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

namespace {
constexpr double kGiB = 1073741824.0;
ModelSpec builtin(const char* n) { return profiles::resolve_model(n); }
GpuSpec h100() { return profiles::resolve_gpu("h100-sxm"); }
ModelSpec hf(const std::string& json) { return profiles::import_hf(json, "test.json"); }
const char* kQwen3_0_6B = R"({"model_type":"qwen3","hidden_size":1024,"intermediate_size":3072,"num_hidden_layers":28,
  "num_attention_heads":16,"num_key_value_heads":8,"head_dim":128,"vocab_size":151936,"max_position_embeddings":40960,
  "tie_word_embeddings":true,"torch_dtype":"bfloat16"})";
const char* kQwen3_32B = R"({"model_type":"qwen3","hidden_size":5120,"intermediate_size":25600,"num_hidden_layers":64,
  "num_attention_heads":64,"num_key_value_heads":8,"head_dim":128,"vocab_size":151936,"max_position_embeddings":40960,
  "tie_word_embeddings":false,"torch_dtype":"bfloat16"})";
const char* kGptOss20B = R"({"model_type":"gpt_oss","hidden_size":2880,"intermediate_size":2880,"num_hidden_layers":24,
  "num_attention_heads":64,"num_key_value_heads":8,"head_dim":64,"vocab_size":201088,"max_position_embeddings":131072,
  "num_local_experts":32,"num_experts_per_tok":4,"sliding_window":128,"tie_word_embeddings":false,
  "layer_types":["sliding_attention","full_attention"],"torch_dtype":"bfloat16"})";
}  // namespace

TEST_CASE("activation-peak estimate reproduces vLLM V1's logged peaks on H100 within 3%", "[memory][estimate]") {
  // llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md: vLLM V1 on H100 with the
  // serve defaults (8192 batched tokens, 1024 sequences); "PyTorch activation peak memory" in GiB.
  struct Case { ModelSpec m; i64 tp; DType q; double logged_gib; };
  std::vector<Case> cases = {
      {builtin("llama-3.1-8b"), 1, DType::auto_, 4.76},
      {hf(kQwen3_0_6B), 1, DType::auto_, 5.56},
      {hf(kQwen3_32B), 1, DType::auto_, 5.64},
      {hf(kGptOss20B), 1, DType::auto_, 7.38},
      {builtin("llama-3.1-70b"), 2, DType::fp8, 4.84},  // Llama-3.3-70B-FP8 has the 3.1-70B architecture
  };
  for (const auto& c : cases) {
    Deployment d;
    d.tensor_parallel_size = c.tp;
    d.quantization = c.q;
    const auto r = resolve(c.m, h100(), d);
    CHECK(r.max_num_batched_tokens == 8192);
    CHECK(r.max_num_seqs == 1024);
    const double est = static_cast<double>(estimate_activation_peak_bytes(c.m, r)) / kGiB;
    INFO(c.m.name << ": estimate " << est << " GiB, logged " << c.logged_gib);
    CHECK(std::fabs(est / c.logged_gib - 1) < 0.03);
  }
}

TEST_CASE("weights per rank match vLLM's logged 'model weights' within 1%", "[memory][weights]") {
  struct Case { ModelSpec m; i64 tp; DType q; double logged_gib; };
  std::vector<Case> cases = {
      {builtin("llama-3.1-8b"), 1, DType::auto_, 14.99},
      {hf(kQwen3_32B), 1, DType::auto_, 61.03},
      {builtin("llama-3.1-70b"), 2, DType::fp8, 33.88},
  };
  for (const auto& c : cases) {
    Deployment d;
    d.tensor_parallel_size = c.tp;
    d.quantization = c.q;
    const double w = static_cast<double>(weights_bytes_per_rank(c.m, resolve(c.m, h100(), d), 0)) / kGiB;
    INFO(c.m.name << ": " << w << " GiB vs " << c.logged_gib);
    CHECK(std::fabs(w / c.logged_gib - 1) < 0.01);
  }
}

TEST_CASE("the whole budget for Llama-3.1-8B on one H100 lands near vLLM's 51.38 GiB of KV", "[memory]") {
  Deployment d;
  d.max_model_len = 16000;
  const auto p = plan_memory(builtin("llama-3.1-8b"), h100(), d, {16000});
  const auto& st = p.stages[0];
  CHECK(st.requested_bytes == static_cast<u64>(std::floor(85028896768.0 * 0.9)));
  CHECK(st.available_kv_bytes == static_cast<i64>(st.requested_bytes - st.weights_bytes - st.activation_peak_bytes - st.non_torch_bytes));
  CHECK(std::fabs(static_cast<double>(st.available_kv_bytes) / kGiB / 51.38 - 1) < 0.01);
  CHECK(p.num_blocks == static_cast<u64>(st.available_kv_bytes) / (16 * 131072));
  CHECK(p.kv_capacity_tokens == p.num_blocks * 16);
  CHECK(p.max_concurrency == Approx(static_cast<double>(p.num_blocks) / 1000.0));  // ceil(16000 / 16) = 1000 blocks
}

TEST_CASE("TensorRT-LLM's KV budget: a fraction of the memory left free after the profiling run", "[memory]") {
  // tensorrt_llm/_torch/pyexecutor/_util.py: available_kv_mem = (total_gpu_memory - peak_memory) * fraction.
  Deployment d;
  d.max_model_len = 16000;
  const auto vllm = plan_memory(builtin("llama-3.1-8b"), h100(), d, {});
  d.free_gpu_memory_fraction = 0.9;
  const auto trt = plan_memory(builtin("llama-3.1-8b"), h100(), d, {});
  const auto& st = trt.stages[0];
  const i64 free_bytes =
      static_cast<i64>(h100().memory_bytes - st.weights_bytes - st.activation_peak_bytes - st.non_torch_bytes);
  CHECK(st.available_kv_bytes == static_cast<i64>(std::floor(static_cast<long double>(free_bytes) * 0.9L)));
  // vLLM leaves 10% of the whole device, TensorRT-LLM 10% of what is free: more KV for TensorRT-LLM.
  CHECK(st.available_kv_bytes - vllm.stages[0].available_kv_bytes ==
        Approx(0.1 * static_cast<double>(st.weights_bytes + st.activation_peak_bytes + st.non_torch_bytes))
            .epsilon(1e-6));
  CHECK(trt.num_blocks > vllm.num_blocks);
  // A model that leaves nothing free gets no KV cache, and an out-of-range fraction is refused naming the field.
  Deployment big;
  big.free_gpu_memory_fraction = 0.9;
  CHECK(!plan_memory(builtin("llama-3.1-70b"), h100(), big, {}).fits());
  big.free_gpu_memory_fraction = 1.5;
  CHECK_THROWS_WITH(plan_memory(builtin("llama-3.1-8b"), h100(), big, {}),
                    Catch::Contains("free_gpu_memory_fraction") && Catch::Contains("(0, 1]"));
}

TEST_CASE("TensorRT-LLM lowers a max_seq_len its KV cache cannot hold, where vLLM refuses to start", "[memory]") {
  // tensorrt_llm/_torch/pyexecutor/resource_manager.py, _validate_and_adjust_attention_windows: "Adjusted
  // max_seq_len to N"; vLLM's check_enough_kv_cache_memory raises instead.
  Deployment d;
  d.tensor_parallel_size = 2;
  d.num_gpus = 2;
  const auto vllm = plan_memory(builtin("llama-3.1-70b"), h100(), d, {});
  REQUIRE_FALSE(vllm.fits());  // 131,072 tokens of 70B on 2 x H100: vLLM refuses
  CHECK_THAT(vllm.warnings.back(), Catch::Contains("vLLM would refuse to start"));
  d.free_gpu_memory_fraction = 0.9;
  const auto trt = plan_memory(builtin("llama-3.1-70b"), h100(), d, {});
  REQUIRE(trt.fits());
  CHECK(trt.dep.max_model_len < 131072);
  CHECK(trt.max_concurrency >= 1.0);
  // What the 3,030 blocks hold for one request, less one block: kvcap's pool keeps vLLM's null block aside.
  CHECK(trt.dep.max_model_len == static_cast<i64>(trt.num_blocks) * 16 - 16);
  d.max_model_len = trt.dep.max_model_len;  // asked for outright: the same plan, nothing lowered
  const auto same = plan_memory(builtin("llama-3.1-70b"), h100(), d, {});
  CHECK(same.num_blocks == trt.num_blocks);
  CHECK(same.max_model_len_asked == 0);
  CHECK(trt.max_model_len_asked == 131072);
  // Said once (KVCAP-W208 from check_memory_plan), not among the plan's own warnings.
  CHECK(std::none_of(trt.warnings.begin(), trt.warnings.end(),
                     [](const std::string& w) { return w.find("lowers max_seq_len") != std::string::npos; }));
  CHECK_THAT(lowered_length_text(trt), Catch::Contains("TensorRT-LLM lowers max_seq_len from 131072 to " +
                                                       std::to_string(trt.dep.max_model_len)));
  CHECK(lowered_length_text(vllm).empty());
  // No memory at all for the KV cache: TensorRT-LLM does not start either ("Impossible to fit in any sequence").
  Deployment one;
  one.free_gpu_memory_fraction = 0.9;
  const auto none = plan_memory(builtin("llama-3.1-70b"), h100(), one, {});
  CHECK_FALSE(none.fits());
  CHECK(none.dep.max_model_len == 131072);
  CHECK(none.max_model_len_asked == 0);
  CHECK(vllm.max_model_len_asked == 0);
}

TEST_CASE("sliding window: Mistral 7B v0.1's concurrency stops falling past its window", "[memory][sliding]") {
  const auto m = builtin("mistral-7b-v0.1");
  Deployment d;
  d.max_num_batched_tokens = 2048;
  const auto p = plan_memory(m, h100(), d, {1024, 4096, 8192, 65536, 1 << 20});
  // vllm/v1/kv_cache_interface.py SlidingWindowSpec.max_memory_usage_bytes: min(S, 4096 - 1 + 2048)
  // tokens, + 1 block for a window that does not start at a block boundary (always added by vLLM).
  CHECK(p.curve[0].max_concurrency == Approx(static_cast<double>(p.num_blocks) / 65));
  CHECK(p.curve[1].max_concurrency == Approx(static_cast<double>(p.num_blocks) / 257));
  CHECK(p.curve[2].max_concurrency == Approx(static_cast<double>(p.num_blocks) / 385));
  CHECK(p.curve[3].max_concurrency == p.curve[4].max_concurrency);
  const KvLayerSpec g{KvSpecKind::sliding, 16, 16 * 2 * 8 * 128 * 2, 4096};
  CHECK(spec_blocks_per_request(g, 6143, 2048) == 385);
  CHECK(spec_blocks_per_request(g, 6144, 2048) == 385);
  CHECK(spec_blocks_per_request(g, 1024, 2048) == 65);
}

TEST_CASE("running: a decoding request holds its window, one step's chunk held once for the pool",
          "[memory][sliding][running]") {
  const auto m = builtin("mistral-7b-v0.1");
  Deployment d;
  d.max_num_batched_tokens = 2048;
  const auto p = plan_memory(m, h100(), d, {8192});
  // vLLM's charge (the curve): ceil((4096 - 1 + 2048) / 16) + 1 = 385 blocks a request. Decoding, a request holds
  // ceil(4096 / 16) + 1 = 257 (SlidingWindowManager frees what left the window); the 128 more of one step's chunk
  // are held once.
  CHECK(p.curve[0].max_concurrency == Approx(static_cast<double>(p.num_blocks) / 385));
  CHECK(running_concurrency_at(p, 8192, 8192) == Approx(static_cast<double>(p.num_blocks - 128) / 257));
  // Below the window nothing leaves it and vLLM's charge is the request's own tokens: the same figure.
  CHECK(running_concurrency_at(p, 1024, 1024) == Approx(static_cast<double>(p.num_blocks) / 65));
  // A full-attention model: the same figure as the curve's.
  const auto l = builtin("llama-3.1-8b");
  const auto pl = plan_memory(l, h100(), Deployment{}, {4096, 32768});
  CHECK(running_concurrency_at(pl, 4096, 4096) == pl.curve[0].max_concurrency);
  CHECK(running_concurrency_at(pl, 32768, 1000) == concurrency_at(l, pl, 32768, 1000));
}

TEST_CASE("hybrid layers: gpt-oss-20b alternates sliding (128) and full layers", "[memory][sliding]") {
  const auto m = hf(kGptOss20B);
  Deployment d;
  d.kv_cache_memory_bytes = {40ull << 30};
  const auto p = plan_memory(m, h100(), d, {1024, 131072});
  REQUIRE(p.stages[0].groups.size() == 2);
  CHECK(p.stages[0].groups[0].num_layers == 12);
  CHECK(p.stages[0].groups[1].num_layers == 12);
  // At long context only the full layers grow. Sliding layers hold 128 - 1 + 8192 tokens: ceil(8319/16) + 1
  // = 521 blocks against 8,192 for a full layer.
  ModelSpec full = m;
  full.layer_pattern.clear();
  full.sliding_window = 0;
  const auto pf = plan_memory(full, h100(), d, {131072});
  CHECK(p.curve[1].max_concurrency / pf.curve[0].max_concurrency == Approx(24.0 * 8192 / (12 * 8192 + 12 * 521)));
}

TEST_CASE("tensor parallel beyond the KV heads replicates them", "[memory][tp]") {
  const auto m = builtin("llama-3.1-405b");  // 8 KV heads
  CHECK(kv_heads_per_rank(m, 8) == 1);
  CHECK(kv_heads_per_rank(m, 16) == 1);
  CHECK(kv_elements_per_token_per_layer(m, 16) == 2 * 128);
  CHECK(kv_elements_per_token_per_layer(m, 4) == 2 * 2 * 128);
  Deployment d;
  d.tensor_parallel_size = 3;
  CHECK_THROWS_AS(resolve(builtin("llama-3.1-8b"), h100(), d), SpecError);
}

namespace {
/// resolve's SpecError, or nullopt when it resolves.
std::optional<SpecError> resolve_error(const ModelSpec& m, const GpuSpec& g, const Deployment& d) {
  try {
    resolve(m, g, d);
  } catch (const SpecError& e) {
    return e;
  }
  return std::nullopt;
}
}  // namespace

TEST_CASE("a setting vLLM refuses at start-up is told from an invalid input", "[memory][errors]") {
  // Kind::vllm_refuses (exit 3, would not start): what vLLM's own config checks reject.
  const auto m = builtin("llama-3.1-8b");
  Deployment d;
  d.tensor_parallel_size = 3;  // 32 heads not divisible by 3 (vllm/config/parallel.py)
  auto e = resolve_error(m, h100(), d);
  REQUIRE(e);
  CHECK(e->vllm_refuses());
  d = Deployment{};
  d.pipeline_parallel_size = 64;  // more stages than layers
  e = resolve_error(m, h100(), d);
  REQUIRE(e);
  CHECK(e->vllm_refuses());
  d = Deployment{};
  d.kv_cache_dtype = DType::nvfp4;  // no fp4 tensor cores on an H100
  e = resolve_error(m, h100(), d);
  REQUIRE(e);
  CHECK(e->vllm_refuses());
  // An explicit max_num_seqs above the step's token budget (vllm/config/scheduler.py); the default one is capped.
  d = Deployment{};
  d.max_num_batched_tokens = 16;
  d.max_num_seqs = 256;
  e = resolve_error(m, h100(), d);
  REQUIRE(e);
  CHECK(e->vllm_refuses());
  CHECK(e->field() == "max_num_batched_tokens");
  d.max_num_seqs.reset();
  CHECK(resolve(m, h100(), d).max_num_seqs == 16);
  // Kind::invalid (exit 1): the input itself is wrong.
  d = Deployment{};
  d.block_size = 7;
  e = resolve_error(m, h100(), d);
  REQUIRE(e);
  CHECK_FALSE(e->vllm_refuses());
  CHECK(e->field() == "block_size");
  d = Deployment{};
  d.tensor_parallel_size = 0;
  e = resolve_error(m, h100(), d);
  REQUIRE(e);
  CHECK_FALSE(e->vllm_refuses());
}

TEST_CASE("pipeline stages split layers as vLLM's get_pp_indices", "[memory][pp]") {
  CHECK(layers_per_stage(27, 2) == std::vector<i64>{14, 13});
  CHECK(layers_per_stage(30, 4) == std::vector<i64>{7, 8, 8, 7});
  CHECK(layers_per_stage(126, 1) == std::vector<i64>{126});
  const auto m = builtin("llama-3.1-405b");
  Deployment d;
  d.tensor_parallel_size = 8;
  d.pipeline_parallel_size = 2;
  const auto p = plan_memory(m, profiles::resolve_gpu("h200"), d, {8192});
  REQUIRE(p.stages.size() == 2);
  // Stage 0 holds the embedding, stage 1 the LM head: equal layers, equal here.
  CHECK(p.stages[0].num_layers == 63);
  CHECK(p.num_blocks == std::min(p.stages[0].num_blocks, p.stages[1].num_blocks));
}

TEST_CASE("a shared prefix is held once and raises concurrency", "[memory][prefix]") {
  Deployment d;
  d.kv_cache_memory_bytes = {10ull << 30};
  const auto m = builtin("llama-3.1-8b");
  const auto base = plan_memory(m, h100(), d, {8192});
  d.shared_prefix_tokens = 4096;
  const auto shared = plan_memory(m, h100(), d, {8192});
  // 81,920 blocks of capacity... exactly: (N - 256) / (512 - 256).
  const double n = static_cast<double>(base.num_blocks);
  CHECK(base.curve[0].max_concurrency == Approx(n / 512));
  CHECK(shared.curve[0].max_concurrency == Approx((n - 256) / 256));
}

TEST_CASE("a deployment that does not fit says so, with vLLM's estimated max model length", "[memory]") {
  const auto p = plan_memory(builtin("llama-3.1-70b"), h100(), Deployment{}, {1024});
  CHECK_FALSE(p.fits());
  CHECK(p.stages[0].available_kv_bytes < 0);
  CHECK(p.num_blocks == 0);
  REQUIRE_FALSE(p.warnings.empty());
  Deployment d;
  d.kv_cache_memory_bytes = {1ull << 30};  // 1 GiB: 8,192 tokens of Llama-3.1-8B
  const auto q = plan_memory(builtin("llama-3.1-8b"), h100(), d, {1024});
  CHECK(q.max_model_len_that_fits == 8192);
  CHECK_FALSE(q.fits());
}

TEST_CASE("cluster scale: 10^6 GPUs x 10^7 tokens, exact or a clear overflow error", "[memory][overflow]") {
  const auto m = builtin("llama-3.1-405b");
  Deployment d;
  d.tensor_parallel_size = 8;
  d.num_gpus = 8'000'000;  // 10^6 replicas of TP8
  d.max_model_len = 10'000'000;
  d.kv_cache_memory_bytes = {100ull << 30};
  const auto p = plan_memory(m, profiles::resolve_gpu("b200"), d, {10'000'000});
  CHECK(p.dep.replicas == 1'000'000);
  CHECK(p.cluster_kv_capacity_tokens == p.kv_capacity_tokens * 1'000'000ull);
  CHECK(p.curve[0].kv_bytes_per_request == p.kv_bytes_per_token_per_rank * 10'000'000ull);
  CHECK(std::isfinite(p.cluster_max_concurrency));
  // Bytes across the cluster (10^13 tokens x 63 KiB) exceed 2^64: the helpers refuse rather than wrap.
  CHECK_THROWS_AS(mul(p.cluster_kv_capacity_tokens * 100, p.kv_bytes_per_token_per_rank * 1000), OverflowError);
  CHECK(mul(u64{1} << 32, u64{1} << 31) == u64{1} << 63);
  CHECK_THROWS_AS(add(std::numeric_limits<u64>::max(), u64{1}), OverflowError);
  // A huge context on a small budget: concurrency falls, nothing wraps.
  Deployment e;
  e.max_model_len = 4'000'000'000'000;
  e.kv_cache_memory_bytes = {std::numeric_limits<i64>::max() / 2};
  const auto q = plan_memory(builtin("llama-3.1-8b"), h100(), e, {4'000'000'000'000});
  CHECK(q.curve[0].max_concurrency > 0);
  CHECK(q.curve[0].kv_bytes_per_request == 131072ull * 4'000'000'000'000ull);
}

TEST_CASE("bad deployments get errors naming the field", "[memory][errors]") {
  const auto m = builtin("llama-3.1-8b");
  auto expect = [&](Deployment d, const char* field) {
    try {
      resolve(m, h100(), d);
      FAIL("no error for " << field);
    } catch (const SpecError& e) {
      CHECK(e.field() == field);
    }
  };
  Deployment d;
  d.gpu_memory_utilization = 1.5;
  expect(d, "gpu_memory_utilization");
  d = {};
  d.block_size = 0;
  expect(d, "block_size");
  d = {};
  d.num_gpus = 3;
  d.tensor_parallel_size = 2;
  expect(d, "num_gpus");
  d = {};
  d.pipeline_parallel_size = 64;
  expect(d, "pipeline_parallel_size");
  d = {};
  d.kv_cache_dtype = DType::mxfp4;
  expect(d, "kv_cache_dtype");
  d = {};
  d.max_model_len = 0;
  expect(d, "max_model_len");
}
