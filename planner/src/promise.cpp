// Promise evaluation: each metric is one planner figure. Memory metrics come from plan_memory (vLLM V1:
// vllm/v1/core/kv_cache_utils.py get_kv_cache_config, get_max_concurrency_for_kv_cache_config,
// estimate_max_model_len); speed metrics from the speed model (docs/speed-model.md).
#include "kvcap/planner/promise.hpp"

#include <cmath>
#include <cstdio>

#include "kvcap/planner/error.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/plausibility.hpp"
#include "kvcap/planner/text.hpp"

namespace kvcap {

namespace {
using Threshold = MetricInfo::Threshold;
}  // namespace

const std::vector<MetricInfo>& metric_infos() {
  static const std::vector<MetricInfo> m = {
      {Metric::concurrency_at, "concurrency_at", "requests", {"context_tokens"}, true, Threshold::number},
      {Metric::kv_capacity_tokens, "kv_capacity_tokens", "tokens", {}, true, Threshold::tokens},
      {Metric::fits, "fits", "requests", {}, false, Threshold::none},
      {Metric::max_model_len, "max_model_len", "tokens", {}, false, Threshold::tokens},
      {Metric::tpot_s, "tpot_s", "s", {"batch", "context_tokens"}, false, Threshold::seconds},
      {Metric::ttft_s, "ttft_s", "s", {"prompt_tokens"}, false, Threshold::seconds},
      {Metric::decode_tokens_per_s,
       "decode_tokens_per_s",
       "tokens/s",
       {"batch", "context_tokens"},
       true,
       Threshold::number},
      {Metric::max_batch_at_tpot,
       "max_batch_at_tpot",
       "sequences",
       {"tpot_target_s", "context_tokens"},
       false,
       Threshold::number},
  };
  return m;
}

const MetricInfo& metric_info(Metric m) {
  for (const auto& i : metric_infos())
    if (i.metric == m) return i;
  return metric_infos().front();
}

std::optional<Metric> metric_from_name(std::string_view name) {
  for (const auto& i : metric_infos())
    if (name == i.name) return i.metric;
  return std::nullopt;
}

std::string_view to_string(Metric m) {
  return metric_info(m).name;
}

const std::vector<std::string>& metric_names() {
  static const std::vector<std::string> n = [] {
    std::vector<std::string> r;
    for (const auto& i : metric_infos()) r.emplace_back(i.name);
    return r;
  }();
  return n;
}

const std::vector<std::string>& promise_parameters() {
  static const std::vector<std::string> p = {"context_tokens", "batch", "prompt_tokens", "tpot_target_s"};
  return p;
}

std::string_view to_string(Comparison c) {
  return c == Comparison::at_least ? ">=" : "<=";
}

namespace {
struct Measurement {
  double value = 0;
  std::string detail;
};

std::string fmt_num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// A parameter the metric needs (the loader guarantees it; a query built by hand may lack it).
template <class T>
T need(const std::optional<T>& v, const char* key, Metric m) {
  if (!v) throw SpecError(key, "required by metric " + std::string(to_string(m)) + " but missing");
  return *v;
}

void check_context_len(const MemoryPlan& plan, i64 s, const char* what, bool is_prompt = false) {
  const ResolvedDeployment& d = plan.dep;
  if (s > d.max_model_len)
    throw SpecError(what, std::to_string(s) + " tokens exceeds the deployment's max_model_len " +
                              std::to_string(d.max_model_len) + "; " + longer_requests_text(plan));
  // A prompt of max_model_len leaves no room for an output token: vLLM's server refuses prompt + max_tokens (>= 1)
  // beyond max_model_len, and kvcap simulate rejects it the same way (E109/W204).
  if (is_prompt && s == d.max_model_len)
    throw SpecError(what, std::to_string(s) +
                              " tokens is the deployment's whole max_model_len, leaving no room for an "
                              "output token; " +
                              longer_requests_text(plan));
  // Every request begins with the deployment's shared prefix (plan's KVCAP-E108, the curve's KVCAP-W203).
  // A prompt may be the whole prefix; a context (prompt + at least one output token) must be longer than it.
  if (d.d.shared_prefix_tokens > 0 && (is_prompt ? s < d.d.shared_prefix_tokens : s <= d.d.shared_prefix_tokens))
    throw SpecError(what, std::to_string(s) + " tokens is " + (is_prompt ? "shorter than" : "not longer than") +
                              " the deployment's shared prefix of " + std::to_string(d.d.shared_prefix_tokens) +
                              " tokens; every request begins with the prefix and a context adds an output to it");
}

// A decode batch must fit: B requests at context S need B x blocks(S) blocks (a sliding window's only its window:
// running_concurrency_at), and vLLM runs at most max_num_seqs.
void check_batch_fits(const MemoryPlan& plan, i64 batch, i64 s) {
  const double conc = running_concurrency_at(plan, s, s);
  if (static_cast<double>(batch) > conc)
    throw SpecError("batch", std::to_string(batch) + " requests of " + std::to_string(s) +
                                 " tokens do not fit: the KV cache holds " + fixed(conc, 2) + " of them per replica");
  if (batch > plan.dep.max_num_seqs)
    throw SpecError("batch", std::to_string(batch) + " exceeds max_num_seqs " + std::to_string(plan.dep.max_num_seqs) +
                                 "; " + budget_engine(plan) + " never runs that many sequences in one step");
}

std::string cluster_scope(const PromiseQuery& q, const MemoryPlan& plan) {
  return q.cluster ? "; cluster: x " + fmt_num(static_cast<double>(plan.dep.replicas)) + " replicas" : "";
}

// concurrency_at, kv_capacity_tokens, fits, max_model_len: figures of the memory plan.
Measurement measure_memory(const PromiseQuery& q, const ModelSpec& m, const MemoryPlan& plan) {
  const double scale = q.cluster ? static_cast<double>(plan.dep.replicas) : 1.0;
  const std::string max_len = grouped(static_cast<u64>(plan.dep.max_model_len));
  switch (q.metric) {
    case Metric::concurrency_at: {
      const i64 s = need(q.context_tokens, "context_tokens", q.metric);
      check_context_len(plan, s, "context_tokens");
      return {concurrency_at(m, plan, s) * scale,
              "KV cache " + grouped(plan.kv_capacity_tokens) + " tokens per replica" + cluster_scope(q, plan)};
    }
    case Metric::kv_capacity_tokens:
      return {
          static_cast<double>(q.cluster ? plan.cluster_kv_capacity_tokens : plan.kv_capacity_tokens),
          grouped(plan.num_blocks) + " blocks x " +
              std::to_string(plan.kv_groups.empty() ? plan.dep.block_size : plan.kv_groups.front().spec.block_size) +
              " tokens per replica" + cluster_scope(q, plan)};
    case Metric::fits:
      // vLLM refuses a max_model_len beyond the model's derived maximum (KVCAP-E111): 0.
      if (auto beyond = check_model_max_len(plan.dep.max_model_len, plan.model_max_len))
        return {0.0, beyond->code + ": " + beyond->message};
      // vLLM 0.19+ does not start a model with states whose max_num_seqs exceeds the blocks (KVCAP-E110): 0.
      if (plan.fits() && plan.seqs_exceed_state_blocks()) return {0.0, "KVCAP-E110: " + seqs_limit_text(plan)};
      // TensorRT-LLM starts, but at a lower max_seq_len: a request of the length asked for does not fit.
      if (plan.max_model_len_asked > 0) return {0.0, lowered_length_text(plan)};
      return {plan.max_concurrency, plan.fits()             ? "one request of max_model_len " + max_len + " fits"
                                    : plan.warnings.empty() ? "does not fit"
                                                            : plan.warnings.back()};
    case Metric::max_model_len:
    default:
      return {static_cast<double>(plan.max_model_len_that_fits), "deployment max_model_len " + max_len};
  }
}

// tpot_s, decode_tokens_per_s, ttft_s, max_batch_at_tpot: the speed model on the memory plan.
Measurement measure_speed(const PromiseQuery& q, const ModelSpec& m, const GpuSpec& g, const MemoryPlan& plan,
                          const SpeedOptions& o) {
  if (q.metric == Metric::ttft_s) {
    const i64 prompt = need(q.prompt_tokens, "prompt_tokens", q.metric);
    check_context_len(plan, prompt, "prompt_tokens", true);
    const PrefillResult pr = prefill(make_speed_context(m, g, plan, o), prompt);
    return {pr.ttft_s, std::to_string(pr.chunks.size()) + " chunk(s) of <= " + std::to_string(pr.chunk_tokens) +
                           " tokens, " + std::string(to_string(pr.bound)) + "-bound"};
  }
  const i64 s = need(q.context_tokens, "context_tokens", q.metric);
  check_context_len(plan, s, "context_tokens");
  if (q.metric == Metric::max_batch_at_tpot) {
    const double target_s = need(q.tpot_target_s, "tpot_target_s", q.metric);
    const BatchLimit b = max_batch_for_tpot(make_speed_context(m, g, plan, o), target_s, s);
    return {static_cast<double>(b.batch),
            "limited by " + b.limited_by + " (memory allows " + std::to_string(b.memory_limit) + ")"};
  }
  const i64 batch = need(q.batch, "batch", q.metric);
  check_batch_fits(plan, batch, s);
  const DecodeStep st = decode_step(make_speed_context(m, g, plan, o), batch, s);
  const bool tpot = q.metric == Metric::tpot_s;
  return {tpot ? st.tpot_s : (q.cluster ? st.cluster_tokens_per_s : st.tokens_per_s),
          std::string(to_string(st.bound)) + "-bound decode step; rates: memory " + st.source.memory + ", compute " +
              st.source.compute + (tpot ? "" : cluster_scope(q, plan))};
}

Measurement measure(const PromiseQuery& q, const ModelSpec& m, const GpuSpec& g, const Deployment& d,
                    const SpeedOptions& o) {
  const MemoryPlan plan = plan_memory(m, g, d, {});
  // The plausibility policy (plausibility.hpp, Finding::leaves): a finding that leaves no figure of this deployment
  // meaningful, or only `fits`, means the promise cannot be evaluated.
  // Every such finding is named (a length beyond both the model's maximum and the cache is E111 and E102).
  std::string why;
  for (const auto& f : check_memory_plan(g, plan))
    if (f.leaves == Finding::Leaves::nothing || (f.leaves == Finding::Leaves::only_fits && q.metric != Metric::fits))
      why += (why.empty() ? "" : "; ") + f.code + ": " + f.message;
  if (!why.empty()) throw SpecError("deployment", why);
  switch (q.metric) {
    case Metric::concurrency_at:
    case Metric::kv_capacity_tokens:
    case Metric::fits:
    case Metric::max_model_len:
      return measure_memory(q, m, plan);
    default:
      return measure_speed(q, m, g, plan, o);
  }
}

// The promise's own fields (metric, unit, comparison, target), before any measuring.
PromiseResult unmeasured(const PromiseQuery& q) {
  const MetricInfo& mi = metric_info(q.metric);
  PromiseResult r;
  r.metric = mi.name;
  r.unit = mi.unit;
  r.comparison = to_string(q.comparison.value_or(Comparison::at_least));
  r.target = q.target;
  return r;
}
}  // namespace

PromiseResult unevaluated(const PromiseQuery& q, std::string why) {
  PromiseResult r = unmeasured(q);
  r.error = true;
  r.detail = std::move(why);
  return r;
}

PromiseResult evaluate(const PromiseQuery& q, const ModelSpec& m, const GpuSpec& g, const Deployment& d,
                       const SpeedOptions& options) {
  PromiseResult r = unmeasured(q);
  try {
    Measurement got = measure(q, m, g, d, options);
    if (!std::isfinite(got.value)) throw SpecError(r.metric, "the model gave a non-finite value");
    r.measured = got.value;
    r.detail = std::move(got.detail);
  } catch (const OverflowError& e) {
    return unevaluated(q, std::string("sizes overflow 64-bit arithmetic: ") + e.what());
  } catch (const std::exception& e) {
    return unevaluated(q, e.what());
  }
  r.margin = q.comparison == Comparison::at_most ? r.target - r.measured : r.measured - r.target;
  r.margin_relative = r.target != 0 && q.metric != Metric::fits ? r.margin / std::fabs(r.target) : 0;
  r.passed = r.margin >= 0;
  return r;
}

}  // namespace kvcap
