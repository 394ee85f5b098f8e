// Hugging Face config.json -> ModelSpec. The key names per model_type follow transformers'
// configuration_*.py classes and vLLM's model files (vllm/model_executor/models/<type>.py); vLLM's
// max_model_len rule is vllm/config/model.py _get_and_verify_max_len.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <functional>

#include "kvcap/planner/error.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "reader.hpp"

namespace kvcap::profiles {
using namespace detail;

std::vector<std::string> supported_hf_model_types() {
  return {"llama",     "mistral",     "mixtral",     "qwen2", "qwen2_moe",   "qwen3",       "qwen3_moe",
          "gemma2",    "gemma3",      "gemma3_text", "phi3",  "deepseek_v2", "deepseek_v3", "gpt_oss"};
}

namespace {
constexpr std::int64_t kMaxDim = 1ll << 40;

// JSON that yaml-cpp cannot read (tab indentation, some escapes) goes through nlohmann::json and is
// rebuilt as a YAML tree (positions are lost then, keys are kept).
// precheck_text bounds the nesting before this runs; the depth cut-off keeps the recursion bounded even
// so (values nested that deep are never read by the importer).
YAML::Node from_json(const nlohmann::json& j, int depth = 0) {
  YAML::Node n;
  if (depth > kMaxNestingDepth) return YAML::Node(YAML::NodeType::Null);
  if (j.is_object()) {
    n = YAML::Node(YAML::NodeType::Map);
    for (auto it = j.begin(); it != j.end(); ++it) n[it.key()] = from_json(it.value(), depth + 1);
  } else if (j.is_array()) {
    n = YAML::Node(YAML::NodeType::Sequence);
    for (const auto& e : j) n.push_back(from_json(e, depth + 1));
  } else if (j.is_null()) {
    n = YAML::Node(YAML::NodeType::Null);
  } else if (j.is_string()) {
    n = j.get<std::string>();
  } else if (j.is_boolean()) {
    n = j.get<bool>() ? "true" : "false";
  } else {
    n = j.dump();
  }
  return n;
}

YAML::Node parse_config(Ctx& c, const std::string& text) {
  if (!precheck_text(c, text)) return {};  // too large, binary or too deeply nested: no parser sees it
  YAML::Node root = parse_text(c, text);
  if (!c.diags.empty()) {
    try {
      auto j = nlohmann::json::parse(text);
      c.diags.clear();
      root = from_json(j);
    } catch (const nlohmann::json::exception&) {  // parse_error, or out_of_range for 1e400
      // keep the YAML parser's located error
    }
  }
  return root;
}

template <class T, class U>
void set(T& field, const std::optional<U>& v) {
  if (v) field = static_cast<T>(*v);
}
}  // namespace

ModelSpec import_hf(const std::string& text, const std::string& file) {
  Ctx c{file, {}};
  YAML::Node root = parse_config(c, text);
  c.throw_if_any();
  if (!root.IsMap()) {
    c.error(root, "", "expected a JSON object (a Hugging Face config.json)");
    c.throw_if_any();
  }
  ModelSpec m;
  auto type = get_string(c, root, "", "model_type", true);
  c.throw_if_any();
  m.family = *type;
  const auto types = supported_hf_model_types();
  if (std::find(types.begin(), types.end(), *type) == types.end()) {
    std::string msg = "unsupported model_type '" + *type + "'; supported: ";
    for (std::size_t i = 0; i < types.size(); ++i) msg += (i ? ", " : "") + types[i];
    c.error(root["model_type"], "model_type", msg);
    c.throw_if_any();
  }
  // Multimodal Gemma 3 nests the language model under text_config.
  YAML::Node cfg = root;
  std::string p;  // key path prefix for diagnostics
  if (present(root, "text_config") && root["text_config"].IsMap() && (*type == "gemma3")) {
    cfg = root["text_config"];
    p = "text_config";
  }
  const std::string& t = *type;
  m.name = "imported-" + t;
  m.source = "Hugging Face config.json: " + file;
  if (auto arch = get_string_list(c, root, "", "architectures", false); arch && !arch->empty())
    m.display_name = (*arch)[0];
  // dtype: torch_dtype (transformers < 4.56) or dtype.
  const char* dkey = present(cfg, "torch_dtype") ? "torch_dtype" : "dtype";
  if (auto d = get_string(c, cfg, p, dkey, false)) {
    auto dt = parse_dtype(*d);
    if (!dt || !info(*dt).activation_ok || *dt == DType::auto_)
      c.error(cfg[dkey], join(p, dkey), "expected bfloat16, float16 or float32, got '" + *d + "'");
    else
      m.dtype = *dt;
  }
  set(m.hidden_size, get_int(c, cfg, p, "hidden_size", true, 1, kMaxDim));
  set(m.num_layers, get_int(c, cfg, p, "num_hidden_layers", true, 1, 1'000'000));
  set(m.vocab_size, get_int(c, cfg, p, "vocab_size", true, 1, kMaxDim));
  set(m.num_heads, get_int(c, cfg, p, "num_attention_heads", true, 1, kMaxDim));
  m.num_kv_heads = m.num_heads;
  set(m.num_kv_heads, get_int(c, cfg, p, "num_key_value_heads", false, 1, kMaxDim));
  set(m.intermediate_size, get_int(c, cfg, p, "intermediate_size", false, 0, kMaxDim));
  set(m.max_position_embeddings, get_int(c, cfg, p, "max_position_embeddings", true, 1, kMaxDim));
  const bool gemma = t.rfind("gemma", 0) == 0;
  m.tie_word_embeddings = gemma;  // transformers' per-family default
  set(m.tie_word_embeddings, get_bool(c, cfg, p, "tie_word_embeddings", false));
  // An explicit head_dim wins over hidden_size / num_attention_heads.
  if (present(cfg, "head_dim")) set(m.head_dim, get_int(c, cfg, p, "head_dim", false, 1, kMaxDim));
  else if (m.num_heads > 0) m.head_dim = m.hidden_size / m.num_heads;
  set(m.qkv_bias, get_bool(c, cfg, p, "attention_bias", false));
  set(m.mlp_bias, get_bool(c, cfg, p, "mlp_bias", false));

  // Sliding window: honoured unless the config switches it off (Qwen2: use_sliding_window false).
  bool use_sw = true;
  if (auto u = get_bool(c, cfg, p, "use_sliding_window", false)) use_sw = *u;
  if (use_sw && present(cfg, "sliding_window")) set(m.sliding_window, get_int(c, cfg, p, "sliding_window", false, 1, kMaxDim));
  if (auto lt = get_string_list(c, cfg, p, "layer_types", false); lt && m.sliding_window > 0) {
    for (std::size_t i = 0; i < lt->size(); ++i) {
      const auto& s = (*lt)[i];
      if (s == "sliding_attention") m.layer_pattern.push_back(LayerAttention::sliding);
      else if (s == "full_attention") m.layer_pattern.push_back(LayerAttention::full);
      else c.error(cfg["layer_types"][i], join(p, "layer_types") + "[" + std::to_string(i) + "]",
                   "expected sliding_attention or full_attention, got '" + s + "'");
    }
  }

  if (t == "qwen2" || t == "qwen2_moe") m.qkv_bias = true;
  if (t == "qwen3" || t == "qwen3_moe") m.qk_norm = true;
  if (t == "gemma2") {
    m.norms_per_layer = 4;
    // vllm gemma2.py: even layers use the sliding window, odd layers are global.
    if (m.layer_pattern.empty() && m.sliding_window > 0) m.layer_pattern = {LayerAttention::sliding, LayerAttention::full};
  }
  if (t == "gemma3" || t == "gemma3_text") {
    m.norms_per_layer = 4;
    m.qk_norm = true;
    if (m.layer_pattern.empty() && m.sliding_window > 0) {
      std::int64_t period = 6;
      if (auto sp = get_int(c, cfg, p, "sliding_window_pattern", false, 1, 1'000'000)) period = *sp;
      m.layer_pattern.assign(static_cast<std::size_t>(period), LayerAttention::sliding);
      m.layer_pattern.back() = LayerAttention::full;  // every period-th layer is global
    }
  }
  if (m.sliding_window > 0 && m.layer_pattern.empty() && m.sliding_window >= m.max_position_embeddings)
    m.sliding_window = 0;  // a window as long as the context is no window

  // Mixture of experts.
  if (t == "mixtral") {
    set(m.moe.num_experts, get_int(c, cfg, p, "num_local_experts", true, 1, 1'000'000));
    set(m.moe.experts_per_token, get_int(c, cfg, p, "num_experts_per_tok", true, 1, 1'000'000));
    m.moe.expert_intermediate_size = m.intermediate_size;
  } else if (t == "qwen2_moe" || t == "qwen3_moe") {
    set(m.moe.num_experts, get_int(c, cfg, p, "num_experts", true, 1, 1'000'000));
    set(m.moe.experts_per_token, get_int(c, cfg, p, "num_experts_per_tok", true, 1, 1'000'000));
    set(m.moe.expert_intermediate_size, get_int(c, cfg, p, "moe_intermediate_size", true, 1, kMaxDim));
    set(m.moe.layer_frequency, get_int(c, cfg, p, "decoder_sparse_step", false, 1, 1'000'000));
    if (t == "qwen2_moe") {
      set(m.moe.shared_intermediate_size, get_int(c, cfg, p, "shared_expert_intermediate_size", false, 0, kMaxDim));
      m.moe.shared_expert_gate = m.moe.shared_intermediate_size > 0;
    }
    if (auto mo = get_string_list(c, cfg, p, "mlp_only_layers", false); mo && !mo->empty())
      c.error(cfg["mlp_only_layers"], join(p, "mlp_only_layers"), "dense-only layers inside a MoE stack are not supported");
  } else if (t == "deepseek_v2" || t == "deepseek_v3") {
    m.attention = AttentionType::mla;
    set(m.mla.kv_lora_rank, get_int(c, cfg, p, "kv_lora_rank", true, 1, kMaxDim));
    if (present(cfg, "q_lora_rank")) set(m.mla.q_lora_rank, get_int(c, cfg, p, "q_lora_rank", false, 0, kMaxDim));
    set(m.mla.qk_rope_head_dim, get_int(c, cfg, p, "qk_rope_head_dim", true, 1, kMaxDim));
    set(m.mla.qk_nope_head_dim, get_int(c, cfg, p, "qk_nope_head_dim", true, 1, kMaxDim));
    set(m.mla.v_head_dim, get_int(c, cfg, p, "v_head_dim", true, 1, kMaxDim));
    m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
    if (present(cfg, "n_routed_experts")) {
      set(m.moe.num_experts, get_int(c, cfg, p, "n_routed_experts", true, 1, 1'000'000));
      set(m.moe.experts_per_token, get_int(c, cfg, p, "num_experts_per_tok", true, 1, 1'000'000));
      set(m.moe.expert_intermediate_size, get_int(c, cfg, p, "moe_intermediate_size", true, 1, kMaxDim));
      std::int64_t shared = 0;
      set(shared, get_int(c, cfg, p, "n_shared_experts", false, 0, 1'000'000));
      m.moe.shared_intermediate_size = shared * m.moe.expert_intermediate_size;
      set(m.moe.first_dense_layers, get_int(c, cfg, p, "first_k_dense_replace", false, 0, 1'000'000));
      set(m.moe.layer_frequency, get_int(c, cfg, p, "moe_layer_freq", false, 1, 1'000'000));
      if (auto tm = get_string(c, cfg, p, "topk_method", false)) m.moe.score_correction_bias = *tm == "noaux_tc";
    }
    // num_nextn_predict_layers (DeepSeek-V3's multi-token-prediction module) is not part of serving
    // without speculative decoding and is left out, as in the published 671B figure.
  } else if (t == "gpt_oss") {
    set(m.moe.num_experts, get_int(c, cfg, p, "num_local_experts", true, 1, 1'000'000));
    const char* k = present(cfg, "num_experts_per_tok") ? "num_experts_per_tok" : "experts_per_token";
    set(m.moe.experts_per_token, get_int(c, cfg, p, k, true, 1, 1'000'000));
    m.moe.expert_intermediate_size = m.intermediate_size;
    m.moe.router_bias = m.moe.expert_bias = true;
    m.qkv_bias = m.o_bias = m.attention_sinks = true;
  }
  if (m.moe.enabled() && t != "deepseek_v2" && t != "deepseek_v3") m.intermediate_size = 0;

  // Checkpoint weight format (vLLM reads quantization_config).
  if (present(root, "quantization_config") && root["quantization_config"].IsMap()) {
    if (auto qm = get_string(c, root["quantization_config"], "quantization_config", "quant_method", false)) {
      if (*qm == "fp8") m.quantization = DType::fp8;
      else if (*qm == "awq" || *qm == "gptq") m.quantization = DType::int4;
      else if (*qm == "mxfp4") m.quantization = DType::mxfp4;
    }
  }

  // vLLM's derived max_model_len: rope scaling other than su/longrope/llama3 multiplies it (yarn from
  // original_max_position_embeddings).
  if (present(cfg, "rope_scaling") && cfg["rope_scaling"].IsMap()) {
    const YAML::Node rs = cfg["rope_scaling"];
    std::string rt;
    if (present(rs, "rope_type")) rt = rs["rope_type"].Scalar();
    else if (present(rs, "type")) rt = rs["type"].Scalar();
    if (!rt.empty() && rt != "su" && rt != "longrope" && rt != "llama3" && rt != "default" && rt != "mrope") {
      double factor = 1.0;
      if (auto f = get_number(c, rs, join(p, "rope_scaling"), "factor", false, 0, 1e6)) factor = *f;
      std::int64_t base = m.max_position_embeddings;
      if (rt == "yarn")
        if (auto o = get_int(c, rs, join(p, "rope_scaling"), "original_max_position_embeddings", false, 1, kMaxDim)) base = *o;
      m.max_position_embeddings = static_cast<std::int64_t>(std::llround(static_cast<double>(base) * factor));
    }
  }

  if (c.diags.empty()) {
    try {
      validate(m);
    } catch (const SpecError& e) {
      c.error(root, e.field(), e.reason());
    }
  }
  c.throw_if_any();
  return m;
}

}  // namespace kvcap::profiles
