// Fit advice (planner/fit.hpp): why a deployment does not start, and the smallest single-flag fixes, each checked
// against the memory plan itself: the fix starts, the step before it does not.
#include <catch2/catch.hpp>

#include "kvcap/planner/fit.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/plausibility.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

namespace {
bool vllm_starts(const ModelSpec& m, const GpuSpec& g, const Deployment& d) {
  try {
    const MemoryPlan p = plan_memory(m, g, d, {});
    return !has_errors(check_memory_plan(g, p));
  } catch (const SpecError&) {
    return false;
  }
}

const FitFix* fix_of(const FitAdvice& a, const std::string& flag) {
  for (const auto& f : a.fixes)
    if (f.flag == flag) return &f;
  return nullptr;
}
}  // namespace

TEST_CASE("a deployment that starts gets no advice", "[fit]") {
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  CHECK_FALSE(fit_advice(m, g, Deployment{}).has_value());
  // An invalid deployment is its own error, not a fit problem (64 heads are not divisible by 3).
  Deployment bad;
  bad.tensor_parallel_size = 3;
  CHECK_FALSE(fit_advice(profiles::resolve_model("llama-3.1-70b"), g, bad).has_value());
}

TEST_CASE("weights beyond one GPU: the smallest TP and PP that start, and fp8 weights", "[fit]") {
  const auto g = profiles::resolve_gpu("h100-sxm");
  for (const char* name : {"llama-3.1-70b", "deepseek-v3"}) {
    CAPTURE(name);
    const auto m = profiles::resolve_model(name);
    Deployment d;
    d.num_gpus = 1;
    REQUIRE_FALSE(vllm_starts(m, g, d));
    const auto a = fit_advice(m, g, d);
    REQUIRE(a.has_value());
    CHECK(a->reason == FitAdvice::Reason::no_kv_memory);
    CHECK(a->why.find("of weights per GPU") != std::string::npos);
    CHECK(a->why.find("71.27 GiB requested (gpu_memory_utilization 0.90 x 79.19 GiB)") != std::string::npos);
    const FitFix* tp = fix_of(*a, "--tensor-parallel-size");
    REQUIRE(tp != nullptr);
    CHECK(tp == &a->fixes.front());  // the smallest fix first
    // The fix starts; half of it does not (the doubling before it).
    CHECK(vllm_starts(m, g, tp->deployment));
    Deployment half = tp->deployment;
    half.tensor_parallel_size /= 2;
    half.num_gpus = half.tensor_parallel_size;
    CHECK_FALSE(vllm_starts(m, g, half));
    CHECK(tp->num_gpus == tp->deployment.tensor_parallel_size);
    CHECK(a->text().find("smallest fix: TP >= " + std::to_string(tp->deployment.tensor_parallel_size) + " fits") !=
          std::string::npos);
  }
  // Llama 3.1 70B in bf16 weighs 131.4 GiB: TP 2 leaves room for weights but not for a 128K request; TP 4 starts.
  const auto a = fit_advice(profiles::resolve_model("llama-3.1-70b"), g, Deployment{});
  REQUIRE(a);
  CHECK(a->fixes.front().deployment.tensor_parallel_size == 4);
  CHECK(a->why.find("needs 131.") != std::string::npos);
}

TEST_CASE("data-parallel replicas are kept when the advice changes TP", "[fit]") {
  Deployment d;
  d.num_gpus = 3;  // three replicas of TP 1
  const auto a = fit_advice(profiles::resolve_model("llama-3.1-70b"), profiles::resolve_gpu("h100-sxm"), d);
  REQUIRE(a);
  const FitFix& f = a->fixes.front();
  CHECK(f.num_gpus == 3 * f.deployment.tensor_parallel_size);
}

