#pragma once
// The command that serves a planned deployment: `vllm serve ...` or SGLang's launch_server, with every flag the plan
// assumed (vLLM's defaults that depend on the GPU, such as max_num_seqs, made explicit), so that what was planned
// is what runs. Pure: argv words, no quoting (the front end quotes for its shell).
#include <string>
#include <vector>

#include "kvcap/planner/deployment.hpp"
#include "kvcap/planner/model.hpp"

namespace kvcap {

enum class LaunchEngine { vllm, sglang };
LaunchEngine parse_launch_engine(const std::string& text);  ///< "vllm" | "sglang"; SpecError("emit") otherwise

struct LaunchCommand {
  std::vector<std::string> argv;  ///< e.g. {"vllm", "serve", "meta-llama/Llama-3.1-8B", "--max-model-len", "8192", ...}
  std::vector<std::string> notes;  ///< what the command cannot carry (a pre-quantised checkpoint needed, ...)
};

/// The model id an engine loads: the Hugging Face repository of the profile's `source`
/// (https://huggingface.co/ORG/NAME/...), else the profile's name.
std::string hf_repo_id(const ModelSpec& m);

/// The launch command of deployment `d` of `m`, as SizingCandidate::deployment holds it (max_model_len,
/// max_num_batched_tokens and max_num_seqs set; num_gpus = replicas x TP x PP; quantization and kv_cache_dtype
/// resolved). vLLM flags: vllm/engine/arg_utils.py; SGLang: python/sglang/srt/server_args.py.
LaunchCommand launch_command(LaunchEngine e, const ModelSpec& m, const Deployment& d);

/// A disaggregated (xPyD) worker pool's role.
enum class DisaggRole { prefill, decode };
/// launch_command for one pool of a disaggregated deployment, with the engine's KV-transfer flags: vLLM
/// `--kv-transfer-config {"kv_connector":"NixlConnector","kv_role":"kv_both"}` (docs/features/nixl_connector_usage.md:
/// both roles alike, a proxy in front sends the prompt to a prefill server with max_tokens 1, then the request to a
/// decode server); SGLang `--disaggregation-mode prefill|decode` (docs/advanced_features/pd_disaggregation.md, a
/// sglang.srt.disaggregation.mini_lb router in front).
LaunchCommand launch_command(LaunchEngine e, const ModelSpec& m, const Deployment& d, DisaggRole role);

}  // namespace kvcap
