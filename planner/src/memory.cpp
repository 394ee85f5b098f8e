#include "kvcap/planner/memory.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "kvcap/planner/text.hpp"

namespace kvcap {

namespace {
constexpr u64 kMiB = 1ull << 20;

u64 u(i64 v) { return static_cast<u64>(v); }

/// The layer kind a cache spec serves.
LayerAttention spec_attention(const KvLayerSpec& s) {
  switch (s.kind) {
    case KvSpecKind::sliding:
      return LayerAttention::sliding;
    case KvSpecKind::chunked:
      return LayerAttention::chunked;
    case KvSpecKind::mamba:
      return LayerAttention::linear;
    case KvSpecKind::full:
      break;
  }
  return LayerAttention::full;
}
}  // namespace

std::vector<i64> default_contexts() {
  std::vector<i64> r;
  for (i64 s = 1024; s <= (1 << 20); s *= 2) r.push_back(s);
  return r;
}

bool hybrid_manager_enabled(const ModelSpec& m, const Deployment& d) {
  if (d.hybrid_kv_cache_manager != Deployment::Hybrid::auto_) return d.hybrid_kv_cache_manager == Deployment::Hybrid::on;
  // vllm/config/vllm.py: "There is a latency regression when using chunked local attention with the
  // hybrid KV cache manager. Disabling it, by default."
  for (i64 l = 0; l < m.num_layers; ++l)
    if (layer_attention(m, l) == LayerAttention::chunked) return false;
  return true;
}

u64 h2o_score_bytes_per_token(const ModelSpec& m, const ResolvedDeployment& d) {
  return u(kv_heads_per_rank(m, d.d.tensor_parallel_size)) * u(info(d.dtype).payload_bits / 8);
}

KvEviction kv_eviction(const Deployment::Eviction& e) {
  KvEviction k;
  if (e.kind == Deployment::Eviction::Kind::streaming) k.keep_tokens = e.sink_tokens + e.window_tokens;
  if (e.kind == Deployment::Eviction::Kind::h2o) k.keep_fraction = e.budget, k.keep_min_tokens = e.recent_tokens;
  return k;
}

std::vector<KvLayerSpec> kv_layer_specs(const ModelSpec& m, const ResolvedDeployment& d, std::vector<i64>* decoder_layer) {
  const i64 tp = d.d.tensor_parallel_size, bs = d.block_size;
  // Decode context parallelism: a rank's block of bs tokens is one slice of a virtual block of bs x DCP tokens
  // of the request (vLLM's KV cache manager runs on block_size x dcp_world_size; kv_cache_utils.py multiplies the
  // logged size by dcp_world_size and max_memory_usage_bytes divides max_model_len by it).
  const i64 dcp = d.d.decode_context_parallel_size;
  // AttentionSpec.page_size_bytes = block_size x (K + V) per token per rank; MLAAttentionSpec keeps one
  // latent + rope key, replicated on every TP rank; DeepSeek-V3.2 with an fp8 KV cache uses
  // fp8_ds_mla: 656 bytes per token (vllm/v1/attention/backends/mla/flashmla_sparse.py).
  u64 attn_page = attention_page_bytes(m, d.kv_dtype, tp, bs, static_cast<unsigned>(d.d.kv_quant_group_size));
  if (m.attention == AttentionType::mla && m.index_head_dim > 0 && info(d.kv_dtype).payload_bits == 8) attn_page = mul(u(bs), 656);
  // DeepseekV32IndexerCache: MLAAttentionSpec(num_kv_heads=1, head_size=index_head_dim + index_head_dim // 128 x 4, uint8).
  const u64 index_page = m.index_head_dim > 0 ? mul(u(bs), u(m.index_head_dim + m.index_head_dim / 128 * 4)) : 0;
  std::vector<KvLayerSpec> out;
  if (decoder_layer) decoder_layer->clear();
  // Layers that share an earlier layer's cache have no spec (vllm/v1/worker/gpu_model_runner.py
  // get_kv_cache_spec skips a layer with kv_sharing_target_layer_name).
  for (i64 l = 0; l < m.num_layers - m.kv_shared_layers; ++l) {
    if (d.d.kv_layer_sharing.shares(l)) continue;  // the what-if --kv-layer-sharing: no cache of its own
    if (layer_has_attention(m, l)) {
      KvLayerSpec s;
      s.block_size = bs * dcp;
      s.page_size_bytes = attn_page;
      if (d.skip_page_bytes > 0 && kv_dtype_skipped(m, d.d, l)) {
        // --kv-cache-dtype-skip-layers: the model dtype at the requested block, padded to the pool's page.
        s.block_size = d.skip_block_size * dcp;
        s.page_size_bytes = d.skip_page_bytes;
      }
      const LayerAttention kind = layer_attention(m, l);
      if (kind == LayerAttention::full) {
        s.evict = kv_eviction(d.d.kv_eviction);
        // H2O keeps, beside each kept token, its accumulated attention score per KV head in the activation dtype
        // (llama-recipes recipes/experimental/long_context/H2O/utils/cache.py HHCache.accumulated_attention_scores:
        // attention weights summed over the queries, every num_kv_groups-th head; HF attention casts the weights
        // back to the query dtype): held and read with the token's KV, so charged to its page.
        if (d.d.kv_eviction.kind == Deployment::Eviction::Kind::h2o)
          s.page_size_bytes = add(s.page_size_bytes, h2o_score_bytes_per_token(m, d) * u(bs), "H2O score page");
      } else if (kind == LayerAttention::sliding) {
        s.kind = KvSpecKind::sliding, s.window_tokens = m.sliding_window;
      } else {
        s.kind = KvSpecKind::chunked, s.window_tokens = m.attention_chunk_size;
      }
      out.push_back(s);
      if (decoder_layer) decoder_layer->push_back(l);
      if (index_page > 0) {
        KvLayerSpec ix = s;
        ix.page_size_bytes = index_page;
        out.push_back(ix);
        if (decoder_layer) decoder_layer->push_back(l);
      }
    }
    if (layer_has_linear(m, l)) {
      // MambaSpec: block_size = mamba_block_size (none: max_model_len; align: the attention block; all: the
      // chunk-aligned checkpoint interval), the page padded to the attention page. A Falcon-H1 layer has one beside
      // its attention's (vLLM registers the layer's Attention and its MambaMixer2 as two cache layers).
      using MC = Deployment::MambaCache;
      KvLayerSpec s;
      s.kind = KvSpecKind::mamba, s.page_size_bytes = d.linear_state_page_bytes;
      s.block_size = d.mamba_mode == MC::none  ? d.max_model_len
                     : d.mamba_mode == MC::all ? d.mamba_block_size
                                               : d.block_size;
      s.state_blocks = d.mamba_mode == MC::none ? 1 : 2;
      s.state_per_block = d.mamba_mode == MC::all;
      out.push_back(s);
      if (decoder_layer) decoder_layer->push_back(l);
    }
  }
  return out;
}

u64 estimate_activation_peak_bytes(const ModelSpec& m, const ResolvedDeployment& d) {
  // Two peaks of vLLM's profile run (vllm/v1/worker/gpu_model_runner.py profile_run), whichever is larger:
  // 1. The sampler over R = min(max_num_seqs, max_num_batched_tokens) dummy requests on the full
  //    (gathered) vocabulary: bf16 logits, their fp32 copy, softmax, and the top-k/top-p sort (fp32
  //    values + int64 indices). 38.5 bytes per (request x vocabulary entry) reproduces the activation
  //    peaks vLLM V1 logged for Llama-3.1-8B, Qwen3-0.6B, Qwen3-32B, gpt-oss-20b (TP1) and
  //    Llama-3.3-70B-FP8 (TP2) on H100 with the serve defaults (8192 tokens, 1024 sequences) within 3%
  //    (llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md; tests/planner).
  // 2. The forward pass over T = max_num_batched_tokens tokens: residual + hidden state (2 x hidden),
  //    the q/k/v projection output and the MLP's gate/up output on this rank, in the activation dtype.
  const u64 t = u(d.max_num_batched_tokens);
  const u64 reqs = u(std::min(d.max_num_seqs, d.max_num_batched_tokens));
  const u64 sampler = mul(mul(reqs, u(m.vocab_size), "sampler logits"), 77, "sampler bytes") / 2;

  const i64 tp = d.d.tensor_parallel_size;
  i64 qkv = 0;
  if (m.attention == AttentionType::gqa)
    qkv = (m.num_heads / tp + 2 * kv_heads_per_rank(m, tp)) * m.head_dim;
  else
    qkv = m.num_heads / tp * (m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim) + m.mla.kv_lora_rank +
          m.mla.qk_rope_head_dim;
  const i64 mats = m.mlp_gated ? 2 : 1;  // gate+up output, before the activation function
  i64 mlp = m.intermediate_size > 0 ? mats * m.intermediate_size / tp : 0;
  if (m.moe.enabled()) {
    // Fused MoE: every token's top-k expert rows are materialised (vllm fused_moe intermediate_cache).
    const i64 moe = m.moe.experts_per_token * mats * m.moe.expert_intermediate_size / tp +
                    mats * m.moe.shared_intermediate_size / tp;
    mlp = std::max(mlp, moe);
  }
  const u64 width = u(2 * m.hidden_size + qkv + mlp);
  const u64 forward = mul(mul(t, width, "activation elements"), info(d.dtype).payload_bits / 8, "activation bytes");
  return std::max(sampler, forward);
}

u64 all2all_buffer_bytes(const ModelSpec& m, const ResolvedDeployment& d) {
  if (!uses_deepep(d)) return 0;
  using A = Deployment::All2All;
  const A b = d.d.all2all_backend;
  // vLLM sizes DeepEP's NVLink buffer, and its RDMA buffer for high throughput across nodes, by
  // VLLM_DEEPEP_BUFFER_SIZE_MB = 1024 (vllm/envs.py; vllm/distributed/device_communicators/all2all.py
  // DeepEPHTAll2AllManager). A group spans nodes beyond DeepEP's NUM_MAX_NVL_PEERS = 8 GPUs.
  constexpr u64 kDeepEpBuffer = 1024 * kMiB;
  constexpr i64 kNvlPeers = 8;
  if (b == A::deepep_high_throughput) return d.expert_parallel_size > kNvlPeers ? 2 * kDeepEpBuffer : kDeepEpBuffer;
  // Low latency: the NVLink buffer and the RDMA buffer of DeepEP's LowLatencyLayout (deepseek-ai/DeepEP
  // csrc/config.hpp, get_low_latency_rdma_size_hint) for VLLM_MOE_DP_CHUNK_SIZE = 256 tokens per rank
  // (FusedMoEConfig.max_num_tokens): double send, receive and signalling buffers; dispatch messages carry a 16-byte
  // header and the bf16 token, combine messages the bf16 token and a bf16x2 min/max per 128 channels.
  constexpr u64 kTokens = 256, kAlign = 128;
  const u64 hidden = u(m.hidden_size), experts = u(m.moe.num_experts), scales = hidden / 128;
  const u64 local = (experts + u(d.expert_parallel_size) - 1) / u(d.expert_parallel_size);
  const u64 dispatch_msg = 16 + std::max(hidden * 2, hidden + scales * 4);
  const u64 combine_msg = scales * 4 + hidden * 2;
  const u64 send = std::max(kTokens * dispatch_msg, experts * kTokens * combine_msg);
  const u64 recv = experts * kTokens * std::max(dispatch_msg, combine_msg);
  const u64 signal = (experts * 8 + local * 4 + kAlign - 1) / kAlign * kAlign;
  const u64 total = 2 * (send + recv + signal);
  return kDeepEpBuffer + (total + kAlign) / kAlign * kAlign;
}

u64 default_non_torch_bytes(const ModelSpec& m, const ResolvedDeployment& d) {
  // Memory outside PyTorch's allocator that grows during start-up: CUDA context pieces, cuBLAS
  // workspaces and, with more than one rank, NCCL buffers. vLLM V1 logged 0.13 GiB on single H100s and
  // 0.55 GiB at TP=2 (llm-d-benchmark empirical-vllm-memory-results.md): 133 MiB, plus 430 MiB when
  // the deployment communicates (TP, PP or the expert-parallel group), plus DeepEP's buffers (allocated with
  // cudaMalloc / NVSHMEM while the model is set up, so vLLM's profile counts them outside torch). Override with
  // --non-torch-memory.
  const bool comm = d.d.tensor_parallel_size * d.d.pipeline_parallel_size > 1 || d.expert_parallel_size > 1;
  return (133 + (comm ? 430 : 0)) * kMiB + all2all_buffer_bytes(m, d);
}

namespace {
u64 tensor_bytes_per_rank(const ModelSpec& m, const ResolvedDeployment& d, const std::vector<WeightTensor>& ts) {
  u64 bytes = 0;
  for (const auto& t : ts) {
    const DType dt = t.quantizable ? d.weight_dtype : d.dtype;
    bytes = add(bytes,
                weight_bytes(dt, u(elements_per_rank(m, t, d.d.tensor_parallel_size, d.expert_parallel_size,
                                                     d.d.num_redundant_experts))),
                "weight bytes per rank");
  }
  return bytes;
}
}  // namespace

u64 vision_weights_bytes_per_rank(const ModelSpec& m, const ResolvedDeployment& d, i64 stage) {
  // A multimodal model's vision encoder is built on the first stage (vLLM's multimodal models hold it outside the
  // pipeline-parallel language model); --language-model-only does not build it.
  if (stage != 0 || d.d.language_model_only) return 0;
  return tensor_bytes_per_rank(m, d, vision_tensors(m));
}

u64 weights_bytes_per_rank(const ModelSpec& m, const ResolvedDeployment& d, i64 stage) {
  const i64 pp = d.d.pipeline_parallel_size;
  const auto layers = layers_per_stage(m.num_layers, pp);
  i64 first = 0;
  for (i64 s = 0; s < stage; ++s) first += layers[static_cast<std::size_t>(s)];
  u64 bytes = vision_weights_bytes_per_rank(m, d, stage);
  auto account = [&](const std::vector<WeightTensor>& ts) {
    bytes = add(bytes, tensor_bytes_per_rank(m, d, ts), "weight bytes per rank");
  };
  for (i64 l = first; l < first + layers[static_cast<std::size_t>(stage)]; ++l) account(layer_tensors(m, l));
  if (stage == 0) account(embedding_tensors(m));
  // With pipeline parallelism a tied LM head lives on the last stage as its own copy.
  if (stage == pp - 1) account(head_tensors(m, pp > 1));
  return bytes;
}

namespace {
// Blocks per request at context S in every group, and the blocks of a shared prefix held once (full
// attention groups only; only whole blocks are shared).
struct Demand {
  u64 per_request = 0;
  u64 shared = 0;
  u64 prefill_reserve = 0;  ///< one step's prefill chunks held beyond the kept tokens (--kv-eviction) or windows
};
// `startup`: vLLM's own charge (MambaSpec.max_memory_usage_bytes), which its startup check and logged concurrency
// use; otherwise what a running request holds. They differ only for mamba_cache_mode "all": vLLM charges a state
// group a checkpoint block per block_size tokens, but a running request keeps only its latest state
// (MambaManager.get_num_skipped_tokens = num_computed_tokens - 1: the blocks before it go back to the pool, cached
// and evictable), and the block the step writes: state_blocks.
// `running`: what a decoding request holds of a sliding or chunked-local group, its window and the block it writes:
// vLLM frees the blocks that leave the window (vllm/v1/core/single_type_kv_cache_manager.py SlidingWindowManager /
// ChunkedLocalAttentionManager remove_skipped_blocks), as the simulator does (ReplicaConfig::side_blocks). vLLM's
// own charge, the curve's, adds a whole step's tokens to every request (SlidingWindowSpec.max_memory_usage_bytes:
// sliding_window - 1 + max_num_batched_tokens); running, one step's chunks are held once, as the pool's reserve.
Demand demand_at(const MemoryPlan& p, i64 s, i64 hit_cap, bool startup = false, bool running = false) {
  Demand r;
  // Linear-attention states in mamba_cache_mode "none" run without prefix caching, so a shared prefix
  // is then held by every request; in "align" and "all" the attention blocks of the prefix are shared.
  const bool sharing = p.dep.mamba_prefix_caching() ||
                       std::none_of(p.kv_groups.begin(), p.kv_groups.end(),
                                    [](const KvCacheGroup& g) { return g.spec.kind == KvSpecKind::mamba; });
  for (const auto& g : p.kv_groups) {
    u64 blocks = g.spec.state_per_block && !startup ? u(g.spec.state_blocks)
                                                    : spec_blocks_per_request(g.spec, s, p.dep.max_num_batched_tokens);
    if (running && (g.spec.kind == KvSpecKind::sliding || g.spec.kind == KvSpecKind::chunked)) {
      const u64 decoding = std::min(blocks, spec_blocks_per_request(g.spec, s, 1));
      r.prefill_reserve += blocks - decoding;
      blocks = decoding;
    }
    if (sharing && g.spec.kind == KvSpecKind::full && p.dep.d.shared_prefix_tokens > 0) {
      // A cache hit covers at most num_tokens - 1 tokens: the last token is always computed, so a request owns
      // at least the block that holds it (vllm/v1/core/kv_cache_manager.py get_computed_blocks,
      // max_cache_hit_length = request.num_tokens - 1, num_tokens being the prompt at admission: `hit_cap`, the
      // prompt - 1 when known, else S - 1). Only whole blocks of the prefix are shared.
      const u64 prefix = u(std::min(p.dep.d.shared_prefix_tokens, hit_cap)) / u(g.spec.block_size);
      r.shared += prefix;
      blocks -= std::min(blocks, prefix);
    }
    const i64 prompt = hit_cap + 1;
    if (g.spec.kind == KvSpecKind::full && g.spec.evict.on()) {
      // Keeping fewer tokens never needs more blocks than keeping them all.
      KvLayerSpec all = g.spec;
      all.evict = {};
      blocks = std::min(blocks, spec_blocks_per_request(all, s, p.dep.max_num_batched_tokens));
      const i64 kept = g.spec.evict.held(prompt);
      if (kept < prompt)
        // The what-if --kv-eviction at prefill: a chunk attends to the kept tokens and to itself before the policy
        // evicts, so one step's chunks (at most max_num_batched_tokens tokens, and no more than the prompt beyond
        // what is kept) are held beyond the kept tokens for that step: a reserve of their blocks (plus the block a
        // chunk starts in), held once, as the pool's.
        r.prefill_reserve +=
            ceil_div(u(std::min(p.dep.max_num_batched_tokens, prompt - kept)), u(g.spec.block_size)) + 1;
    }
    r.per_request += blocks;
  }
  return r;
}
}  // namespace

std::string seqs_limit_text(const MemoryPlan& p) {
  // vllm/config/compilation.py (vllm#38270): full CUDA graphs need a state block per decode sequence.
  const std::string n = std::to_string(p.dep.max_num_seqs), b = std::to_string(p.num_blocks);
  return "vLLM would not start: max_num_seqs " + n + " exceeds the " + b +
         " blocks of the KV pool, and a model with linear-attention states needs one per decode sequence (vLLM "
         "0.19 and later: \"max_num_seqs (" +
         n + ") exceeds available Mamba cache blocks (" + b + ")\"): give --max-num-seqs " + b +
         " or less, or more memory";
}

std::string budget_text(const MemoryPlan& p, const StagePlan& st) {
  if (const auto f = p.dep.d.free_gpu_memory_fraction)
    return "the " + gib_text(static_cast<double>(st.device_bytes)) +
           " of the device (TensorRT-LLM's budget: free_gpu_memory_fraction " + fixed(*f, 2) + " of what is left free)";
  return "the " + gib_text(static_cast<double>(st.requested_bytes)) + " requested (gpu_memory_utilization " +
         fixed(p.dep.d.gpu_memory_utilization, 2) + " x " + gib_text(static_cast<double>(st.device_bytes)) + ")";
}

i64 unreserved_bytes(const StagePlan& st) {
  i64 a = to_signed(st.requested_bytes, "requested memory");
  a = sub(a, to_signed(st.weights_bytes, "weights"));
  a = sub(a, to_signed(st.activation_peak_bytes, "activation peak"));
  return sub(a, to_signed(st.non_torch_bytes, "non-torch memory"));
}

const char* budget_setting(const MemoryPlan& p) {
  return p.dep.d.free_gpu_memory_fraction ? "free_gpu_memory_fraction" : "gpu_memory_utilization";
}

const char* budget_engine(const Deployment& d) {
  return d.free_gpu_memory_fraction ? "TensorRT-LLM" : "vLLM";
}

const char* budget_engine(const MemoryPlan& p) {
  return budget_engine(p.dep.d);
}

namespace {
/// "max_seq_len from A to B": the length asked for and the one TensorRT-LLM's cache holds.
std::string lowered_from_to(const MemoryPlan& p) {
  return "max_seq_len from " + std::to_string(p.max_model_len_asked) + " to " + std::to_string(p.dep.max_model_len);
}
}  // namespace

std::string lowered_length_text(const MemoryPlan& p) {
  if (p.max_model_len_asked <= 0) return "";
  return "TensorRT-LLM lowers " + lowered_from_to(p) +
         " tokens, what its KV cache holds for one request (\"Adjusted max_seq_len\"; kvcap keeps one block aside): "
         "longer requests are refused; raise free_gpu_memory_fraction or add GPUs to serve them";
}

std::string longer_requests_text(const MemoryPlan& p) {
  if (p.max_model_len_asked > 0)
    return "TensorRT-LLM rejects such requests: it lowered " + lowered_from_to(p) +
           " to fit its KV cache (raise free_gpu_memory_fraction or add GPUs)";
  return std::string(budget_engine(p)) + " rejects such requests (raise --max-model-len)";
}

std::string override_pool_text(const MemoryPlan& p) {
  // vLLM checks the memory before may_override_num_blocks: it starts, and the scheduler never admits the request.
  return "vLLM starts, but one request of max_model_len " + std::to_string(p.dep.max_model_len) +
         " tokens does not fit the --num-gpu-blocks-override pool of " + std::to_string(p.num_blocks) + " blocks (" +
         fixed_down(p.max_concurrency, 2) + "x) and is never scheduled: raise the override or lower --max-model-len";
}

Deployment launchable_deployment(const MemoryPlan& p) {
  Deployment d = p.dep.d;
  if (p.seqs_exceed_state_blocks()) d.max_num_seqs = p.max_num_seqs_limit;
  return d;
}

double concurrency_at(const ModelSpec& m, const MemoryPlan& p, i64 s) {
  return concurrency_at(m, p, s, s);
}

namespace {
double concurrency_from(u64 num_blocks, const Demand& dm) {
  if (num_blocks <= dm.shared + dm.prefill_reserve) return 0;
  if (dm.per_request == 0) return static_cast<double>(INFINITY);
  return static_cast<double>(num_blocks - dm.shared - dm.prefill_reserve) / static_cast<double>(dm.per_request);
}
double concurrency_from(const MemoryPlan& p, const Demand& dm) {
  return concurrency_from(p.num_blocks, dm);
}
}  // namespace

double concurrency_at(const ModelSpec&, const MemoryPlan& p, i64 s, i64 prompt_tokens) {
  if (s < 1) throw SpecError("context_tokens", "must be >= 1 (got " + std::to_string(s) + ")");
  // get_max_concurrency_for_kv_cache_config with max_model_len = S (the curve), each group charged what a running
  // request holds.
  return concurrency_from(p, demand_at(p, s, std::clamp<i64>(prompt_tokens, 1, s) - 1));
}

double running_concurrency_at(const MemoryPlan& p, i64 s, i64 prompt_tokens) {
  if (s < 1) throw SpecError("context_tokens", "must be >= 1 (got " + std::to_string(s) + ")");
  return concurrency_from(p, demand_at(p, s, std::clamp<i64>(prompt_tokens, 1, s) - 1, false, true));
}

namespace {
/// The what-if --kv-layer-sharing with pipeline parallelism: a layer reads the cache of the first layer of its group
/// (CLA) or of the layer before it (MiniCache); vLLM shares a cache only between layers of one worker
/// (kv_sharing_target_layer_name), so a group may not cross a stage. SpecError ("kv_layer_sharing") where one does.
void check_sharing_within_stages(const Deployment::LayerSharing& sh, const std::vector<i64>& layers) {
  if (!sh.on() || layers.size() < 2) return;
  i64 first = 0;
  for (std::size_t st = 0; st < layers.size(); ++st) {
    for (i64 l = first; l < first + layers[st]; ++l) {
      const i64 owner = sh.kind == Deployment::LayerSharing::Kind::cla ? l - l % sh.factor : l - 1;
      if (sh.shares(l) && owner < first)
        throw SpecError("kv_layer_sharing", "layer " + std::to_string(l) + " would read layer " +
                                                std::to_string(owner) + "'s cache, which pipeline stage " +
                                                std::to_string(st - 1) +
                                                " holds: caches are shared within a stage only; choose a "
                                                "--pipeline-parallel-size whose stages do not split a sharing group");
    }
    first += layers[st];
  }
}

/// The stages' findings: no memory left for the KV cache, an override of more blocks than the memory holds; and the
/// model's own note from the importer.
void stage_warnings(MemoryPlan& p, const ModelSpec& m) {
  const auto& d = p.dep;
  for (const auto& st : p.stages) {
    if (st.available_kv_bytes <= 0) {
      const long double need =
          static_cast<long double>(st.weights_bytes) + st.activation_peak_bytes + st.non_torch_bytes;
      p.warnings.push_back(
          "stage " + std::to_string(st.stage) + ": no memory left for the KV cache: weights, activation peak " +
          "and non-torch memory need " + gib_text(static_cast<double>(need)) + " of " + budget_text(p, st) +
          (p.dep.d.free_gpu_memory_fraction
               ? std::string(" (TensorRT-LLM: \"Impossible to fit in any sequence in kvCache\")")
               : std::string(" (vLLM: \"No available memory for the cache blocks\")")) +
          "; add GPUs (tensor or "
          "pipeline parallel), quantise the weights, or raise " +
          std::string(budget_setting(p)));
    }
  }
  if (!m.vllm_note.empty()) p.warnings.push_back(m.vllm_note);
  // The stage whose memory holds the fewest blocks: the one an override beyond the memory overcommits most.
  const auto least = std::find_if(p.stages.begin(), p.stages.end(), [&](const StagePlan& st) {
    return st.num_blocks_from_memory == p.num_blocks_from_memory;
  });
  if (d.d.num_gpu_blocks_override && least != p.stages.end() && least->num_blocks > least->num_blocks_from_memory &&
      least->available_kv_bytes > 0) {
    p.warnings.push_back(
        (p.stages.size() > 1 ? "stage " + std::to_string(least->stage) + ": " : std::string()) +
        "--num-gpu-blocks-override " + std::to_string(least->num_blocks) + " is more than the " +
        std::to_string(least->num_blocks_from_memory) + " blocks the KV memory holds (" +
        gib_text(static_cast<double>(least->available_kv_bytes)) + "): vLLM allocates " +
        gib_text(static_cast<double>(least->num_blocks) * static_cast<double>(least->layout.block_bytes)) +
        " of KV cache per rank and may run out of memory at start-up");
  }
}

}  // namespace

namespace {
// vLLM 0.19+ with linear-attention states: max_num_seqs may not exceed the pool's blocks (a warning where it does).
void limit_max_num_seqs(MemoryPlan& p) {
  if (p.dep.linear_state_bytes > 0 && mamba_blocks_cap_max_num_seqs(p.dep.d.vllm_version) && p.num_blocks > 0)
    p.max_num_seqs_limit = static_cast<i64>(std::min<u64>(p.num_blocks, static_cast<u64>(INT64_MAX)));
  if (p.seqs_exceed_state_blocks()) p.warnings.push_back(seqs_limit_text(p));
}

/// The KV memory of a stage's rank from its budget: vLLM's requested - weights - activation peak - non-torch
/// (vllm/v1/worker/gpu_worker.py determine_available_memory), or with TensorRT-LLM's free_gpu_memory_fraction F,
/// F x (total - the profiling run's peak: weights, activations of a max_num_tokens forward, non-torch)
/// (tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator._cal_max_tokens: available_kv_mem = (total_gpu_memory -
/// peak_memory + the profiling run's own KV) * fraction; `st.requested_bytes` is then the total). Negative when the
/// rest does not fit: by how much it misses.
i64 budgeted_kv_bytes(const StagePlan& st, std::optional<double> free_fraction) {
  const i64 a = unreserved_bytes(st);
  if (!free_fraction || a <= 0) return a;
  return static_cast<i64>(std::floor(static_cast<long double>(a) * static_cast<long double>(*free_fraction)));
}
/// Under TensorRT-LLM's budget, a cache that cannot hold one request of max_model_len does not stop the engine: its
/// KVCacheManager lowers max_seq_len to what the cache holds, with a warning (tensorrt_llm/_torch/pyexecutor/
/// resource_manager.py, _validate_and_adjust_attention_windows: "Adjusted max_seq_len to N"). The plan at that length,
/// or nullopt where this does not apply (vLLM's budget, which refuses to start; no cache at all; a plan that fits).
/// kvcap lowers it one block further than TensorRT-LLM: its block pool (and the simulator's) keeps vLLM's null block
/// aside, so that a request of the lowered length is one the simulator can hold.
std::optional<MemoryPlan> lowered_max_seq_len(const ModelSpec& m, const GpuSpec& g, const Deployment& dep,
                                              const std::vector<i64>& contexts, const MemoryPlan& p) {
  const auto& d = p.dep;
  if (p.fits() || p.num_blocks == 0 || !d.d.free_gpu_memory_fraction || p.max_model_len_that_fits < 1 ||
      p.max_model_len_that_fits >= d.max_model_len)
    return std::nullopt;
  Deployment lowered = dep;
  lowered.max_model_len = std::max<i64>(1, p.max_model_len_that_fits - d.block_size);
  MemoryPlan q = plan_memory(m, g, lowered, contexts);
  q.max_model_len_asked = d.max_model_len;  // from the length asked for, however often it was lowered (KVCAP-W208)
  return q;
}
}  // namespace

MemoryPlan plan_memory(const ModelSpec& m, const GpuSpec& g, const Deployment& dep, const std::vector<i64>& contexts) {
  validate(m);
  validate(g);
  MemoryPlan p;
  p.dep = resolve(m, g, dep);
  const auto& d = p.dep;
  p.params = param_counts(m);
  const i64 pp = d.d.pipeline_parallel_size;
  const auto layers = layers_per_stage(m.num_layers, pp);
  check_sharing_within_stages(d.d.kv_layer_sharing, layers);
  std::vector<i64> kv_decoder_layer;
  p.kv_layers = kv_layer_specs(m, d, &kv_decoder_layer);
  p.hybrid_manager = hybrid_manager_enabled(m, d.d);
  p.kv_groups = kv_cache_groups(p.kv_layers, p.hybrid_manager);
  // requested = total x gpu_memory_utilization (vllm/v1/worker/gpu_worker.py init_device); TensorRT-LLM's budget
  // starts from the whole device (budgeted_kv_bytes).
  const u64 requested = d.d.free_gpu_memory_fraction
                            ? g.memory_bytes
                            : static_cast<u64>(std::floor(static_cast<long double>(g.memory_bytes) *
                                                          static_cast<long double>(d.d.gpu_memory_utilization)));
  const u64 act = d.d.activation_peak_bytes.value_or(estimate_activation_peak_bytes(m, d));
  const u64 non_torch = d.d.non_torch_bytes.value_or(default_non_torch_bytes(m, d));

  i64 first = 0;
  for (i64 s = 0; s < pp; ++s) {
    StagePlan st;
    st.stage = s;
    st.first_layer = first;
    st.num_layers = layers[static_cast<std::size_t>(s)];
    st.requested_bytes = requested;
    st.device_bytes = g.memory_bytes;
    st.weights_bytes = weights_bytes_per_rank(m, d, s);
    st.vision_weights_bytes = vision_weights_bytes_per_rank(m, d, s);
    st.activation_peak_bytes = act;
    st.non_torch_bytes = non_torch;
    if (!d.d.kv_cache_memory_bytes.empty()) {
      const auto& km = d.d.kv_cache_memory_bytes;
      st.available_kv_bytes = to_signed(km.size() == 1 ? km[0] : km[static_cast<std::size_t>(s)], "kv_cache_memory");
      st.kv_memory_given = true;
    } else {
      st.available_kv_bytes = budgeted_kv_bytes(st, d.d.free_gpu_memory_fraction);
    }
    std::vector<bool> on_stage(p.kv_layers.size(), false);
    for (std::size_t k = 0; k < p.kv_layers.size(); ++k) {
      const i64 l = kv_decoder_layer[k];
      if (l < first || l >= first + st.num_layers) continue;
      on_stage[k] = true;
      const auto& spec = p.kv_layers[k];
      const LayerAttention kind = spec_attention(spec);
      if (spec.kind != KvSpecKind::mamba) {
        const u64 per_token = spec.page_size_bytes / u(spec.block_size);
        st.kv_bytes_per_token = add(st.kv_bytes_per_token, per_token, "KV bytes per token per rank");
      }
      auto it = std::find_if(st.groups.begin(), st.groups.end(), [&](const KvLayerGroup& x) { return x.attention == kind; });
      if (it == st.groups.end()) {
        st.groups.push_back(
            {kind, 0, 0, spec.window_tokens, kind == LayerAttention::linear ? d.linear_state_bytes : 0, spec.evict});
        it = st.groups.end() - 1;
      }
      // A decoder layer counts once per kind; its indexer cache (same decoder layer, next KV layer) adds bytes.
      if (k == 0 || kv_decoder_layer[k - 1] != l || spec_attention(p.kv_layers[k - 1]) != kind) it->num_layers += 1;
    }
    if (st.groups.empty())
      throw SpecError("pipeline_parallel_size",
                      "stage " + std::to_string(s) + " (layers " + std::to_string(first) + "-" +
                          std::to_string(first + st.num_layers - 1) +
                          ") holds no attention or state layer, only MLP blocks; kvcap does not model a pipeline stage "
                          "without a cache: use fewer stages");
    for (auto& grp : st.groups) {
      grp.attending_layers = grp.num_layers;
      // --kv-layer-sharing (full attention only): the stage's sharing layers attend to its full-attention caches.
      if (grp.attention == LayerAttention::full)
        for (i64 l = first; l < first + st.num_layers; ++l)
          grp.attending_layers += d.d.kv_layer_sharing.shares(l) ? 1 : 0;
    }
    for (auto& grp : st.groups) grp.bytes_per_token_per_layer = 0;
    for (std::size_t k = 0; k < p.kv_layers.size(); ++k) {
      if (!on_stage[k]) continue;
      const LayerAttention kind = spec_attention(p.kv_layers[k]);
      if (kind == LayerAttention::linear) continue;  // a state per request, not bytes per token
      for (auto& grp : st.groups)
        if (grp.attention == kind) grp.bytes_per_token_per_layer += p.kv_layers[k].page_size_bytes / u(p.kv_layers[k].block_size);
    }
    for (auto& grp : st.groups) grp.bytes_per_token_per_layer /= u(std::max<i64>(1, grp.num_layers));
    // vllm/v1/core/kv_cache_utils.py get_kv_cache_config_from_groups: num_blocks = available // page // group_size.
    st.layout = worker_layout(p.kv_groups, p.kv_layers, on_stage);
    st.num_blocks = st.num_blocks_from_memory = worker_num_blocks(st.layout, st.available_kv_bytes);
    // may_override_num_blocks: "Overriding num_gpu_blocks=N with num_gpu_blocks_override=M", on every worker.
    if (d.d.num_gpu_blocks_override) st.num_blocks = *d.d.num_gpu_blocks_override;
    st.estimated_max_model_len = worker_estimate_max_model_len(st.layout, p.kv_groups, st.available_kv_bytes,
                                                               d.max_model_len, d.max_num_batched_tokens);
    p.stages.push_back(std::move(st));
    first += layers[static_cast<std::size_t>(s)];
  }
  // The minimum over workers binds (vllm/v1/core/kv_cache_utils.py get_kv_cache_configs).
  for (std::size_t i = 0; i < p.stages.size(); ++i)
    if (p.stages[i].num_blocks < p.stages[p.binding_stage].num_blocks) p.binding_stage = i;
  const auto& bind = p.stages[p.binding_stage];
  p.num_blocks = bind.num_blocks;
  p.kv_bytes_per_token_per_rank = bind.kv_bytes_per_token;
  p.blocks_per_max_len_request = blocks_per_request(p.kv_groups, d.max_model_len, d.max_num_batched_tokens);
  // Under the eviction what-if vLLM's current formula (concurrency x max_model_len) would count evicted tokens: the
  // pool's tokens (num_blocks // groups x block) are what it holds.
  p.kv_capacity_tokens = logged_kv_cache_tokens(p.num_blocks, p.kv_groups, d.max_model_len, d.max_num_batched_tokens,
                                                legacy_kv_size_log(d.d.vllm_version) || d.d.kv_eviction.on());
  p.cluster_kv_capacity_tokens = mul(p.kv_capacity_tokens, u(d.replicas), "cluster KV capacity tokens");

  for (i64 s : contexts) {
    if (s < 1) throw SpecError("contexts", "context lengths must be >= 1 token (got " + std::to_string(s) + ")");
    CurvePoint c;
    c.context_tokens = s;
    c.max_concurrency = concurrency_at(m, p, s);
    const Demand dm = demand_at(p, s, s - 1);
    c.kv_bytes_per_request = narrow(static_cast<u128>(bind.layout.block_bytes) * (dm.per_request + dm.shared), "KV bytes per request");
    p.curve.push_back(c);
  }
  // What vLLM logs as "Maximum concurrency" and its startup check: its own charge at max_model_len.
  const Demand startup_demand = demand_at(p, d.max_model_len, d.max_model_len - 1, true);
  p.max_concurrency = concurrency_from(p, startup_demand);
  p.num_blocks_from_memory = p.stages[0].num_blocks_from_memory;
  for (const auto& st : p.stages)
    p.num_blocks_from_memory = std::min(p.num_blocks_from_memory, st.num_blocks_from_memory);
  p.startup_concurrency = concurrency_from(p.num_blocks_from_memory, startup_demand);
  p.cluster_max_concurrency = p.max_concurrency * static_cast<double>(d.replicas);

  // vLLM _estimate_max_model_len_from_groups, the minimum over workers.
  p.max_model_len_that_fits = d.max_model_len;
  for (const auto& st : p.stages) p.max_model_len_that_fits = std::min(p.max_model_len_that_fits, st.estimated_max_model_len);
  if (p.startup_concurrency >= 1.0) p.max_model_len_that_fits = d.max_model_len;
  stage_warnings(p, m);
  p.model_max_len = m.max_position_embeddings;  // checked as KVCAP-E111 (check_memory_plan)
  limit_max_num_seqs(p);
  if (p.override_pool_too_small()) {
    p.warnings.push_back(override_pool_text(p));
  } else if (auto lowered = lowered_max_seq_len(m, g, dep, contexts, p)) {
    return std::move(*lowered);
  } else if (!p.fits() && p.num_blocks > 0) {
    p.warnings.push_back("one request of max_model_len " + std::to_string(d.max_model_len) + " tokens does not fit: " +
                         budget_engine(p) + " would refuse to start; the estimated maximum model length is " +
                         std::to_string(p.max_model_len_that_fits) + " (lower max_model_len, raise " +
                         std::string(budget_setting(p)) + ", or add GPUs)");
  }
  return p;
}

}  // namespace kvcap
