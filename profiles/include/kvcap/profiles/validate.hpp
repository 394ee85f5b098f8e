#pragma once
// kvcap validate: every problem in a set of profile files (folders recursively), across files: schema,
// types, ranges, architecture consistency, and references (a deployment or promise naming a model or GPU
// that is neither built-in, nor a profile in the set, nor an existing relative path).
#include <string>
#include <vector>

#include "kvcap/profiles/diagnostics.hpp"

namespace kvcap::profiles {

struct ValidatedFile {
  std::string path;
  std::string kind;    ///< model | gpu | deployment | requirements | workload | calibration | hf-config | "" (unknown)
  int errors = 0;
};

struct ValidationReport {
  std::vector<ValidatedFile> files;      ///< in the order checked (arguments; folders sorted)
  std::vector<Diagnostic> diagnostics;   ///< every problem, in file order, no duplicates
  int skipped = 0;                       ///< non-YAML files found in folders (not checked)
  bool ok() const { return diagnostics.empty(); }
};

/// Validates files and folders (folders: every *.yaml / *.yml below, sorted; other files are skipped).
/// A path given explicitly is checked whatever its extension (a config.json is imported as a model).
/// Never throws for bad input: a missing path is a diagnostic.
ValidationReport validate_paths(const std::vector<std::string>& paths);

}  // namespace kvcap::profiles
