// The plausibility policy (planner/plausibility.hpp): each finding of issue 13 with its stable code.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "kvcap/planner/plausibility.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

namespace {
bool has(const std::vector<Finding>& f, const std::string& code) {
  return std::any_of(f.begin(), f.end(), [&](const Finding& x) { return x.code == code; });
}
const Finding& get(const std::vector<Finding>& f, const std::string& code) {
  return *std::find_if(f.begin(), f.end(), [&](const Finding& x) { return x.code == code; });
}
}  // namespace

TEST_CASE("plausibility: a deployment that fits has no findings", "[planner][plausibility]") {
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  const auto p = plan_memory(m, g, Deployment{}, {4096});
  CHECK(check_memory_plan(g, p).empty());
  CHECK(check_batch(p, 32, 2048, 512).empty());
  CHECK(exit_code({}) == kExitOk);
}

TEST_CASE("plausibility: vLLM would not start", "[planner][plausibility]") {
  const auto g = profiles::resolve_gpu("h100-sxm");
  const auto big = plan_memory(profiles::resolve_model("llama-3.1-70b"), g, Deployment{}, {4096});
  auto f = check_memory_plan(g, big);
  REQUIRE(has(f, "KVCAP-E101"));
  CHECK(exit_code(f) == kExitWouldNotStart);
  // Not fitting is an answer (sweep prints fits = false), and `fits` stays meaningful.
  CHECK(get(f, "KVCAP-E101").leaves == Finding::Leaves::only_fits);
  CHECK_FALSE(get(f, "KVCAP-E101").impossible_input);
  CHECK_THAT(get(f, "KVCAP-E101").message, Catch::Contains("vLLM would not start"));
  // Under TensorRT-LLM's budget the finding names that engine and its setting.
  Deployment trt;
  trt.free_gpu_memory_fraction = 0.9;
  const auto f_trt = check_memory_plan(g, plan_memory(profiles::resolve_model("llama-3.1-70b"), g, trt, {4096}));
  REQUIRE(has(f_trt, "KVCAP-E101"));
  CHECK_THAT(get(f_trt, "KVCAP-E101").message,
             Catch::Contains("TensorRT-LLM would not start") && Catch::Contains("free_gpu_memory_fraction 0.90"));

  Deployment d;
  d.max_model_len = 1'000'000;  // beyond what one H100 holds for 8B in bf16
  d.kv_cache_memory_bytes = {1ull << 30};
  const auto m = profiles::resolve_model("llama-3.1-8b");
  f = check_memory_plan(g, plan_memory(m, g, d, {4096}));
  CHECK(has(f, "KVCAP-E102"));
  CHECK(get(f, "KVCAP-E102").leaves == Finding::Leaves::only_fits);  // vLLM does not start: only `fits`
  // 1,000,000 is beyond the model's 131,072 too: vLLM refuses that length whatever the memory (E111).
  CHECK_THAT(get(f, "KVCAP-E111").message, Catch::Contains("derived maximum 131072"));
  d.max_model_len = 131'072;
  CHECK_FALSE(has(check_memory_plan(g, plan_memory(m, g, d, {4096})), "KVCAP-E111"));
  CHECK_FALSE(check_model_max_len(131'072, 131'072));
  CHECK(check_model_max_len(131'073, 131'072));
  CHECK_FALSE(check_model_max_len(1'000'000, 0));  // unknown maximum
}

TEST_CASE("plausibility: KV memory beyond the device", "[planner][plausibility]") {
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.kv_cache_memory_bytes = {500ull << 30};
  auto f = check_memory_plan(g, plan_memory(m, g, d, {4096}));
  REQUIRE(has(f, "KVCAP-E103"));
  CHECK(get(f, "KVCAP-E103").leaves == Finding::Leaves::nothing);
  CHECK(get(f, "KVCAP-E103").impossible_input);
  d.kv_cache_memory_bytes = {40ull << 30};  // fits beside 15 GiB of weights
  CHECK(check_memory_plan(g, plan_memory(m, g, d, {4096})).empty());
}

