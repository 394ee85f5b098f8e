// ModelSpec -> YAML profile text (kvcap import-hf). Written by hand rather than through
// YAML::Emitter so the file carries comments and a stable key order that diffs well in review.
#include <cstdio>
#include <sstream>

#include "kvcap/profiles/profiles.hpp"

namespace kvcap::profiles {

namespace {
const char* kind_name(LayerAttention k) {
  switch (k) {
    case LayerAttention::full:
      return "full";
    case LayerAttention::sliding:
      return "sliding";
    case LayerAttention::chunked:
      return "chunked";
    case LayerAttention::linear:
      return "linear";
    case LayerAttention::none:
      return "none";
  }
  return "full";
}
const char* kind_name(LayerMlp k) {
  switch (k) {
    case LayerMlp::dense:
      return "dense";
    case LayerMlp::moe:
      return "moe";
    case LayerMlp::none:
      return "none";
  }
  return "dense";
}
/// A per-layer pattern as a YAML flow sequence under `key`, indented two spaces.
template <class Kind>
void write_pattern(std::ostream& o, const char* key, const std::vector<Kind>& pattern) {
  o << "  " << key << ": [";
  for (std::size_t i = 0; i < pattern.size(); ++i) o << (i ? ", " : "") << kind_name(pattern[i]);
  o << "]\n";
}
// A YAML double-quoted scalar (YAML 1.2 section 5.7 escapes): quotes, backslashes, line breaks and every other
// control character escaped, so a name from a config.json cannot end the scalar or start a key.
std::string quote(const std::string& s) {
  std::string r = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') r += '\\', r += ch;
    else if (ch == '\n') r += "\\n";
    else if (ch == '\r') r += "\\r";
    else if (ch == '\t') r += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      r += buf;
    } else r += ch;
  }
  return r + "\"";
}
// A comment line: a carriage return (a YAML line break) or another control character would end the comment
// and let the rest be read as YAML; shown as '?'.
std::string comment_text(const std::string& line) {
  std::string r = line;
  for (auto& ch : r)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
  return r;
}
const char* b(bool v) { return v ? "true" : "false"; }
std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
}  // namespace

