// Requirement files (kind: requirements): reading and checking them, and resolving the deployment each promise
// names. The accepted keys live in requirements_keys(), mirrored by profiles/schema/requirements.schema.json
// (tested); the metrics (what each needs and accepts) are the planner's table (kvcap/planner/promise.hpp), which
// also evaluates promises.
#include "kvcap/profiles/requirements.hpp"

#include <algorithm>
#include <filesystem>

#include "deployment_yaml.hpp"

namespace kvcap::profiles {
using namespace detail;

namespace {
constexpr std::int64_t kMaxBatch = 10'000'000;
}  // namespace

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
// The comparison: one of at_least / at_most (none for fits), in the metric's unit.
void threshold_from_yaml(Ctx& c, const YAML::Node& n, const std::string& path, const MetricInfo& mi, Promise& p) {
  const bool least = present(n, "at_least"), most = present(n, "at_most");
  if (mi.threshold == MetricInfo::Threshold::none) {
    if (least || most)
      c.error(n[least ? "at_least" : "at_most"], join(path, least ? "at_least" : "at_most"),
              "metric fits takes no threshold (it passes when one request of max_model_len fits); remove it");
    p.target = 1.0;
    return;
  }
  if (least == most) {
    c.error(least ? n["at_most"] : n, join(path, least ? "at_most" : "at_least"),
            least ? "give at_least or at_most, not both" : "required: at_least or at_most (the promise's threshold)");
    return;
  }
  const char* key = least ? "at_least" : "at_most";
  p.comparison = least ? Comparison::at_least : Comparison::at_most;
  p.target_at = pos(c, n[key]);
  std::optional<double> t;
  switch (mi.threshold) {
    case MetricInfo::Threshold::tokens:
      if (auto v = get_tokens(c, n, path, key, true, 0, std::int64_t{1} << 62)) t = static_cast<double>(*v);
      break;
    case MetricInfo::Threshold::seconds:
      t = get_seconds(c, n, path, key, true);
      break;
    default:
      t = get_number(c, n, path, key, true, 0, 1e18);
      break;
  }
  if (t) p.target = *t;
}

// The metric, by name; an unknown name is an error that lists the metrics.
std::optional<Metric> metric_from_yaml(Ctx& c, const YAML::Node& n, const std::string& path) {
  const auto m = get_string(c, n, path, "metric", true);
  if (!m) return std::nullopt;
  if (const auto metric = metric_from_name(*m)) return metric;
  std::string msg = "unknown metric '" + *m + "'";
  const std::string s = did_you_mean(*m, metric_names());
  msg += s.empty() ? ". Metrics: " : "; did you mean '" + s + "'? Metrics: ";
  for (std::size_t i = 0; i < metric_names().size(); ++i) msg += (i ? ", " : "") + metric_names()[i];
  c.error(n["metric"], join(path, "metric"), msg);
  return std::nullopt;
}

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
  const std::optional<Metric> metric = metric_from_yaml(c, n, path);
  if (metric) p.metric = *metric;
  if (auto v = get_tokens(c, n, path, "context_tokens", false)) p.context_tokens = *v;
  if (auto v = get_int(c, n, path, "batch", false, 1, kMaxBatch)) p.batch = *v;
  if (auto v = get_tokens(c, n, path, "prompt_tokens", false, 1, std::int64_t{1} << 40)) p.prompt_tokens = *v;
  if (auto v = get_seconds(c, n, path, "tpot_target_s", false)) p.tpot_target_s = *v;
  if (auto s = get_string(c, n, path, "scope", false)) {
    if (*s == "cluster") p.cluster = true;
    else if (*s != "replica") c.error(n["scope"], join(path, "scope"), "expected replica or cluster, got '" + *s + "'");
  }
  if (!metric) return p;
  const MetricInfo& mi = metric_info(p.metric);
  // Parameters: exactly the metric's.
  for (const auto& k : promise_parameters()) {
    const bool needed = std::find(mi.parameters.begin(), mi.parameters.end(), k) != mi.parameters.end();
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
  threshold_from_yaml(c, n, path, mi, p);
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

Requirements parse_requirements(const std::string& text, const std::string& file) {
  return parse_with(text, file, requirements_from_yaml);
}

Requirements load_requirements_file(const std::string& path) {
  return load_with(path, parse_requirements);
}

}  // namespace kvcap::profiles
