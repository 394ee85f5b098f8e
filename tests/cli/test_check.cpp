// kvcap check's evaluation of requirement files, end to end: a file read by profiles/, its deployments resolved,
// every promise measured by the planner (cli/promises.hpp; the planner's own tests: tests/planner/test_promise.cpp).
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/speed.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/profiles/requirements.hpp"
#include "promises.hpp"

using namespace kvcap;
namespace fs = std::filesystem;

namespace {
const fs::path kExamples = fs::path(KVCAP_SOURCE_DIR) / "profiles" / "examples";
const std::string kPromiseHead =
    "kind: requirements\npromises:\n  - deployment: {model: llama-3.1-8b, gpu: h100-sxm}\n";
}  // namespace

TEST_CASE("the shipped example requirements all hold", "[cli][check][requirements]") {
  const auto r = profiles::load_requirements_file((kExamples / "requirements.yaml").string());
  const auto results = cli::check_requirements(r);
  REQUIRE(results.size() == r.promises.size());
  REQUIRE(results.size() >= 8);
  std::set<std::string> metrics;
  for (const auto& x : results) {
    INFO(x.name << ": " << x.detail);
    CHECK_FALSE(x.error);
    CHECK(x.passed);
    CHECK(x.margin >= 0);
    metrics.insert(x.metric);
  }
  CHECK(metrics.size() == metric_names().size());  // the example shows every metric
}

TEST_CASE("promises measure what the planner computes, with the margin's sign", "[cli][check][requirements]") {
  const auto r =
      profiles::parse_requirements(kPromiseHead +
                                       "    metric: concurrency_at\n    context_tokens: 32K\n    at_least: 10\n"
                                       "  - deployment: {model: llama-3.1-8b, gpu: h100-sxm}\n"
                                       "    metric: tpot_s\n    batch: 16\n    context_tokens: 4k\n    at_most: 1ms\n"
                                       "  - deployment: {model: llama-3.1-8b, gpu: h100-sxm, num_gpus: 3}\n"
                                       "    metric: kv_capacity_tokens\n    scope: cluster\n    at_least: 1M\n",
                                   "r.yaml");
  REQUIRE(r.promises.size() == 3);
  CHECK(*r.promises[0].context_tokens == 32768);  // K = 1024, as vLLM reads --max-model-len
  CHECK(*r.promises[1].context_tokens == 4000);   // k = 1000
  CHECK(r.promises[1].target == Approx(1e-3));
  CHECK(r.promises[2].target == 1048576);
  const auto res = cli::check_requirements(r);
  const ModelSpec m = profiles::resolve_model("llama-3.1-8b");
  const GpuSpec g = profiles::resolve_gpu("h100-sxm");
  const MemoryPlan plan = plan_memory(m, g, Deployment{}, {});
  CHECK(res[0].measured == Approx(concurrency_at(m, plan, 32768)));
  CHECK(res[0].passed);
  CHECK(res[0].margin == Approx(res[0].measured - 10));
  const double tpot = tpot_s(make_speed_context(m, g, plan), 16, 4000);
  CHECK(res[1].measured == Approx(tpot));
  CHECK_FALSE(res[1].passed);  // a 1 ms TPOT is not possible: the promise fails, with a negative margin
  CHECK(res[1].margin == Approx(1e-3 - tpot));
  CHECK(res[1].margin < 0);
  CHECK(res[2].measured == Approx(3.0 * static_cast<double>(plan.kv_capacity_tokens)));  // x 3 replicas
}

TEST_CASE("evaluation errors: unknown names, impossible batches, contexts beyond max_model_len",
          "[cli][check][requirements]") {
  const auto r = profiles::parse_requirements(
      "kind: requirements\npromises:\n"
      "  - deployment: nope\n    metric: fits\n"
      "  - deployment: {model: llama-3.1-8b, gpu: h100-sxm, max_model_len: 8K}\n    metric: concurrency_at\n"
      "    context_tokens: 16K\n    at_least: 1\n"
      "  - deployment: {model: llama-3.1-8b, gpu: h100-sxm}\n    metric: tpot_s\n    batch: 10000\n"
      "    context_tokens: 128K\n    at_most: 1\n"
      "  - deployment: {model: llama-3.1-8b, gpu: h100-sxm, tensor_parallel_size: 3}\n    metric: fits\n"
      "  - deployment: {model: llama-3.1-8b, gpu: h100-sxm, max_num_batched_tokens: 1}\n    metric: ttft_s\n"
      "    prompt_tokens: 131071\n    at_most: 100\n",
      "r.yaml");
  const auto res = cli::check_requirements(r);
  REQUIRE(res.size() == 5);
  for (const auto& x : res) {
    INFO(x.name);
    CHECK(x.error);
    CHECK_FALSE(x.passed);
  }
  CHECK(res[0].detail.find("r.yaml:3:17: error: deployment: no deployment named 'nope'") != std::string::npos);
  CHECK(res[1].detail.find("exceeds the deployment's max_model_len 8192") != std::string::npos);
  CHECK(res[2].detail.find("do not fit") != std::string::npos);
  CHECK(res[3].detail.find("r.yaml:14:76: error: tensor_parallel_size: num_attention_heads (32) must be divisible") !=
        std::string::npos);
  CHECK(res[4].detail.find("prefill chunks") != std::string::npos);  // 131,071 one-token chunks: refused, not run
  // A prompt of the whole max_model_len leaves no output token: not evaluated, as simulate rejects it (E109).
  const auto whole = cli::check_requirements(profiles::parse_requirements(
      "kind: requirements\npromises:\n"
      "  - deployment: {model: llama-3.1-8b, gpu: h100-sxm, max_model_len: 8K}\n    metric: ttft_s\n"
      "    prompt_tokens: 8K\n    at_most: 100\n",
      "r.yaml"));
  REQUIRE(whole.size() == 1);
  CHECK(whole[0].error);
  CHECK(whole[0].detail.find("leaving no room for an output token") != std::string::npos);
}
