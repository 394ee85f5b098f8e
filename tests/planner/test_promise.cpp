// Promise evaluation in the planner (planner/promise.hpp): the metric table the loader and the schema read, and
// evaluate() on planner values, no files: each metric is the planner figure it names, with the margin's sign.
// Requirement files end to end: tests/cli/test_check.cpp.
#include <algorithm>
#include <catch2/catch.hpp>

#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/promise.hpp"
#include "kvcap/planner/speed.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

namespace {
PromiseQuery query(Metric m, std::optional<Comparison> c, double target) {
  PromiseQuery q;
  q.metric = m;
  q.comparison = c;
  q.target = target;
  return q;
}
}  // namespace

TEST_CASE("the metric table: names in declaration order, parameters, scope and thresholds", "[planner][promise]") {
  REQUIRE(metric_names().size() == metric_infos().size());
  CHECK(metric_names().front() == "concurrency_at");
  CHECK(metric_names().back() == "max_batch_at_tpot");
  const auto& params = promise_parameters();
  for (const auto& i : metric_infos()) {
    INFO(i.name);
    CHECK(metric_from_name(i.name) == i.metric);
    CHECK(to_string(i.metric) == i.name);
    for (const auto& p : i.parameters) CHECK(std::find(params.begin(), params.end(), p) != params.end());
  }
  CHECK_FALSE(metric_from_name("concurency_at").has_value());
  CHECK(metric_info(Metric::fits).threshold == MetricInfo::Threshold::none);
  CHECK_FALSE(metric_info(Metric::fits).scoped);
  CHECK(metric_info(Metric::ttft_s).threshold == MetricInfo::Threshold::seconds);
  CHECK(metric_info(Metric::max_batch_at_tpot).parameters ==
        std::vector<std::string>{"tpot_target_s", "context_tokens"});
  CHECK(to_string(Comparison::at_least) == ">=");
  CHECK(to_string(Comparison::at_most) == "<=");
}

TEST_CASE("evaluate measures the planner's figures, with the margin's sign", "[planner][promise]") {
  const ModelSpec m = profiles::resolve_model("llama-3.1-8b");
  const GpuSpec g = profiles::resolve_gpu("h100-sxm");
  const Deployment d;
  const MemoryPlan plan = plan_memory(m, g, d, {});

  PromiseQuery q = query(Metric::concurrency_at, Comparison::at_least, 10);
  q.context_tokens = 32768;
  PromiseResult r = evaluate(q, m, g, d);
  CHECK_FALSE(r.error);
  CHECK(r.metric == "concurrency_at");
  CHECK(r.unit == "requests");
  CHECK(r.comparison == ">=");
  CHECK(r.measured == Approx(concurrency_at(m, plan, 32768)));
  CHECK(r.margin == Approx(r.measured - 10));  // at_least: measured - target
  CHECK(r.margin_relative == Approx(r.margin / 10));
  CHECK(r.passed);

  q = query(Metric::tpot_s, Comparison::at_most, 1e-3);
  q.batch = 16;
  q.context_tokens = 4000;
  r = evaluate(q, m, g, d);
  const double tpot = tpot_s(make_speed_context(m, g, plan), 16, 4000);
  CHECK(r.measured == Approx(tpot));
  CHECK(r.comparison == "<=");
  CHECK(r.margin == Approx(1e-3 - tpot));  // at_most: target - measured; a 1 ms TPOT is not possible
  CHECK_FALSE(r.passed);
  CHECK_FALSE(r.error);

  // The speed options reach the speed model: half the bandwidth, a slower step.
  SpeedOptions slow;
  slow.bandwidth_efficiency = 0.4;
  const PromiseResult r_slow = evaluate(q, m, g, d, slow);
  CHECK(r_slow.measured == Approx(tpot_s(make_speed_context(m, g, plan, slow), 16, 4000)));
  CHECK(r_slow.measured > r.measured);

  Deployment three = d;
  three.num_gpus = 3;
  q = query(Metric::kv_capacity_tokens, Comparison::at_least, 1);
  q.cluster = true;
  r = evaluate(q, m, g, three);
  CHECK(r.measured == Approx(3.0 * static_cast<double>(plan.kv_capacity_tokens)));  // x 3 replicas
  CHECK(r.detail.find("cluster: x 3 replicas") != std::string::npos);

  r = evaluate(query(Metric::fits, std::nullopt, 1), m, g, d);  // fits: at least one request of max_model_len
  CHECK(r.measured == Approx(plan.max_concurrency));
  CHECK(r.comparison == ">=");
  CHECK(r.margin_relative == 0);
  CHECK(r.passed);

  // Under TensorRT-LLM's budget a max_model_len the cache cannot hold is lowered, not refused: the engine starts, but
  // a request of the length asked for does not fit, so `fits` fails and says why.
  Deployment trt;
  trt.tensor_parallel_size = 2;
  trt.num_gpus = 2;
  trt.free_gpu_memory_fraction = 0.9;
  r = evaluate(query(Metric::fits, std::nullopt, 1), profiles::resolve_model("llama-3.1-70b"), g, trt);
  CHECK_FALSE(r.passed);
  CHECK_THAT(r.detail, Catch::Contains("TensorRT-LLM lowers max_seq_len from 131072"));
}