TEST_CASE("plausibility: batches and contexts", "[planner][plausibility]") {
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  const auto p = plan_memory(m, g, Deployment{}, {4096});
  CHECK(has(check_batch(p, 1'000'000'000, 1024, 256), "KVCAP-E105"));
  CHECK(has(check_batch(p, 2000, 102400, 256), "KVCAP-E105"));
  CHECK(has(check_batch(p, 2000, 1024, 256), "KVCAP-W201"));
  CHECK(has(check_batch(p, 1, 131072, 1), "KVCAP-E104"));
  CHECK_FALSE(has(check_batch(p, 1, 131071, 1), "KVCAP-E104"));
}

TEST_CASE("plausibility: a shared prefix longer than the prompt", "[planner][plausibility]") {
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.shared_prefix_tokens = 5000;
  const auto p = plan_memory(m, g, d, {4096});
  const auto f = check_batch(p, 8, 1000, 256);
  REQUIRE(has(f, "KVCAP-E108"));
  CHECK(exit_code(f) == kExitUsage);
  CHECK_FALSE(has(check_batch(p, 8, 5000, 256), "KVCAP-E108"));  // a prompt that is exactly the prefix
}

TEST_CASE("a shared prefix never makes a request free: the last token's block is its own", "[planner][memory]") {
  // vLLM caps a prefix-cache hit at num_tokens - 1 (kv_cache_manager.py get_computed_blocks), so a request
  // whose whole context lies within the shared prefix still owns the block of its last token.
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.shared_prefix_tokens = 4096;
  const auto p = plan_memory(m, g, d, {4096});
  const double shared = 4096.0 / 16;
  for (const i64 s : {1, 16, 17, 1000, 4096}) {
    // s tokens share floor((s - 1) / 16) blocks and own the rest of cdiv(s, 16): exactly one block.
    const double shared_s = std::floor(static_cast<double>(s - 1) / 16);
    CHECK(concurrency_at(m, p, s) == Approx(static_cast<double>(p.num_blocks) - shared_s));
  }
  // Beyond the prefix: the 256 prefix blocks are held once, the rest is the request's own.
  CHECK(concurrency_at(m, p, 4096 + 160) == Approx((static_cast<double>(p.num_blocks) - shared) / 10));
}

TEST_CASE("plausibility: a calibration from another device", "[planner][plausibility]") {
  const auto h100 = profiles::resolve_gpu("h100-sxm");
  const auto h200 = profiles::resolve_gpu("h200");
  Calibration c;
  c.device_kind = "cuda";
  c.device = "NVIDIA H200";
  // A file that records no kernel self-tests (written before `selftest:` existed) is used, with a warning.
  const auto unrecorded = check_calibration(c, h200, false);
  REQUIRE(unrecorded.size() == 1);
  CHECK(unrecorded[0].code == "KVCAP-W304");
  CHECK(exit_code(unrecorded) == kExitOk);
  c.selftests_passed = true;
  CHECK(check_calibration(c, h200, false).empty());
  auto f = check_calibration(c, h100, false);
  REQUIRE(f.size() == 1);
  CHECK(f[0].code == "KVCAP-E302");
  CHECK(exit_code(f) == kExitUsage);
  f = check_calibration(c, h100, true);
  REQUIRE(f.size() == 1);
  CHECK(f[0].code == "KVCAP-W302");
  CHECK(exit_code(f) == kExitOk);
  c.device_kind = "cpu";
  c.device = "AMD EPYC 7763 64-Core Processor";
  CHECK(check_calibration(c, h100, false)[0].code == "KVCAP-E301");
  c.device_kind = "cuda";
  c.device = "NVIDIA H100 80GB HBM3";
  c.device_memory_bytes = h100.memory_bytes;
  CHECK(check_calibration(c, h100, false).empty());
  CHECK(has(check_calibration(c, profiles::resolve_gpu("h100-nvl"), false), "KVCAP-E302"));  // 94 GB variant
  // The PCIe card has the SXM module's 80 GB but 2.0 TB/s, not 3.35: the form factor in the names tells them apart.
  const auto pcie = profiles::resolve_gpu("h100-pcie");
  const auto sxm_on_pcie = check_calibration(c, pcie, false);
  REQUIRE(has(sxm_on_pcie, "KVCAP-E302"));
  CHECK(sxm_on_pcie[0].message.find("(SXM), the plan is for a NVIDIA H100 PCIe 80GB (PCIE)") != std::string::npos);
  c.device = "NVIDIA H100 PCIe";
  c.device_memory_bytes = pcie.memory_bytes;
  CHECK(check_calibration(c, pcie, false).empty());
  CHECK(has(check_calibration(c, h100, false), "KVCAP-E302"));
  // A read rate above the profile's peak is another device, whatever its name says.
  c.device = "NVIDIA H100 PCIe";
  c.stream.read_bytes_per_s = 3.07e12;
  CHECK(has(check_calibration(c, pcie, false), "KVCAP-E302"));
  // GB200's "NVL72" names its rack, not an NVL card.
  c = Calibration{};
  c.device_kind = "cuda";
  c.selftests_passed = true;
  c.device = "NVIDIA GB200";
  CHECK(check_calibration(c, profiles::resolve_gpu("gb200"), false).empty());
}

TEST_CASE("device_product picks the model from driver and profile names", "[planner][plausibility]") {
  CHECK(device_product("NVIDIA H100 80GB HBM3") == "H100");
  CHECK(device_product("NVIDIA H100 SXM5 80GB") == "H100");
  CHECK(device_product("NVIDIA A100-SXM4-80GB") == "A100");
  CHECK(device_product("AMD Instinct MI300X") == "MI300X");
  CHECK(device_product("NVIDIA GeForce RTX 4090") == "4090");
  CHECK(device_product("NVIDIA L40S") == "L40S");
  CHECK(device_product("NVIDIA L4") == "L4");
  CHECK(device_product("mystery") == "");
}

TEST_CASE("plausibility: offered load beyond capacity", "[planner][plausibility]") {
  CHECK_FALSE(check_offered_load(5, 10));
  const auto f = check_offered_load(20, 10);
  REQUIRE(f);
  CHECK(f->code == "KVCAP-W202");
}

TEST_CASE("plausibility: a shared prefix no request can carry", "[planner][plausibility]") {
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.shared_prefix_tokens = 1 << 20;  // 1M > max_model_len 128K
  const auto e106 = check_memory_plan(g, plan_memory(m, g, d, {4096}));
  REQUIRE(has(e106, "KVCAP-E106"));
  CHECK(get(e106, "KVCAP-E106").leaves == Finding::Leaves::nothing);
  CHECK(get(e106, "KVCAP-E106").impossible_input);
  d.shared_prefix_tokens = 100'000;        // within max_model_len, but more than 64K of KV
  d.kv_cache_memory_bytes = {8ull << 30};  // 8 GiB / 128 KiB per token = 65,536 tokens
  const auto e107 = check_memory_plan(g, plan_memory(m, g, d, {4096}));
  REQUIRE(has(e107, "KVCAP-E107"));
  CHECK(get(e107, "KVCAP-E107").leaves == Finding::Leaves::only_fits);
  CHECK(get(e107, "KVCAP-E107").impossible_input);
  d.shared_prefix_tokens = 1024;
  CHECK_FALSE(has(check_memory_plan(g, plan_memory(m, g, d, {4096})), "KVCAP-E107"));
}

TEST_CASE("plausibility: curve contexts shorter than the shared prefix are flagged (W203)", "[planner][plausibility]") {
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.shared_prefix_tokens = 4096;
  const auto f = check_memory_plan(g, plan_memory(m, g, d, {1024, 2048, 4096, 8192}));
  REQUIRE(has(f, "KVCAP-W203"));
  const auto w = std::find_if(f.begin(), f.end(), [](const Finding& x) { return x.code == "KVCAP-W203"; });
  CHECK(w->level == Finding::Level::warning);
  CHECK(w->message.find("contexts 1K, 2K, 4K are not longer") != std::string::npos);  // 4K: all prefix, no output
  CHECK(exit_code(f) == kExitOk);
  // Every context longer than the prefix: nothing to say; a prefix beyond max_model_len: E106 alone.
  CHECK_FALSE(has(check_memory_plan(g, plan_memory(m, g, d, {4097, 8192})), "KVCAP-W203"));
  d.shared_prefix_tokens = 1 << 20;
  const auto e = check_memory_plan(g, plan_memory(m, g, d, {4096}));
  CHECK(has(e, "KVCAP-E106"));
  CHECK_FALSE(has(e, "KVCAP-W203"));
}

TEST_CASE("plausibility: a prompt that is the whole shared prefix hits at most prompt - 1 tokens",
          "[planner][plausibility]") {
  // vLLM kv_cache_manager.get_computed_blocks: max_cache_hit_length = num_tokens - 1 at admission, so a prompt of
  // exactly the (block-aligned) prefix shares one block fewer than the context - 1 bound of the curve would give.
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.shared_prefix_tokens = 2048;  // 128 blocks of 16
  const auto p = plan_memory(m, g, d, {});
  const double curve = concurrency_at(m, p, 2048 + 512);           // hit <= 2559: the whole prefix, 128 blocks
  const double admitted = concurrency_at(m, p, 2048 + 512, 2048);  // hit <= 2047: 127 blocks
  // per request: 160 blocks - 128 shared = 32 own, against 160 - 127 = 33 own.
  CHECK(curve == Approx(static_cast<double>(p.num_blocks - 128) / 32));
  CHECK(admitted == Approx(static_cast<double>(p.num_blocks - 127) / 33));
  // check_batch uses the prompt: a batch of floor(curve) requests does not fit.
  const auto batch = static_cast<i64>(std::floor(curve));
  CHECK(has(check_batch(p, batch, 2048, 512), "KVCAP-E105"));
  CHECK_FALSE(has(check_batch(p, static_cast<i64>(std::floor(admitted)), 2048, 512), "KVCAP-E105"));
}

TEST_CASE("plausibility: requests longer than max_model_len (size E104/W205, simulate W204/E109)",
          "[planner][plausibility]") {
  // size: the mean request beyond max_model_len is an error, only the longest a warning, none nothing.
  auto f = check_request_lengths(2048, 256, 4096, 1024, "vLLM");
  REQUIRE(f.size() == 1);
  CHECK(f[0].code == "KVCAP-E104");
  CHECK(exit_code(f) == kExitWouldNotStart);
  f = check_request_lengths(1024, 256, 9216, 4096, "vLLM");
  REQUIRE(f.size() == 1);
  CHECK(f[0].code == "KVCAP-W205");
  CHECK(exit_code(f) == kExitOk);
  CHECK(check_request_lengths(1024, 256, 4096, 4096, "vLLM").empty());
  CHECK(check_request_lengths(1024, 256, -1, 4096, "vLLM").empty());  // unbounded lengths: no longest to compare
  // The engine whose budget the sizing follows is the one named (size --engine trtllm: TensorRT-LLM's).
  CHECK(f[0].message.find("vLLM rejects them") != std::string::npos);
  f = check_request_lengths(1024, 256, 9216, 4096, "TensorRT-LLM");
  REQUIRE(f.size() == 1);
  CHECK(f[0].message.find("TensorRT-LLM rejects them") != std::string::npos);
  // simulate: some rejected is a warning, all an error (nothing was served).
  const auto g = profiles::resolve_gpu("h100-sxm");
  Deployment d1024;
  d1024.max_model_len = 1024;
  const auto p1024 = plan_memory(profiles::resolve_model("llama-3.1-8b"), g, d1024, {});
  CHECK_FALSE(check_rejections(0, 100, p1024));
  const auto some = check_rejections(13, 20, p1024);
  REQUIRE(some);
  CHECK(some->code == "KVCAP-W204");
  CHECK(some->message.find("13 of 20 requests (65.0%)") != std::string::npos);
  const auto all = check_rejections(20, 20, p1024);
  REQUIRE(all);
  CHECK(all->code == "KVCAP-E109");
  CHECK(all->exit_code == kExitWouldNotStart);
  CHECK_THAT(all->message, Catch::Contains("max_model_len 1024") && Catch::Contains("raise --max-model-len"));
  // A pool that holds fewer tokens of one request than max_model_len (its null block): the pool's limit is named.
  const auto pooled = check_rejections(20, 20, p1024, 1008);
  REQUIRE(pooled);
  CHECK_THAT(pooled->message, Catch::Contains("their prompt reaches 1008 tokens, all one replica's KV pool holds") &&
                                  Catch::Contains("add KV memory") && !Catch::Contains("raise --max-model-len"));
  const auto pooled_cut = check_truncations(3, 20, p1024, 1008);
  REQUIRE(pooled_cut);
  CHECK_THAT(pooled_cut->message, Catch::Contains("beyond 1008 tokens") && Catch::Contains("max_model_len 1024"));
  // A limit at max_model_len is max_model_len's message.
  CHECK_THAT(check_rejections(20, 20, p1024, 1024)->message, Catch::Contains("raise --max-model-len"));
  // simulate: outputs cut at max_model_len are a warning whatever their share (the prompts were served).
  CHECK_FALSE(check_truncations(0, 100, p1024));
  const auto cut = check_truncations(20, 20, p1024);
  REQUIRE(cut);
  CHECK(cut->code == "KVCAP-W206");
  CHECK(cut->exit_code == kExitOk);
  CHECK(cut->message.find("20 of 20 requests (100.0%)") != std::string::npos);
  CHECK_THAT(cut->message, Catch::Contains("as vLLM does"));
  // Where TensorRT-LLM lowered its max_seq_len, raising --max-model-len does nothing: the texts say what does.
  Deployment trt;
  trt.tensor_parallel_size = 2;
  trt.num_gpus = 2;
  trt.free_gpu_memory_fraction = 0.9;
  const auto lowered = plan_memory(profiles::resolve_model("llama-3.1-70b"), g, trt, {});
  REQUIRE(lowered.max_model_len_asked == 131072);
  const auto none = check_rejections(5, 5, lowered);
  REQUIRE(none);
  CHECK_THAT(none->message,
             Catch::Contains("it lowered max_seq_len from 131072 to " + std::to_string(lowered.dep.max_model_len)) &&
                 Catch::Contains("raise free_gpu_memory_fraction or add GPUs") &&
                 !Catch::Contains("raise --max-model-len"));
  CHECK_THAT(check_truncations(1, 5, lowered)->message, Catch::Contains("as TensorRT-LLM does"));
  // simulate says so (W208), where nothing was lowered nothing.
  REQUIRE(check_lowered_length(lowered));
  CHECK(check_lowered_length(lowered)->code == "KVCAP-W208");
  CHECK_FALSE(check_lowered_length(p1024));
  const auto e104 = check_batch(lowered, 1, 60000, 100);
  REQUIRE(has(e104, "KVCAP-E104"));
  CHECK_THAT(get(e104, "KVCAP-E104").message, Catch::Contains("TensorRT-LLM rejects such requests"));
  const auto many = check_batch(lowered, 2000, 1000, 100);
  REQUIRE(has(many, "KVCAP-W201"));
  REQUIRE(has(many, "KVCAP-E105"));
  CHECK_THAT(get(many, "KVCAP-W201").message, Catch::Contains("TensorRT-LLM schedules at most"));
  CHECK_THAT(get(many, "KVCAP-E105").message, Catch::Contains("TensorRT-LLM would queue or preempt"));
}
