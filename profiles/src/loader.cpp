// YAML model and GPU profiles -> planner types. The accepted keys live in one table per kind
// (model_keys / gpu_keys), which the JSON Schema under profiles/schema/ mirrors (tested).
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>

#include "kvcap/planner/error.hpp"
#include "kvcap/planner/params.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "reader.hpp"

namespace kvcap::profiles {
using namespace detail;

const std::map<std::string, std::vector<std::string>>& model_keys() {
  static const std::map<std::string, std::vector<std::string>> k = {
      {"",
       {"kind",
        "name",
        "display_name",
        "family",
        "source",
        "dtype",
        "quantization",
        "kv_cache_dtype",
        "hidden_size",
        "intermediate_size",
        "num_layers",
        "vocab_size",
        "max_position_embeddings",
        "default_max_model_len",
        "tie_word_embeddings",
        "vllm_note",
        "norms_per_layer",
        "attention",
        "mla",
        "linear_attention",
        "moe",
        "mlp",
        "vision",
        "published_params"}},
      {"attention",
       {"type", "num_heads", "num_kv_heads", "head_dim", "qkv_bias", "o_bias", "qk_norm", "sinks", "sliding_window",
        "layer_pattern", "chunk_size", "index_head_dim", "output_gate", "kv_shared_layers"}},
      {"linear_attention",
       {"kind", "num_key_heads", "num_value_heads", "key_head_dim", "value_head_dim", "num_heads", "head_dim",
        "intermediate_size", "state_size", "n_groups", "dt_rank", "conv_bias", "proj_bias", "conv_kernel",
        "state_dtype", "gated_norm", "parallel", "chunk_size"}},
      {"mla", {"kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"}},
      {"moe",
       {"num_experts", "experts_per_token", "expert_intermediate_size", "shared_intermediate_size",
        "first_dense_layers", "layer_frequency", "layer_offset", "router_bias", "expert_bias", "score_correction_bias",
        "shared_expert_gate"}},
      {"mlp", {"gated", "bias", "pattern"}},
      {"vision",
       {"kind", "hidden_size", "num_layers", "intermediate_size", "patch_size", "image_size", "num_channels",
        "use_head", "projector_input_dim", "projector_output_dim", "output_dim"}},
      {"published_params", {"total", "active", "tolerance"}},
  };
  return k;
}

const std::map<std::string, std::vector<std::string>>& gpu_keys() {
  static const std::map<std::string, std::vector<std::string>> k = {
      {"",
       {"kind", "name", "display_name", "vendor", "architecture", "memory", "compute", "interconnect", "host_link",
        "network", "tdp_watts", "price_per_gpu_hour_usd", "sources"}},
      {"memory", {"cuda_total_bytes", "marketed", "marketed_bytes", "bandwidth_bytes_per_s"}},
      {"compute",
       {"bf16_dense_flops", "fp16_dense_flops", "fp8_dense_flops", "fp4_dense_flops", "int8_dense_ops", "fp32_flops"}},
      {"interconnect", {"name", "bandwidth_bytes_per_s", "direction", "latency_s", "allreduce_measured"}},
      {"interconnect.allreduce_measured", {"source", "points"}},
      {"interconnect.allreduce_measured.points[]", {"tp", "message_bytes", "time_s"}},
      {"host_link", {"name", "bandwidth_bytes_per_s", "direction"}},
      {"network", {"name", "bandwidth_bytes_per_s", "direction", "latency_s"}},
  };
  return k;
}

namespace {
constexpr std::int64_t kMaxDim = 1ll << 40;  // no real dimension comes near; keeps products far from 2^63

template <class T, class U>
void set(T& field, const std::optional<U>& v) {
  if (v) field = static_cast<T>(*v);
}

void check_kind(Ctx& c, const YAML::Node& root, const char* want) {
  auto kind = get_string(c, root, "", "kind", true);
  if (kind && *kind != want)
    c.error(root["kind"], "kind", "expected '" + std::string(want) + "', got '" + *kind + "'");
}

DType read_dtype(Ctx& c, const YAML::Node& map, const std::string& path, const char* key, DType fallback,
                 bool (*accept)(const DTypeInfo&), const char* what) {
  auto s = get_string(c, map, path, key, false);
  if (!s) return fallback;
  auto d = parse_dtype(*s);
  if (!d || !accept(info(*d))) {
    c.error(map[key], join(path, key), "unknown " + std::string(what) + " '" + *s + "'; expected one of " + dtype_names(accept));
    return fallback;
  }
  return *d;
}

// Model-level checks of the planner become located diagnostics on the named key.
void planner_check(Ctx& c, const YAML::Node& root, const std::function<void()>& f) {
  try {
    f();
  } catch (const SpecError& e) {
    error_at_field(c, root, e.field(), e.reason());
  }
}

// Every section of a model profile in file order; 9 lines over the 150-line budget of .clang-tidy (issue 12's note).
// NOLINTNEXTLINE(readability-function-size)
ModelSpec model_from_yaml(Ctx& c, const YAML::Node& root) {
  ModelSpec m;
  if (!root.IsMap()) {
    c.error(root, "", "expected a mapping of profile keys at the top level");
    return m;
  }
  const auto& keys = model_keys();
  check_keys(c, root, "", keys.at(""));
  check_kind(c, root, "model");
  set(m.name, get_name(c, root));
  set(m.display_name, get_string(c, root, "", "display_name", false));
  set(m.family, get_string(c, root, "", "family", false));
  set(m.source, get_string(c, root, "", "source", false));
  m.dtype = read_dtype(c, root, "", "dtype", DType::bf16, [](const DTypeInfo& i) { return i.activation_ok && i.dtype != DType::auto_; }, "dtype");
  m.quantization = read_dtype(c, root, "", "quantization", DType::auto_, [](const DTypeInfo& i) { return i.weights_ok; }, "weight format");
  // What a checkpoint can name for vLLM's auto (vllm/utils/torch_utils.py MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP): fp8.
  m.kv_cache_dtype = read_dtype(
      c, root, "", "kv_cache_dtype", DType::auto_,
      [](const DTypeInfo& i) { return i.dtype == DType::auto_ || i.dtype == DType::fp8; }, "checkpoint KV format");
  set(m.hidden_size, get_int(c, root, "", "hidden_size", true, 1, kMaxDim));
  set(m.intermediate_size, get_int(c, root, "", "intermediate_size", false, 0, kMaxDim));
  set(m.num_layers, get_int(c, root, "", "num_layers", true, 1, 1'000'000));
  set(m.vocab_size, get_int(c, root, "", "vocab_size", true, 1, kMaxDim));
  set(m.max_position_embeddings, get_int(c, root, "", "max_position_embeddings", true, 1, kMaxDim));
  set(m.default_max_model_len, get_int(c, root, "", "default_max_model_len", false, 1, kMaxDim));
  set(m.tie_word_embeddings, get_bool(c, root, "", "tie_word_embeddings", false));
  set(m.vllm_note, get_string(c, root, "", "vllm_note", false));
  set(m.norms_per_layer, get_int(c, root, "", "norms_per_layer", false, 0, 64));
  if (m.display_name.empty()) m.display_name = m.name;

  const YAML::Node a = get_map(c, root, "", "attention", true);
  check_keys(c, a, "attention", keys.at("attention"));
  auto type = get_string(c, a, "attention", "type", false);
  if (type) {
    if (*type == "gqa" || *type == "mha" || *type == "mqa") m.attention = AttentionType::gqa;
    else if (*type == "mla") m.attention = AttentionType::mla;
    else c.error(a["type"], "attention.type", "expected gqa, mha, mqa or mla, got '" + *type + "'");
  }
  set(m.num_heads, get_int(c, a, "attention", "num_heads", true, 1, kMaxDim));
  set(m.num_kv_heads, get_int(c, a, "attention", "num_kv_heads", m.attention == AttentionType::gqa, 1, kMaxDim));
  set(m.head_dim, get_int(c, a, "attention", "head_dim", false, 1, kMaxDim));
  if (m.head_dim == 0 && m.attention == AttentionType::gqa && m.num_heads > 0) {
    if (m.hidden_size % m.num_heads != 0)
      c.error(a, "attention.head_dim", "is not given and hidden_size is not divisible by num_heads; give head_dim");
    m.head_dim = m.hidden_size / m.num_heads;
  }
  if (type && *type == "mqa" && m.num_kv_heads != 1) c.error(a["num_kv_heads"], "attention.num_kv_heads", "must be 1 for mqa");
  if (type && *type == "mha" && m.num_kv_heads != m.num_heads)
    c.error(a["num_kv_heads"], "attention.num_kv_heads", "must equal num_heads for mha");
  set(m.qkv_bias, get_bool(c, a, "attention", "qkv_bias", false));
  set(m.o_bias, get_bool(c, a, "attention", "o_bias", false));
  set(m.qk_norm, get_bool(c, a, "attention", "qk_norm", false));
  set(m.attention_sinks, get_bool(c, a, "attention", "sinks", false));
  set(m.attention_output_gate, get_bool(c, a, "attention", "output_gate", false));
  set(m.sliding_window, get_int(c, a, "attention", "sliding_window", false, 1, kMaxDim));
  set(m.attention_chunk_size, get_int(c, a, "attention", "chunk_size", false, 1, kMaxDim));
  set(m.kv_shared_layers, get_int(c, a, "attention", "kv_shared_layers", false, 0, 1'000'000));
  set(m.index_head_dim, get_int(c, a, "attention", "index_head_dim", false, 1, kMaxDim));
  if (auto pat = get_string_list(c, a, "attention", "layer_pattern", false)) {
    for (std::size_t i = 0; i < pat->size(); ++i) {
      const auto& s = (*pat)[i];
      if (s == "full") m.layer_pattern.push_back(LayerAttention::full);
      else if (s == "sliding") m.layer_pattern.push_back(LayerAttention::sliding);
      else if (s == "chunked") m.layer_pattern.push_back(LayerAttention::chunked);
      else if (s == "linear") m.layer_pattern.push_back(LayerAttention::linear);
      else if (s == "none")
        m.layer_pattern.push_back(LayerAttention::none);
      else
        c.error(a["layer_pattern"][i], "attention.layer_pattern[" + std::to_string(i) + "]",
                "expected full, sliding, chunked, linear or none, got '" + s + "'");
    }
  }

  // Linear-attention (Gated DeltaNet) layers: required exactly when layer_pattern has `linear` layers.
  const bool linear = has_linear_layers(m);
  const YAML::Node la = get_map(c, root, "", "linear_attention", linear);
  check_keys(c, la, "linear_attention", keys.at("linear_attention"));
  set(m.linear.parallel, get_bool(c, la, "linear_attention", "parallel", false));
  if (la.IsMap() && !linear && !m.linear.parallel)
    c.error(la, "linear_attention", "only valid with linear layers in attention.layer_pattern, or with parallel: true");
  using LK = LinearAttentionSpec::Kind;
  if (auto k = get_string(c, la, "linear_attention", "kind", false)) {
    if (*k == "gated_delta_net") m.linear.kind = LK::gated_delta_net;
    else if (*k == "mamba2") m.linear.kind = LK::mamba2;
    else if (*k == "mamba1") m.linear.kind = LK::mamba1;
    else c.error(la["kind"], "linear_attention.kind", "expected gated_delta_net, mamba2 or mamba1, got '" + *k + "'");
  }
  const bool gdn = m.linear.kind == LK::gated_delta_net, m2 = m.linear.kind == LK::mamba2, m1 = m.linear.kind == LK::mamba1;
  const char* la_path = "linear_attention";
  set(m.linear.num_key_heads, get_int(c, la, la_path, "num_key_heads", gdn, 1, kMaxDim));
  set(m.linear.num_value_heads, get_int(c, la, la_path, "num_value_heads", gdn, 1, kMaxDim));
  set(m.linear.key_head_dim, get_int(c, la, la_path, "key_head_dim", gdn, 1, kMaxDim));
  set(m.linear.value_head_dim, get_int(c, la, la_path, "value_head_dim", gdn, 1, kMaxDim));
  set(m.linear.num_value_heads, get_int(c, la, la_path, "num_heads", m2, 1, kMaxDim));
  set(m.linear.value_head_dim, get_int(c, la, la_path, "head_dim", m2, 1, kMaxDim));
  set(m.linear.intermediate_size, get_int(c, la, la_path, "intermediate_size", m1 || m2, 1, kMaxDim));
  set(m.linear.state_size, get_int(c, la, la_path, "state_size", m1 || m2, 1, kMaxDim));
  set(m.linear.n_groups, get_int(c, la, la_path, "n_groups", false, 1, kMaxDim));
  set(m.linear.dt_rank, get_int(c, la, la_path, "dt_rank", m1, 1, kMaxDim));
  set(m.linear.conv_bias, get_bool(c, la, la_path, "conv_bias", false));
  set(m.linear.proj_bias, get_bool(c, la, la_path, "proj_bias", false));
  set(m.linear.gated_norm, get_bool(c, la, la_path, "gated_norm", false));
  // Required for Mamba-2: every published Mamba-2 config carries it (vLLM's 2048 without one is Mamba-1's).
  set(m.linear.chunk_size, get_int(c, la, la_path, "chunk_size", m2, 1, kMaxDim));
  if (la.IsMap()) {
    const std::pair<const char*, bool> only[] = {
        {"num_key_heads", gdn}, {"num_value_heads", gdn}, {"key_head_dim", gdn},           {"value_head_dim", gdn},
        {"num_heads", m2},      {"head_dim", m2},         {"intermediate_size", m1 || m2}, {"state_size", m1 || m2},
        {"n_groups", m2},       {"dt_rank", m1},          {"conv_bias", m1 || m2},         {"proj_bias", m1 || m2},
        {"gated_norm", m2},     {"chunk_size", m1 || m2}};
    for (const auto& [k, ok] : only)
      if (!ok && present(la, k)) c.error(la[k], std::string("linear_attention.") + k, "does not apply to this kind of layer");
  }
  set(m.linear.conv_kernel, get_int(c, la, la_path, "conv_kernel", true, 2, 1'000'000));
  if (auto sd = get_string(c, la, "linear_attention", "state_dtype", false)) {
    auto dt = parse_dtype(*sd);
    if (!dt || (*dt != DType::auto_ && !info(*dt).activation_ok))
      c.error(la["state_dtype"], "linear_attention.state_dtype", "expected auto, fp32, bf16 or fp16, got '" + *sd + "'");
    else
      m.linear.state_dtype = *dt;
  }

  // With attention.type gqa an mla section means MLA projections feeding a per-head cache (MiniCPM3).
  const YAML::Node mla = get_map(c, root, "", "mla", m.attention == AttentionType::mla);
  check_keys(c, mla, "mla", keys.at("mla"));
  set(m.mla.kv_lora_rank, get_int(c, mla, "mla", "kv_lora_rank", true, 1, kMaxDim));
  set(m.mla.q_lora_rank, get_int(c, mla, "mla", "q_lora_rank", false, 0, kMaxDim));
  set(m.mla.qk_rope_head_dim, get_int(c, mla, "mla", "qk_rope_head_dim", true, 1, kMaxDim));
  set(m.mla.qk_nope_head_dim, get_int(c, mla, "mla", "qk_nope_head_dim", true, 1, kMaxDim));
  set(m.mla.v_head_dim, get_int(c, mla, "mla", "v_head_dim", true, 1, kMaxDim));

  if (m.attention == AttentionType::mla) {
    // As imported: MLA has one query head per KV head before compression; the head is nope + rope.
    if (m.num_kv_heads == 0) m.num_kv_heads = m.num_heads;
    if (m.head_dim == 0) m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
  }

  const YAML::Node moe = get_map(c, root, "", "moe", false);
  check_keys(c, moe, "moe", keys.at("moe"));
  set(m.moe.num_experts, get_int(c, moe, "moe", "num_experts", true, 1, 1'000'000));
  set(m.moe.experts_per_token, get_int(c, moe, "moe", "experts_per_token", true, 1, 1'000'000));
  set(m.moe.expert_intermediate_size, get_int(c, moe, "moe", "expert_intermediate_size", true, 1, kMaxDim));
  set(m.moe.shared_intermediate_size, get_int(c, moe, "moe", "shared_intermediate_size", false, 0, kMaxDim));
  set(m.moe.first_dense_layers, get_int(c, moe, "moe", "first_dense_layers", false, 0, 1'000'000));
  set(m.moe.layer_frequency, get_int(c, moe, "moe", "layer_frequency", false, 1, 1'000'000));
  set(m.moe.layer_offset, get_int(c, moe, "moe", "layer_offset", false, 0, 1'000'000));
  set(m.moe.router_bias, get_bool(c, moe, "moe", "router_bias", false));
  set(m.moe.expert_bias, get_bool(c, moe, "moe", "expert_bias", false));
  set(m.moe.score_correction_bias, get_bool(c, moe, "moe", "score_correction_bias", false));
  set(m.moe.shared_expert_gate, get_bool(c, moe, "moe", "shared_expert_gate", false));

  const YAML::Node mlp = get_map(c, root, "", "mlp", false);
  check_keys(c, mlp, "mlp", keys.at("mlp"));
  set(m.mlp_gated, get_bool(c, mlp, "mlp", "gated", false));
  set(m.mlp_bias, get_bool(c, mlp, "mlp", "bias", false));
  if (auto pat = get_string_list(c, mlp, "mlp", "pattern", false)) {
    for (std::size_t i = 0; i < pat->size(); ++i) {
      const auto& s = (*pat)[i];
      if (s == "dense")
        m.mlp_pattern.push_back(LayerMlp::dense);
      else if (s == "moe")
        m.mlp_pattern.push_back(LayerMlp::moe);
      else if (s == "none")
        m.mlp_pattern.push_back(LayerMlp::none);
      else
        c.error(mlp["pattern"][i], "mlp.pattern[" + std::to_string(i) + "]",
                "expected dense, moe or none, got '" + s + "'");
    }
  }

  // The vision encoder of a multimodal checkpoint (weights only; --language-model-only leaves it out).
  const YAML::Node vis = get_map(c, root, "", "vision", false);
  check_keys(c, vis, "vision", keys.at("vision"));
  if (auto k = get_string(c, vis, "vision", "kind", vis.IsMap())) {
    if (*k == "siglip")
      m.vision.kind = VisionSpec::Kind::siglip;
    else if (*k == "llama4")
      m.vision.kind = VisionSpec::Kind::llama4;
    else
      c.error(vis["kind"], "vision.kind", "expected siglip (Gemma 3) or llama4 (Llama 4), got '" + *k + "'");
  }
  const bool vis_on = m.vision.enabled(), l4 = m.vision.kind == VisionSpec::Kind::llama4;
  set(m.vision.hidden_size, get_int(c, vis, "vision", "hidden_size", vis_on, 1, kMaxDim));
  set(m.vision.num_layers, get_int(c, vis, "vision", "num_layers", vis_on, 1, 1'000'000));
  set(m.vision.intermediate_size, get_int(c, vis, "vision", "intermediate_size", vis_on, 1, kMaxDim));
  set(m.vision.patch_size, get_int(c, vis, "vision", "patch_size", vis_on, 1, 1'000'000));
  set(m.vision.image_size, get_int(c, vis, "vision", "image_size", vis_on, 1, 1'000'000));
  set(m.vision.num_channels, get_int(c, vis, "vision", "num_channels", false, 1, 1'000));
  set(m.vision.use_head, get_bool(c, vis, "vision", "use_head", false));
  set(m.vision.projector_input_dim, get_int(c, vis, "vision", "projector_input_dim", l4, 1, kMaxDim));
  set(m.vision.projector_output_dim, get_int(c, vis, "vision", "projector_output_dim", l4, 1, kMaxDim));
  set(m.vision.output_dim, get_int(c, vis, "vision", "output_dim", l4, 1, kMaxDim));
  for (const char* k : {"projector_input_dim", "projector_output_dim", "output_dim"})
    if (vis_on && !l4 && present(vis, k)) c.error(vis[k], std::string("vision.") + k, "only valid with kind llama4");
  if (l4 && present(vis, "use_head")) c.error(vis["use_head"], "vision.use_head", "only valid with kind siglip");

  const YAML::Node pub = get_map(c, root, "", "published_params", false);
  check_keys(c, pub, "published_params", keys.at("published_params"));
  set(m.published_params_total, get_number(c, pub, "published_params", "total", false, 0, 1e15));
  set(m.published_params_active, get_number(c, pub, "published_params", "active", false, 0, 1e15));
  set(m.published_params_tolerance, get_number(c, pub, "published_params", "tolerance", false, 0, 0.5));

  if (c.diags.empty()) planner_check(c, root, [&] { validate(m); });
  // Sizes whose products overflow 64 bits (hidden_size x intermediate_size x num_layers, ...) are an error of
  // this file, located, not an unnamed overflow later in whichever command uses the model.
  if (c.diags.empty()) {
    try {
      (void)param_counts(m);
    } catch (const OverflowError& e) {
      error_at_field(c, root, "hidden_size",
                     "the parameter count of this architecture (hidden_size, intermediate_size, num_layers, "
                     "vocab_size, experts) overflows 64-bit integers: " + std::string(e.what()));
    }
  }
  return m;
}

/// interconnect.allreduce_measured: {source, points: [{tp, message_bytes, time_s}, ...]} (GpuSpec::allreduce_measured;
/// the order and count rules are the planner's validate()).
void read_allreduce_measured(Ctx& c, const YAML::Node& ic, GpuSpec& g) {
  const std::string path = "interconnect.allreduce_measured";
  if (ic.IsMap() && ic["allreduce_measured"].IsDefined() && ic["allreduce_measured"].IsNull()) {
    c.error(ic["allreduce_measured"], path, "expected {source: ..., points: [{tp, message_bytes, time_s}, ...]}");
    return;
  }
  const YAML::Node ar = get_map(c, ic, "interconnect", "allreduce_measured", false);
  if (!ar.IsMap()) return;
  check_keys(c, ar, path, gpu_keys().at(path));
  set(g.allreduce_source, get_string(c, ar, path, "source", true));
  const YAML::Node pts = ar["points"];
  if (!pts.IsDefined() || !pts.IsSequence() || pts.size() == 0) {
    c.error(pts.IsDefined() ? pts : ar, path + ".points",
            "expected a list of measured points, each {tp: N, message_bytes: B, time_s: T}");
    return;
  }
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const std::string at = path + ".points[" + std::to_string(i) + "]";
    if (!pts[i].IsMap()) {
      c.error(pts[i], at, "expected {tp: N, message_bytes: B, time_s: T}");
      continue;
    }
    check_keys(c, pts[i], at, gpu_keys().at(path + ".points[]"));
    const auto tp = get_int(c, pts[i], at, "tp", true, 2, 1 << 20);
    const auto bytes = get_number(c, pts[i], at, "message_bytes", true, 1, 1e15);
    const auto time = get_number(c, pts[i], at, "time_s", true, 1e-9, 60);
    if (tp && bytes && time) g.allreduce_measured.push_back({*tp, *bytes, *time});
  }
}

GpuSpec gpu_from_yaml(Ctx& c, const YAML::Node& root) {
  GpuSpec g;
  if (!root.IsMap()) {
    c.error(root, "", "expected a mapping of profile keys at the top level");
    return g;
  }
  const auto& keys = gpu_keys();
  check_keys(c, root, "", keys.at(""));
  check_kind(c, root, "gpu");
  set(g.name, get_name(c, root));
  set(g.display_name, get_string(c, root, "", "display_name", false));
  set(g.vendor, get_string(c, root, "", "vendor", false));
  set(g.architecture, get_string(c, root, "", "architecture", false));
  if (g.display_name.empty()) g.display_name = g.name;
  const YAML::Node mem = get_map(c, root, "", "memory", true);
  check_keys(c, mem, "memory", keys.at("memory"));
  set(g.memory_bytes, get_int(c, mem, "memory", "cuda_total_bytes", true, 1));
  set(g.memory_marketed, get_string(c, mem, "memory", "marketed", false));
  set(g.memory_marketed_bytes, get_int(c, mem, "memory", "marketed_bytes", false, 0));
  set(g.memory_bandwidth_bytes_per_s, get_number(c, mem, "memory", "bandwidth_bytes_per_s", true, 1e6, 1e18));
  const YAML::Node comp = get_map(c, root, "", "compute", true);
  check_keys(c, comp, "compute", keys.at("compute"));
  set(g.bf16_dense_flops, get_number(c, comp, "compute", "bf16_dense_flops", true, 1e6, 1e21));
  set(g.fp16_dense_flops, get_number(c, comp, "compute", "fp16_dense_flops", false, 0, 1e21));
  set(g.fp8_dense_flops, get_number(c, comp, "compute", "fp8_dense_flops", false, 0, 1e21));
  set(g.fp4_dense_flops, get_number(c, comp, "compute", "fp4_dense_flops", false, 0, 1e21));
  set(g.int8_dense_ops, get_number(c, comp, "compute", "int8_dense_ops", false, 0, 1e21));
  set(g.fp32_flops, get_number(c, comp, "compute", "fp32_flops", false, 0, 1e21));
  const YAML::Node ic = get_map(c, root, "", "interconnect", false);
  check_keys(c, ic, "interconnect", keys.at("interconnect"));
  set(g.interconnect_name, get_string(c, ic, "interconnect", "name", false));
  set(g.interconnect_bandwidth_bytes_per_s, get_number(c, ic, "interconnect", "bandwidth_bytes_per_s", false, 0, 1e18));
  set(g.interconnect_latency_s, get_number(c, ic, "interconnect", "latency_s", false, 0, 1));
  if (auto dir = get_string(c, ic, "interconnect", "direction", false); dir && *dir != "per_direction")
    c.error(ic["direction"], "interconnect.direction",
            "expected per_direction (give the per-direction bandwidth; marketed NVLink figures are usually both directions added)");
  read_allreduce_measured(c, ic, g);
  const YAML::Node hl = get_map(c, root, "", "host_link", false);
  check_keys(c, hl, "host_link", keys.at("host_link"));
  set(g.host_link_name, get_string(c, hl, "host_link", "name", false));
  set(g.host_link_bandwidth_bytes_per_s, get_number(c, hl, "host_link", "bandwidth_bytes_per_s", false, 0, 1e18));
  if (auto dir = get_string(c, hl, "host_link", "direction", false); dir && *dir != "per_direction")
    c.error(hl["direction"], "host_link.direction",
            "expected per_direction (give one direction's bandwidth; datasheets give PCIe as both directions added)");
  const YAML::Node net = get_map(c, root, "", "network", false);
  check_keys(c, net, "network", keys.at("network"));
  set(g.network_name, get_string(c, net, "network", "name", false));
  set(g.network_bandwidth_bytes_per_s, get_number(c, net, "network", "bandwidth_bytes_per_s", false, 0, 1e18));
  set(g.network_latency_s, get_number(c, net, "network", "latency_s", false, 0, 1));
  if (auto dir = get_string(c, net, "network", "direction", false); dir && *dir != "per_direction")
    c.error(net["direction"], "network.direction",
            "expected per_direction (one GPU's NIC, one direction: 400 Gb/s InfiniBand is 50e9 bytes/s)");
  set(g.tdp_watts, get_number(c, root, "", "tdp_watts", false, 0, 1e5));
  set(g.price_per_gpu_hour_usd, get_number(c, root, "", "price_per_gpu_hour_usd", false, 0, 1e6));
  if (auto s = get_string_list(c, root, "", "sources", false)) g.sources = *s;
  if (c.diags.empty()) planner_check(c, root, [&] { validate(g); });
  return g;
}

bool looks_like_hf_config(const YAML::Node& root) {
  return root.IsMap() && (root["model_type"].IsDefined() || root["architectures"].IsDefined()) &&
         !root["kind"].IsDefined();
}
}  // namespace

ModelSpec parse_model(const std::string& text, const std::string& file) {
  Ctx c{file, {}};
  const YAML::Node root = parse_text(c, text);
  // A .json file that is not even YAML (JSON is YAML): the JSON reader names what is wrong in JSON's terms.
  if (!c.diags.empty() && file.ends_with(".json")) return import_hf(text, file);
  c.throw_if_any();
  if (looks_like_hf_config(root)) return import_hf(text, file);
  ModelSpec m = model_from_yaml(c, root);
  c.throw_if_any();
  return m;
}

GpuSpec parse_gpu(const std::string& text, const std::string& file) {
  return parse_with(text, file, gpu_from_yaml);
}

ModelSpec load_model_file(const std::string& path) {
  return load_with(path, parse_model);
}

GpuSpec load_gpu_file(const std::string& path) {
  return load_with(path, parse_gpu);
}

namespace {
bool looks_like_path(std::string_view s) {
  return s.find('/') != std::string_view::npos || s.ends_with(".yaml") || s.ends_with(".yml") || s.ends_with(".json");
}

/// "; did you mean 'x'?" for a name in another case, the names it begins (h100: h100-nvl, h100-pcie, h100-sxm, each
/// a different GPU), or the closest by edit distance; "" when none is close.
std::string suggestion(const std::string& a, const std::vector<std::string>& names) {
  const std::string low = lowercase(a);
  std::vector<std::string> starts;
  for (const auto& n : names) {
    if (n == low) return "; did you mean '" + n + "'? (names are lower case)";
    if (low.size() >= 2 && n.rfind(low, 0) == 0) starts.push_back(n);
  }
  if (starts.size() == 1) return "; did you mean '" + starts[0] + "'?";
  if (starts.size() > 1) {
    std::string r = "; did you mean one of ";
    for (std::size_t i = 0; i < starts.size(); ++i) r += (i ? ", '" : "'") + starts[i] + "'";
    return r + "?";
  }
  const std::string s = did_you_mean(low, names);
  return s.empty() ? "" : "; did you mean '" + s + "'?";
}

/// A Hugging Face id (meta-llama/Llama-3.1-8B) given as --model: kvcap reads no hub, only a local config.json.
std::string hub_id_hint(const std::string& a, const std::vector<std::string>& names) {
  const auto slash = a.find('/');
  if (slash == std::string::npos || slash == 0 || a.find('/', slash + 1) != std::string::npos || a[0] == '.' ||
      a.ends_with(".json") || a.ends_with(".yaml") || a.ends_with(".yml"))
    return "";
  std::string r = " (a Hugging Face id? kvcap reads no hub: download its config.json, e.g. `huggingface-cli download " +
                  a + " config.json --local-dir " + a.substr(slash + 1) + "`, and give that file";
  const std::string s = did_you_mean(lowercase(a.substr(slash + 1)), names);
  if (!s.empty()) r += ", or use the built-in '" + s + "'";
  return r + ")";
}

template <class Spec>
Spec resolve(std::string_view arg, const char* what, const char* folder, std::vector<std::string> names,
             Spec (*load_file)(const std::string&), Spec (*parse)(const std::string&, const std::string&)) {
  const std::string a(arg);
  if (std::filesystem::exists(a) && !std::filesystem::is_directory(a)) return load_file(a);
  const std::string rel = std::string(folder) + "/" + a + ".yaml";
  const std::string text = builtin_text(rel);
  if (!text.empty()) return parse(text, "profiles/" + rel + " (built-in)");
  const std::string kind = std::string(what) == "gpu" ? "GPU" : what;
  std::string msg = looks_like_path(a) ? std::string("no such file") : "unknown built-in " + kind;
  msg += " '" + a + "'";
  if (!looks_like_path(a)) {
    const std::string s = suggestion(a, names);
    msg += s + (s.empty() ? ". " : " ") + "Built-in " + kind + "s: ";
    for (std::size_t i = 0; i < names.size(); ++i) msg += (i ? ", " : "") + names[i];
    msg += "; or give a path to a profile";
  } else if (std::string(what) == "model") {
    msg += hub_id_hint(a, names);
  }
  throw ProfileError({Diagnostic{"--" + std::string(what), 0, 0, "", msg}});
}
}  // namespace

ModelSpec resolve_model(std::string_view name_or_path) {
  return resolve<ModelSpec>(name_or_path, "model", "models", builtin_model_names(), &load_model_file, &parse_model);
}
GpuSpec resolve_gpu(std::string_view name_or_path) {
  return resolve<GpuSpec>(name_or_path, "gpu", "gpus", builtin_gpu_names(), &load_gpu_file, &parse_gpu);
}

}  // namespace kvcap::profiles