TEST_CASE("evaluate never throws: a promise that cannot be evaluated is an error with the reason",
          "[planner][promise]") {
  const ModelSpec m = profiles::resolve_model("llama-3.1-8b");
  const GpuSpec g = profiles::resolve_gpu("h100-sxm");
  Deployment short_len;
  short_len.max_model_len = 8192;
  PromiseQuery q = query(Metric::concurrency_at, Comparison::at_least, 1);
  q.context_tokens = 16384;
  PromiseResult r = evaluate(q, m, g, short_len);
  CHECK(r.error);
  CHECK_FALSE(r.passed);
  CHECK(r.measured == 0);
  CHECK(r.margin == 0);
  CHECK(r.metric == "concurrency_at");
  CHECK(r.target == 1);
  CHECK(r.detail ==
        "context_tokens: 16384 tokens exceeds the deployment's max_model_len 8192; vLLM rejects such "
        "requests (raise --max-model-len)");

  q.context_tokens.reset();  // a query built by hand without the metric's parameter
  r = evaluate(q, m, g, Deployment{});
  CHECK(r.error);
  CHECK(r.detail == "context_tokens: required by metric concurrency_at but missing");

  q = query(Metric::tpot_s, Comparison::at_most, 1);
  q.batch = 10000;
  q.context_tokens = 131072;
  r = evaluate(q, m, g, Deployment{});
  CHECK(r.error);
  CHECK(r.detail.find("do not fit") != std::string::npos);

  Deployment huge_kv;  // 2^62 bytes of KV on one H100: not a deployment (KVCAP-E103), whatever the metric
  huge_kv.kv_cache_memory_bytes = {4611686018427387904ull};
  r = evaluate(query(Metric::fits, std::nullopt, 1), m, g, huge_kv);
  CHECK(r.error);
  CHECK(r.detail.find("KVCAP-E103") != std::string::npos);

  // A shared prefix: a context shorter than it cannot be evaluated; beyond max_model_len (E106) nothing can,
  // not even `fits`; one the cache cannot hold once (E107) everything but `fits`.
  Deployment prefix;
  prefix.shared_prefix_tokens = 8192;
  PromiseQuery c = query(Metric::concurrency_at, Comparison::at_least, 1);
  c.context_tokens = 4096;
  r = evaluate(c, m, g, prefix);
  CHECK(r.error);
  CHECK(r.detail.find("not longer than the deployment's shared prefix of 8192 tokens") != std::string::npos);
  c.context_tokens = 16384;
  CHECK_FALSE(evaluate(c, m, g, prefix).error);
  prefix.shared_prefix_tokens = 1 << 20;
  r = evaluate(query(Metric::fits, std::nullopt, 1), m, g, prefix);
  CHECK(r.error);
  CHECK(r.detail.find("KVCAP-E106") != std::string::npos);
  prefix.shared_prefix_tokens = 100'000;
  prefix.kv_cache_memory_bytes = {8ull << 30};  // 65,536 tokens of KV for llama-3.1-8b
  CHECK(evaluate(c, m, g, prefix).detail.find("KVCAP-E107") != std::string::npos);
  CHECK_FALSE(evaluate(query(Metric::fits, std::nullopt, 1), m, g, prefix).error);

  // An engine that does not start (E102: one request of max_model_len beyond the cache) answers only `fits`:
  // a short context's concurrency is not a figure of a deployment that never serves.
  Deployment no_start;
  no_start.max_model_len = 131'072;
  no_start.kv_cache_memory_bytes = {1ull << 30};  // 8,192 tokens of KV for llama-3.1-8b
  c.context_tokens = 1024;
  r = evaluate(c, m, g, no_start);
  CHECK(r.error);
  CHECK(r.detail.find("KVCAP-E102") != std::string::npos);
  r = evaluate(query(Metric::fits, std::nullopt, 1), m, g, no_start);
  CHECK_FALSE(r.error);
  CHECK_FALSE(r.passed);

  r = unevaluated(q, "the deployment could not be resolved");
  CHECK(r.error);
  CHECK(r.comparison == "<=");
  CHECK(r.unit == "s");
  CHECK(r.detail == "the deployment could not be resolved");
}

TEST_CASE("a context equal to the shared prefix cannot be evaluated, a prompt equal to it can", "[promise]") {
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.shared_prefix_tokens = 4096;
  PromiseQuery q;
  q.metric = Metric::concurrency_at;
  q.comparison = Comparison::at_least;
  q.target = 1;
  q.context_tokens = 4096;  // all prefix, no room for an output: the "26,099 requests" the red team found
  CHECK(evaluate(q, m, g, d).error);
  q.metric = Metric::ttft_s;
  q.comparison = Comparison::at_most;
  q.prompt_tokens = 4096;
  CHECK_FALSE(evaluate(q, m, g, d).error);
}
