#pragma once
// Deployment: how a model is served, in vLLM's vocabulary (vllm/engine/arg_utils.py). Optional
// fields left empty take vLLM's defaults, resolved by resolve() against the model and GPU.
#include <optional>
#include <string>
#include <vector>

#include "kvcap/planner/dtype.hpp"
#include "kvcap/planner/gpu.hpp"
#include "kvcap/planner/model.hpp"

namespace kvcap {

struct Deployment {
  i64 num_gpus = 0;                       ///< total GPUs; 0: one replica (TP x PP); extra GPUs are data-parallel replicas
  i64 tensor_parallel_size = 1;           ///< --tensor-parallel-size
  i64 pipeline_parallel_size = 1;         ///< --pipeline-parallel-size
  /// --decode-context-parallel-size (vLLM DCP): the ranks of a TP group that hold the same (replicated) KV heads
  /// split each request's tokens among them instead, interleaved; must divide TP and, for GQA, TP / H_kv.
  i64 decode_context_parallel_size = 1;
  double gpu_memory_utilization = 0.9;    ///< --gpu-memory-utilization
  /// --free-gpu-memory-fraction (TensorRT-LLM's KvCacheConfig.free_gpu_memory_fraction, trtllm-serve
  /// --kv_cache_free_gpu_memory_fraction): the KV cache takes this fraction of the memory left free after the
  /// weights and the profiling run's peak (activations, CUDA context, NCCL), instead of vLLM's budget
  /// (gpu_memory_utilization x total - the rest). Unset: vLLM's rule.
  std::optional<double> free_gpu_memory_fraction;
  DType dtype = DType::auto_;             ///< --dtype: activation / unquantised weights (auto: model's)
  DType quantization = DType::auto_;      ///< --quantization: linear-layer weight format (auto: checkpoint's)
  DType kv_cache_dtype = DType::auto_;    ///< --kv-cache-dtype (auto: the model dtype, even for quantised weights)
  /// --kv-cache-dtype-skip-layers: attention layers kept in the model dtype while the others use
  /// kv_cache_dtype: layer indices ("0", "47") or "sliding_window" (every sliding-window layer).
  std::vector<std::string> kv_cache_dtype_skip_layers;
  i64 block_size = 16;                    ///< --block-size, tokens per KV block (hybrid linear-attention models raise it)
  /// --enable-expert-parallel (vLLM): the routed experts of a MoE model are split whole over the EP group of
  /// every GPU of the deployment (tensor x data parallel, per pipeline stage) instead of being TP-sharded in each
  /// replica; the data-parallel replicas (num_gpus / (TP x PP)) keep their own requests and KV cache.
  bool enable_expert_parallel = false;
  /// --all2all-backend (vLLM ParallelConfig.all2all_backend): how expert parallelism moves tokens to their experts.
  /// allgather_reducescatter (vLLM's default) and naive gather every data-parallel rank's tokens and reduce-scatter
  /// the outputs over NCCL; deepep_high_throughput and deepep_low_latency send each token to its top-k experts' ranks
  /// through DeepEP's buffers (vllm/distributed/device_communicators/all2all.py), which take GPU memory.
  enum class All2All : std::uint8_t {
    allgather_reducescatter,
    naive,
    deepep_high_throughput,
    deepep_low_latency
  } all2all_backend = All2All::allgather_reducescatter;
  /// --enable-eplb (vLLM expert-parallel load balancing): experts are moved between ranks as their loads drift, and
  /// `num_redundant_experts` (--eplb-config '{"num_redundant_experts": R}') extra copies of the busiest experts are
  /// kept, so each rank holds ceil((E + R) / EP) experts (vllm/config/parallel.py EPLBConfig; FusedMoE
  /// global_num_experts = E + R). The balancing itself is not modelled (the speed model assumes uniform routing).
  bool enable_eplb = false;
  i64 num_redundant_experts = 0;
  /// What-if --kv-quant-group-size (no vLLM option; with --kv-cache-dtype int4 or int2, KIVI's grouped formats): the
  /// elements sharing one fp16 scale and one fp16 zero point (Liu et al., "KIVI", arXiv:2402.02750, groups of 32 by
  /// default, 64 and 128 in its ablation); 0: 32.
  i64 kv_quant_group_size = 0;
  /// --language-model-only (vLLM MultiModalConfig.language_model_only): a multimodal checkpoint is served as text
  /// only and its vision encoder is neither built nor loaded, so its weights take no GPU memory.
  bool language_model_only = false;
  DType mamba_ssm_cache_dtype = DType::auto_;  ///< --mamba-ssm-cache-dtype: recurrent state of linear-attention layers
  /// --mamba-cache-mode: how linear-attention states are cached (vllm/config/cache.py CacheConfig.mamba_cache_mode).
  /// none: one state block per request and group; align (prefix caching): two, the running state and the
  /// checkpoint at the last block boundary; all (prefix caching): a state checkpoint every block, so the startup
  /// check and the logged concurrency charge a state group as many blocks as a full-attention group, and the
  /// block is a multiple of the SSD kernel's chunk. auto: with prefix caching (vLLM's default since it caches
  /// hybrid models) all for a model that supports it (Mamba-2 and Mamba-1 hybrids), else align
  /// (vllm/model_executor/models/config.py MambaModelConfig); none for vLLM 0.10-0.11, which turned prefix
  /// caching off for hybrid models.
  enum class MambaCache : std::uint8_t { auto_, none, align, all } mamba_cache_mode = MambaCache::auto_;
  std::optional<i64> max_model_len;       ///< --max-model-len (default: max_position_embeddings)
  std::optional<i64> max_num_batched_tokens;  ///< --max-num-batched-tokens (default: vLLM V1 rule)
  std::optional<i64> max_num_seqs;        ///< --max-num-seqs (default: vLLM V1 rule)
  /// --kv-cache-memory: KV bytes per rank, skipping the estimate. One value for every rank, or one per
  /// pipeline stage (as the workers of case C in shared/fixtures/vllm_startup_logs.md logged).
  std::vector<u64> kv_cache_memory_bytes;
  /// --num-gpu-blocks-override: vLLM's pool of this many blocks on every worker, whatever the memory gave
  /// (vllm/v1/core/kv_cache_utils.py may_override_num_blocks, applied after the start-up memory check).
  std::optional<u64> num_gpu_blocks_override;
  std::optional<u64> activation_peak_bytes;  ///< override of the activation-peak estimate (per rank)
  std::optional<u64> non_torch_bytes;        ///< override of the non-torch default (per rank)
  i64 shared_prefix_tokens = 0;              ///< a common prefix (system prompt) held once, as with prefix caching
  /// vLLM's hybrid KV cache manager. auto: on, except for chunked local attention (vLLM disables it
  /// there unless VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1; vllm/config/vllm.py); off is
  /// --disable-hybrid-kv-cache-manager (every layer then holds the whole context).
  enum class Hybrid : std::uint8_t { auto_, on, off } hybrid_kv_cache_manager = Hybrid::auto_;
  /// The vLLM release whose logged quantities are reproduced: "current" or "0.N[.x]" (docs/memory-model.md).
  std::string vllm_version = "current";
  /// What-if (no vLLM option; quality not modelled): layers that reuse an earlier layer's KV cache instead of their
  /// own. cla: cross-layer attention, each group of `factor` adjacent layers shares its first layer's cache (Brandon
  /// et al., "Reducing Transformer Key-Value Cache Size with Cross-Layer Attention", 2024); minicache: from layer
  /// `from_layer` on, each pair of adjacent layers keeps one merged cache (Liu et al., "MiniCache", NeurIPS 2024).
  struct LayerSharing {
    enum class Kind : std::uint8_t { none, cla, minicache } kind = Kind::none;
    i64 factor = 2;
    i64 from_layer = 0;
    bool on() const { return kind != Kind::none; }
    /// Whether decoder layer `l` reads an earlier layer's cache (and holds none of its own).
    bool shares(i64 l) const {
      if (kind == Kind::cla) return l % factor != 0;
      if (kind == Kind::minicache) return l > from_layer && (l - from_layer) % 2 == 1;
      return false;
    }
    std::string describe() const;  ///< "cla:2", "minicache:from=16", "none"
    bool operator==(const LayerSharing&) const = default;
  } kv_layer_sharing;
  /// What-if (no vLLM option; quality not modelled): full-attention layers keep only part of a request's context.
  /// streaming: `sink_tokens` attention sinks plus the latest `window_tokens` (Xiao et al., "Efficient Streaming
  /// Language Models with Attention Sinks", ICLR 2024); h2o: heavy hitters and recent tokens within `budget` x the
  /// context, at least `recent_tokens` (Zhang et al., "H2O: Heavy-Hitter Oracle for Efficient Generative Inference of
  /// Large Language Models", NeurIPS 2023).
  struct Eviction {
    enum class Kind : std::uint8_t { none, streaming, h2o } kind = Kind::none;
    i64 sink_tokens = 4;
    i64 window_tokens = 0;
    double budget = 0;
    i64 recent_tokens = 0;
    bool on() const { return kind != Kind::none; }
    std::string describe() const;  ///< "streaming:sink=4,window=4096", "h2o:budget=0.2", "none"
    bool operator==(const Eviction&) const = default;
  } kv_eviction;
  /// The same flags (two spellings of one deployment compare equal: "budget=0.2" and "budget=0.20").
  bool operator==(const Deployment&) const = default;
};

/// Whether `version` ("current", "0.10", "0.19.1", ...) logs "GPU KV cache size" as
/// num_blocks // groups x block size (vLLM <= 0.19) rather than int(concurrency x max_model_len).
/// Throws SpecError("vllm_version") for anything else.
bool legacy_kv_size_log(const std::string& version);
/// Whether `version` turned prefix caching off for hybrid linear-attention models (vLLM 0.10-0.11).
bool mamba_prefix_caching_off(const std::string& version);
/// Whether `version` refuses to start a model with linear-attention states when max_num_seqs exceeds the pool's
/// blocks (vllm#38270, merged 2026-03-26, after 0.18.0: from 0.19 on).
bool mamba_blocks_cap_max_num_seqs(const std::string& version);

/// A deployment with every default filled in and checked against the model and GPU.
struct ResolvedDeployment {
  Deployment d;      ///< all optionals set
  DType dtype;       ///< resolved activation dtype
  DType weight_dtype;  ///< resolved linear-layer weight format
  DType kv_dtype;    ///< resolved KV format
  i64 replicas;      ///< num_gpus / (TP x PP)
  i64 max_model_len;
  i64 max_num_batched_tokens;
  i64 max_num_seqs;
  /// Tokens per attention block as vLLM runs it: --block-size, raised for models with linear-attention
  /// layers so that one attention page holds one layer's state (HybridAttentionMambaModelConfig).
  i64 block_size = 16;
  /// Why block_size differs from --block-size (empty when it does not): an MLA backend's requirement, a skipped
  /// layer's page, or the linear-attention state.
  std::string block_size_note = {};
  /// --kv-cache-dtype-skip-layers (vllm/platforms/interface.py _align_heterogeneous_kv_block_size): the
  /// skipped layers keep the requested block in the model dtype, their page padded to the quantised
  /// layers' page (skip_page_size_padded), whose block was raised to cover it. 0: no layer skipped.
  i64 skip_block_size = 0;
  u64 skip_page_bytes = 0;
  i64 expert_parallel_size = 1;     ///< ranks the routed experts are split over (TP x replicas with EP; else 1)
  u64 linear_state_bytes = 0;       ///< one linear layer's state per request per rank, unpadded (0: none)
  u64 linear_state_page_bytes = 0;  ///< the same padded to the attention page (vLLM mamba_page_size_padded)
  /// mamba_cache_mode as vLLM resolves it: none, align or all (never auto); none for a model without states.
  Deployment::MambaCache mamba_mode = Deployment::MambaCache::none;
  i64 mamba_block_size = 0;          ///< mamba_cache_mode all: tokens per state checkpoint (vLLM mamba_block_size)
  std::string mamba_mode_note = {};  ///< why the mode differs from the one asked for (empty: as asked, or auto)
  /// Prefix caching runs with the states (align or all): a shared prefix's attention blocks are shared.
  [[nodiscard]] bool mamba_prefix_caching() const { return mamba_mode != Deployment::MambaCache::none; }
};

/// vLLM's name of an --all2all-backend ("allgather_reducescatter", "deepep_low_latency", ...).
const char* all2all_backend_name(Deployment::All2All b);

/// vLLM's name of a --mamba-cache-mode ("none", "align", "all"; "auto" for kvcap's default, resolved per model).
const char* mamba_cache_mode_name(Deployment::MambaCache m);

/// Whether a DeepEP backend exchanges tokens: --all2all-backend deepep_* with expert parallelism across data-parallel
/// replicas (vLLM builds the all-to-all only then, FusedMoEParallelConfig.use_all2all_kernels).
bool uses_deepep(const ResolvedDeployment& d);

/// Whether attention layer `layer` keeps the model dtype under --kv-cache-dtype-skip-layers.
bool kv_dtype_skipped(const ModelSpec& m, const Deployment& d, i64 layer);

/// Fills vLLM's defaults and validates (throws SpecError naming the flag-like field).
ResolvedDeployment resolve(const ModelSpec& m, const GpuSpec& g, const Deployment& d);
/// The dtype vLLM serves `m` in with --dtype `requested`: that one, or for auto the checkpoint's, a float32 checkpoint
/// in bf16 (vllm/config/model.py _resolve_auto_dtype). An unquantised checkpoint's weights are cast to it.
DType serving_dtype(const ModelSpec& m, DType requested);
/// What --kv-cache-dtype auto gives `m` under `d`: the checkpoint's KV format where it names one
/// (ModelSpec::kv_cache_dtype: vllm/utils/torch_utils.py resolve_kv_cache_dtype_string, vLLM 0.13 on), else the
/// serving dtype (vllm/config/cache.py).
DType auto_kv_dtype(const ModelSpec& m, const Deployment& d);

}  // namespace kvcap
