// Requirement files (kind: requirements) and the evaluation of their promises with the planner. The
// accepted keys live in requirements_keys(), mirrored by profiles/schema/requirements.schema.json (tested).
// Evaluation is pure planner calls (plan_memory, concurrency_at, the speed model); the only I/O is
// loading the profiles that deployments name.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "deployment_yaml.hpp"
#include "kvcap/planner/error.hpp"
#include "kvcap/planner/plausibility.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/speed.hpp"
#include "kvcap/profiles/requirements.hpp"

namespace kvcap::profiles {
using namespace detail;

namespace {
struct MetricInfo {
  Metric metric;
  const char* name;
  const char* unit;
  std::vector<std::string> needs;    ///< parameters the metric requires
  bool scoped;                       ///< accepts scope: cluster
  enum Target { number, tokens, seconds, none } target;
};

const std::vector<MetricInfo>& metrics() {
  static const std::vector<MetricInfo> m = {
      {Metric::concurrency_at, "concurrency_at", "requests", {"context_tokens"}, true, MetricInfo::number},
      {Metric::kv_capacity_tokens, "kv_capacity_tokens", "tokens", {}, true, MetricInfo::tokens},
      {Metric::fits, "fits", "requests", {}, false, MetricInfo::none},
      {Metric::max_model_len, "max_model_len", "tokens", {}, false, MetricInfo::tokens},
      {Metric::tpot_s, "tpot_s", "s", {"batch", "context_tokens"}, false, MetricInfo::seconds},
      {Metric::ttft_s, "ttft_s", "s", {"prompt_tokens"}, false, MetricInfo::seconds},
      {Metric::decode_tokens_per_s, "decode_tokens_per_s", "tokens/s", {"batch", "context_tokens"}, true, MetricInfo::number},
      {Metric::max_batch_at_tpot, "max_batch_at_tpot", "sequences", {"tpot_target_s", "context_tokens"}, false,
       MetricInfo::number},
  };
  return m;
}
const MetricInfo& metric_info(Metric m) {
  for (const auto& i : metrics())
    if (i.metric == m) return i;
  return metrics().front();
}
const std::vector<std::string> kParams = {"context_tokens", "batch", "prompt_tokens", "tpot_target_s"};
constexpr std::int64_t kMaxBatch = 10'000'000;
}  // namespace

std::string_view to_string(Metric m) { return metric_info(m).name; }

const std::vector<std::string>& metric_names() {
  static const std::vector<std::string> n = [] {
    std::vector<std::string> r;
    for (const auto& i : metrics()) r.emplace_back(i.name);
    return r;
  }();
  return n;
}

const std::map<std::string, std::vector<std::string>>& requirements_keys() {
  static const std::map<std::string, std::vector<std::string>> k = [] {
    std::vector<std::string> inline_dep = deployment_keys().at("");
    inline_dep.erase(std::find(inline_dep.begin(), inline_dep.end(), "kind"));
    return std::map<std::string, std::vector<std::string>>{
        {"", {"kind", "name", "description", "deployments", "promises"}},
        {"deployments.*", inline_dep},
        {"promises[]",
         {"name", "description", "deployment", "metric", "context_tokens", "batch", "prompt_tokens", "tpot_target_s",
          "scope", "at_least", "at_most"}},
        {"promises[].deployment", inline_dep},
    };
  }();
  return k;
}

namespace {
Promise promise_from_yaml(Ctx& c, const YAML::Node& n, const std::string& path, const Requirements& r) {
  Promise p;
  p.at = pos(c, n);
  if (!n.IsMap()) {
    c.error(n, path, "expected a promise: a mapping with deployment, metric and at_least or at_most");
    return p;
  }
  check_keys(c, n, path, requirements_keys().at("promises[]"));
  if (auto s = get_string(c, n, path, "name", false)) p.name = *s;
  // The deployment: inline, a name from this file's deployments:, a deployment profile name, or a path.
  if (!present(n, "deployment")) {
    c.error(n, join(path, "deployment"),
            "required key is missing; expected a deployment: a name from deployments:, a path to a deployment "
            "profile, or an inline mapping with model and gpu");
  } else if (n["deployment"].IsMap()) {
    p.inline_deployment = deployment_from_yaml(c, n["deployment"], join(path, "deployment"), false, r.base_dir);
    p.deployment_at = p.inline_deployment->at;
  } else if (auto s = get_string(c, n, path, "deployment", true)) {
    p.deployment_ref = *s;
    p.deployment_at = pos(c, n["deployment"]);
  }
  bool metric_ok = false;
  if (auto m = get_string(c, n, path, "metric", true)) {
    for (const auto& i : metrics())
      if (*m == i.name) p.metric = i.metric, metric_ok = true;
    if (!metric_ok) {
      std::string msg = "unknown metric '" + *m + "'";
      const std::string s = did_you_mean(*m, metric_names());
      msg += s.empty() ? "" : "; did you mean '" + s + "'?";
      msg += " Metrics: ";
      for (std::size_t i = 0; i < metric_names().size(); ++i) msg += (i ? ", " : "") + metric_names()[i];
      c.error(n["metric"], join(path, "metric"), msg);
    }
  }
  if (auto v = get_tokens(c, n, path, "context_tokens", false)) p.context_tokens = *v;
  if (auto v = get_int(c, n, path, "batch", false, 1, kMaxBatch)) p.batch = *v;
  if (auto v = get_tokens(c, n, path, "prompt_tokens", false, 1, std::int64_t{1} << 40)) p.prompt_tokens = *v;
  if (auto v = get_seconds(c, n, path, "tpot_target_s", false)) p.tpot_target_s = *v;
  if (auto s = get_string(c, n, path, "scope", false)) {
    if (*s == "cluster") p.cluster = true;
    else if (*s != "replica") c.error(n["scope"], join(path, "scope"), "expected replica or cluster, got '" + *s + "'");
  }
  if (!metric_ok) return p;
  const MetricInfo& mi = metric_info(p.metric);
  // Parameters: exactly the metric's.
  for (const auto& k : kParams) {
    const bool needed = std::find(mi.needs.begin(), mi.needs.end(), k) != mi.needs.end();
    if (needed && !present(n, k.c_str()))
      c.error(n, join(path, k), "required by metric " + std::string(mi.name) + " but missing");
    if (!needed && present(n, k.c_str()))
      c.error(n[k], join(path, k), "not used by metric " + std::string(mi.name) + "; remove it");
  }
  if (p.cluster && !mi.scoped)
    c.error(n["scope"], join(path, "scope"), "metric " + std::string(mi.name) + " has no cluster scope; remove it");
  if (p.name.empty()) {
    p.name = mi.name;
    if (p.context_tokens) p.name += " at " + std::to_string(*p.context_tokens) + " tokens";
    if (p.batch) p.name += ", batch " + std::to_string(*p.batch);
    if (p.prompt_tokens) p.name += " for a " + std::to_string(*p.prompt_tokens) + "-token prompt";
  }
  // The comparison: one of at_least / at_most (none for fits), in the metric's unit.
  const bool least = present(n, "at_least"), most = present(n, "at_most");
  if (mi.target == MetricInfo::none) {
    if (least || most)
      c.error(n[least ? "at_least" : "at_most"], join(path, least ? "at_least" : "at_most"),
              "metric fits takes no threshold (it passes when one request of max_model_len fits); remove it");
    p.target = 1.0;
    return p;
  }
  if (least == most) {
    c.error(least ? n["at_most"] : n, join(path, least ? "at_most" : "at_least"),
            least ? "give at_least or at_most, not both" : "required: at_least or at_most (the promise's threshold)");
    return p;
  }
  const char* key = least ? "at_least" : "at_most";
  p.comparison = least ? Comparison::at_least : Comparison::at_most;
  p.target_at = pos(c, n[key]);
  std::optional<double> t;
  switch (mi.target) {
    case MetricInfo::tokens:
      if (auto v = get_tokens(c, n, path, key, true, 0, std::int64_t{1} << 62)) t = static_cast<double>(*v);
      break;
    case MetricInfo::seconds: t = get_seconds(c, n, path, key, true); break;
    default: t = get_number(c, n, path, key, true, 0, 1e18); break;
  }
  if (t) p.target = *t;
  return p;
}

}  // namespace

Requirements detail::requirements_from_yaml(Ctx& c, const YAML::Node& root) {
  Requirements r;
  r.file = c.file;
  r.base_dir = dir_of(c.file);
  if (!root.IsMap()) {
    c.error(root, "", "expected a mapping with kind: requirements and promises at the top level");
    return r;
  }
  check_keys(c, root, "", requirements_keys().at(""));
  auto kind = get_string(c, root, "", "kind", true);
  if (kind && *kind != "requirements") c.error(root["kind"], "kind", "expected 'requirements', got '" + *kind + "'");
  if (auto s = get_string(c, root, "", "name", false)) r.name = *s;
  if (auto s = get_string(c, root, "", "description", false)) r.description = *s;
  const YAML::Node deps = get_map(c, root, "", "deployments", false);
  for (const auto& kv : deps) {
    if (!kv.first.IsScalar()) {
      c.error(kv.first, "deployments", "deployment names must be plain strings");
      continue;
    }
    const std::string name = kv.first.Scalar();
    auto d = deployment_from_yaml(c, kv.second, "deployments." + name, false, r.base_dir);
    if (d.name.empty()) d.name = name;
    else if (d.name != name)
      c.error(kv.second["name"], "deployments." + name + ".name", "differs from the key '" + name + "'; leave it out");
    if (std::any_of(r.deployments.begin(), r.deployments.end(), [&](const auto& x) { return x.name == name; }))
      c.error(kv.first, "deployments." + name, "duplicate deployment name");
    r.deployments.push_back(std::move(d));
  }
  const YAML::Node ps = root["promises"];
  if (!present(root, "promises")) {
    c.error(root, "promises", "required list is missing; expected a list of promises");
  } else if (!ps.IsSequence() || ps.size() == 0) {
    c.error(ps, "promises", "expected a non-empty list of promises");
  } else {
    for (std::size_t i = 0; i < ps.size(); ++i) {
      r.promises.push_back(promise_from_yaml(c, ps[i], "promises[" + std::to_string(i) + "]", r));
    }
  }
  return r;
}

DeploymentProfile deployment_of(const Requirements& r, const Promise& p, const ProfileIndex* index) {
  if (p.inline_deployment) return *p.inline_deployment;
  const std::string& ref = p.deployment_ref;
  const SourcePos& at = p.deployment_at;
  if (!looks_like_path(ref)) {
    for (const auto& d : r.deployments)
      if (d.name == ref) return d;
    if (index && index->deployments.count(ref)) return load_deployment_file(index->deployments.at(ref));
    std::vector<std::string> names;
    for (const auto& d : r.deployments) names.push_back(d.name);
    if (index)
      for (const auto& [n, f] : index->deployments) names.push_back(n);
    std::string msg = "no deployment named '" + ref + "' in this file's deployments:";
    if (index) msg += " or among the deployment profiles";
    const std::string s = did_you_mean(ref, names);
    if (!s.empty()) msg += "; did you mean '" + s + "'?";
    msg += " (or give a path to a deployment profile, relative to this file)";
    throw ProfileError({Diagnostic{at.file, at.line, at.column, "deployment", msg}});
  }
  namespace fs = std::filesystem;
  const std::string file = fs::path(ref).is_absolute() || r.base_dir.empty() ? ref : (fs::path(r.base_dir) / ref).string();
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw ProfileError({Diagnostic{at.file, at.line, at.column, "deployment",
                                   "no such deployment profile '" + ref + "'" + (file != ref ? " (looked for " + file + ")" : "") +
                                       "; paths are relative to the requirements file"}});
  try {
    return load_deployment_file(file);
  } catch (const ProfileError& e) {
    auto d = e.diagnostics();
    d.push_back({at.file, at.line, at.column, "deployment", "the deployment profile '" + ref + "' has errors (listed above)"});
    throw ProfileError(std::move(d));
  }
}

namespace {
std::string grouped(u64 v) {
  std::string s = std::to_string(v), r;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) r += ',';
    r += s[i];
  }
  return r;
}

