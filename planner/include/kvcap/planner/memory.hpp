#pragma once
// The memory model: where every byte of a rank goes, how many KV blocks remain, and how many
// concurrent requests they hold at each context length. vLLM V1 semantics:
//   vllm/v1/worker/gpu_worker.py       determine_available_memory (budget)
//   vllm/v1/core/kv_cache_utils.py     get_kv_cache_config (num_blocks), get_max_concurrency_for_kv_cache_config
//   vllm/v1/kv_cache_interface.py      page sizes and max_memory_usage_bytes per attention spec
#include <string>
#include <vector>

#include "kvcap/planner/deployment.hpp"
#include "kvcap/planner/kv_cache.hpp"
#include "kvcap/planner/params.hpp"

namespace kvcap {

/// Decoder layers of one attention kind on one pipeline stage (what the speed model reads per token).
struct KvLayerGroup {
  LayerAttention attention = LayerAttention::full;
  i64 num_layers = 0;
  u64 bytes_per_token_per_layer = 0;  ///< on one rank, in the resolved KV format (indexer keys included)
  i64 window_tokens = 0;              ///< sliding window or attention chunk (0: full)
  u64 state_bytes_per_layer = 0;      ///< linear layers: one request's state (conv + recurrent) per layer, unpadded
  KvEviction evict;                   ///< full layers: the what-if --kv-eviction (tokens kept of a context)
  /// Decoder layers that attend to the group's caches: num_layers plus those reading an earlier layer's cache
  /// (--kv-layer-sharing), which hold no cache but still read it and compute attention each step.
  i64 attending_layers = 0;
};

/// One pipeline stage; its TP ranks are identical, so a stage stands for each of its ranks.
struct StagePlan {
  i64 stage = 0;
  i64 first_layer = 0;
  i64 num_layers = 0;
  /// total_device_memory x gpu_memory_utilization; with TensorRT-LLM's budget (free_gpu_memory_fraction) the whole
  /// device, which the KV cache gets that fraction of once the rest is taken
  u64 requested_bytes = 0;
  u64 device_bytes = 0;           ///< device memory as CUDA reports it
  u64 weights_bytes = 0;          ///< weights held by one rank of this stage
  u64 vision_weights_bytes =
      0;  ///< of which the vision encoder's (stage 0 of a multimodal model; 0 with --language-model-only)
  u64 activation_peak_bytes = 0;  ///< peak of a forward pass over max_num_batched_tokens
  u64 non_torch_bytes = 0;        ///< CUDA context, NCCL and allocator memory outside PyTorch
  i64 available_kv_bytes = 0;     ///< requested - weights - activation peak - non-torch (negative: does not fit)
  bool kv_memory_given = false;   ///< available_kv_bytes came from --kv-cache-memory
  u64 kv_bytes_per_token = 0;     ///< one token in every layer of the stage
  std::vector<KvLayerGroup> groups;
  KvWorkerLayout layout;          ///< bytes one block id costs on this stage's ranks (vLLM KV cache tensors)
  u64 num_blocks = 0;             ///< available // layout.block_bytes, or --num-gpu-blocks-override
  u64 num_blocks_from_memory = 0;   ///< available // layout.block_bytes (what the override replaced)
  i64 estimated_max_model_len = 0;  ///< vLLM _estimate_max_model_len_from_groups on this stage
};

struct CurvePoint {
  i64 context_tokens = 0;
  double max_concurrency = 0;     ///< per replica; fractional as vLLM prints it
  u64 kv_bytes_per_request = 0;   ///< per rank of the binding stage, whole blocks
};

struct MemoryPlan {
  ResolvedDeployment dep;
  ParamCounts params;
  std::vector<StagePlan> stages;
  std::size_t binding_stage = 0;   ///< the stage with the fewest blocks
  u64 kv_bytes_per_token_per_rank = 0;  ///< of the binding stage
  std::vector<KvLayerSpec> kv_layers;   ///< every KV layer of the model (vLLM KVCacheSpec per layer)
  std::vector<KvCacheGroup> kv_groups;  ///< vLLM's KV cache groups (hybrid models: more than one)
  bool hybrid_manager = true;      ///< whether the hybrid KV cache manager is on
  u64 num_blocks = 0;              ///< minimum over stages (vLLM takes the minimum over workers); includes the null block
  /// The blocks the KV memory holds, minimum over stages: num_blocks unless --num-gpu-blocks-override replaced it.
  u64 num_blocks_from_memory = 0;
  u64 blocks_per_max_len_request = 0;  ///< blocks one request of max_model_len holds, summed over the groups
  /// What vLLM logs as "GPU KV cache size: N tokens" per replica (Deployment::vllm_version decides the formula).
  u64 kv_capacity_tokens = 0;
  double max_concurrency = 0;      ///< at max_model_len, per replica
  /// vLLM's start-up check (check_enough_kv_cache_memory) at max_model_len, on the blocks the memory holds: it runs
  /// before --num-gpu-blocks-override replaces them, so it equals max_concurrency without an override.
  double startup_concurrency = 0;
  i64 max_model_len_that_fits = 0; ///< longest context one request can hold (vLLM estimate_max_model_len)
  /// The max_model_len asked for where TensorRT-LLM's budget lowered it to what the cache holds (dep.max_model_len is
  /// the lowered one); 0 where nothing was lowered.
  i64 max_model_len_asked = 0;
  /// The model's derived maximum length (max_position_embeddings after RoPE scaling): vLLM refuses a max_model_len
  /// above it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (KVCAP-E111).
  i64 model_max_len = 0;
  std::vector<CurvePoint> curve;
  u64 cluster_kv_capacity_tokens = 0;  ///< x replicas
  double cluster_max_concurrency = 0;  ///< x replicas, at max_model_len
  std::vector<std::string> warnings;   ///< e.g. "one request of max_model_len does not fit"
  /// vLLM 0.19 and later with linear-attention states: max_num_seqs may not exceed the pool's blocks
  /// (mamba_blocks_cap_max_num_seqs); 0 where there is no such limit.
  i64 max_num_seqs_limit = 0;
  /// vLLM starts (the memory holds one request of max_model_len) and its pool holds one (they differ only under
  /// --num-gpu-blocks-override: a smaller pool starts but never schedules such a request).
  bool fits() const { return max_concurrency >= 1.0 && startup_concurrency >= 1.0; }
  /// vLLM starts but its --num-gpu-blocks-override pool cannot hold one request of max_model_len.
  bool override_pool_too_small() const { return startup_concurrency >= 1.0 && max_concurrency < 1.0; }
  /// Whether vLLM refuses to start because max_num_seqs exceeds max_num_seqs_limit.
  bool seqs_exceed_state_blocks() const { return max_num_seqs_limit > 0 && dep.max_num_seqs > max_num_seqs_limit; }
};

/// The plan's deployment with every default filled in, as a launch command gives it: max_num_seqs lowered to
/// max_num_seqs_limit where vLLM would refuse it (never binding on the speed model: a request holds an attention
/// block and a state block in each state group, so fewer than num_blocks requests fit).
Deployment launchable_deployment(const MemoryPlan& p);
/// Where seqs_exceed_state_blocks(): "vLLM would not start: max_num_seqs N exceeds the B blocks ...", the one text
/// of KVCAP-E110 in every front end.
std::string seqs_limit_text(const MemoryPlan& p);
/// Where override_pool_too_small(): "vLLM starts, but one request of max_model_len ... is never scheduled", the one
/// text of that case in the plan's warnings and KVCAP-E102.
std::string override_pool_text(const MemoryPlan& p);
/// The memory a stage's rank budgets from, in words: "the 71.27 GiB requested (gpu_memory_utilization 0.90 x 79.19
/// GiB)", or with TensorRT-LLM's budget "the 79.19 GiB of the device (TensorRT-LLM's budget: free_gpu_memory_fraction
/// 0.90 of what is left free)".
std::string budget_text(const MemoryPlan& p, const StagePlan& st);
/// requested - weights - activation peak - non-torch of a stage's rank: vLLM's KV memory; under TensorRT-LLM's
/// budget the memory its profiling run leaves free, of which the KV cache gets free_gpu_memory_fraction.
i64 unreserved_bytes(const StagePlan& st);
/// The setting that raises the KV budget: "gpu_memory_utilization" or "free_gpu_memory_fraction".
const char* budget_setting(const MemoryPlan& p);
/// The engine whose KV budget the plan follows, to name in what it does: "vLLM" or "TensorRT-LLM".
const char* budget_engine(const MemoryPlan& p);
/// The same for a deployment not yet planned (TensorRT-LLM where it gives free_gpu_memory_fraction).
const char* budget_engine(const Deployment& d);
/// "TensorRT-LLM lowers max_seq_len from A to B tokens ..." where it did (max_model_len_asked), else "": KVCAP-W208.
std::string lowered_length_text(const MemoryPlan& p);
/// What happens to requests longer than the plan's max_model_len and what lets them in: "vLLM rejects such requests
/// (raise --max-model-len)", or where TensorRT-LLM lowered its max_seq_len, that it did and that more KV memory does.
std::string longer_requests_text(const MemoryPlan& p);

/// Contexts 1K, 2K, ... 1M (doubling), the default curve.
std::vector<i64> default_contexts();

/// vLLM's KV layers of the model on this deployment: one spec per attention layer (and per indexer cache).
/// `decoder_layer` receives the decoder layer of each KV layer (for pipeline stages).
std::vector<KvLayerSpec> kv_layer_specs(const ModelSpec& m, const ResolvedDeployment& d, std::vector<i64>* decoder_layer = nullptr);
/// The tokens a full-attention layer keeps under the what-if --kv-eviction (off: all).
KvEviction kv_eviction(const Deployment::Eviction& e);
/// The what-if H2O's accumulated attention scores, per kept token and layer on one rank: one per KV head in the
/// activation dtype (planner/src/memory.cpp cites the reference implementation).
u64 h2o_score_bytes_per_token(const ModelSpec& m, const ResolvedDeployment& d);
/// Whether vLLM runs the hybrid KV cache manager for this model and deployment.
bool hybrid_manager_enabled(const ModelSpec& m, const Deployment& d);

/// Activation peak estimate per rank (documented in docs/memory-model.md).
u64 estimate_activation_peak_bytes(const ModelSpec& m, const ResolvedDeployment& d);
/// Non-torch memory default per rank (documented in docs/memory-model.md).
u64 default_non_torch_bytes(const ModelSpec& m, const ResolvedDeployment& d);
/// DeepEP's buffers per rank under --all2all-backend deepep_* with expert parallelism (0 otherwise); part of the
/// non-torch default.
u64 all2all_buffer_bytes(const ModelSpec& m, const ResolvedDeployment& d);
/// Weight bytes held by one rank of pipeline stage `stage`.
u64 weights_bytes_per_rank(const ModelSpec& m, const ResolvedDeployment& d, i64 stage);
/// The part of weights_bytes_per_rank that is the vision encoder (params.hpp vision_tensors): stage 0 only, 0 with
/// --language-model-only or for a text-only model.
u64 vision_weights_bytes_per_rank(const ModelSpec& m, const ResolvedDeployment& d, i64 stage);

/// The whole memory plan. Throws SpecError for impossible deployments.
MemoryPlan plan_memory(const ModelSpec& m, const GpuSpec& g, const Deployment& d,
                       const std::vector<i64>& contexts = default_contexts());

/// Concurrency per replica at context S (the curve's formula, for any S). A shared prefix is a cache hit of at
/// most S - 1 tokens.
double concurrency_at(const ModelSpec& m, const MemoryPlan& p, i64 context_tokens);
/// The same for requests of `prompt_tokens` (<= S) growing to S: the hit is at most prompt_tokens - 1, as vLLM
/// looks the prompt up at admission.
double concurrency_at(const ModelSpec& m, const MemoryPlan& p, i64 context_tokens, i64 prompt_tokens);
/// The requests of `prompt_tokens` growing to context S that a replica decodes at once in steady state: as
/// concurrency_at, but a sliding-window or chunked-local group holds only a decoding request's window (vLLM frees the
/// blocks that leave it), one step's prefill chunks held once for the pool, as the simulator allocates. The curve's
/// concurrency_at charges every request vLLM's worst case, a step's tokens beyond its window. Equal for models
/// without such layers.
double running_concurrency_at(const MemoryPlan& p, i64 context_tokens, i64 prompt_tokens);

}  // namespace kvcap
