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
/// The name a row is shown by: MODEL@NxGPU, with a model file (a path) shown by its stem ("config" files by
/// their folder: "Llama-3.1-8B/config").
std::string row_label(const std::string& spec);
void report_compare_table(std::ostream& out, const std::vector<CompareRow>& rows, const std::vector<i64>& contexts);

}  // namespace kvcap::cli
