#include "kvcap/planner/model.hpp"

#include <algorithm>
#include <string>

namespace kvcap {

LayerAttention layer_attention(const ModelSpec& m, i64 layer) {
  if (!m.layer_pattern.empty())
    return m.layer_pattern[static_cast<std::size_t>(layer) % m.layer_pattern.size()];
  return m.sliding_window > 0 ? LayerAttention::sliding : LayerAttention::full;
}

bool layer_is_moe(const ModelSpec& m, i64 layer) {
  if (!m.moe.enabled()) return false;
  if (!m.mlp_pattern.empty())
    return m.mlp_pattern[static_cast<std::size_t>(layer) % m.mlp_pattern.size()] == LayerMlp::moe;
  if (layer < m.moe.first_dense_layers) return false;
  // DeepSeek: layer >= first_k_dense_replace and layer % moe_layer_freq == 0
  // (vllm/model_executor/models/deepseek_v2.py). Qwen-MoE's decoder_sparse_step is imported as
  // layer_frequency with first_dense_layers = 0 and the same test on (layer + 1) - handled at import
  // by a frequency of 1 in every released Qwen MoE, so one rule serves both.
  return m.moe.layer_frequency <= 1 || (layer + m.moe.layer_offset) % m.moe.layer_frequency == 0;
}

LayerMlp layer_mlp(const ModelSpec& m, i64 layer) {
  if (!m.mlp_pattern.empty()) {
    const LayerMlp k = m.mlp_pattern[static_cast<std::size_t>(layer) % m.mlp_pattern.size()];
    if (k != LayerMlp::moe || m.moe.enabled()) return k;
  }
  return layer_is_moe(m, layer) ? LayerMlp::moe : LayerMlp::dense;
}

bool layer_has_attention(const ModelSpec& m, i64 layer) {
  const LayerAttention k = layer_attention(m, layer);
  return k != LayerAttention::linear && k != LayerAttention::none;
}

bool layer_has_linear(const ModelSpec& m, i64 layer) {
  const LayerAttention k = layer_attention(m, layer);
  return k == LayerAttention::linear || (m.linear.parallel && k != LayerAttention::none);
}

i64 allreduces_per_layer(const ModelSpec& m, i64 layer) {
  return (layer_has_attention(m, layer) ? 1 : 0) + (layer_has_linear(m, layer) ? 1 : 0) +
         (layer_mlp(m, layer) != LayerMlp::none ? 1 : 0);
}

i64 kv_heads_per_rank(const ModelSpec& m, i64 tp) {
  if (m.attention == AttentionType::mla) return 1;
  return std::max<i64>(1, m.num_kv_heads / tp);
}

i64 kv_elements_per_token_per_layer(const ModelSpec& m, i64 tp) {
  if (m.attention == AttentionType::mla) return m.mla.kv_lora_rank + m.mla.qk_rope_head_dim;
  return 2 * kv_heads_per_rank(m, tp) * m.head_dim;
}

u64 attention_page_bytes(const ModelSpec& m, DType kv, i64 tp, i64 block_size, unsigned kv_group) {
  const u64 bs = static_cast<u64>(block_size);
  const u64 data = kv_bytes(
      kv, mul(bs, static_cast<u64>(kv_elements_per_token_per_layer(m, tp)), "KV elements per block"), kv_group);
  const u64 scales = mul(mul(2 * bs, static_cast<u64>(kv_heads_per_rank(m, tp)), "KV scales"), kv_head_scale_bytes(kv),
                         "KV scale bytes");
  return add(data, scales, "KV page bytes");
}

bool mla_projections(const ModelSpec& m) {
  return m.attention == AttentionType::mla || m.mla.kv_lora_rank > 0;
}

bool has_linear_layers(const ModelSpec& m) {
  if (m.linear.parallel) return true;
  return std::find(m.layer_pattern.begin(), m.layer_pattern.end(), LayerAttention::linear) != m.layer_pattern.end();
}

u64 linear_state_bytes_per_rank(const ModelSpec& m, i64 tp, DType act, DType ssm_override) {
  const auto& a = m.linear;
  const DType ssm = ssm_override != DType::auto_ ? ssm_override : a.state_dtype != DType::auto_ ? a.state_dtype : act;
  const u64 k1 = static_cast<u64>(a.conv_kernel - 1), t = static_cast<u64>(tp);
  u64 conv = 0, temporal = 0;
  switch (a.kind) {
    case LinearAttentionSpec::Kind::gated_delta_net:
      // gated_delta_net_state_shape: conv (kernel - 1, conv_dim / tp), temporal (num_v / tp, head_v, head_k).
      conv = mul(k1, static_cast<u64>(a.conv_dim()) / t, "conv state elements");
      temporal = mul(mul(static_cast<u64>(a.num_value_heads) / t, static_cast<u64>(a.value_head_dim)),
                     static_cast<u64>(a.key_head_dim), "recurrent state elements");
      break;
    case LinearAttentionSpec::Kind::mamba2: {
      // mamba2_state_shape: groups padded to a multiple of tp when they do not divide (extra_groups_for_head_shards).
      const i64 groups = a.n_groups % tp == 0 ? a.n_groups : a.n_groups + (tp - a.n_groups);
      const u64 conv_dim = static_cast<u64>(a.intermediate_size + 2 * groups * a.state_size);
      conv = mul(k1, conv_dim / t, "conv state elements");
      temporal = mul(mul(static_cast<u64>(a.num_value_heads) / t, static_cast<u64>(a.value_head_dim)),
                     static_cast<u64>(a.state_size), "recurrent state elements");
      break;
    }
    case LinearAttentionSpec::Kind::mamba1:
      // mamba1_state_shape: conv (intermediate / tp, kernel - 1), temporal (intermediate / tp, state).
      conv = mul(static_cast<u64>(a.intermediate_size) / t, k1, "conv state elements");
      temporal = mul(static_cast<u64>(a.intermediate_size) / t, static_cast<u64>(a.state_size), "recurrent state elements");
      break;
  }
  return add(kv_bytes(act, conv), kv_bytes(ssm, temporal), "linear-attention state bytes");
}

namespace {
void positive(i64 v, const char* field, const char* what = "must be a positive integer") {
  if (v <= 0) throw SpecError(field, std::string(what) + " (got " + std::to_string(v) + ")");
}
void non_negative(i64 v, const char* field) {
  if (v < 0) throw SpecError(field, "must be >= 0 (got " + std::to_string(v) + ")");
}
}  // namespace

void validate(const ModelSpec& m) {
  positive(m.num_layers, "num_layers", "a model needs at least one layer");
  positive(m.hidden_size, "hidden_size");
  positive(m.vocab_size, "vocab_size");
  positive(m.num_heads, "attention.num_heads");
  positive(m.max_position_embeddings, "max_position_embeddings");
  non_negative(m.default_max_model_len, "default_max_model_len");
  if (m.default_max_model_len > m.max_position_embeddings)
    throw SpecError("default_max_model_len", "cannot exceed max_position_embeddings (" + std::to_string(m.default_max_model_len) +
                                                 " > " + std::to_string(m.max_position_embeddings) + ")");
  non_negative(m.intermediate_size, "intermediate_size");
  non_negative(m.sliding_window, "attention.sliding_window");
  if (!info(m.dtype).activation_ok || m.dtype == DType::auto_)
    throw SpecError("dtype", "must be bf16, fp16 or fp32 (got " + std::string(name(m.dtype)) + ")");
  if (m.quantization != DType::auto_ && !info(m.quantization).weights_ok)
    throw SpecError("quantization", "is not a weight format: " + std::string(name(m.quantization)));
  if (m.attention == AttentionType::gqa) {
    positive(m.num_kv_heads, "attention.num_kv_heads");
    positive(m.head_dim, "attention.head_dim");
    if (m.num_kv_heads > m.num_heads)
      throw SpecError("attention.num_kv_heads", "cannot exceed num_heads (" + std::to_string(m.num_kv_heads) +
                                                    " > " + std::to_string(m.num_heads) + ")");
    if (m.num_heads % m.num_kv_heads != 0)
      throw SpecError("attention.num_kv_heads",
                      "num_heads (" + std::to_string(m.num_heads) + ") must be divisible by num_kv_heads (" +
                          std::to_string(m.num_kv_heads) + "): each KV head serves a whole group of query heads");
    if (m.mla.kv_lora_rank > 0) {
      // MLA projections with a per-head cache (MiniCPM3): every head caches nope + rope wide keys.
      if (m.num_kv_heads != m.num_heads)
        throw SpecError("attention.num_kv_heads", "must equal num_heads when MLA projections feed a per-head cache");
      if (m.head_dim != m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim)
        throw SpecError("attention.head_dim", "must be qk_nope_head_dim + qk_rope_head_dim (" +
                                                  std::to_string(m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim) +
                                                  ") when MLA projections feed a per-head cache");
      if (m.mla.v_head_dim > m.head_dim) throw SpecError("mla.v_head_dim", "cannot exceed the cached head_dim");
    }
  }
  if (mla_projections(m)) {
    positive(m.mla.kv_lora_rank, "mla.kv_lora_rank");
    positive(m.mla.qk_rope_head_dim, "mla.qk_rope_head_dim");
    positive(m.mla.qk_nope_head_dim, "mla.qk_nope_head_dim");
    positive(m.mla.v_head_dim, "mla.v_head_dim");
    non_negative(m.mla.q_lora_rank, "mla.q_lora_rank");
  }
  non_negative(m.attention_chunk_size, "attention.chunk_size");
  non_negative(m.kv_shared_layers, "attention.kv_shared_layers");
  if (m.kv_shared_layers >= m.num_layers && m.num_layers > 0)
    throw SpecError("attention.kv_shared_layers", "must leave at least one layer with its own KV cache (" +
                                                      std::to_string(m.kv_shared_layers) + " of " +
                                                      std::to_string(m.num_layers) + ")");
  non_negative(m.index_head_dim, "attention.index_head_dim");
  if (has_linear_layers(m)) {
    const auto& a = m.linear;
    using K = LinearAttentionSpec::Kind;
    if (a.kind == K::gated_delta_net) {
      positive(a.num_key_heads, "linear_attention.num_key_heads");
      positive(a.num_value_heads, "linear_attention.num_value_heads");
      positive(a.key_head_dim, "linear_attention.key_head_dim");
      positive(a.value_head_dim, "linear_attention.value_head_dim");
      if (a.num_value_heads % a.num_key_heads != 0)
        throw SpecError("linear_attention.num_value_heads", "must be a multiple of num_key_heads (" +
                                                                std::to_string(a.num_key_heads) + ")");
    } else {
      positive(a.intermediate_size, "linear_attention.intermediate_size");
      positive(a.state_size, "linear_attention.state_size");
      if (a.kind == K::mamba2) {
        positive(a.num_value_heads, "linear_attention.num_heads");
        positive(a.value_head_dim, "linear_attention.head_dim");
        positive(a.n_groups, "linear_attention.n_groups");
        if (a.num_value_heads * a.value_head_dim != a.intermediate_size)
          throw SpecError("linear_attention.num_heads", "num_heads x head_dim must equal intermediate_size (" +
                                                            std::to_string(a.intermediate_size) + ")");
      } else {
        positive(a.dt_rank, "linear_attention.dt_rank");
      }
    }
    if (a.conv_kernel < 2)
      throw SpecError("linear_attention.conv_kernel", "must be >= 2 (got " + std::to_string(a.conv_kernel) + ")");
    if (m.linear.state_dtype != DType::auto_ && !info(m.linear.state_dtype).activation_ok)
      throw SpecError("linear_attention.state_dtype", "must be auto, fp32, bf16 or fp16");
  }
  if (m.linear.parallel &&
      std::find(m.layer_pattern.begin(), m.layer_pattern.end(), LayerAttention::linear) != m.layer_pattern.end())
    throw SpecError(
        "linear_attention.parallel",
        "runs the mixer beside every attention layer; attention.layer_pattern cannot also have linear layers");
  bool cache = false;
  for (i64 l = 0; l < m.num_layers; ++l) {
    if (layer_attention(m, l) == LayerAttention::none && layer_mlp(m, l) == LayerMlp::none)
      throw SpecError("mlp.pattern", "layer " + std::to_string(l) + " has neither a token mixer nor an MLP");
    if (!m.mlp_pattern.empty() && m.mlp_pattern[static_cast<std::size_t>(l) % m.mlp_pattern.size()] == LayerMlp::moe &&
        !m.moe.enabled())
      throw SpecError("mlp.pattern", "has moe layers but the model has no moe section");
    if (!m.mlp_pattern.empty() && layer_mlp(m, l) == LayerMlp::dense && m.intermediate_size <= 0)
      throw SpecError("intermediate_size",
                      "must be a positive integer: layer " + std::to_string(l) + " has a dense MLP");
    cache = cache || layer_has_attention(m, l) || layer_has_linear(m, l);
  }
  if (!cache)
    throw SpecError("attention.layer_pattern",
                    "no layer attends or keeps a state (every layer is none): there is no cache to size");
  for (auto a : m.layer_pattern) {
    if (a == LayerAttention::sliding && m.sliding_window <= 0)
      throw SpecError("attention.layer_pattern", "has sliding layers but attention.sliding_window is not set");
    if (a == LayerAttention::chunked && m.attention_chunk_size <= 0)
      throw SpecError("attention.layer_pattern", "has chunked layers but attention.chunk_size is not set");
  }
  if (m.moe.enabled()) {
    positive(m.moe.experts_per_token, "moe.experts_per_token");
    positive(m.moe.expert_intermediate_size, "moe.expert_intermediate_size");
    if (m.moe.experts_per_token > m.moe.num_experts)
      throw SpecError("moe.experts_per_token", "cannot exceed moe.num_experts (" +
                                                   std::to_string(m.moe.experts_per_token) + " > " +
                                                   std::to_string(m.moe.num_experts) + ")");
    non_negative(m.moe.first_dense_layers, "moe.first_dense_layers");
    if (m.moe.first_dense_layers >= m.num_layers)
      throw SpecError("moe.first_dense_layers", std::to_string(m.moe.first_dense_layers) + " dense layers first, of " +
                                                    std::to_string(m.num_layers) +
                                                    " layers: no layer would have experts (must be < num_layers)");
    positive(m.moe.layer_frequency, "moe.layer_frequency");
    non_negative(m.moe.shared_intermediate_size, "moe.shared_intermediate_size");
  } else if (m.intermediate_size <= 0) {
    throw SpecError("intermediate_size", "must be a positive integer for a dense model");
  }
  positive(m.norms_per_layer + 1, "norms_per_layer");
  if (m.vision.enabled()) {
    const auto& v = m.vision;
    positive(v.hidden_size, "vision.hidden_size");
    positive(v.num_layers, "vision.num_layers");
    positive(v.intermediate_size, "vision.intermediate_size");
    positive(v.patch_size, "vision.patch_size");
    positive(v.num_channels, "vision.num_channels");
    if (v.image_size < v.patch_size)
      throw SpecError("vision.image_size", "must be at least patch_size (" + std::to_string(v.patch_size) + "), got " +
                                               std::to_string(v.image_size));
    if (v.kind == VisionSpec::Kind::llama4) {
      positive(v.projector_input_dim, "vision.projector_input_dim");
      positive(v.projector_output_dim, "vision.projector_output_dim");
      positive(v.output_dim, "vision.output_dim");
    }
  }
}

}  // namespace kvcap
