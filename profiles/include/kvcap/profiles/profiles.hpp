#pragma once
// Loading model and GPU profiles: built-in names, YAML profile files, and Hugging Face config.json.
// Every problem is reported with file:line:column and key path (ProfileError).
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kvcap/planner/calibration.hpp"
#include "kvcap/planner/gpu.hpp"
#include "kvcap/planner/model.hpp"
#include "kvcap/planner/workload.hpp"
#include "kvcap/profiles/diagnostics.hpp"

namespace kvcap::profiles {

/// A YAML profile (kind: model) or a Hugging Face config.json (detected by content).
ModelSpec load_model_file(const std::string& path);
/// A YAML GPU profile (kind: gpu).
GpuSpec load_gpu_file(const std::string& path);
/// Parse from text; `file` names the source in diagnostics.
ModelSpec parse_model(const std::string& text, const std::string& file);
GpuSpec parse_gpu(const std::string& text, const std::string& file);
/// Hugging Face config.json text to a ModelSpec (model types: llama, mistral, mixtral, qwen2, qwen2_moe,
/// qwen3, qwen3_moe, gemma2, gemma3, gemma3_text, deepseek_v2, deepseek_v3, phi3, gpt_oss).
ModelSpec import_hf(const std::string& text, const std::string& file);
std::vector<std::string> supported_hf_model_types();

/// A calibration.yaml written by `kvcap calibrate` (docs/calibration-format.md) into the planner's
/// Calibration; ProfileError with file:line:col for a malformed file or an out-of-range figure.
Calibration load_calibration_file(const std::string& path);
Calibration parse_calibration(const std::string& text, const std::string& file);

/// A workload file (kind: workload; example profiles/examples/workload-chat.yaml) into the planner's
/// WorkloadSpec; ProfileError with file:line:col and key path for every problem.
WorkloadSpec load_workload_file(const std::string& path);
WorkloadSpec parse_workload(const std::string& text, const std::string& file);

/// A built-in name, a path to a YAML profile, or a path to a config.json.
ModelSpec resolve_model(std::string_view name_or_path);
GpuSpec resolve_gpu(std::string_view name_or_path);
std::vector<std::string> builtin_model_names();
std::vector<std::string> builtin_gpu_names();
/// The text of a built-in profile file ("models/llama-3.1-8b.yaml"), or "" when absent.
std::string builtin_text(std::string_view relative_path);

/// Writes a profile back as YAML (kvcap import-hf). Round-trips through parse_model.
std::string to_yaml(const ModelSpec& m, const std::string& header_comment = "");

/// Keys the loader accepts, per mapping ("" is the top level; "attention", "moe", ...), for the JSON
/// Schema sync test and for did-you-mean suggestions.
const std::map<std::string, std::vector<std::string>>& model_keys();
const std::map<std::string, std::vector<std::string>>& gpu_keys();
const std::map<std::string, std::vector<std::string>>& workload_keys();

}  // namespace kvcap::profiles