std::string fmt_num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void check_context_len(const ResolvedDeployment& d, i64 s, const char* what) {
  if (s > d.max_model_len)
    throw SpecError(what, std::to_string(s) + " tokens exceeds the deployment's max_model_len " +
                              std::to_string(d.max_model_len) + "; vLLM rejects such requests (raise max_model_len)");
}

// A decode batch must fit: B requests at context S need B x blocks(S) blocks, and vLLM runs at most max_num_seqs.
void check_batch_fits(const ModelSpec& m, const MemoryPlan& plan, i64 batch, i64 s) {
  const double conc = concurrency_at(m, plan, s);
  if (static_cast<double>(batch) > conc)
    throw SpecError("batch", std::to_string(batch) + " requests of " + std::to_string(s) +
                                 " tokens do not fit: the KV cache holds " + fmt_num(conc) + " of them per replica");
  if (batch > plan.dep.max_num_seqs)
    throw SpecError("batch", std::to_string(batch) + " exceeds max_num_seqs " + std::to_string(plan.dep.max_num_seqs) +
                                 "; vLLM never runs that many sequences in one step");
}

void measure(const Promise& p, const ResolvedProfile& rp, const DeploymentProfile& dp, PromiseResult& out) {
  const ModelSpec& m = rp.model;
  const MemoryPlan plan = plan_memory(m, rp.gpu, dp.deployment, {});
  // The plausibility policy (planner/plausibility.hpp): KV memory beyond the device (E103) makes every figure of
  // this deployment meaningless, and no KV memory at all (E101) every figure but `fits`; the promise cannot be
  // evaluated.
  for (const auto& f : check_memory_plan(rp.gpu, plan))
    if (f.code == "KVCAP-E103" || (f.code == "KVCAP-E101" && p.metric != Metric::fits))
      throw SpecError("deployment", f.code + ": " + f.message);
  const double replicas = static_cast<double>(plan.dep.replicas);
  const double scale = p.cluster ? replicas : 1.0;
  const std::string scope = p.cluster ? "; cluster: x " + fmt_num(replicas) + " replicas" : "";
  switch (p.metric) {
    case Metric::concurrency_at:
      check_context_len(plan.dep, *p.context_tokens, "context_tokens");
      out.measured = concurrency_at(m, plan, *p.context_tokens) * scale;
      out.detail = "KV cache " + grouped(plan.kv_capacity_tokens) + " tokens per replica" + scope;
      break;
    case Metric::kv_capacity_tokens:
      out.measured = static_cast<double>(p.cluster ? plan.cluster_kv_capacity_tokens : plan.kv_capacity_tokens);
      out.detail = grouped(plan.num_blocks) + " blocks x " + std::to_string(plan.dep.d.block_size) + " tokens per replica" + scope;
      break;
    case Metric::fits:
      out.measured = plan.max_concurrency;
      out.detail = plan.fits() ? "one request of max_model_len " + grouped(static_cast<u64>(plan.dep.max_model_len)) + " fits"
                   : plan.warnings.empty() ? "does not fit"
                                           : plan.warnings.back();
      break;
    case Metric::max_model_len:
      out.measured = static_cast<double>(plan.max_model_len_that_fits);
      out.detail = "deployment max_model_len " + grouped(static_cast<u64>(plan.dep.max_model_len));
      break;
    case Metric::tpot_s:
    case Metric::decode_tokens_per_s: {
      check_context_len(plan.dep, *p.context_tokens, "context_tokens");
      check_batch_fits(m, plan, *p.batch, *p.context_tokens);
      const SpeedContext ctx = make_speed_context(m, rp.gpu, plan);
      const DecodeStep st = decode_step(ctx, *p.batch, *p.context_tokens);
      out.measured = p.metric == Metric::tpot_s ? st.tpot_s : (p.cluster ? st.cluster_tokens_per_s : st.tokens_per_s);
      out.detail = std::string(to_string(st.bound)) + "-bound decode step; rates: memory " + st.source.memory + ", compute " + st.source.compute;
      if (p.metric == Metric::decode_tokens_per_s) out.detail += scope;
      break;
    }
    case Metric::ttft_s: {
      const i64 prompt = *p.prompt_tokens;
      check_context_len(plan.dep, prompt, "prompt_tokens");
      const SpeedContext ctx = make_speed_context(m, rp.gpu, plan);
      const PrefillResult pr = prefill(ctx, prompt);
      out.measured = pr.ttft_s;
      out.detail = std::to_string(pr.chunks.size()) + " chunk(s) of <= " + std::to_string(pr.chunk_tokens) + " tokens, " +
                   std::string(to_string(pr.bound)) + "-bound";
      break;
    }
    case Metric::max_batch_at_tpot: {
      check_context_len(plan.dep, *p.context_tokens, "context_tokens");
      const SpeedContext ctx = make_speed_context(m, rp.gpu, plan);
      const BatchLimit b = max_batch_for_tpot(ctx, *p.tpot_target_s, *p.context_tokens);
      out.measured = static_cast<double>(b.batch);
      out.detail = "limited by " + b.limited_by + " (memory allows " + std::to_string(b.memory_limit) + ")";
      break;
    }
  }
}
}  // namespace

