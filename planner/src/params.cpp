#include "kvcap/planner/params.hpp"

namespace kvcap {

namespace {
void push(std::vector<WeightTensor>& v, std::string_view name, i64 elements, Shard s, bool quantizable,
          bool routed = false) {
  if (elements > 0) v.push_back({name, elements, s, quantizable, routed});
}
}  // namespace

std::vector<WeightTensor> layer_tensors(const ModelSpec& m, i64 layer) {
  std::vector<WeightTensor> t;
  const i64 h = m.hidden_size;
  // Token mixers: a linear-attention / state-space mixer, attention, or both side by side (Falcon-H1).
  if (layer_has_linear(m, layer)) {
    const auto& a = m.linear;
    switch (a.kind) {
      case LinearAttentionSpec::Kind::gated_delta_net: {
        // Gated DeltaNet (vllm/model_executor/models/qwen3_next.py Qwen3NextGatedDeltaNet): in_proj_qkvz,
        // in_proj_ba (beta and alpha per value head), the depthwise conv1d over conv_dim channels,
        // dt_bias and A_log per value head, a gated RMSNorm of head_v_dim, out_proj; no biases.
        const i64 key_dim = a.num_key_heads * a.key_head_dim, value_dim = a.num_value_heads * a.value_head_dim;
        push(t, "in_proj_qkvz", mul(h, 2 * key_dim + 2 * value_dim), Shard::columns, true);
        push(t, "in_proj_ba", mul(h, 2 * a.num_value_heads), Shard::columns, true);
        push(t, "conv1d", mul(a.conv_dim(), a.conv_kernel), Shard::columns, false);
        push(t, "dt_bias_A_log", 2 * a.num_value_heads, Shard::columns, false);
        push(t, "linear_norm", a.value_head_dim, Shard::replicated, false);
        push(t, "out_proj", mul(value_dim, h), Shard::columns, true);
        break;
      }
      case LinearAttentionSpec::Kind::mamba2: {
        // Mamba-2 mixer (vllm/model_executor/layers/mamba/mamba_mixer2.py): in_proj to z, x, B, C and dt,
        // the conv1d over x, B and C, dt_bias, A and D per head, a gated RMSNorm, out_proj.
        const i64 d = a.intermediate_size, bc = 2 * a.n_groups * a.state_size;
        push(t, "in_proj", mul(h, 2 * d + bc + a.num_value_heads), Shard::columns, true);
        if (a.proj_bias) push(t, "in_proj_bias", 2 * d + bc + a.num_value_heads, Shard::columns, false);
        push(t, "conv1d", mul(d + bc, a.conv_kernel), Shard::columns, false);
        if (a.conv_bias) push(t, "conv1d_bias", d + bc, Shard::columns, false);
        push(t, "dt_bias_A_D", 3 * a.num_value_heads, Shard::columns, false);
        if (a.gated_norm) push(t, "mamba_norm", d, Shard::columns, false);
        push(t, "out_proj", mul(d, h), Shard::columns, true);
        if (a.proj_bias) push(t, "out_proj_bias", h, Shard::replicated, false);
        break;
      }
      case LinearAttentionSpec::Kind::mamba1: {
        // Mamba-1 mixer as in Jamba (vllm/model_executor/models/jamba.py, MambaMixer): in_proj to x and z,
        // conv1d, x_proj to dt, B and C, dt_proj, A_log, D, out_proj; Jamba's dt/B/C RMSNorms.
        const i64 d = a.intermediate_size;
        push(t, "in_proj", mul(h, 2 * d), Shard::columns, true);
        push(t, "conv1d", mul(d, a.conv_kernel), Shard::columns, false);
        if (a.conv_bias) push(t, "conv1d_bias", d, Shard::columns, false);
        push(t, "x_proj", mul(d, a.dt_rank + 2 * a.state_size), Shard::columns, true);
        push(t, "dt_proj", mul(a.dt_rank, d) + d, Shard::columns, true);
        push(t, "A_log_D", mul(d, a.state_size) + d, Shard::columns, false);
        push(t, "dt_bc_norms", a.dt_rank + 2 * a.state_size, Shard::replicated, false);
        push(t, "out_proj", mul(d, h), Shard::columns, true);
        if (a.proj_bias) push(t, "proj_biases", 2 * d + h, Shard::columns, false);
        break;
      }
    }
  }
  const bool attends = layer_has_attention(m, layer);
  if (attends && !mla_projections(m)) {
    const i64 q = m.num_heads * m.head_dim, kv = m.num_kv_heads * m.head_dim;
    push(t, "q_proj", mul(h, q), Shard::q_heads, true);
    // Gated attention (Qwen3-Next): q_proj also emits a per-channel output gate, as wide as q.
    if (m.attention_output_gate) push(t, "q_gate", mul(h, q), Shard::q_heads, true);
    push(t, "k_proj", mul(h, kv), Shard::kv_heads, true);
    push(t, "v_proj", mul(h, kv), Shard::kv_heads, true);
    if (m.qkv_bias) {
      push(t, "q_bias", q, Shard::q_heads, false);
      push(t, "kv_bias", 2 * kv, Shard::kv_heads, false);
    }
    push(t, "o_proj", mul(q, h), Shard::q_heads, true);
    if (m.o_bias) push(t, "o_bias", h, Shard::replicated, false);
    if (m.qk_norm) push(t, "qk_norm", 2 * m.head_dim, Shard::replicated, false);
    if (m.attention_sinks) push(t, "sinks", m.num_heads, Shard::q_heads, false);
  } else if (attends) {
    // DeepSeek MLA (vllm/model_executor/models/deepseek_v2.py DeepseekV2MLAAttention); MiniCPM3's
    // projections are the same (minicpm3.py MiniCPM3Attention), only its cache differs.
    const auto& a = m.mla;
    const i64 qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
    if (a.q_lora_rank > 0) {
      push(t, "q_a_proj", mul(h, a.q_lora_rank), Shard::replicated, true);
      push(t, "q_a_layernorm", a.q_lora_rank, Shard::replicated, false);
      push(t, "q_b_proj", mul(a.q_lora_rank, m.num_heads * qk_head), Shard::q_heads, true);
    } else {
      push(t, "q_proj", mul(h, m.num_heads * qk_head), Shard::q_heads, true);
    }
    push(t, "kv_a_proj_with_mqa", mul(h, a.kv_lora_rank + a.qk_rope_head_dim), Shard::replicated, true);
    push(t, "kv_a_layernorm", a.kv_lora_rank, Shard::replicated, false);
    push(t, "kv_b_proj", mul(a.kv_lora_rank, m.num_heads * (a.qk_nope_head_dim + a.v_head_dim)), Shard::q_heads,
         true);
    push(t, "o_proj", mul(m.num_heads * a.v_head_dim, h), Shard::q_heads, true);
  }
  push(t, "norms", mul(m.norms_per_layer, h), Shard::replicated, false);
  // MLP.
  const i64 mats = m.mlp_gated ? 3 : 2;
  const LayerMlp mlp = layer_mlp(m, layer);
  if (mlp == LayerMlp::moe) {
    const auto& e = m.moe;
    push(t, "router", mul(h, e.num_experts), Shard::replicated, false);
    if (e.router_bias) push(t, "router_bias", e.num_experts, Shard::replicated, false);
    if (e.score_correction_bias) push(t, "e_score_correction_bias", e.num_experts, Shard::replicated, false);
    push(t, "experts", mul(mul(mats, h), mul(e.num_experts, e.expert_intermediate_size)), Shard::columns, true,
         true);
    if (e.expert_bias)
      push(t, "experts_bias", mul(e.num_experts, (mats - 1) * e.expert_intermediate_size + h), Shard::columns,
           false, true);
    push(t, "shared_experts", mul(mul(mats, h), e.shared_intermediate_size), Shard::columns, true);
    if (e.shared_expert_gate) push(t, "shared_expert_gate", h, Shard::replicated, false);
  } else if (mlp == LayerMlp::dense) {
    push(t, "mlp", mul(mul(mats, h), m.intermediate_size), Shard::columns, true);
    if (m.mlp_bias) push(t, "mlp_bias", (mats - 1) * m.intermediate_size + h, Shard::columns, false);
  }
  return t;
}

std::vector<WeightTensor> embedding_tensors(const ModelSpec& m) {
  std::vector<WeightTensor> t;
  push(t, "embed_tokens", mul(m.vocab_size, m.hidden_size), Shard::vocab, false);
  return t;
}

std::vector<WeightTensor> head_tensors(const ModelSpec& m, bool separate_copy_of_tied) {
  std::vector<WeightTensor> t;
  push(t, "final_norm", m.hidden_size, Shard::replicated, false);
  if (!m.tie_word_embeddings || separate_copy_of_tied)
    push(t, "lm_head", mul(m.vocab_size, m.hidden_size), Shard::vocab, false);
  return t;
}

std::vector<WeightTensor> vision_tensors(const ModelSpec& m) {
  std::vector<WeightTensor> t;
  const auto& v = m.vision;
  if (!v.enabled()) return t;
  const i64 h = v.hidden_size, f = v.intermediate_size,
            patches = mul(v.image_size / v.patch_size, v.image_size / v.patch_size);
  const i64 patch_in = mul(v.num_channels, mul(v.patch_size, v.patch_size));
  // One encoder layer: attention as QKVParallelLinear + RowParallelLinear with biases (every head is a KV head, so
  // q, k and v split alike), the MLP fc1 ColumnParallelLinear / fc2 RowParallelLinear with biases (a row-parallel
  // bias is whole on every rank), two LayerNorms (weight and bias).
  const auto encoder_layer = [&](std::vector<WeightTensor>& out) {
    push(out, "vision.qkv_proj", add(mul(3 * h, h), 3 * h), Shard::columns, false);
    push(out, "vision.o_proj", mul(h, h), Shard::columns, false);
    push(out, "vision.mlp.fc1", add(mul(h, f), f), Shard::columns, false);
    push(out, "vision.mlp.fc2", mul(f, h), Shard::columns, false);
    push(out, "vision.row_biases_norms", 2 * h + 4 * h, Shard::replicated, false);
  };
  std::vector<WeightTensor> layer;
  encoder_layer(layer);
  for (const auto& w : layer) push(t, w.name, mul(w.elements, v.num_layers), w.shard, false);
  if (v.kind == VisionSpec::Kind::siglip) {
    // siglip.py SiglipVisionEmbeddings: patch_embedding Conv2d with bias (replicated), position_embedding a
    // VocabParallelEmbedding of (image / patch)^2 rows; post_layernorm; the attention-pooling head when
    // vision_use_head (SiglipMultiheadAttentionPoolingHead: probe, nn.MultiheadAttention, LayerNorm, MLP).
    push(t, "vision.patch_embedding", add(mul(patch_in, h), h), Shard::replicated, false);
    push(t, "vision.position_embedding", mul(patches, h), Shard::columns, false);
    push(t, "vision.post_layernorm", 2 * h, Shard::replicated, false);
    if (v.use_head) {
      push(t, "vision.head.attention_norm_probe", add(mul(4 * h, h), 7 * h), Shard::replicated, false);
      push(t, "vision.head.mlp", add(add(mul(h, f), f), add(mul(f, h), h)), Shard::columns, false);
    }
    // gemma3_mm.py Gemma3MultiModalProjector: mm_input_projection_weight (vision x text width, an nn.Parameter:
    // replicated) and mm_soft_emb_norm (RMSNorm of the vision width).
    push(t, "vision.mm_projector", add(mul(h, m.hidden_size), h), Shard::replicated, false);
  } else {
    // mllama4.py Llama4VisionModel: Llama4UnfoldConvolution (ColumnParallelLinear, no bias), class_embedding and
    // positional_embedding_vlm (patches + 1 rows; parameters, replicated), layernorm_pre / layernorm_post;
    // Llama4VisionPixelShuffleMLP: fc1 intermediate_size -> projector_input_dim, fc2 -> projector_output_dim
    // (multi_modal_projector_bias false); Llama4MultiModalProjector linear_1: vision_output_dim -> text hidden.
    push(t, "vision.patch_embedding", mul(patch_in, h), Shard::columns, false);
    push(t, "vision.class_position_embedding", add(h, mul(patches + 1, h)), Shard::replicated, false);
    push(t, "vision.layernorm_pre_post", 4 * h, Shard::replicated, false);
    push(t, "vision.adapter.fc1", mul(f, v.projector_input_dim), Shard::columns, false);
    push(t, "vision.adapter.fc2", mul(v.projector_input_dim, v.projector_output_dim), Shard::columns, false);
    push(t, "vision.mm_projector", mul(v.output_dim, m.hidden_size), Shard::columns, false);
  }
  return t;
}

ParamCounts param_counts(const ModelSpec& m) {
  ParamCounts c;
  auto count = [&](const std::vector<WeightTensor>& ts) {
    for (const auto& w : ts) {
      c.total = add(c.total, w.elements, "parameter count");
      // Active: a token passes through top-k of the routed experts.
      const i64 act = w.routed_expert ? w.elements / m.moe.num_experts * m.moe.experts_per_token : w.elements;
      c.active = add(c.active, act, "active parameter count");
    }
  };
  for (i64 l = 0; l < m.num_layers; ++l) count(layer_tensors(m, l));
  const auto emb = embedding_tensors(m);
  for (const auto& w : emb) c.embedding += w.elements;
  count(emb);
  count(head_tensors(m, false));
  for (const auto& w : vision_tensors(m)) {
    c.total = add(c.total, w.elements, "parameter count");
    c.vision = add(c.vision, w.elements, "vision parameter count");
  }
  return c;
}

i64 elements_per_rank(const ModelSpec& m, const WeightTensor& t, i64 tp, i64 ep, i64 redundant) {
  if (t.routed_expert && ep > 1 && m.moe.num_experts > 0) {
    // vLLM FusedMoE with expert parallelism: each rank holds ceil((E + redundant) / ep) whole experts (the physical
    // experts, EPLB's redundant copies included).
    const i64 per_expert = t.elements / m.moe.num_experts;
    const u64 physical = static_cast<u64>(add(m.moe.num_experts, redundant, "physical experts"));
    return mul(per_expert, static_cast<i64>(ceil_div(physical, static_cast<u64>(ep))), "expert elements per rank");
  }
  switch (t.shard) {
    case Shard::replicated:
      return t.elements;
    case Shard::q_heads:
      return t.elements / tp;  // num_heads % tp == 0 is validated by resolve()
    case Shard::kv_heads:
      if (m.attention == AttentionType::mla || m.num_kv_heads == 0) return t.elements;
      return t.elements / m.num_kv_heads * kv_heads_per_rank(m, tp);
    case Shard::columns:
      return static_cast<i64>(ceil_div(static_cast<u64>(t.elements), static_cast<u64>(tp)));
    case Shard::vocab: {
      // vllm/model_executor/layers/vocab_parallel_embedding.py: pad_vocab_size(vocab, 64), then split.
      const i64 padded = static_cast<i64>(ceil_div(static_cast<u64>(m.vocab_size), 64) * 64);
      const i64 rows = static_cast<i64>(ceil_div(static_cast<u64>(padded), static_cast<u64>(tp)));
      return mul(rows, t.elements / m.vocab_size, "embedding elements per rank");
    }
  }
  return t.elements;
}

std::vector<i64> layers_per_stage(i64 num_layers, i64 pp) {
  // vllm/distributed/utils.py get_pp_indices: each stage gets L // PP; the remainder goes one layer
  // each to the stages before the last, from the second-to-last backwards (27 layers on PP=2: 14, 13).
  std::vector<i64> r(static_cast<std::size_t>(pp), num_layers / pp);
  const i64 rem = num_layers % pp;
  for (i64 i = 2; i < rem + 2; ++i) r[static_cast<std::size_t>(pp - i)] += 1;
  return r;
}

}  // namespace kvcap
