#include "kvcap/planner/launch.hpp"

#include <cstdio>
#include <filesystem>

#include "kvcap/planner/error.hpp"

namespace kvcap {

namespace {
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

/// What both engines are told the same way, in their own flag names.
struct Names {
  const char* tp;
  const char* pp;
  const char* dp;
  const char* max_model_len;
  const char* memory;
  const char* max_seqs;
  const char* batched_tokens;
  const char* block;
};
constexpr Names kVllm = {
    "--tensor-parallel-size",   "--pipeline-parallel-size", "--data-parallel-size",     "--max-model-len",
    "--gpu-memory-utilization", "--max-num-seqs",           "--max-num-batched-tokens", "--block-size"};
// SGLang's --mem-fraction-static is the fraction for weights + KV pool (server_args.py); the nearest to vLLM's
// budget, not the same rule (a note says so).
constexpr Names kSglang = {"--tp-size",
                           "--pp-size",
                           "--dp-size",
                           "--context-length",
                           "--mem-fraction-static",
                           "--max-running-requests",
                           "--chunked-prefill-size",
                           "--page-size"};

void add(LaunchCommand& c, const char* flag, const std::string& value) {
  c.argv.emplace_back(flag);
  c.argv.push_back(value);
}
}  // namespace

LaunchEngine parse_launch_engine(const std::string& text) {
  if (text == "vllm") return LaunchEngine::vllm;
  if (text == "sglang") return LaunchEngine::sglang;
  throw SpecError("emit", "expected vllm or sglang, got '" + text + "'");
}

std::string hf_repo_id(const ModelSpec& m) {
  static const std::string kHub = "https://huggingface.co/";
  if (m.source.rfind(kHub, 0) == 0) {
    const std::string rest = m.source.substr(kHub.size());
    const auto org = rest.find('/');
    if (org != std::string::npos && org > 0) {
      const auto end = rest.find('/', org + 1);
      std::string id = rest.substr(0, end);
      if (id.size() > org + 1) return id;
    }
  }
  // A local checkpoint read from its config.json: the engines take the folder that holds it (vllm serve DIR,
  // --model-path DIR), not the file's stem.
  static const std::string kLocal = "Hugging Face config.json: ";
  if (m.source.rfind(kLocal, 0) == 0) {
    const std::filesystem::path file = m.source.substr(kLocal.size());
    if (file.filename() == "config.json") return file.has_parent_path() ? file.parent_path().string() : ".";
  }
  return m.name;
}

LaunchCommand launch_command(LaunchEngine e, const ModelSpec& m, const Deployment& d) {
  const bool vllm = e == LaunchEngine::vllm;
  const Names& n = vllm ? kVllm : kSglang;
  LaunchCommand c;
  c.argv = vllm ? std::vector<std::string>{"vllm", "serve", hf_repo_id(m)}
                : std::vector<std::string>{"python3", "-m", "sglang.launch_server", "--model-path", hf_repo_id(m)};
  const i64 tp = d.tensor_parallel_size, pp = d.pipeline_parallel_size;
  const i64 replicas = d.num_gpus > 0 ? d.num_gpus / (tp * pp) : 1;
  // SGLang spells data-parallel attention over an expert-parallel group as one TP group of replicas x TP ranks whose
  // attention runs data-parallel (--enable-dp-attention) and whose experts are split over all of them (--ep-size).
  const bool sglang_dp_attention = !vllm && d.enable_expert_parallel && replicas > 1;
  const i64 tp_flag = sglang_dp_attention ? replicas * tp : tp;
  if (tp_flag > 1) add(c, n.tp, std::to_string(tp_flag));
  if (pp > 1) add(c, n.pp, std::to_string(pp));
  if (replicas > 1) {
    add(c, n.dp, std::to_string(replicas));
    if (sglang_dp_attention) c.argv.emplace_back("--enable-dp-attention");
    if (replicas * tp * pp > 8)
      c.notes.push_back(std::to_string(replicas) + " replicas of " + std::to_string(tp * pp) + " GPUs span nodes: " +
                        (d.enable_expert_parallel
                             ? std::string("an expert-parallel group is one server over its nodes (") + n.dp +
                                   " with its per-node and address flags); its all-to-all then crosses the network, "
                                   "which kvcap times at the NVLink rate"
                             : std::string("start one server per node (") + n.dp +
                                   " with its per-node and address flags), or one server per replica behind a router"));
  }
  if (d.max_model_len) add(c, n.max_model_len, std::to_string(*d.max_model_len));
  add(c, n.memory, number(d.gpu_memory_utilization));
  if (d.max_num_seqs) add(c, n.max_seqs, std::to_string(*d.max_num_seqs));
  if (d.max_num_batched_tokens) add(c, n.batched_tokens, std::to_string(*d.max_num_batched_tokens));
  if (d.block_size != 16 || !vllm) add(c, n.block, std::to_string(d.block_size));  // SGLang's default page is 1 token
  if (d.dtype != DType::auto_)  // the engines' spelling (torch's): bfloat16, float16, float32
    add(c, "--dtype", d.dtype == DType::bf16 ? "bfloat16" : d.dtype == DType::fp16 ? "float16" : "float32");
  // Weights: the checkpoint's format is read from the checkpoint; fp8 is the one format both engines quantise a
  // 16-bit checkpoint to online.
  const DType checkpoint = m.quantization == DType::auto_ ? m.dtype : m.quantization;
  if (d.quantization != DType::auto_ && d.quantization != checkpoint) {
    if (d.quantization == DType::fp8)
      add(c, "--quantization", "fp8");
    else
      c.notes.push_back(std::string(name(d.quantization)) + " weights need a checkpoint quantised to " +
                        std::string(name(d.quantization)) +
                        " (no engine quantises to it online): serve that checkpoint");
  }
  // KV: vLLM's default (auto) is the model dtype, or the format a ModelOpt checkpoint names (auto_kv_dtype); SGLang's
  // "auto will use model data type" (python/sglang/srt/server_args.py --kv-cache-dtype), so a checkpoint's fp8 is
  // named there.
  const DType act = vllm ? auto_kv_dtype(m, d) : serving_dtype(m, d.dtype);
  if (d.kv_cache_dtype != DType::auto_ && d.kv_cache_dtype != act) {
    // The engines' spellings (vllm/config/cache.py CacheDType; SGLang's --kv-cache-dtype fp8_e4m3 | fp8_e5m2). A KV
    // format that differs from the activations only in 16/32 bits, or that is kvcap's what-if (int8, int4, int2 of
    // KIVI), has no flag: a note says so.
    const DType k = d.kv_cache_dtype;
    const bool vllm_format = k == DType::bf16 || k == DType::fp8 || k == DType::fp8_e5m2 || k == DType::nvfp4 ||
                             k == DType::fp8_per_token_head || k == DType::int8_per_token_head ||
                             k == DType::int4_per_token_head;
    if (vllm && vllm_format)
      add(c, "--kv-cache-dtype", k == DType::bf16 ? "bfloat16" : std::string(name(k)));
    else if (!vllm && (k == DType::fp8 || k == DType::fp8_e5m2 || k == DType::bf16))
      add(c, "--kv-cache-dtype", k == DType::fp8 ? "fp8_e4m3" : k == DType::fp8_e5m2 ? "fp8_e5m2" : "bf16");
    else
      c.notes.push_back(std::string(vllm ? "vLLM" : "SGLang") + " has no " + std::string(name(k)) + " KV cache flag (" +
                        (vllm ? "--kv-cache-dtype auto, bfloat16, fp8, fp8_e5m2, nvfp4, *_per_token_head"
                              : "--kv-cache-dtype auto, bf16, fp8_e4m3, fp8_e5m2") +
                        "): kvcap planned a what-if; serve the format nearest to it");
  }
  if (d.decode_context_parallel_size > 1) {
    if (vllm)
      add(c, "--decode-context-parallel-size", std::to_string(d.decode_context_parallel_size));
    else
      c.notes.push_back("decode context parallelism is vLLM's (--decode-context-parallel-size)");
  }
  if (d.enable_expert_parallel) {
    if (vllm)
      c.argv.emplace_back("--enable-expert-parallel");
    else
      add(c, "--ep-size", std::to_string(replicas * tp));
    if (sglang_dp_attention)
      c.notes.push_back(
          "SGLang shards the dense MLPs and shared experts over the whole TP group under --enable-dp-attention "
          "(--moe-dense-tp-size 1 keeps them whole, as vLLM does); kvcap planned vLLM's layout");
  }
  if (d.enable_eplb) {
    c.argv.emplace_back("--enable-eplb");  // both engines' name
    if (d.num_redundant_experts > 0) {
      if (vllm)
        add(c, "--eplb-config", R"({"num_redundant_experts": )" + std::to_string(d.num_redundant_experts) + "}");
      else
        add(c, "--ep-num-redundant-experts", std::to_string(d.num_redundant_experts));
    }
  }
  if (d.all2all_backend != Deployment::All2All::allgather_reducescatter) {
    if (vllm)
      add(c, "--all2all-backend", all2all_backend_name(d.all2all_backend));
    else
      c.notes.push_back(std::string("SGLang's DeepEP: --moe-a2a-backend deepep --deepep-mode ") +
                        (d.all2all_backend == Deployment::All2All::deepep_low_latency ? "low_latency" : "normal"));
  }
  if (d.language_model_only) {
    if (vllm)
      c.argv.emplace_back("--language-model-only");
    else
      c.notes.push_back("the vision encoder was left out of the plan (--language-model-only); SGLang loads it");
  }
  if (d.free_gpu_memory_fraction)
    c.notes.push_back("kvcap's KV capacity is TensorRT-LLM's budget (free_gpu_memory_fraction " +
                      number(*d.free_gpu_memory_fraction) +
                      " of the memory left free); this engine's differs: plan it with --gpu-memory-utilization");
  if (!vllm)
    c.notes.push_back(
        "kvcap's KV capacity is vLLM's budget (gpu_memory_utilization); SGLang sizes its pool from "
        "--mem-fraction-static: compare max_total_num_tokens in its log");
  return c;
}

LaunchCommand launch_command(LaunchEngine e, const ModelSpec& m, const Deployment& d, DisaggRole role) {
  LaunchCommand c = launch_command(e, m, d);
  const bool prefill = role == DisaggRole::prefill;
  // The router in front of both pools, said once (with the prefill pool's command).
  if (e == LaunchEngine::vllm) {
    add(c, "--kv-transfer-config", R"({"kv_connector":"NixlConnector","kv_role":"kv_both"})");
    if (prefill)
      c.notes.push_back(
          "put vLLM's disaggregated-prefill proxy in front of both pools (the prompt to a prefill server "
          "with max_tokens 1, then the request to a decode server)");
  } else {
    add(c, "--disaggregation-mode", prefill ? "prefill" : "decode");
    if (prefill)
      c.notes.push_back(
          "route with SGLang's mini load balancer (python3 -m sglang.srt.disaggregation.mini_lb "
          "--prefill URL --decode URL)");
  }
  return c;
}

}  // namespace kvcap
