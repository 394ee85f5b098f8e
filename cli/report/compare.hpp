#pragma once
// Reporters of `kvcap compare`: concurrency against context for several deployments side by side.
#include <ostream>
#include <string>
#include <vector>

#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/plausibility.hpp"

namespace kvcap::cli {

struct CompareRow {
  std::string spec;  ///< MODEL@NxGPU as given
  ModelSpec m;
  GpuSpec g;
  MemoryPlan p;
  std::vector<Finding> findings;
};

void report_compare_json(std::ostream& out, const std::vector<CompareRow>& rows);
void report_compare_csv(std::ostream& out, const std::vector<CompareRow>& rows);
/// Where MODEL@GPU splits: at the first '@' whose left side is a built-in model or an existing file, else at the
/// first '@' (a model file's path and a GPU profile's path may both hold an '@'); npos without one.
std::size_t target_split(const std::string& spec);
/// The name a row is shown by: MODEL@NxGPU, with a model file (a path) shown by its stem ("config" files by
/// their folder: "Llama-3.1-8B/config").
std::string row_label(const std::string& spec);
void report_compare_table(std::ostream& out, const std::vector<CompareRow>& rows, const std::vector<i64>& contexts);

}  // namespace kvcap::cli
