// kvcap validate: dispatch on each file's kind, collect every diagnostic of every file, and check the
// references between files against the validated set (by profile name) and the built-in profiles.
#include "kvcap/profiles/validate.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "deployment_yaml.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/plausibility.hpp"
#include "kvcap/planner/error.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/profiles/requirements.hpp"

namespace kvcap::profiles {
using namespace detail;
namespace fs = std::filesystem;

namespace {
const std::vector<std::string> kKinds = {"model", "gpu", "deployment", "requirements", "workload"};

bool yaml_name(const fs::path& p) {
  const auto e = p.extension().string();
  return e == ".yaml" || e == ".yml";
}

struct Input {
  std::string path;
  std::string text;
  bool readable = false;
  bool parsed = false;  ///< YAML parsed without error (JSON: left to import_hf)
  YAML::Node root;
  std::string kind;
};

// Runs a loader, moving its diagnostics (and planner errors) into `out`.
template <class F>
void collect(std::vector<Diagnostic>& out, const std::string& file, F&& f);

// Resolves the deployment and applies the plausibility policy's impossible-input checks: KV memory beyond the
// device (KVCAP-E103) and a shared prefix longer than max_model_len (KVCAP-E106), located at the deployment's
// kv_cache_memory_bytes or shared_prefix_tokens (`at`: the deployment's mapping, `path`
// its key path with a trailing dot, "" at the top level). A deployment that merely does not fit is valid input
// (kvcap plan reports it, exit 3).
void check_plausible(Ctx& c, const YAML::Node& at, const std::string& path, const DeploymentProfile& d,
                     const ProfileIndex& index) {
  const ResolvedProfile rp = resolve_deployment(d, &index);
  if (d.deployment.kv_cache_memory_bytes.empty() && d.deployment.shared_prefix_tokens == 0) return;
  const MemoryPlan plan = plan_memory(rp.model, rp.gpu, d.deployment, {});
  for (const auto& f : check_memory_plan(rp.gpu, plan)) {
    // E103: KV memory beyond the device; E106: a shared prefix longer than max_model_len (no request can carry it).
    const char* key = f.code == "KVCAP-E103"   ? "kv_cache_memory_bytes"
                      : f.code == "KVCAP-E106" ? "shared_prefix_tokens"
                                               : nullptr;
    if (key) c.error(at.IsMap() && at[key] ? at[key] : at, path + key, f.code + ": " + f.message);
  }
}

// The YAML mapping of promise i's inline deployment, or the file's root when the promise list does not line up.
YAML::Node inline_deployment_node(const YAML::Node& root, std::size_t i, std::size_t promises) {
  const YAML::Node list = root["promises"];
  if (!list.IsSequence() || list.size() != promises || !list[i].IsMap()) return root;
  const YAML::Node d = list[i]["deployment"];
  return d.IsMap() ? d : root;
}

template <class F>
void collect(std::vector<Diagnostic>& out, const std::string& file, F&& f) {
  try {
    f();
  } catch (const ProfileError& e) {
    out.insert(out.end(), e.diagnostics().begin(), e.diagnostics().end());
  } catch (const SpecError& e) {
    out.push_back({file, 0, 0, e.field(), e.reason()});
  } catch (const OverflowError& e) {
    out.push_back({file, 0, 0, "", std::string("sizes overflow 64-bit arithmetic: ") + e.what()});
  } catch (const std::exception& e) {
    out.push_back({file, 0, 0, "", std::string("internal error: ") + e.what()});
  }
}
}  // namespace

// Files, kinds, then references between them; 21 lines over the 150-line budget of .clang-tidy (issue 12's note).
// NOLINTNEXTLINE(readability-function-size)
ValidationReport validate_paths(const std::vector<std::string>& paths) {
  ValidationReport rep;
  std::vector<Diagnostic>& diags = rep.diagnostics;
  std::vector<std::string> files;
  std::vector<bool> explicit_file;
  for (const auto& p : paths) {
    std::error_code ec;
    const auto st = fs::status(p, ec);
    if (!fs::exists(st)) {
      diags.push_back({p, 0, 0, "", "no such file or directory"});
      continue;
    }
    if (!fs::is_directory(st)) {
      files.push_back(p);
      explicit_file.push_back(true);
      continue;
    }
    std::vector<std::string> found;
    fs::recursive_directory_iterator it(p, ec), end;
    if (ec) diags.push_back({p, 0, 0, "", "cannot read directory: " + ec.message()});
    for (; !ec && it != end; it.increment(ec)) {
      const fs::path& e = it->path();
      if (it->is_directory(ec) && e.filename().string().starts_with(".")) {  // .git, editor folders
        it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file(ec)) continue;
      if (yaml_name(e)) found.push_back(e.string());
      else ++rep.skipped;
    }
    if (ec) diags.push_back({p, 0, 0, "", "cannot read directory: " + ec.message()});
    // A folder without a profile is a misconfigured CI step (a wrong path), not a pass.
    else if (found.empty())
      diags.push_back({p, 0, 0, "", "no YAML profile (*.yaml, *.yml) in this folder or below; nothing to validate"});
    std::sort(found.begin(), found.end());
    for (auto& f : found) files.push_back(std::move(f)), explicit_file.push_back(false);
  }

  // Pass 1: read and parse every file once; index models, GPUs and deployments by name.
  std::vector<Input> inputs;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    const std::string key = fs::weakly_canonical(files[i], ec).string();
    if (!seen.insert(ec ? files[i] : key).second) continue;  // named twice (a file and its folder)
    Input in;
    in.path = files[i];
    Ctx c{in.path, {}};
    if (auto t = read_file(c, in.path)) {
      in.text = std::move(*t);
      in.readable = true;
      const bool json = fs::path(in.path).extension() == ".json";
      if (json) {
        in.kind = "hf-config";  // parsed by import_hf, which also reads JSON that yaml-cpp cannot
      } else {
        in.root = parse_text(c, in.text);
        in.parsed = c.diags.empty();
        if (in.parsed && in.root.IsMap()) {
          if (in.root["kvcap_calibration"].IsDefined()) in.kind = "calibration";
          else if (in.root["kind"].IsDefined() && in.root["kind"].IsScalar()) in.kind = in.root["kind"].Scalar();
          else if (!in.root["kind"].IsDefined() &&
                   (in.root["model_type"].IsDefined() || in.root["architectures"].IsDefined()))
            in.kind = "hf-config";
        }
      }
    }
    diags.insert(diags.end(), c.diags.begin(), c.diags.end());
    inputs.push_back(std::move(in));
  }
  ProfileIndex index;
  for (const auto& in : inputs) {
    if (in.parsed && in.root.IsMap()) detail::index_by_name(index, in.kind, in.root, in.path, diags);
  }