TEST_CASE("one request of max_model_len does not fit: vLLM's shorter max_model_len and an 8-bit KV cache", "[fit]") {
  // Llama 3.1 70B at TP 2 on H100: the weights fit, a 131,072-token request does not.
  const auto m = profiles::resolve_model("llama-3.1-70b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.tensor_parallel_size = 2;
  const MemoryPlan p = plan_memory(m, g, d, {});
  REQUIRE(p.stages.front().available_kv_bytes > 0);
  REQUIRE_FALSE(p.fits());
  const auto a = fit_advice(m, g, d);
  REQUIRE(a);
  CHECK(a->reason == FitAdvice::Reason::request_does_not_fit);
  CHECK(a->why.find("one request of max_model_len 131,072 tokens") != std::string::npos);
  const FitFix* len = fix_of(*a, "--max-model-len");
  REQUIRE(len != nullptr);
  CHECK(len->deployment.max_model_len == p.max_model_len_that_fits);
  CHECK(vllm_starts(m, g, len->deployment));
  Deployment longer = len->deployment;
  *longer.max_model_len += 1024;
  CHECK_FALSE(vllm_starts(m, g, longer));
  for (const auto& f : a->fixes) CHECK(vllm_starts(m, g, f.deployment));
  // The ratio of one request to the pool: 131,072 tokens over the TP 2 pool.
  const double ratio = 131072.0 / static_cast<double>(p.kv_capacity_tokens);
  CHECK(a->why.find("needs " + fixed(ratio, 2) + "x the KV cache") != std::string::npos);
}

TEST_CASE("a shared prefix that fills the pool leaves no room, not a huge ratio", "[fit]") {
  // Llama 3.1 8B on one L4 holds about 28,900 tokens; a shared prefix of 32,668 of max_model_len 32,768 takes it all.
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto g = profiles::resolve_gpu("l4");
  Deployment d;
  d.max_model_len = 32768;
  d.shared_prefix_tokens = 32668;
  const MemoryPlan p = plan_memory(m, g, d, {});
  REQUIRE(p.kv_capacity_tokens < 32668);
  REQUIRE(p.startup_concurrency == 0);
  const auto a = fit_advice(m, g, d);
  REQUIRE(a);
  CHECK(a->why.find("finds no room: the shared prefix") != std::string::npos);
  CHECK(a->why.find("needs") == std::string::npos);
  for (const auto& f : a->fixes) CHECK(vllm_starts(m, g, f.deployment));
  // No prefix, a pool of less than one block: the pool is what has no room.
  Deployment tiny;
  tiny.tensor_parallel_size = 4;
  tiny.kv_cache_memory_bytes = {1 << 20};
  const auto t = fit_advice(profiles::resolve_model("llama-3.1-70b"), profiles::resolve_gpu("h100-sxm"), tiny);
  REQUIRE(t);
  REQUIRE(t->reason == FitAdvice::Reason::request_does_not_fit);
  CHECK(t->why.find("holds not one whole block") != std::string::npos);
  CHECK(t->why.find("shared prefix") == std::string::npos);
}

TEST_CASE("a fix is offered only when kvcap plan's whole policy accepts it", "[fit]") {
  // With a shared prefix of 4K tokens, vLLM's longest max_model_len (under 2K at TP 2) could carry no request:
  // KVCAP-E106. That fix is left out; the others start.
  const auto m = profiles::resolve_model("llama-3.1-70b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.tensor_parallel_size = 2;
  d.shared_prefix_tokens = 4096;
  const auto a = fit_advice(m, g, d);
  REQUIRE(a);
  CHECK(fix_of(*a, "--max-model-len") == nullptr);
  REQUIRE_FALSE(a->fixes.empty());
  for (const auto& f : a->fixes) CHECK(vllm_starts(m, g, f.deployment));
  // A problem that is not a lack of memory gets no advice: the shared prefix beyond max_model_len (E106).
  Deployment e;
  e.max_model_len = 2048;
  e.shared_prefix_tokens = 4096;
  CHECK_FALSE(fit_advice(profiles::resolve_model("llama-3.1-8b"), g, e).has_value());
}
