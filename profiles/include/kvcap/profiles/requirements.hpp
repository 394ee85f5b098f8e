#pragma once
// Requirement files (kind: requirements): capacity promises a CI job checks on every commit, e.g.
// "llama-3.1-70b on 4x H100 with fp8 KV holds >= 24 concurrent requests at 32K context". Each promise names
// a deployment (inline, by name from the file's `deployments:`, by deployment-profile name, or by a path
// relative to the file), a metric and one comparison (at_least / at_most). Example:
// profiles/examples/requirements.yaml; schema: profiles/schema/requirements.schema.json. This room reads and
// checks the files; the metrics and their evaluation belong to the planner (kvcap/planner/promise.hpp), and
// `kvcap check` evaluates them (cli/promises.hpp).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kvcap/planner/promise.hpp"
#include "kvcap/profiles/deployment.hpp"

namespace kvcap::profiles {

/// A promise as written: the planner's query (metric, parameters, scope, comparison, target) plus where it
/// came from and the deployment it names.
struct Promise : PromiseQuery {
  std::string name;                 ///< given, or made from the metric ("concurrency_at at 32768 tokens")
  SourcePos at;                     ///< the promise's mapping
  std::string deployment_ref;       ///< name or path as written ("" when inline)
  SourcePos deployment_at;
  std::optional<DeploymentProfile> inline_deployment;
  SourcePos target_at;
};

struct Requirements {
  std::string name;
  std::string description;
  std::string file;
  std::string base_dir;
  std::vector<DeploymentProfile> deployments;  ///< the file's `deployments:` (name -> inline deployment)
  std::vector<Promise> promises;
};

Requirements parse_requirements(const std::string& text, const std::string& file);
Requirements load_requirements_file(const std::string& path);

/// The deployment a promise names: inline, a name from the file's deployments:, a deployment profile name in
/// `index`, or a path relative to the requirements file. ProfileError located at the promise's deployment key.
DeploymentProfile deployment_of(const Requirements& r, const Promise& p, const ProfileIndex* index);

/// Keys the loader accepts: "" (top level), "deployments.*" (a named inline deployment), "promises[]" (a
/// promise), "promises[].deployment" (an inline deployment in a promise).
const std::map<std::string, std::vector<std::string>>& requirements_keys();

}  // namespace kvcap::profiles