  // Pass 2: each file by its kind, references resolved against the index.
  for (const auto& in : inputs) {
    ValidatedFile vf{in.path, in.kind, 0};
    if (in.readable && (in.kind == "hf-config" || in.parsed)) {
      const std::string& f = in.path;
      if (in.kind == "model") collect(diags, f, [&] { (void)parse_model(in.text, f); });
      else if (in.kind == "gpu") collect(diags, f, [&] { (void)parse_gpu(in.text, f); });
      else if (in.kind == "hf-config") collect(diags, f, [&] { (void)import_hf(in.text, f); });
      else if (in.kind == "calibration") collect(diags, f, [&] { (void)parse_calibration(in.text, f); });
      else if (in.kind == "workload") collect(diags, f, [&] { (void)parse_workload(in.text, f); });
      else if (in.kind == "deployment") {
        // Field errors do not stop the reference and architecture checks: every problem in one run.
        Ctx c{f, {}};
        const DeploymentProfile d = deployment_from_yaml(c, in.root, "", true, dir_of(f));
        diags.insert(diags.end(), c.diags.begin(), c.diags.end());
        const std::size_t before = c.diags.size();
        if (!d.model.empty() && !d.gpu.empty()) collect(diags, f, [&] { check_plausible(c, in.root, "", d, index); });
        diags.insert(diags.end(), c.diags.begin() + static_cast<std::ptrdiff_t>(before), c.diags.end());
      } else if (in.kind == "requirements") {
        Ctx c{f, {}};
        const Requirements r = requirements_from_yaml(c, in.root);
        diags.insert(diags.end(), c.diags.begin(), c.diags.end());
        Ctx pc{f, {}};  // plausibility findings, located in this file
        const YAML::Node named = in.root["deployments"];
        for (const auto& d : r.deployments)
          if (!d.model.empty() && !d.gpu.empty())
            collect(diags, f, [&] {
              const YAML::Node at = named.IsMap() && named[d.name].IsMap() ? named[d.name] : in.root;
              check_plausible(pc, at, "deployments." + d.name + ".", d, index);
            });
        for (std::size_t i = 0; i < r.promises.size(); ++i) {
          const auto& p = r.promises[i];
          if (p.inline_deployment && !p.inline_deployment->model.empty() && !p.inline_deployment->gpu.empty())
            collect(diags, f, [&] {
              check_plausible(pc, inline_deployment_node(in.root, i, r.promises.size()),
                              "promises[" + std::to_string(i) + "].deployment.", *p.inline_deployment, index);
            });
        }
        diags.insert(diags.end(), pc.diags.begin(), pc.diags.end());
        std::set<std::string> refs_checked;  // a deployment named by several promises is checked once
        for (const auto& p : r.promises) {
          if (!p.inline_deployment && !refs_checked.insert(p.deployment_ref).second) continue;
          if (p.inline_deployment && (p.inline_deployment->model.empty() || p.inline_deployment->gpu.empty())) continue;
          if (!p.inline_deployment && p.deployment_ref.empty()) continue;
          // Named deployments of this file were checked above; a promise adds only its reference.
          const bool own = !p.inline_deployment && std::any_of(r.deployments.begin(), r.deployments.end(),
                                                               [&](const auto& d) { return d.name == p.deployment_ref; });
          if (!own) collect(diags, f, [&] { (void)resolve_deployment(deployment_of(r, p, &index), &index); });
        }
      } else if (!in.root.IsMap()) {
        const YAML::Mark mk = in.root.Mark();
        diags.push_back({f, mk.line + 1, mk.column + 1, "", "expected a mapping with a kind: key at the top level"});
      } else {
        std::string list;
        for (std::size_t i = 0; i < kKinds.size(); ++i) list += (i ? ", " : "") + kKinds[i];
        const YAML::Node k = in.root["kind"];
        if (!k.IsDefined()) {
          diags.push_back({f, 1, 1, "kind", "required key is missing; expected one of " + list +
                                                " (or kvcap_calibration: 1 for a calibration file)"});
        } else {
          const YAML::Mark mk = k.Mark();
          std::string msg = k.IsScalar() ? "unknown kind '" + in.kind + "'" : std::string("expected a string");
          const std::string s = k.IsScalar() ? did_you_mean(in.kind, kKinds) : "";
          msg += s.empty() ? "; expected one of " + list : "; did you mean '" + s + "'?";
          diags.push_back({f, mk.line + 1, mk.column + 1, "kind", msg});
        }
      }
    }
    rep.files.push_back(vf);
  }

  // No duplicates (a broken model named by two deployments is reported once); files in the order they first
  // appear, each file's problems by line and column.
  std::vector<Diagnostic> unique;
  std::set<std::string> printed;
  std::map<std::string, std::size_t> file_rank;
  for (auto& d : diags) {
    file_rank.emplace(d.file, file_rank.size());
    if (printed.insert(d.format()).second) unique.push_back(std::move(d));
  }
  std::stable_sort(unique.begin(), unique.end(), [&](const Diagnostic& a, const Diagnostic& b) {
    const auto fa = file_rank[a.file], fb = file_rank[b.file];
    if (fa != fb) return fa < fb;
    return std::make_pair(a.line, a.column) < std::make_pair(b.line, b.column);
  });
  diags = std::move(unique);
  for (auto& vf : rep.files)
    vf.errors = static_cast<int>(std::count_if(diags.begin(), diags.end(), [&](const Diagnostic& d) { return d.file == vf.path; }));
  return rep;
}

}  // namespace kvcap::profiles
