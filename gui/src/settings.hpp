#pragma once
// What the dashboard's controls describe, in planner types (no Qt), and the `kvcap plan` command
// lines equivalent to it.
#include <string>
#include <vector>

#include "kvcap/planner/deployment.hpp"

namespace kvcap::gui {

struct DashboardSettings {
  std::vector<std::string> models;  ///< profile keys: built-in names or absolute paths of profile files
  std::string gpu = "h100-sxm";     ///< built-in name or absolute path of a GPU profile
  Deployment deployment;            ///< num_gpus set explicitly by the GPU-count control
  i64 speed_context_tokens = 4096;  ///< context at which the decode-speed view is drawn
};

/// The dashboard's opening state: LLaMA 3.1 8B, Mistral 7B v0.1 and DeepSeek-V2-Lite on one H100 SXM.
DashboardSettings default_settings();

/// The deployment flags of `kvcap plan` for `d` (names as cli/common.cpp deployment_options() has them),
/// only where they differ from the defaults; parsing them back gives `d` again.
std::vector<std::string> deployment_flags(const Deployment& d);
/// One `kvcap plan --model ... --gpu ...` line per selected model, each word quoted by escape::shell_word;
/// `calibration_path` (when not empty) adds --calibration.
std::vector<std::string> plan_command_lines(const DashboardSettings& s, const std::string& calibration_path = "");

}  // namespace kvcap::gui