std::string to_yaml(const ModelSpec& m, const std::string& header_comment) {
  std::ostringstream o;
  o << "# yaml-language-server: $schema=../schema/model.schema.json\n";
  if (!header_comment.empty()) {
    std::istringstream in(header_comment);
    for (std::string line; std::getline(in, line);) o << "# " << comment_text(line) << "\n";
  }
  o << "kind: model\n";
  o << "name: " << quote(m.name) << "\n";
  o << "display_name: " << quote(m.display_name) << "\n";
  o << "family: " << quote(m.family) << "\n";
  o << "source: " << quote(m.source) << "\n";
  o << "dtype: " << name(m.dtype) << "                 # torch_dtype\n";
  if (m.quantization != DType::auto_) o << "quantization: " << name(m.quantization) << "     # checkpoint weight format\n";
  if (m.kv_cache_dtype != DType::auto_)
    o << "kv_cache_dtype: " << name(m.kv_cache_dtype)
      << "   # the checkpoint's KV format (vLLM's --kv-cache-dtype auto)\n";
  o << "hidden_size: " << m.hidden_size << "\n";
  if (m.intermediate_size > 0) o << "intermediate_size: " << m.intermediate_size << "\n";
  o << "num_layers: " << m.num_layers << "              # num_hidden_layers\n";
  o << "vocab_size: " << m.vocab_size << "\n";
  o << "max_position_embeddings: " << m.max_position_embeddings << "   # vLLM's derived max_model_len\n";
  if (m.default_max_model_len > 0) o << "default_max_model_len: " << m.default_max_model_len << "   # vLLM's default (longrope: original length)\n";
  o << "tie_word_embeddings: " << b(m.tie_word_embeddings) << "\n";
  if (!m.vllm_note.empty()) o << "vllm_note: " << quote(m.vllm_note) << "\n";
  if (m.norms_per_layer != 2) o << "norms_per_layer: " << m.norms_per_layer << "\n";
  o << "attention:\n";
  o << "  type: " << (m.attention == AttentionType::mla ? "mla" : "gqa") << "\n";
  o << "  num_heads: " << m.num_heads << "           # num_attention_heads\n";
  if (m.attention == AttentionType::gqa) {
    o << "  num_kv_heads: " << m.num_kv_heads << "         # num_key_value_heads\n";
    o << "  head_dim: " << m.head_dim << "\n";
  }
  if (m.qkv_bias) o << "  qkv_bias: true\n";
  if (m.o_bias) o << "  o_bias: true\n";
  if (m.qk_norm) o << "  qk_norm: true\n";
  if (m.attention_sinks) o << "  sinks: true\n";
  if (m.attention_output_gate) o << "  output_gate: true\n";
  if (m.sliding_window > 0) o << "  sliding_window: " << m.sliding_window << "\n";
  if (m.attention_chunk_size > 0) o << "  chunk_size: " << m.attention_chunk_size << "\n";
  if (m.kv_shared_layers > 0)
    o << "  kv_shared_layers: " << m.kv_shared_layers << "   # the last layers reuse an earlier layer's cache\n";
  if (m.index_head_dim > 0) o << "  index_head_dim: " << m.index_head_dim << "\n";
  if (!m.layer_pattern.empty()) write_pattern(o, "layer_pattern", m.layer_pattern);
  if (has_linear_layers(m)) {
    const auto& a = m.linear;
    using LK = LinearAttentionSpec::Kind;
    o << "linear_attention:       # a fixed-size state per request\n";
    if (a.kind == LK::gated_delta_net) {
      o << "  kind: gated_delta_net\n";
      o << "  num_key_heads: " << a.num_key_heads << "        # linear_num_key_heads\n";
      o << "  num_value_heads: " << a.num_value_heads << "      # linear_num_value_heads\n";
      o << "  key_head_dim: " << a.key_head_dim << "\n";
      o << "  value_head_dim: " << a.value_head_dim << "\n";
    } else {
      o << "  kind: " << (a.kind == LK::mamba2 ? "mamba2" : "mamba1") << "\n";
      if (a.kind == LK::mamba2) {
        o << "  num_heads: " << a.num_value_heads << "          # mamba_n_heads\n";
        o << "  head_dim: " << a.value_head_dim << "            # mamba_d_head\n";
        o << "  n_groups: " << a.n_groups << "              # mamba_n_groups\n";
      } else {
        o << "  dt_rank: " << a.dt_rank << "             # mamba_dt_rank\n";
      }
      o << "  intermediate_size: " << a.intermediate_size
        << "   # the mixer width d_inner (mamba_expand x hidden_size, mamba_d_ssm, heads x head_dim)\n";
      o << "  state_size: " << a.state_size << "          # mamba_d_state\n";
      if (a.conv_bias) o << "  conv_bias: true\n";
      if (a.proj_bias) o << "  proj_bias: true\n";
      if (a.kind == LK::mamba2 && !a.gated_norm) o << "  gated_norm: false      # mamba_rms_norm\n";
      if (a.chunk_size > 0) o << "  chunk_size: " << a.chunk_size << "          # mamba_chunk_size / chunk_size\n";
    }
    if (a.parallel) o << "  parallel: true         # beside the attention of every layer (Falcon-H1)\n";
    o << "  conv_kernel: " << a.conv_kernel << "           # linear_conv_kernel_dim / mamba_d_conv\n";
    if (a.state_dtype != DType::auto_) o << "  state_dtype: " << name(a.state_dtype) << "      # mamba_ssm_dtype\n";
  }
  if (mla_projections(m)) {
    if (m.attention == AttentionType::gqa) o << "# MLA projections, every head's key and value cached (MiniCPM3)\n";
    o << "mla:\n";
    o << "  kv_lora_rank: " << m.mla.kv_lora_rank << "\n";
    o << "  q_lora_rank: " << m.mla.q_lora_rank << "          # 0: full-rank q_proj\n";
    o << "  qk_rope_head_dim: " << m.mla.qk_rope_head_dim << "\n";
    o << "  qk_nope_head_dim: " << m.mla.qk_nope_head_dim << "\n";
    o << "  v_head_dim: " << m.mla.v_head_dim << "\n";
  }
  if (m.moe.enabled()) {
    const auto& e = m.moe;
    o << "moe:\n";
    o << "  num_experts: " << e.num_experts << "\n";
    o << "  experts_per_token: " << e.experts_per_token << "\n";
    o << "  expert_intermediate_size: " << e.expert_intermediate_size << "\n";
    if (e.shared_intermediate_size > 0) o << "  shared_intermediate_size: " << e.shared_intermediate_size << "\n";
    if (e.first_dense_layers > 0) o << "  first_dense_layers: " << e.first_dense_layers << "\n";
    if (e.layer_frequency != 1) o << "  layer_frequency: " << e.layer_frequency << "\n";
    if (e.layer_offset != 0) o << "  layer_offset: " << e.layer_offset << "\n";
    if (e.router_bias) o << "  router_bias: true\n";
    if (e.expert_bias) o << "  expert_bias: true\n";
    if (e.score_correction_bias) o << "  score_correction_bias: true\n";
    if (e.shared_expert_gate) o << "  shared_expert_gate: true\n";
  }
  if (!m.mlp_gated || m.mlp_bias || !m.mlp_pattern.empty()) {
    o << "mlp:\n  gated: " << b(m.mlp_gated) << "\n  bias: " << b(m.mlp_bias) << "\n";
    if (!m.mlp_pattern.empty()) write_pattern(o, "pattern", m.mlp_pattern);
  }
  if (m.vision.enabled()) {
    const auto& v = m.vision;
    o << "vision:                     # vision_config: the vision encoder vLLM loads (--language-model-only: not)\n";
    o << "  kind: " << (v.kind == VisionSpec::Kind::siglip ? "siglip" : "llama4") << "\n";
    o << "  hidden_size: " << v.hidden_size << "\n";
    o << "  num_layers: " << v.num_layers << "\n";
    o << "  intermediate_size: " << v.intermediate_size << "\n";
    o << "  patch_size: " << v.patch_size << "\n";
    o << "  image_size: " << v.image_size << "\n";
    if (v.num_channels != 3) o << "  num_channels: " << v.num_channels << "\n";
    if (v.use_head) o << "  use_head: true\n";
    if (v.kind == VisionSpec::Kind::llama4) {
      o << "  projector_input_dim: " << v.projector_input_dim << "\n";
      o << "  projector_output_dim: " << v.projector_output_dim << "\n";
      o << "  output_dim: " << v.output_dim << "             # vision_output_dim\n";
    }
  }
  if (m.published_params_total > 0) {
    o << "published_params:\n  total: " << num(m.published_params_total) << "\n";
    if (m.published_params_active > 0) o << "  active: " << num(m.published_params_active) << "\n";
    if (m.published_params_tolerance != 0.005) o << "  tolerance: " << num(m.published_params_tolerance) << "\n";
  }
  return o.str();
}

}  // namespace kvcap::profiles
