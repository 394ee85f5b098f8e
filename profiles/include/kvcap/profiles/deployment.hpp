#pragma once
// Deployment profiles (kind: deployment): a named deployment = a model and a GPU (built-in name, a
// profile in the validated set, or a path relative to the file) plus vLLM's deployment fields, with
// vLLM's names in snake_case (vllm/engine/arg_utils.py EngineArgs). Example:
// profiles/examples/deployment-llama-3.1-70b-4xh100.yaml; schema: profiles/schema/deployment.schema.json.
#include <map>
#include <string>
#include <vector>

#include "kvcap/planner/deployment.hpp"
#include "kvcap/profiles/diagnostics.hpp"

namespace kvcap::profiles {

/// Where something was written (1-based line and column; 0 when unknown).
struct SourcePos {
  std::string file;
  int line = 0;
  int column = 0;
};

struct DeploymentProfile {
  std::string name;         ///< required in a deployment file; inline deployments may leave it empty
  std::string description;
  SourcePos at;             ///< the mapping itself
  std::string model;        ///< reference as written: built-in name, profile name, or path
  std::string gpu;          ///< reference as written
  SourcePos model_at, gpu_at;
  std::string base_dir;     ///< directory relative references are resolved against ("" = current directory)
  Deployment deployment;    ///< vLLM fields; unset ones keep vLLM's defaults (resolved by the planner)
  std::map<std::string, SourcePos> field_at;  ///< key -> where its value was written, for located planner errors
};

/// Profiles of a validated set (or of --profiles folders), by `name`, so references can name them.
struct ProfileIndex {
  std::map<std::string, std::string> models;       ///< name -> file
  std::map<std::string, std::string> gpus;         ///< name -> file
  std::map<std::string, std::string> deployments;  ///< name -> file
};

/// Every YAML profile under `folder` (recursively), indexed by kind and name. ProfileError with every file that does
/// not parse as YAML (a syntax error, several documents), and, located at each later `name:`, when two files of one
/// kind share a name (in one folder or across `folders`; one file reached twice is one): a reference by name would be
/// ambiguous. Files that parse but are not model, GPU or deployment profiles are left out.
ProfileIndex index_profiles(const std::string& folder);
ProfileIndex index_profiles(const std::vector<std::string>& folders);

DeploymentProfile parse_deployment(const std::string& text, const std::string& file);
DeploymentProfile load_deployment_file(const std::string& path);

/// A model / GPU reference resolved: a path (contains '/' or ends in .yaml/.yml/.json) relative to
/// `base_dir`, else a name in `index`, else a built-in name. ProfileError located at `at` when nothing
/// matches (with a did-you-mean); the referenced file's own diagnostics when it is broken.
ModelSpec resolve_model_ref(const std::string& ref, const SourcePos& at, const std::string& base_dir,
                            const ProfileIndex* index);
GpuSpec resolve_gpu_ref(const std::string& ref, const SourcePos& at, const std::string& base_dir,
                        const ProfileIndex* index);

/// Model, GPU and the deployment checked against both (planner resolve(): TP divides the heads, PP <= layers,
/// dtypes, ...). Errors are located on the deployment's key (e.g. tensor_parallel_size).
struct ResolvedProfile {
  ModelSpec model;
  GpuSpec gpu;
  ResolvedDeployment resolved;
};
ResolvedProfile resolve_deployment(const DeploymentProfile& d, const ProfileIndex* index);

/// "llama-3.1-70b on 4 x h100-sxm (TP 4, KV fp8)" for reports.
std::string describe(const DeploymentProfile& d);

/// Keys the loader accepts: "" (top level of a deployment file). Inline deployments in requirement files
/// take the same keys except `kind`.
const std::map<std::string, std::vector<std::string>>& deployment_keys();

}  // namespace kvcap::profiles
