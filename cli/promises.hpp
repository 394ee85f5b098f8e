#pragma once
// `kvcap check`'s one library call: every promise of a requirements file, its deployment resolved by profiles/
// (inline, a name from the file's deployments:, a deployment profile or a path; then the model and GPU profiles)
// and measured by the planner (kvcap/planner/promise.hpp). Standard library, planner and profiles only (no Boost,
// no reporters), so the fuzzer builds it too (tests/fuzz/CMakeLists.txt).
#include <string>
#include <vector>

#include "kvcap/planner/promise.hpp"
#include "kvcap/profiles/requirements.hpp"

namespace kvcap::cli {

/// One promise's outcome: the planner's result plus the promise's name, its deployment (profiles::describe,
/// "llama70b-tp4: llama-3.1-70b on 4 x h100-sxm (TP 4)"), where it is written and how long it took.
struct PromiseOutcome : PromiseResult {
  std::string name;
  std::string deployment;
  profiles::SourcePos at;  ///< the promise's mapping
  double time_s = 0;       ///< wall time of resolving the deployment and evaluating the promise
};

/// Evaluates every promise of `r`, in order, with datasheet rates x the default efficiencies. Never throws for a
/// bad promise: a deployment that cannot be resolved, or a promise the planner cannot evaluate, gives error = true
/// with the message (located, for a profile error) in detail.
std::vector<PromiseOutcome> check_requirements(const profiles::Requirements& r,
                                               const profiles::ProfileIndex* index = nullptr);

}  // namespace kvcap::cli
