#include "settings.hpp"

#include <charconv>
#include <system_error>

#include "kvcap/escape.hpp"

namespace kvcap::gui {

namespace {
// Shortest text that parses back to exactly `v` (std::to_chars round-trips).
std::string exact(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}
}  // namespace

DashboardSettings default_settings() {
  DashboardSettings s;
  s.models = {"llama-3.1-8b", "mistral-7b-v0.1", "deepseek-v2-lite"};
  s.gpu = "h100-sxm";
  s.deployment.num_gpus = 1;
  return s;
}

std::vector<std::string> deployment_flags(const Deployment& d) {
  const Deployment def;
  std::vector<std::string> f;
  auto add = [&](const char* flag, const std::string& v) {
    f.emplace_back(flag);
    f.push_back(v);
  };
  const i64 per_replica = d.tensor_parallel_size * d.pipeline_parallel_size;
  if (d.num_gpus != 0 && d.num_gpus != per_replica) add("--num-gpus", std::to_string(d.num_gpus));
  if (d.tensor_parallel_size != def.tensor_parallel_size)
    add("--tensor-parallel-size", std::to_string(d.tensor_parallel_size));
  if (d.pipeline_parallel_size != def.pipeline_parallel_size)
    add("--pipeline-parallel-size", std::to_string(d.pipeline_parallel_size));
  if (d.decode_context_parallel_size != def.decode_context_parallel_size)
    add("--decode-context-parallel-size", std::to_string(d.decode_context_parallel_size));
  if (d.enable_expert_parallel) f.emplace_back("--enable-expert-parallel");
  if (d.language_model_only) f.emplace_back("--language-model-only");
  if (d.gpu_memory_utilization != def.gpu_memory_utilization)
    add("--gpu-memory-utilization", exact(d.gpu_memory_utilization));
  if (d.free_gpu_memory_fraction) add("--free-gpu-memory-fraction", exact(*d.free_gpu_memory_fraction));
  if (d.dtype != DType::auto_) add("--dtype", std::string(name(d.dtype)));
  if (d.quantization != DType::auto_) add("--quantization", std::string(name(d.quantization)));
  if (d.kv_cache_dtype != DType::auto_) add("--kv-cache-dtype", std::string(name(d.kv_cache_dtype)));
  if (!d.kv_cache_dtype_skip_layers.empty()) {
    std::string v;
    for (const auto& l : d.kv_cache_dtype_skip_layers) (v += v.empty() ? "" : ",") += l;
    add("--kv-cache-dtype-skip-layers", v);
  }
  if (d.block_size != def.block_size) add("--block-size", std::to_string(d.block_size));
  if (d.max_model_len) add("--max-model-len", std::to_string(*d.max_model_len));
  if (d.max_num_batched_tokens) add("--max-num-batched-tokens", std::to_string(*d.max_num_batched_tokens));
  if (d.max_num_seqs) add("--max-num-seqs", std::to_string(*d.max_num_seqs));
  if (!d.kv_cache_memory_bytes.empty()) {
    std::string v;
    for (std::size_t i = 0; i < d.kv_cache_memory_bytes.size(); ++i)
      (v += i ? "," : "") += std::to_string(d.kv_cache_memory_bytes[i]);
    add("--kv-cache-memory", v);
  }
  if (d.num_gpu_blocks_override) add("--num-gpu-blocks-override", std::to_string(*d.num_gpu_blocks_override));
  if (d.activation_peak_bytes) add("--activation-peak-memory", std::to_string(*d.activation_peak_bytes));
  if (d.non_torch_bytes) add("--non-torch-memory", std::to_string(*d.non_torch_bytes));
  if (d.shared_prefix_tokens != 0) add("--shared-prefix-tokens", std::to_string(d.shared_prefix_tokens));
  if (d.hybrid_kv_cache_manager == Deployment::Hybrid::off) f.emplace_back("--disable-hybrid-kv-cache-manager");
  if (d.hybrid_kv_cache_manager == Deployment::Hybrid::on) f.emplace_back("--hybrid-chunked-local");
  if (d.mamba_cache_mode != Deployment::MambaCache::auto_)
    add("--mamba-cache-mode", mamba_cache_mode_name(d.mamba_cache_mode));
  if (d.mamba_ssm_cache_dtype != DType::auto_)
    add("--mamba-ssm-cache-dtype", std::string(name(d.mamba_ssm_cache_dtype)));
  if (d.vllm_version != def.vllm_version) add("--vllm-version", d.vllm_version);
  if (d.all2all_backend != def.all2all_backend) add("--all2all-backend", all2all_backend_name(d.all2all_backend));
  if (d.enable_eplb) f.emplace_back("--enable-eplb");
  if (d.num_redundant_experts != 0)
    add("--eplb-config", R"({"num_redundant_experts": )" + std::to_string(d.num_redundant_experts) + "}");
  if (d.kv_layer_sharing.on()) add("--kv-layer-sharing", d.kv_layer_sharing.describe());
  if (d.kv_eviction.on()) add("--kv-eviction", d.kv_eviction.describe());
  if (d.kv_quant_group_size != 0) add("--kv-quant-group-size", std::to_string(d.kv_quant_group_size));
  return f;
}

std::vector<std::string> plan_command_lines(const DashboardSettings& s, const std::string& calibration_path) {
  std::vector<std::string> lines;
  const auto flags = deployment_flags(s.deployment);
  for (const auto& m : s.models) {
    std::string line = "kvcap plan --model " + escape::shell_word(m) + " --gpu " + escape::shell_word(s.gpu);
    for (const auto& f : flags) line += " " + escape::shell_word(f);
    if (!calibration_path.empty()) line += " --calibration " + escape::shell_word(calibration_path);
    lines.push_back(line);
  }
  return lines;
}

}  // namespace kvcap::gui
