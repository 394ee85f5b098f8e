// Deployment profiles (kind: deployment) and model/GPU references between profile files. The accepted
// keys live in deployment_keys(), which profiles/schema/deployment.schema.json mirrors (tested). Field
// names and meanings are vLLM's (vllm/engine/arg_utils.py EngineArgs, snake_case):
// tensor_parallel_size, pipeline_parallel_size, gpu_memory_utilization, dtype, quantization,
// kv_cache_dtype, block_size, max_model_len, max_num_batched_tokens, max_num_seqs, kv_cache_memory_bytes.
#include <algorithm>
#include <cstring>
#include <filesystem>

#include "deployment_yaml.hpp"
#include "kvcap/planner/error.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/profiles/profiles.hpp"

namespace kvcap::profiles {
using namespace detail;
namespace fs = std::filesystem;

const std::map<std::string, std::vector<std::string>>& deployment_keys() {
  static const std::map<std::string, std::vector<std::string>> k = {
      {"",
       {"kind",
        "name",
        "description",
        "model",
        "gpu",
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "decode_context_parallel_size",
        "num_gpus",
        "gpu_memory_utilization",
        "free_gpu_memory_fraction",
        "dtype",
        "quantization",
        "kv_cache_dtype",
        "kv_cache_dtype_skip_layers",
        "block_size",
        "max_model_len",
        "max_num_batched_tokens",
        "max_num_seqs",
        "kv_cache_memory_bytes",
        "activation_peak_bytes",
        "non_torch_bytes",
        "shared_prefix_tokens",
        "language_model_only"}},
  };
  return k;
}

namespace detail {

SourcePos pos(const Ctx& c, const YAML::Node& n) {
  if (!n.IsDefined()) return {c.file, 0, 0};
  const YAML::Mark m = n.Mark();
  return {c.file, m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0};
}

std::string dir_of(const std::string& file) {
  const fs::path p(file);
  return p.has_parent_path() ? p.parent_path().string() : std::string();
}

bool looks_like_path(const std::string& ref) {
  auto ends = [&](const char* s) { return ref.size() >= std::strlen(s) && ref.ends_with(s); };
  return ref.find('/') != std::string::npos || ends(".yaml") || ends(".yml") || ends(".json");
}

namespace {
constexpr std::int64_t kMaxGpus = 1'000'000'000;
constexpr std::int64_t kMaxParallel = 1'000'000;
constexpr std::int64_t kMaxBytes = std::int64_t{1} << 62;

DType read_dtype(Ctx& c, const YAML::Node& map, const std::string& path, const char* key,
                 bool (*accept)(const DTypeInfo&), const char* what) {
  auto s = get_string(c, map, path, key, false);
  if (!s) return DType::auto_;
  auto d = parse_dtype(*s);
  if (!d || !accept(info(*d))) {
    c.error(map[key], join(path, key), "unknown " + std::string(what) + " '" + *s + "'; expected one of " + dtype_names(accept));
    return DType::auto_;
  }
  return *d;
}
}  // namespace

DeploymentProfile deployment_from_yaml(Ctx& c, const YAML::Node& map, const std::string& path, bool file_level,
                                       const std::string& base_dir) {
  DeploymentProfile p;
  p.at = pos(c, map);
  p.base_dir = base_dir;
  if (!map.IsMap()) {
    c.error(map, path, file_level ? "expected a mapping of deployment keys at the top level"
                                  : "expected a deployment: a mapping with model, gpu and vLLM fields, or a name");
    return p;
  }
  std::vector<std::string> keys = deployment_keys().at("");
  if (!file_level) keys.erase(std::find(keys.begin(), keys.end(), "kind"));
  check_keys(c, map, path, keys);
  if (file_level) {
    auto kind = get_string(c, map, path, "kind", true);
    if (kind && *kind != "deployment") c.error(map["kind"], join(path, "kind"), "expected 'deployment', got '" + *kind + "'");
  }
  for (const auto& kv : map)
    if (kv.first.IsScalar()) p.field_at[kv.first.Scalar()] = pos(c, kv.second);
  if (auto s = get_string(c, map, path, "name", file_level)) p.name = *s;
  if (auto s = get_string(c, map, path, "description", false)) p.description = *s;
  if (auto s = get_string(c, map, path, "model", true)) {
    p.model = *s;
    p.model_at = pos(c, map["model"]);
    if (s->empty()) c.error(map["model"], join(path, "model"), "expected a built-in model name or a path to a model profile");
  }
  if (auto s = get_string(c, map, path, "gpu", true)) {
    p.gpu = *s;
    p.gpu_at = pos(c, map["gpu"]);
    if (s->empty()) c.error(map["gpu"], join(path, "gpu"), "expected a built-in GPU name or a path to a GPU profile");
  }
  Deployment& d = p.deployment;
  if (auto v = get_int(c, map, path, "tensor_parallel_size", false, 1, kMaxParallel)) d.tensor_parallel_size = *v;
  if (auto v = get_int(c, map, path, "pipeline_parallel_size", false, 1, kMaxParallel)) d.pipeline_parallel_size = *v;
  if (auto v = get_int(c, map, path, "decode_context_parallel_size", false, 1, kMaxParallel))
    d.decode_context_parallel_size = *v;
  if (auto v = get_int(c, map, path, "num_gpus", false, 1, kMaxGpus)) d.num_gpus = *v;
  if (auto v = get_number(c, map, path, "gpu_memory_utilization", false, 0, 1)) {
    if (*v > 0) d.gpu_memory_utilization = *v;
    else c.error(map["gpu_memory_utilization"], join(path, "gpu_memory_utilization"), "expected a fraction in (0, 1], got 0");
  }
  if (auto v = get_number(c, map, path, "free_gpu_memory_fraction", false, 0, 1)) {
    if (present(map, "gpu_memory_utilization"))
      c.error(map["free_gpu_memory_fraction"], join(path, "free_gpu_memory_fraction"),
              "give one KV budget: gpu_memory_utilization (vLLM's) or free_gpu_memory_fraction (TensorRT-LLM's)");
    else if (*v > 0)
      d.free_gpu_memory_fraction = *v;
    else
      c.error(map["free_gpu_memory_fraction"], join(path, "free_gpu_memory_fraction"),
              "expected a fraction in (0, 1], got 0");
  }
  d.dtype = read_dtype(c, map, path, "dtype", [](const DTypeInfo& i) { return i.activation_ok; }, "dtype");
  d.quantization = read_dtype(c, map, path, "quantization", [](const DTypeInfo& i) { return i.weights_ok; }, "weight format");
  d.kv_cache_dtype = read_dtype(c, map, path, "kv_cache_dtype", [](const DTypeInfo& i) { return i.kv_ok; }, "KV-cache format");
  if (present(map, "kv_cache_dtype_skip_layers")) {
    // vLLM's kv_cache_dtype_skip_layers: layer indices or "sliding_window", as a list (or one scalar).
    const YAML::Node n = map["kv_cache_dtype_skip_layers"];
    const std::string where = join(path, "kv_cache_dtype_skip_layers");
    std::vector<YAML::Node> items;
    if (n.IsSequence())
      for (const auto& e : n) items.push_back(e);
    else
      items.push_back(n);
    if (items.empty()) c.error(n, where, "expected a list of layer indices or sliding_window");
    for (const auto& e : items) {
      const std::string v = e.IsScalar() ? e.Scalar() : "";
      if (v == "sliding_window" ||
          (!v.empty() && v.size() <= 9 && v.find_first_not_of("0123456789") == std::string::npos))
        d.kv_cache_dtype_skip_layers.push_back(v);
      else
        c.error(e, where, "expected a layer index (0, 1, ...) or sliding_window, got '" + v + "'");
    }
  }
  if (auto v = get_int(c, map, path, "block_size", false, 1, 1024)) d.block_size = *v;
  if (auto v = get_tokens(c, map, path, "max_model_len", false)) d.max_model_len = *v;
  if (auto v = get_tokens(c, map, path, "max_num_batched_tokens", false)) d.max_num_batched_tokens = *v;
  if (auto v = get_int(c, map, path, "max_num_seqs", false, 1, std::int64_t{1} << 40)) d.max_num_seqs = *v;
  if (present(map, "kv_cache_memory_bytes")) {
    const YAML::Node n = map["kv_cache_memory_bytes"];
    if (n.IsSequence()) {
      if (n.size() == 0) c.error(n, join(path, "kv_cache_memory_bytes"), "expected one value, or one per pipeline stage");
      for (std::size_t i = 0; i < n.size(); ++i) {
        YAML::Node one(YAML::NodeType::Map);
        one["v"] = n[i];
        const std::string item = join(path, "kv_cache_memory_bytes") + "[" + std::to_string(i) + "]";
        if (!n[i].IsScalar()) {
          c.error(n[i], item, "expected an integer number of bytes");
          continue;
        }
        Ctx tmp{c.file, {}};
        if (auto v = get_int(tmp, one, "", "v", true, 1, kMaxBytes))
          d.kv_cache_memory_bytes.push_back(static_cast<u64>(*v));
        else c.error(n[i], item, "expected an integer number of bytes between 0 and 2^62, got '" + n[i].Scalar() + "'");
      }
    } else if (auto v = get_int(c, map, path, "kv_cache_memory_bytes", false, 1, kMaxBytes)) {
      d.kv_cache_memory_bytes.push_back(static_cast<u64>(*v));
    }
  }
  if (auto v = get_int(c, map, path, "activation_peak_bytes", false, 0, kMaxBytes)) d.activation_peak_bytes = static_cast<u64>(*v);
  if (auto v = get_int(c, map, path, "non_torch_bytes", false, 0, kMaxBytes)) d.non_torch_bytes = static_cast<u64>(*v);
  if (auto v = get_tokens(c, map, path, "shared_prefix_tokens", false, 0)) d.shared_prefix_tokens = *v;
  if (auto v = get_bool(c, map, path, "language_model_only", false)) d.language_model_only = *v;
  return p;
}

}  // namespace detail

DeploymentProfile parse_deployment(const std::string& text, const std::string& file) {
  Ctx c{file, {}};
  const YAML::Node root = parse_text(c, text);
  c.throw_if_any();
  DeploymentProfile p = deployment_from_yaml(c, root, "", true, dir_of(file));
  c.throw_if_any();
  return p;
}

DeploymentProfile load_deployment_file(const std::string& path) {
  return load_with(path, parse_deployment);
}

namespace {
template <class Spec>
Spec resolve_ref(const std::string& ref, const SourcePos& at, const std::string& base_dir,
                 const std::map<std::string, std::string>* index, const char* what, const char* folder,
                 const std::vector<std::string>& builtins, Spec (*load_file)(const std::string&),
                 Spec (*parse)(const std::string&, const std::string&)) {
  std::string file;
  if (looks_like_path(ref)) {
    const fs::path p(ref);
    file = p.is_absolute() || base_dir.empty() ? ref : (fs::path(base_dir) / p).string();
    std::error_code ec;
    if (!fs::exists(file, ec) || fs::is_directory(file, ec)) {
      std::string msg = "no such " + std::string(what) + " profile '" + ref + "'";
      if (file != ref) msg += " (looked for " + file + ")";
      msg += "; paths are relative to the file that names them";
      throw ProfileError({Diagnostic{at.file, at.line, at.column, what, msg}});
    }
  } else if (index && index->count(ref)) {
    file = index->at(ref);
  }
  try {
    if (!file.empty()) return load_file(file);
    const std::string rel = std::string(folder) + "/" + ref + ".yaml";
    const std::string text = builtin_text(rel);
    if (!text.empty()) return parse(text, "profiles/" + rel + " (built-in)");
  } catch (const ProfileError& e) {
    auto d = e.diagnostics();
    d.push_back({at.file, at.line, at.column, what,
                 "the " + std::string(what) + " profile '" + ref + "' has errors (listed above)"});
    throw ProfileError(std::move(d));
  }
  std::vector<std::string> names = builtins;
  if (index)
    for (const auto& [n, f] : *index) names.push_back(n);
  std::string msg = "no built-in " + std::string(what) + " or " + what + " profile named '" + ref + "'";
  const std::string s = did_you_mean(ref, names);
  if (!s.empty()) msg += "; did you mean '" + s + "'?";
  else {
    msg += "; built-in: ";
    for (std::size_t i = 0; i < builtins.size(); ++i) msg += (i ? ", " : "") + builtins[i];
  }
  msg += " (or give a path to a profile, relative to this file)";
  throw ProfileError({Diagnostic{at.file, at.line, at.column, what, msg}});
}
}  // namespace

ModelSpec resolve_model_ref(const std::string& ref, const SourcePos& at, const std::string& base_dir,
                            const ProfileIndex* index) {
  return resolve_ref<ModelSpec>(ref, at, base_dir, index ? &index->models : nullptr, "model", "models",
                                builtin_model_names(), &load_model_file, &parse_model);
}

GpuSpec resolve_gpu_ref(const std::string& ref, const SourcePos& at, const std::string& base_dir,
                        const ProfileIndex* index) {
  return resolve_ref<GpuSpec>(ref, at, base_dir, index ? &index->gpus : nullptr, "gpu", "gpus", builtin_gpu_names(),
                              &load_gpu_file, &parse_gpu);
}

ResolvedProfile resolve_deployment(const DeploymentProfile& d, const ProfileIndex* index) {
  std::vector<Diagnostic> diags;
  ResolvedProfile r;
  try {
    r.model = resolve_model_ref(d.model, d.model_at, d.base_dir, index);
  } catch (const ProfileError& e) {
    diags.insert(diags.end(), e.diagnostics().begin(), e.diagnostics().end());
  }
  try {
    r.gpu = resolve_gpu_ref(d.gpu, d.gpu_at, d.base_dir, index);
  } catch (const ProfileError& e) {
    diags.insert(diags.end(), e.diagnostics().begin(), e.diagnostics().end());
  }
  if (!diags.empty()) throw ProfileError(std::move(diags));
  // The planner's checks of the deployment against this model and GPU, located on the key they name.
  auto where = [&](const std::string& field) {
    const std::string key = field == "kv_cache_memory" ? "kv_cache_memory_bytes" : field;
    auto it = d.field_at.find(key);
    return std::make_pair(it != d.field_at.end() ? it->second : d.at, key);
  };
  try {
    r.resolved = resolve(r.model, r.gpu, d.deployment);
    (void)plan_memory(r.model, r.gpu, d.deployment, {});
  } catch (const SpecError& e) {
    auto [at, key] = where(e.field());
    throw ProfileError({Diagnostic{at.file, at.line, at.column, key,
                                   e.reason() + " (model " + r.model.name + ", gpu " + r.gpu.name + ")"}});
  } catch (const OverflowError& e) {
    throw ProfileError({Diagnostic{d.at.file, d.at.line, d.at.column, "",
                                   std::string("sizes overflow 64-bit arithmetic: ") + e.what()}});
  }
  return r;
}

std::string describe(const DeploymentProfile& p) {
  const Deployment& d = p.deployment;
  const i64 per_replica = d.tensor_parallel_size * d.pipeline_parallel_size;
  const i64 n = d.num_gpus > 0 ? d.num_gpus : per_replica;
  std::string s = p.model + " on " + std::to_string(n) + " x " + p.gpu + " (TP " + std::to_string(d.tensor_parallel_size);
  if (d.pipeline_parallel_size > 1) s += ", PP " + std::to_string(d.pipeline_parallel_size);
  if (d.decode_context_parallel_size > 1) s += ", DCP " + std::to_string(d.decode_context_parallel_size);
  if (d.kv_cache_dtype != DType::auto_) s += ", KV " + std::string(name(d.kv_cache_dtype));
  if (d.quantization != DType::auto_) s += ", weights " + std::string(name(d.quantization));
  return s + ")";
}

void detail::index_by_name(ProfileIndex& index, const std::string& kind, const YAML::Node& root,
                           const std::string& path, std::vector<Diagnostic>& diags) {
  if (!root["name"].IsDefined() || !root["name"].IsScalar()) return;
  auto* m = kind == "model"        ? &index.models
            : kind == "gpu"        ? &index.gpus
            : kind == "deployment" ? &index.deployments
                                   : nullptr;
  if (!m) return;
  const std::string name = root["name"].Scalar();
  std::error_code ec;
  if (const auto [it, fresh] = m->emplace(name, path); !fresh && !std::filesystem::equivalent(it->second, path, ec)) {
    const YAML::Mark mk = root["name"].Mark();
    std::string msg = "duplicate " + kind;
    msg += " name '" + name + "' (also " + it->second + "); references by name would be ambiguous";
    diags.push_back({path, mk.line + 1, mk.column + 1, "name", std::move(msg)});
  }
}

ProfileIndex index_profiles(const std::vector<std::string>& folders) {
  ProfileIndex idx;
  std::vector<Diagnostic> errors;
  for (const auto& folder : folders) {
    std::error_code ec;
    std::vector<std::string> files;
    for (fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec)) {
      const auto ext = it->path().extension().string();
      if (it->is_regular_file(ec) && (ext == ".yaml" || ext == ".yml")) files.push_back(it->path().string());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      Ctx c{f, {}};
      auto text = read_file(c, f);
      if (!text) continue;
      const YAML::Node root = parse_text(c, *text);
      // A file that does not parse (a syntax error, several documents) is reported: skipped, a built-in of its
      // name would be used in its place without a word.
      if (!c.diags.empty()) {
        errors.insert(errors.end(), c.diags.begin(), c.diags.end());
        continue;
      }
      if (!root.IsMap() || !present(root, "kind") || !root["kind"].IsScalar()) continue;
      detail::index_by_name(idx, root["kind"].Scalar(), root, f, errors);
    }
  }
  if (!errors.empty()) throw ProfileError(std::move(errors));  // errors and files that do not parse
  return idx;
}

ProfileIndex index_profiles(const std::string& folder) {
  return index_profiles(std::vector<std::string>{folder});
}

}  // namespace kvcap::profiles