Requirements parse_requirements(const std::string& text, const std::string& file) {
  return parse_with(text, file, requirements_from_yaml);
}

Requirements load_requirements_file(const std::string& path) {
  return load_with(path, parse_requirements);
}

std::vector<PromiseResult> evaluate(const Requirements& r, const ProfileIndex* index) {
  std::vector<PromiseResult> out;
  for (const auto& p : r.promises) {
    const auto t0 = std::chrono::steady_clock::now();
    PromiseResult res;
    res.name = p.name;
    res.at = p.at;
    const MetricInfo& mi = metric_info(p.metric);
    res.metric = mi.name;
    res.unit = mi.unit;
    res.comparison = !p.comparison || *p.comparison == Comparison::at_least ? ">=" : "<=";
    res.target = p.target;
    res.deployment = p.deployment_ref;
    try {
      const DeploymentProfile dp = deployment_of(r, p, index);
      res.deployment = (dp.name.empty() ? "" : dp.name + ": ") + describe(dp);
      const ResolvedProfile rp = resolve_deployment(dp, index);
      measure(p, rp, dp, res);
      if (!std::isfinite(res.measured)) throw SpecError(mi.name, "the model gave a non-finite value");
      res.margin = res.comparison == ">=" ? res.measured - res.target : res.target - res.measured;
      res.margin_relative = res.target != 0 && p.metric != Metric::fits ? res.margin / std::fabs(res.target) : 0;
      res.passed = res.margin >= 0;
    } catch (const ProfileError& e) {
      res.error = true;
      res.detail = e.what();
    } catch (const SpecError& e) {
      res.error = true;
      res.detail = e.what();
    } catch (const OverflowError& e) {
      res.error = true;
      res.detail = std::string("sizes overflow 64-bit arithmetic: ") + e.what();
    } catch (const std::exception& e) {
      res.error = true;
      res.detail = e.what();
    }
    if (res.error) res.passed = false, res.measured = 0, res.margin = 0, res.margin_relative = 0;
    res.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace kvcap::profiles
