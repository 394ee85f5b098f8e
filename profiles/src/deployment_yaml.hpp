#pragma once
// Internal: the readers of deployment mappings (deployment files and the inline deployments of requirement
// files) and of requirement files, collecting diagnostics without throwing (kvcap validate goes on to check
// references even when a file has other errors, so every problem is reported in one run).
#include "kvcap/profiles/deployment.hpp"
#include "kvcap/profiles/requirements.hpp"
#include "reader.hpp"

namespace kvcap::profiles::detail {

SourcePos pos(const Ctx& c, const YAML::Node& n);
/// Reads a deployment mapping at `path` ("" for a deployment file's top level). `file_level`: `kind:
/// deployment` and `name` are required; inline mappings take the same keys except `kind`.
DeploymentProfile deployment_from_yaml(Ctx& c, const YAML::Node& map, const std::string& path, bool file_level,
                                       const std::string& base_dir);
/// A requirements file's top-level mapping.
Requirements requirements_from_yaml(Ctx& c, const YAML::Node& root);
/// The directory of `file` ("" when it has none), against which relative references resolve.
std::string dir_of(const std::string& file);
/// True when a reference is a path rather than a name.
bool looks_like_path(const std::string& ref);

}  // namespace kvcap::profiles::detail
