#include "kvcap/planner/memory.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace kvcap {

namespace {
constexpr u64 kMiB = 1ull << 20;
constexpr long double kGiB = 1073741824.0L;

std::string gib(long double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes / kGiB));
  return buf;
}

u64 u(i64 v) { return static_cast<u64>(v); }
}  // namespace

std::vector<i64> default_contexts() {
  std::vector<i64> r;
  for (i64 s = 1024; s <= (1 << 20); s *= 2) r.push_back(s);
  return r;
}

u64 blocks_per_request(const KvLayerGroup& g, i64 context_tokens, i64 block_size, i64 max_num_batched_tokens) {
  const u64 s = u(context_tokens), bs = u(block_size);
  if (g.attention == LayerAttention::full || g.window_tokens <= 0) return ceil_div(s, bs);
  // vllm/v1/kv_cache_interface.py SlidingWindowSpec.max_memory_usage_bytes: a request holds the last
  // window - 1 tokens plus the tokens scheduled this step (up to max_num_batched_tokens), and one
  // extra block "because the sliding window may not start from the beginning of the block". vLLM adds
  // that block even when nothing has been dropped yet; kvcap adds it only once tokens have been
  // dropped (S > window - 1 + max_num_batched_tokens), since below that the request holds exactly
  // ceil(S / block_size) blocks.
  const u64 limit = add(u(g.window_tokens) - 1, u(max_num_batched_tokens), "sliding-window tokens");
  if (s <= limit) return ceil_div(s, bs);
  return ceil_div(limit, bs) + 1;
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

u64 default_non_torch_bytes(const ModelSpec&, const ResolvedDeployment& d) {
  // Memory outside PyTorch's allocator that grows during start-up: CUDA context pieces, cuBLAS
  // workspaces and, with more than one rank, NCCL buffers. vLLM V1 logged 0.13 GiB on single H100s and
  // 0.55 GiB at TP=2 (llm-d-benchmark empirical-vllm-memory-results.md): 133 MiB, plus 430 MiB when
  // the deployment communicates. Override with --non-torch-memory.
  const bool comm = d.d.tensor_parallel_size * d.d.pipeline_parallel_size > 1;
  return (133 + (comm ? 430 : 0)) * kMiB;
}

u64 weights_bytes_per_rank(const ModelSpec& m, const ResolvedDeployment& d, i64 stage) {
  const i64 tp = d.d.tensor_parallel_size, pp = d.d.pipeline_parallel_size;
  const auto layers = layers_per_stage(m.num_layers, pp);
  i64 first = 0;
  for (i64 s = 0; s < stage; ++s) first += layers[static_cast<std::size_t>(s)];
  u64 bytes = 0;
  auto account = [&](const std::vector<WeightTensor>& ts) {
    for (const auto& t : ts) {
      const DType dt = t.quantizable ? d.weight_dtype : d.dtype;
      bytes = add(bytes, weight_bytes(dt, u(elements_per_rank(m, t, tp))), "weight bytes per rank");
    }
  };
  for (i64 l = first; l < first + layers[static_cast<std::size_t>(stage)]; ++l) account(layer_tensors(m, l));
  if (stage == 0) account(embedding_tensors(m));
  // With pipeline parallelism a tied LM head lives on the last stage as its own copy.
  if (stage == pp - 1) account(head_tensors(m, pp > 1));
  return bytes;
}

namespace {
// Capacity and per-request demand of one stage, in bytes of whole blocks (u128: no overflow).
long double stage_concurrency(const StagePlan& st, u64 num_blocks, i64 s, const ResolvedDeployment& d,
                              u64* request_bytes) {
  const i64 bs = d.d.block_size;
  const u64 prefix_blocks = u(std::min(d.d.shared_prefix_tokens, s)) / u(bs);  // only whole blocks are shared
  u128 capacity = static_cast<u128>(num_blocks) * u(bs) * st.kv_bytes_per_token;
  u128 shared = 0, per_request = 0;
  for (const auto& g : st.groups) {
    const u128 block_bytes = static_cast<u128>(u(bs)) * g.bytes_per_token_per_layer * u(g.num_layers);
    u64 blocks = blocks_per_request(g, s, bs, d.max_num_batched_tokens);
    if (g.attention == LayerAttention::full && prefix_blocks > 0) {
      shared += block_bytes * prefix_blocks;
      blocks -= std::min(blocks, prefix_blocks);
    }
    per_request += block_bytes * blocks;
  }
  if (request_bytes) *request_bytes = narrow(per_request + shared, "KV bytes per request");
  if (capacity <= shared) return 0;
  if (per_request == 0) return static_cast<long double>(INFINITY);
  return static_cast<long double>(capacity - shared) / static_cast<long double>(per_request);
}
}  // namespace

double concurrency_at(const ModelSpec&, const MemoryPlan& p, i64 s) {
  if (s < 1) throw SpecError("context_tokens", "must be >= 1 (got " + std::to_string(s) + ")");
  long double best = INFINITY;
  for (const auto& st : p.stages) best = std::min(best, stage_concurrency(st, p.num_blocks, s, p.dep, nullptr));
  return static_cast<double>(best);
}

MemoryPlan plan_memory(const ModelSpec& m, const GpuSpec& g, const Deployment& dep, const std::vector<i64>& contexts) {
  validate(m);
  validate(g);
  MemoryPlan p;
  p.dep = resolve(m, g, dep);
  const auto& d = p.dep;
  p.params = param_counts(m);
  const i64 tp = d.d.tensor_parallel_size, pp = d.d.pipeline_parallel_size, bs = d.d.block_size;
  const auto layers = layers_per_stage(m.num_layers, pp);
  const u64 per_layer_token = kv_bytes(d.kv_dtype, u(kv_elements_per_token_per_layer(m, tp)));
  // requested = total x gpu_memory_utilization (vllm/v1/worker/gpu_worker.py init_device).
  const u64 requested = static_cast<u64>(
      std::floor(static_cast<long double>(g.memory_bytes) * static_cast<long double>(d.d.gpu_memory_utilization)));
  const u64 act = d.d.activation_peak_bytes.value_or(estimate_activation_peak_bytes(m, d));
  const u64 non_torch = d.d.non_torch_bytes.value_or(default_non_torch_bytes(m, d));

  i64 first = 0;
  for (i64 s = 0; s < pp; ++s) {
    StagePlan st;
    st.stage = s;
    st.first_layer = first;
    st.num_layers = layers[static_cast<std::size_t>(s)];
    st.requested_bytes = requested;
    st.weights_bytes = weights_bytes_per_rank(m, d, s);
    st.activation_peak_bytes = act;
    st.non_torch_bytes = non_torch;
    if (!d.d.kv_cache_memory_bytes.empty()) {
      const auto& km = d.d.kv_cache_memory_bytes;
      st.available_kv_bytes = to_signed(km.size() == 1 ? km[0] : km[static_cast<std::size_t>(s)], "kv_cache_memory");
      st.kv_memory_given = true;
    } else {
      i64 a = to_signed(requested, "requested memory");
      a = sub(a, to_signed(st.weights_bytes, "weights"));
      a = sub(a, to_signed(act, "activation peak"));
      st.available_kv_bytes = sub(a, to_signed(non_torch, "non-torch memory"));
    }
    for (i64 l = first; l < first + st.num_layers; ++l) {
      const LayerAttention kind = layer_attention(m, l);
      auto it = std::find_if(st.groups.begin(), st.groups.end(), [&](const KvLayerGroup& x) { return x.attention == kind; });
      if (it == st.groups.end()) {
        st.groups.push_back({kind, 0, per_layer_token, kind == LayerAttention::sliding ? m.sliding_window : 0});
        it = st.groups.end() - 1;
      }
      it->num_layers += 1;
    }
    st.kv_bytes_per_token = mul(per_layer_token, u(st.num_layers), "KV bytes per token per rank");
    // vllm/v1/core/kv_cache_utils.py: num_blocks = available // page_size // num_layers.
    if (st.available_kv_bytes > 0)
      st.num_blocks = u(st.available_kv_bytes) / mul(u(bs), st.kv_bytes_per_token, "bytes per block");
    p.stages.push_back(std::move(st));
    first += layers[static_cast<std::size_t>(s)];
  }
  // The minimum over workers binds (vllm/v1/core/kv_cache_utils.py get_kv_cache_configs).
  for (std::size_t i = 0; i < p.stages.size(); ++i)
    if (p.stages[i].num_blocks < p.stages[p.binding_stage].num_blocks) p.binding_stage = i;
  const auto& bind = p.stages[p.binding_stage];
  p.num_blocks = bind.num_blocks;
  p.kv_bytes_per_token_per_rank = bind.kv_bytes_per_token;
  p.kv_capacity_tokens = mul(p.num_blocks, u(bs), "KV capacity tokens");
  p.cluster_kv_capacity_tokens = mul(p.kv_capacity_tokens, u(d.replicas), "cluster KV capacity tokens");

  for (i64 s : contexts) {
    if (s < 1) throw SpecError("contexts", "context lengths must be >= 1 token (got " + std::to_string(s) + ")");
    CurvePoint c;
    c.context_tokens = s;
    c.max_concurrency = concurrency_at(m, p, s);
    stage_concurrency(bind, p.num_blocks, s, d, &c.kv_bytes_per_request);
    p.curve.push_back(c);
  }
  p.max_concurrency = concurrency_at(m, p, d.max_model_len);
  p.cluster_max_concurrency = p.max_concurrency * static_cast<double>(d.replicas);

  // vLLM estimate_max_model_len: the longest context one request can hold (binary search).
  if (p.max_concurrency >= 1.0) {
    p.max_model_len_that_fits = d.max_model_len;
  } else {
    i64 lo = 0, hi = d.max_model_len;
    while (lo < hi) {
      const i64 mid = lo + (hi - lo + 1) / 2;
      if (concurrency_at(m, p, mid) >= 1.0) lo = mid; else hi = mid - 1;
    }
    p.max_model_len_that_fits = lo;
  }
  for (const auto& st : p.stages) {
    if (st.available_kv_bytes <= 0) {
      const long double need = static_cast<long double>(st.weights_bytes) + st.activation_peak_bytes + st.non_torch_bytes;
      p.warnings.push_back("stage " + std::to_string(st.stage) + ": no memory left for the KV cache: weights, activation peak " +
                           "and non-torch memory need " + gib(need) + " of the " + gib(st.requested_bytes) +
                           " requested (vLLM: \"No available memory for the cache blocks\"); add GPUs (tensor or "
                           "pipeline parallel), quantise the weights, or raise gpu_memory_utilization");
    }
  }
  if (!p.fits() && p.num_blocks > 0) {
    p.warnings.push_back("one request of max_model_len " + std::to_string(d.max_model_len) +
                         " tokens does not fit: vLLM would refuse to start; the estimated maximum model length is " +
                         std::to_string(p.max_model_len_that_fits) +
                         " (lower max_model_len, raise gpu_memory_utilization, or add GPUs)");
  }
  return p;
}

}  // namespace kvcap
