// Hugging Face config.json -> ModelSpec. The key names per model_type follow transformers'
// configuration_*.py classes and vLLM's model files (vllm/model_executor/models/<type>.py); vLLM's
// max_model_len rule is vllm/config/model.py _get_and_verify_max_len.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "kvcap/planner/error.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "reader.hpp"

namespace kvcap::profiles {
using namespace detail;

std::vector<std::string> supported_hf_model_types() {
  return {"llama",       "llama4",     "llama4_text", "mistral",      "mixtral",          "qwen2",
          "qwen2_moe",   "qwen3",      "qwen3_moe",   "gemma",        "gemma2",           "gemma3",
          "gemma3_text", "phi3",       "deepseek_v2", "deepseek_v3",  "deepseek_v32",     "kimi_k2",
          "gpt_oss",     "qwen3_next", "qwen3_5",     "qwen3_5_text", "qwen3_5_moe",      "qwen3_5_moe_text",
          "glm4_moe",    "phimoe",     "phi3small",   "minicpm3",     "granitemoehybrid", "jamba",
          "falcon_h1",   "nemotron_h"};
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
    n.SetTag("!");  // as yaml-cpp tags a quoted scalar: a string, never a number
  } else if (j.is_boolean()) {
    n = j.get<bool>() ? "true" : "false";
  } else {
    n = j.dump();
  }
  return n;
}

// JSON has no tab restriction; YAML does in indentation. Tabs outside strings become spaces (lines and
// columns of every token stay where they were) so yaml-cpp can parse the file and keep positions.
std::string untab_json(const std::string& text) {
  std::string out = text;
  bool in_string = false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const char ch = out[i];
    if (in_string) {
      if (ch == '\\') ++i;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '\t') {
      out[i] = ' ';
    }
  }
  return out;
}

// A key given twice in one object: json.load (transformers) keeps the last value silently; kvcap refuses.
void check_duplicates(Ctx& c, const YAML::Node& n, const std::string& path, int depth = 0) {
  if (depth > kMaxNestingDepth) return;
  if (n.IsMap()) {
    std::vector<std::pair<std::string, YAML::Mark>> seen;
    for (const auto& kv : n) {
      const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "";
      const auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& p) { return p.first == k; });
      if (it != seen.end())
        c.error(kv.first, join(path, k), "duplicate key (first at line " + std::to_string(it->second.line + 1) +
                                             "); transformers would silently keep this later value: remove one");
      else
        seen.push_back({k, kv.first.Mark()});
      check_duplicates(c, kv.second, join(path, k), depth + 1);
    }
  } else if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i) check_duplicates(c, n[i], path + "[" + std::to_string(i) + "]", depth + 1);
  }
}

YAML::Node parse_config(Ctx& c, const std::string& text) {
  if (!precheck_text(c, text)) return {};  // too large, binary or too deeply nested: no parser sees it
  std::optional<nlohmann::json> as_json;
  std::string json_error;
  try {
    as_json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    json_error = e.what();
    // A JSON object with something after it ("{...} garbage"): yaml-cpp would read the object and drop the rest. Other
    // parse errors go on to yaml-cpp, which reads what JSON does not allow but Python's json writes (NaN, Infinity).
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{' &&
        std::string_view(e.what()).find("expected end of input") != std::string_view::npos) {
      c.diags.push_back({c.file, 0, 0, "", std::string("not valid JSON: ") + e.what()});
      return {};
    }
  } catch (const nlohmann::json::exception&) {  // out_of_range for 1e400
  }
  c.json_types = as_json.has_value();
  YAML::Node root = parse_text(c, as_json ? untab_json(text) : text);
  if (!c.diags.empty() && !json_error.empty() && c.diags.front().message.starts_with("YAML syntax error")) {
    // Neither JSON nor YAML (a // comment, a missing comma): a config.json is JSON, so JSON's complaint is the one.
    c.diags = {{c.file, 0, 0, "", "not valid JSON: " + json_error}};
    return {};
  }
  if (!c.diags.empty() && as_json) {
    // Valid JSON yaml-cpp cannot read (some escapes): rebuilt from nlohmann's tree, positions lost.
    c.diags.clear();
    root = from_json(*as_json);
  }
  // JSON only: it has no aliases, so the walk visits each node once (a YAML alias bomb would not).
  if (c.diags.empty() && as_json) check_duplicates(c, root, "");
  return root;
}

template <class T, class U>
void set(T& field, const std::optional<U>& v) {
  if (v) field = static_cast<T>(*v);
}

// The KV-cache format a ModelOpt quantization_config names (vllm/utils/torch_utils.py get_kv_cache_quant_algo_string):
// kv_cache_scheme or kv_cache_quant_algo, in its `quantization` mapping or at its top; "FP8" (any case), or a scheme
// {dynamic: false, num_bits: 8, type: float}, is fp8. vLLM maps no other (it warns and keeps auto): auto here too.
DType modelopt_kv_format(const YAML::Node& q) {
  const YAML::Node inner = q["quantization"] && q["quantization"].IsMap() ? q["quantization"] : q;
  // vLLM's order: kv_cache_scheme (nested, then top), then kv_cache_quant_algo (nested, then top); Python's `or`
  // passes over null, "" and {}.
  const auto given = [](const YAML::Node& n) {
    return n && !n.IsNull() && !(n.IsScalar() && n.Scalar().empty()) && !(n.IsMap() && n.size() == 0);
  };
  std::optional<YAML::Node> found;  // yaml-cpp's Node::operator= writes through to the node: hold a copy instead
  for (const char* key : {"kv_cache_scheme", "kv_cache_quant_algo"})
    for (const YAML::Node& where : {inner, q})
      if (!found && where.IsMap() && given(where[key])) found.emplace(where[key]);
  if (!found) return DType::auto_;
  const YAML::Node& kv = *found;
  if (kv.IsMap()) {
    // {dynamic: false, num_bits: 8, type: float}: num_bits compared as a number (8.0 is 8), dynamic as a boolean.
    const auto scalar = [&](const char* k) { return kv[k] && kv[k].IsScalar() ? kv[k].Scalar() : std::string(); };
    const std::string bits_text = scalar("num_bits");
    char* end = nullptr;
    double bits = strtod_decimal(bits_text.c_str(), &end);  // decimal, as JSON writes numbers
    if (end == bits_text.c_str() || *end != '\0') bits = 0;
    const bool fp8 = scalar("dynamic") == "false" && bits == 8 && scalar("type") == "float";
    return fp8 ? DType::fp8 : DType::auto_;
  }
  return kv.IsScalar() && lowercase(kv.Scalar()) == "fp8" ? DType::fp8 : DType::auto_;
}

// The checkpoint's weight format from quantization_config (vLLM model_executor/layers/quantization: the method
// named by quant_method, its bits or scheme). A method kvcap cannot size is an error at the key: read as 16-bit,
// a 4-bit checkpoint's weights would be counted four times over.
void checkpoint_format(Ctx& c, const YAML::Node& q, ModelSpec& m) {
  const std::string path = "quantization_config";
  const auto qm = get_string(c, q, path, "quant_method", true);  // vLLM reads the method from this key
  if (!qm) return;
  // AutoAWQ writes w_bit, transformers' AwqConfig and GPTQConfig bits (vLLM AWQConfig.from_config: ["w_bit", "bits"]).
  auto bits = get_int(c, q, path, "bits", false, 1, 64);
  if (!bits) bits = get_int(c, q, path, "w_bit", false, 1, 64);
  const auto from_bits = [&](i64 b, bool is_float) -> std::optional<DType> {
    if (b == 8) return is_float ? DType::fp8 : DType::int8;
    if (b == 4) return is_float ? DType::nvfp4 : DType::int4;
    return std::nullopt;
  };
  std::optional<DType> d;
  if (*qm == "fp8" || *qm == "fbgemm_fp8") {
    d = DType::fp8;
  } else if (*qm == "awq" || *qm == "gptq" || *qm == "awq_marlin" || *qm == "gptq_marlin") {
    if (!bits) {
      c.error(q, path + ".bits", "'" + *qm + "' needs the weights' bit width (bits or w_bit), as vLLM reads it");
      return;
    }
    d = from_bits(*bits, false);
  } else if (*qm == "mxfp4") {
    d = DType::mxfp4;
  } else if (*qm == "modelopt_fp4") {
    d = DType::nvfp4;  // vLLM's name for ModelOpt NVFP4
  } else if (*qm == "modelopt") {
    // ModelOpt checkpoints name the format in quant_algo: NVFP4 or FP8, at the top or (hf_quant_config.json style)
    // in its `quantization` mapping (vLLM modelopt.py reads both).
    const bool nested = q["quantization"] && q["quantization"].IsMap() && !present(q, "quant_algo");
    const auto qa =
        get_string(c, nested ? q["quantization"] : q, nested ? path + ".quantization" : path, "quant_algo", false);
    d = qa && *qa == "NVFP4" ? std::optional(DType::nvfp4)
        : qa && *qa == "FP8" ? std::optional(DType::fp8)
                             : std::nullopt;
  } else if (*qm == "bitsandbytes") {
    const auto four = get_bool(c, q, path, "load_in_4bit", false), eight = get_bool(c, q, path, "load_in_8bit", false);
    d = four.value_or(false)    ? std::optional(DType::int4)
        : eight.value_or(false) ? std::optional(DType::int8)
                                : std::nullopt;
  } else if (*qm == "compressed-tensors") {
    // llm-compressor: config_groups.<group>.weights {num_bits, type: int|float}; the first group sizes the weights.
    const YAML::Node groups = q["config_groups"];
    if (!groups || !groups.IsMap() || groups.begin() == groups.end()) {
      c.error(groups ? groups : q, path + ".config_groups",
              "compressed-tensors needs a mapping of groups whose weights give num_bits and type (int or float)");
      return;
    }
    // A key that is not a string (YAML allows a mapping as a key; JSON does not) names no group.
    if (!groups.begin()->first.IsScalar()) {
      c.error(groups, path + ".config_groups", "expected group names (strings) as keys");
      return;
    }
    const std::string g = path + ".config_groups." + groups.begin()->first.Scalar();
    const YAML::Node first = groups.begin()->second;
    const YAML::Node w = first.IsMap() ? first["weights"] : YAML::Node();
    if (!w || !w.IsMap()) {
      c.error(first, g + ".weights", "expected the group's weights: {num_bits, type}");
      return;
    }
    const auto nb = get_int(c, w, g + ".weights", "num_bits", true, 1, 64);
    const auto type = get_string(c, w, g + ".weights", "type", true);
    if (!nb || !type) return;
    d = from_bits(*nb, *type == "float");
    if (!d) {
      c.error(w["num_bits"], g + ".weights.num_bits",
              std::to_string(*nb) + "-bit weights are not a format kvcap can size (4 or 8)");
      return;
    }
  }
  if (d) {
    m.quantization = *d;
    if (qm->rfind("modelopt", 0) == 0) m.kv_cache_dtype = modelopt_kv_format(q);
    return;
  }
  c.error(q["quant_method"], path + ".quant_method",
          "quantization method '" + *qm + "'" + (bits ? " (" + std::to_string(*bits) + " bits)" : std::string()) +
              " is not one kvcap can size; known: fp8, fbgemm_fp8, awq, gptq (4 or 8 bits), mxfp4, modelopt_fp4, "
              "modelopt (quant_algo FP8 or NVFP4), bitsandbytes (4 or 8 bit), compressed-tensors (int or float, 4 or "
              "8 bits). Give the weights' format in the YAML profile instead (quantization: int4, fp8, ...)");
}

// vLLM resolves a model by its `architectures` entry (vllm/model_executor/models/registry.py); a
// model_type kvcap does not know is read with the rules of the family its architecture names.
std::string family_of_architecture(const std::string& arch) {
  static const std::pair<const char*, const char*> kMap[] = {{"LlamaForCausalLM", "llama"},
                                                             {"Llama4ForConditionalGeneration", "llama4"},
                                                             {"Llama4ForCausalLM", "llama4_text"},
                                                             {"MistralForCausalLM", "mistral"},
                                                             {"MixtralForCausalLM", "mixtral"},
                                                             {"Qwen2ForCausalLM", "qwen2"},
                                                             {"Qwen2MoeForCausalLM", "qwen2_moe"},
                                                             {"Qwen3ForCausalLM", "qwen3"},
                                                             {"Qwen3MoeForCausalLM", "qwen3_moe"},
                                                             {"GemmaForCausalLM", "gemma"},
                                                             {"Gemma2ForCausalLM", "gemma2"},
                                                             {"Gemma3ForCausalLM", "gemma3_text"},
                                                             {"Gemma3ForConditionalGeneration", "gemma3"},
                                                             {"Phi3ForCausalLM", "phi3"},
                                                             {"DeepseekV2ForCausalLM", "deepseek_v2"},
                                                             {"DeepseekV3ForCausalLM", "deepseek_v3"},
                                                             {"DeepseekV32ForCausalLM", "deepseek_v32"},
                                                             {"GptOssForCausalLM", "gpt_oss"},
                                                             {"Qwen3NextForCausalLM", "qwen3_next"},
                                                             {"Qwen3_5ForConditionalGeneration", "qwen3_5"},
                                                             {"Qwen3_5ForCausalLM", "qwen3_5_text"},
                                                             {"Qwen3_5MoeForConditionalGeneration", "qwen3_5_moe"},
                                                             {"Qwen3_5MoeForCausalLM", "qwen3_5_moe_text"},
                                                             {"Glm4MoeForCausalLM", "glm4_moe"},
                                                             {"PhiMoEForCausalLM", "phimoe"},
                                                             {"GraniteMoeHybridForCausalLM", "granitemoehybrid"},
                                                             {"JambaForCausalLM", "jamba"},
                                                             {"FalconH1ForCausalLM", "falcon_h1"},
                                                             {"NemotronHForCausalLM", "nemotron_h"},
                                                             {"Phi3SmallForCausalLM", "phi3small"},
                                                             {"MiniCPM3ForCausalLM", "minicpm3"}};
  for (const auto& [a, f] : kMap)
    if (arch == a) return f;
  return {};
}

std::string file_stem(const std::string& file) {
  std::string s = file.substr(file.find_last_of("/\\") == std::string::npos ? 0 : file.find_last_of("/\\") + 1);
  if (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0) s.resize(s.size() - 5);
  std::string out;
  for (char ch : s) out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' || ch == '_') ? ch : '-';
  return out;
}
}  // namespace

namespace {
// vllm/config/model.py _get_and_verify_max_len, with vllm/transformers_utils/config.py patch_rope_parameters:
// the smallest of the length keys (model_max_length wins), then rope scaling: every rope type but longrope
// and llama3 multiplies by its factor, yarn from original_max_position_embeddings (a yarn config without it
// is "already scaled": transformers v5 takes max_position_embeddings / factor as the original); Gemma 3 is
// never scaled again. The default max_model_len of a longrope model is original_max_position_embeddings
// (Phi-3-mini-128k: 4096), the derived length its upper limit.
void derive_max_model_len(Ctx& c, YAML::Node& cfg, const std::string& p, const std::string& t, ModelSpec& m) {
  double derived = INFINITY;
  bool given = false;  // a length key present but invalid has its own error already
  for (const char* key : {"max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "max_target_positions",
                          "max_sequence_length", "max_seq_length", "seq_len"})
    if (present(cfg, key)) {
      given = true;
      if (auto v = get_int(c, cfg, p, key, false, 1, kMaxDim)) derived = std::min(derived, static_cast<double>(*v));
    }
  if (present(cfg, "model_max_length")) {
    given = true;
    if (auto v = get_int(c, cfg, p, "model_max_length", false, 1, kMaxDim)) derived = static_cast<double>(*v);
  }
  if (!std::isfinite(derived)) {
    if (given) return;
    c.error(cfg, join(p, "max_position_embeddings"), "required: no length key (max_position_embeddings, n_positions, max_seq_len, seq_length, ...) is given");
    return;
  }
  std::optional<std::int64_t> ompe;
  if (present(cfg, "original_max_position_embeddings"))
    ompe = get_int(c, cfg, p, "original_max_position_embeddings", false, 1, kMaxDim);
  const char* rkey = present(cfg, "rope_parameters") ? "rope_parameters" : "rope_scaling";
  std::vector<std::pair<YAML::Node, std::string>> rps;
  if (present(cfg, rkey) && !cfg[rkey].IsMap())
    c.error(cfg[rkey], join(p, rkey), "expected a mapping such as {\"rope_type\": \"yarn\", \"factor\": 4.0}, or null");
  if (present(cfg, rkey) && cfg[rkey].IsMap()) {
    const YAML::Node r = cfg[rkey];
    bool nested = r.size() > 0;  // transformers v5: one dict per layer type
    for (auto it = r.begin(); it != r.end(); ++it) nested = nested && it->second.IsMap();
    if (nested)
      for (auto it = r.begin(); it != r.end(); ++it) rps.push_back({it->second, join(join(p, rkey), it->first.Scalar())});
    else
      rps.push_back({r, join(p, rkey)});
  }
  bool longrope = false;
  double factor = 1.0;
  for (const auto& [rp, path] : rps) {
    std::string rt;
    if (present(rp, "rope_type")) rt = rp["rope_type"].Scalar();
    else if (present(rp, "type")) rt = rp["type"].Scalar();
    if (rt == "su" || rt == "longrope") {
      longrope = true;
      continue;
    }
    if (t == "gemma3_text" || rt == "llama3") continue;
    if (present(rp, "factor") && !rp["factor"].IsNull())
      if (auto f = get_number(c, rp, path, "factor", false, 1e-6, 1e6)) factor = *f;
    if (rt == "yarn") {
      std::optional<std::int64_t> orig = ompe;
      if (present(rp, "original_max_position_embeddings"))
        orig = get_int(c, rp, path, "original_max_position_embeddings", false, 1, kMaxDim);
      derived = orig ? static_cast<double>(*orig) : derived / factor;
    }
  }
  if (t != "gemma3_text") derived *= factor;
  if (derived >= 9.0e15) {
    c.error(cfg, join(p, "max_position_embeddings"), "the derived maximum length overflows");
    return;
  }
  m.max_position_embeddings = static_cast<std::int64_t>(derived);
  if (longrope && ompe) m.default_max_model_len = *ompe;
}
/// config.json `layer_types` mapped through `names` (its strings to kvcap's layer kinds); an entry outside them is
/// an error at that entry naming the accepted ones, a list of another length than num_hidden_layers an error at the
/// key (transformers' layer_type_validation refuses it). Returns whether the key was there.
bool read_layer_types(Ctx& c, const YAML::Node& cfg, const std::string& p, bool required, std::int64_t num_layers,
                      std::initializer_list<std::pair<const char*, LayerAttention>> names,
                      std::vector<LayerAttention>& out) {
  const auto lt = get_string_list(c, cfg, p, "layer_types", required);
  if (!lt) return false;
  if (num_layers > 0 && std::cmp_not_equal(lt->size(), num_layers)) {
    c.error(cfg["layer_types"], join(p, "layer_types"),
            "has " + std::to_string(lt->size()) + " entries; expected one per layer (num_hidden_layers " +
                std::to_string(num_layers) + ")");
    return true;
  }
  std::string accepted;
  for (const auto& n : names) accepted += (accepted.empty() ? "" : " or ") + std::string(n.first);
  for (std::size_t i = 0; i < lt->size(); ++i) {
    const auto& s = (*lt)[i];
    const auto it = std::find_if(names.begin(), names.end(), [&](const auto& n) { return s == n.first; });
    if (it != names.end()) out.push_back(it->second);
    else
      c.error(cfg["layer_types"][i], join(p, "layer_types").append("[").append(std::to_string(i)).append("]"),
              std::string("expected ").append(accepted).append(", got '").append(s).append("'"));
  }
  return true;
}
/// Which layers of a model with a sliding window slide.
/// - gpt-oss: the even ones, whatever layer_types says (vllm/model_executor/models/gpt_oss.py OAIAttention:
///   `config.sliding_window if self.layer_idx % 2 == 0 else None`).
/// - Otherwise layer_types when given; else, with max_window_layers (Qwen2/Qwen3 configs), layers from that index on
///   slide and the ones below it do not (transformers Qwen2Config/Qwen3Config: "sliding_attention" if
///   i >= max_window_layers); else every layer (Mistral v0.1).
void sliding_layers(Ctx& c, const YAML::Node& cfg, const std::string& p, const std::string& t, ModelSpec& m) {
  if (t == "gpt_oss") {
    m.layer_pattern = {LayerAttention::sliding, LayerAttention::full};
    return;
  }
  if (read_layer_types(c, cfg, p, false, m.num_layers,
                       {{"sliding_attention", LayerAttention::sliding}, {"full_attention", LayerAttention::full}},
                       m.layer_pattern))
    return;
  if (!present(cfg, "max_window_layers")) return;
  const auto below = get_int(c, cfg, p, "max_window_layers", false, 0, kMaxDim);
  if (!below || *below == 0 || m.num_layers <= 0) return;
  if (*below >= m.num_layers) {
    m.sliding_window = 0;  // no layer slides
    return;
  }
  m.layer_pattern.assign(static_cast<std::size_t>(m.num_layers), LayerAttention::full);
  std::fill(m.layer_pattern.begin() + *below, m.layer_pattern.end(), LayerAttention::sliding);
}

// Falcon-H1 (vllm/model_executor/models/falcon_h1.py, transformers FalconH1Config): every layer runs attention and a
// Mamba-2 mixer side by side on the same normed input and sums them (FalconH1ParallelHybrid), then a gated SiLU MLP;
// two RMSNorms per layer. The mixer's width is mamba_d_ssm, or mamba_expand x hidden_size when it is null;
// mamba_d_head "auto" is that width / mamba_n_heads (FalconH1Config.__post_init__); its gated RMSNorm exists only
// with mamba_rms_norm (Mixer2RMSNormGated registers no weight otherwise). The state is in the model dtype
// (MambaStateDtypeCalculator.mamba2_state_dtype with --mamba-ssm-cache-dtype auto).
void falcon_h1(Ctx& c, const YAML::Node& cfg, const std::string& p, ModelSpec& m) {
  m.qkv_bias = m.mlp_bias = false;  // FalconH1Config fixes attention_bias and mlp_bias to False; vLLM builds no bias
  auto& a = m.linear;
  a.kind = LinearAttentionSpec::Kind::mamba2;
  a.parallel = true;
  // FalconH1Config defaults: mamba_d_ssm 1024 when the key is absent (null: mamba_expand x hidden_size),
  // mamba_n_heads 128, mamba_d_head "auto".
  a.intermediate_size = 1024;
  if (cfg.IsMap() && cfg["mamba_d_ssm"].IsDefined() && cfg["mamba_d_ssm"].IsNull()) {
    std::int64_t expand = 2;
    set(expand, get_int(c, cfg, p, "mamba_expand", false, 1, 1'000'000));
    a.intermediate_size = expand * m.hidden_size;
  }
  set(a.intermediate_size, get_int(c, cfg, p, "mamba_d_ssm", false, 1, kMaxDim));
  a.num_value_heads = 128;
  set(a.num_value_heads, get_int(c, cfg, p, "mamba_n_heads", false, 1, kMaxDim));
  if (!present(cfg, "mamba_d_head") || (cfg["mamba_d_head"].IsScalar() && cfg["mamba_d_head"].Scalar() == "auto")) {
    a.value_head_dim = a.intermediate_size / a.num_value_heads;
  } else {
    set(a.value_head_dim, get_int(c, cfg, p, "mamba_d_head", true, 1, kMaxDim));
  }
  // FalconH1Config's validator: mamba_d_head x mamba_n_heads must be the mixer width.
  if (a.value_head_dim * a.num_value_heads != a.intermediate_size)
    c.error(present(cfg, "mamba_d_ssm") ? cfg["mamba_d_ssm"] : cfg, join(p, "mamba_d_ssm"),
            "must equal mamba_n_heads x mamba_d_head (" + std::to_string(a.num_value_heads) + " x " +
                std::to_string(a.value_head_dim) + "), got " + std::to_string(a.intermediate_size));
  a.n_groups = 1, a.state_size = 256, a.conv_kernel = 4, a.conv_bias = true, a.gated_norm = false;
  set(a.n_groups, get_int(c, cfg, p, "mamba_n_groups", false, 1, kMaxDim));
  set(a.state_size, get_int(c, cfg, p, "mamba_d_state", false, 1, kMaxDim));
  set(a.conv_kernel, get_int(c, cfg, p, "mamba_d_conv", false, 2, 1'000'000));
  set(a.conv_bias, get_bool(c, cfg, p, "mamba_conv_bias", false));
  set(a.proj_bias, get_bool(c, cfg, p, "mamba_proj_bias", false));
  set(a.gated_norm, get_bool(c, cfg, p, "mamba_rms_norm", false));
  if (present(cfg, "attn_layer_indices"))
    c.error(
        cfg["attn_layer_indices"], join(p, "attn_layer_indices"),
        "attention on some layers only is not modelled (every published Falcon-H1 has null: attention in every layer)");
}

// Nemotron-H (vllm/model_executor/models/nemotron_h.py): one block per character of hybrid_override_pattern, each
// a single mixer after one RMSNorm: 'M' a Mamba-2 mixer of mamba_num_heads x mamba_head_dim (not expand x hidden),
// '*' attention without RoPE or biases, '-' an MLP of intermediate_size, 'E' a MoE of n_routed_experts (sigmoid
// router with e_score_correction_bias, n_shared_experts x moe_shared_expert_intermediate_size shared); MLPs and
// experts are squared-ReLU up/down projections, not gated. The recurrent state is kept in the config's
// mamba_ssm_cache_dtype, float32 when absent (vllm/model_executor/models/config.py NemotronHForCausalLMConfig,
// applied while --mamba-ssm-cache-dtype is auto; float16 before vllm-project/vllm#39032, merged 2026-04-05: pass
// --mamba-ssm-cache-dtype fp16 for releases before it).
void nemotron_h(Ctx& c, const YAML::Node& cfg, const std::string& p, ModelSpec& m) {
  m.mlp_gated = false;
  m.norms_per_layer = 1;
  m.qkv_bias = false;
  auto& a = m.linear;
  a.kind = LinearAttentionSpec::Kind::mamba2;
  a.num_value_heads = 128, a.value_head_dim = 64, a.state_size = 128, a.n_groups = 8, a.conv_kernel = 4;
  a.conv_bias = true;
  set(a.num_value_heads, get_int(c, cfg, p, "mamba_num_heads", false, 1, kMaxDim));
  set(a.value_head_dim, get_int(c, cfg, p, "mamba_head_dim", false, 1, kMaxDim));
  a.intermediate_size = a.num_value_heads * a.value_head_dim;
  set(a.state_size, get_int(c, cfg, p, "ssm_state_size", false, 1, kMaxDim));
  set(a.n_groups, get_int(c, cfg, p, present(cfg, "n_groups") ? "n_groups" : "mamba_n_groups", false, 1, kMaxDim));
  set(a.conv_kernel,
      get_int(c, cfg, p, present(cfg, "conv_kernel") ? "conv_kernel" : "mamba_d_conv", false, 2, 1'000'000));
  set(a.conv_bias, get_bool(c, cfg, p, present(cfg, "use_conv_bias") ? "use_conv_bias" : "mamba_conv_bias", false));
  set(a.proj_bias, get_bool(c, cfg, p, "use_bias", false));
  a.state_dtype = DType::fp32;
  if (auto sd = get_string(c, cfg, p, "mamba_ssm_cache_dtype", false)) {
    auto dt = parse_dtype(*sd);
    if (!dt || !info(*dt).activation_ok || *dt == DType::auto_)
      c.error(cfg["mamba_ssm_cache_dtype"], join(p, "mamba_ssm_cache_dtype"),
              "expected float32, bfloat16 or float16, got '" + *sd + "'");
    else
      a.state_dtype = *dt;
  }
  if (present(cfg, "moe_latent_size"))
    c.error(cfg["moe_latent_size"], join(p, "moe_latent_size"), "latent MoE projections are not modelled");
  const auto pat = get_string(c, cfg, p, "hybrid_override_pattern", false);  // required: read once above
  if (!pat) return;
  // NemotronHAttention passes config.sliding_window to its Attention (per_layer_sliding_window).
  const LayerAttention attention = m.sliding_window > 0 ? LayerAttention::sliding : LayerAttention::full;
  bool moe = false;
  for (std::size_t i = 0; i < pat->size(); ++i) {
    switch ((*pat)[i]) {
      case 'M':
        m.layer_pattern.push_back(LayerAttention::linear), m.mlp_pattern.push_back(LayerMlp::none);
        break;
      case '*':
        m.layer_pattern.push_back(attention), m.mlp_pattern.push_back(LayerMlp::none);
        break;
      case '-':
        m.layer_pattern.push_back(LayerAttention::none), m.mlp_pattern.push_back(LayerMlp::dense);
        break;
      case 'E':
        m.layer_pattern.push_back(LayerAttention::none), m.mlp_pattern.push_back(LayerMlp::moe);
        moe = true;
        break;
      default:
        c.error(cfg["hybrid_override_pattern"], join(p, "hybrid_override_pattern"),
                "expected the layer kinds M (Mamba-2), * (attention), - (MLP) and E (MoE), got '" +
                    std::string(1, (*pat)[i]) + "' at layer " + std::to_string(i));
        return;
    }
  }
  if (moe) {
    set(m.moe.num_experts, get_int(c, cfg, p, "n_routed_experts", true, 1, 1'000'000));
    set(m.moe.experts_per_token, get_int(c, cfg, p, "num_experts_per_tok", true, 1, 1'000'000));
    set(m.moe.expert_intermediate_size, get_int(c, cfg, p, "moe_intermediate_size", true, 1, kMaxDim));
    std::int64_t shared = 1, width = 0;
    set(shared, get_int(c, cfg, p, "n_shared_experts", false, 0, 1'000'000));
    set(width, get_int(c, cfg, p, "moe_shared_expert_intermediate_size", shared > 0, 1, kMaxDim));
    m.moe.shared_intermediate_size = shared * width;
    m.moe.score_correction_bias = true;
  }
}

// vision_config of Gemma 3 (SiglipVisionConfig) and Llama 4 (Llama4VisionConfig). Every dimension is required:
// a partial vision_config is an error at the missing key rather than a tower sized from guessed defaults.
void vision_encoder(Ctx& c, const YAML::Node& v, const std::string& type, ModelSpec& m) {
  const std::string p = "vision_config";
  auto& s = m.vision;
  s.kind = type == "gemma3" ? VisionSpec::Kind::siglip : VisionSpec::Kind::llama4;
  set(s.hidden_size, get_int(c, v, p, "hidden_size", true, 1, kMaxDim));
  set(s.num_layers, get_int(c, v, p, "num_hidden_layers", true, 1, 1'000'000));
  set(s.intermediate_size, get_int(c, v, p, "intermediate_size", true, 1, kMaxDim));
  set(s.patch_size, get_int(c, v, p, "patch_size", true, 1, 1'000'000));
  set(s.image_size, get_int(c, v, p, "image_size", true, 1, 1'000'000));
  set(s.num_channels, get_int(c, v, p, "num_channels", false, 1, 1'000));
  if (s.kind == VisionSpec::Kind::siglip) {
    // SiglipVisionTransformer: use_head = config.vision_use_head when the key exists, else true.
    s.use_head = true;
    set(s.use_head, get_bool(c, v, p, "vision_use_head", false));
  } else {
    set(s.projector_input_dim, get_int(c, v, p, "projector_input_dim", true, 1, kMaxDim));
    set(s.projector_output_dim, get_int(c, v, p, "projector_output_dim", true, 1, kMaxDim));
    set(s.output_dim, get_int(c, v, p, "vision_output_dim", true, 1, kMaxDim));
    if (auto b = get_bool(c, v, p, "multi_modal_projector_bias", false); b && *b)
      c.error(v["multi_modal_projector_bias"], p + ".multi_modal_projector_bias",
              "a Llama 4 vision adapter with biases is not modelled (every published Llama 4 config has false)");
  }
}

}  // namespace

// One pass over config.json in the order transformers resolves it (family, text_config, defaults, attention, hybrids,
// MoE, quantisation); over the 150-line budget of .clang-tidy: to be split by section (issue 12's note).
// NOLINTNEXTLINE(readability-function-size)
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
  auto arch = get_string_list(c, root, "", "architectures", false);
  c.throw_if_any();
  const auto types = supported_hf_model_types();
  const auto known = [&](const std::string& x) { return std::find(types.begin(), types.end(), x) != types.end(); };
  std::string t = *type;
  if (!known(t) && arch && !arch->empty()) t = family_of_architecture((*arch)[0]);
  if (!known(t)) {
    std::string msg = "unsupported model_type '" + *type + "'";
    if (arch && !arch->empty()) msg += " (architecture " + (*arch)[0] + ")";
    msg += "; supported: ";
    for (std::size_t i = 0; i < types.size(); ++i) msg += (i ? ", " : "") + types[i];
    c.error(root["model_type"], "model_type", msg);
    c.throw_if_any();
  }
  if (t == "kimi_k2") t = "deepseek_v3";  // Kimi-K2 is a DeepseekV3ForCausalLM (vLLM registry)
  const std::string top_family = t;       // gemma3 / llama4: a multimodal checkpoint (before text_config)
  m.family = *type;
  // Multimodal configs (Gemma 3, Llama 4) nest the language model under text_config, as vLLM's
  // get_hf_text_config reads it.
  YAML::Node cfg = root;
  std::string p;  // key path prefix for diagnostics
  if (present(root, "text_config") && !root["text_config"].IsMap())
    c.error(root["text_config"], "text_config", "expected a mapping (the language model's config), or null");
  if (present(root, "text_config") && root["text_config"].IsMap()) {
    cfg.reset(root["text_config"]);  // reset: operator= would overwrite the top level with text_config
    p = "text_config";
    if (auto tt = get_string(c, cfg, p, "model_type", false); tt && known(*tt)) t = *tt;
  }
  // A multimodal Gemma 3 or Llama 4 config without its text_config would plan transformers' default text model (a
  // 3B Gemma, say), whatever the checkpoint is: refused.
  if ((t == "gemma3" || t == "llama4") && !(present(root, "text_config") && root["text_config"].IsMap()))
    c.error(root, "text_config",
            "a " + t + " (multimodal) config holds its language model in text_config; it is missing or null");
  if (t == "gemma3") t = "gemma3_text";
  if (t == "llama4") t = "llama4_text";
  const std::string stem = file_stem(file);
  m.name = stem.empty() ? "imported-" + t : stem;
  m.source = "Hugging Face config.json: " + file;
  if (arch && !arch->empty()) m.display_name = (*arch)[0];
  // transformers' defaults for keys a published config leaves out, per config class:
  // Gemma3TextConfig (transformers/models/gemma3/configuration_gemma3.py): vocab_size 262208, hidden_size 2304,
  // intermediate_size 9216, num_hidden_layers 26, num_attention_heads 8, num_key_value_heads 4, head_dim 256,
  // max_position_embeddings 131072, sliding_window 4096, tie_word_embeddings true.
  // Llama4TextConfig (transformers/models/llama4/configuration_llama4.py): vocab_size 202048, hidden_size 5120,
  // intermediate_size 8192, intermediate_size_mlp 16384, num_hidden_layers 48, num_attention_heads 40,
  // num_key_value_heads 8, head_dim 128, max_position_embeddings 4096 x 32, num_local_experts 16,
  // num_experts_per_tok 1, interleave_moe_layer_step 1, attention_chunk_size 8192.
  // GptOssConfig (transformers/models/gpt_oss/configuration_gpt_oss.py): sliding_window 128.
  // A key set to null stays null, as transformers keeps it (vLLM then reads None: no window, its fallbacks).
  const auto dflt = [&](const char* key, std::int64_t v) {
    if (!std::as_const(cfg)[key].IsDefined()) cfg[key] = v;
  };
  if (t == "gemma3_text") {
    for (const auto& [key, v] : {std::pair<const char*, std::int64_t>{"vocab_size", 262208},
                                 {"hidden_size", 2304},
                                 {"intermediate_size", 9216},
                                 {"num_hidden_layers", 26},
                                 {"num_attention_heads", 8},
                                 {"num_key_value_heads", 4},
                                 {"head_dim", 256},
                                 {"max_position_embeddings", 131072},
                                 {"sliding_window", 4096}})
      dflt(key, v);
  } else if (t == "gpt_oss") {
    dflt("sliding_window", 128);
  } else if (t == "llama4_text") {
    for (const auto& [key, v] : {std::pair<const char*, std::int64_t>{"vocab_size", 202048},
                                 {"hidden_size", 5120},
                                 {"intermediate_size", 8192},
                                 {"intermediate_size_mlp", 16384},
                                 {"num_hidden_layers", 48},
                                 {"num_attention_heads", 40},
                                 {"num_key_value_heads", 8},
                                 {"head_dim", 128},
                                 {"max_position_embeddings", 131072},
                                 {"num_local_experts", 16},
                                 {"num_experts_per_tok", 1},
                                 {"interleave_moe_layer_step", 1},
                                 {"attention_chunk_size", 8192}})
      dflt(key, v);
  }
  if (t == "nemotron_h") {
    // NemotronHConfig (transformers/models/nemotron_h/configuration_nemotron_h.py) derives num_hidden_layers from
    // hybrid_override_pattern, and vLLM (nemotron_h.py NemotronHModel) builds len(hybrid_override_pattern) layers:
    // the pattern's length wins over a stale num_hidden_layers. Older configs name the head width
    // attention_head_dim (renamed head_dim).
    if (auto pat = get_string(c, cfg, p, "hybrid_override_pattern", true)) {
      if (!pat->empty())
        cfg["num_hidden_layers"] = static_cast<std::int64_t>(pat->size());
      else
        c.error(cfg["hybrid_override_pattern"], join(p, "hybrid_override_pattern"), "must not be empty");
    }
    if (!present(cfg, "head_dim") && present(cfg, "attention_head_dim")) cfg["head_dim"] = cfg["attention_head_dim"];
  }
  // dtype: torch_dtype (transformers < 4.56) or dtype.
  // (A nested text_config without a dtype takes the top level's.)
  const YAML::Node dnode = present(cfg, "torch_dtype") || present(cfg, "dtype") ? cfg : root;
  const std::string dp = present(cfg, "torch_dtype") || present(cfg, "dtype") ? p : "";
  const char* dkey = present(dnode, "torch_dtype") ? "torch_dtype" : "dtype";
  if (auto d = get_string(c, dnode, dp, dkey, false)) {
    auto dt = parse_dtype(*d);
    if (!dt || !info(*dt).activation_ok || *dt == DType::auto_)
      c.error(dnode[dkey], join(dp, dkey), "expected bfloat16, float16 or float32, got '" + *d + "'");
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
  if (t == "phi3small" && !present(cfg, "intermediate_size"))
    set(m.intermediate_size, get_int(c, cfg, p, "ff_intermediate_size", true, 1, kMaxDim));
  const bool gemma = t.rfind("gemma", 0) == 0;
  if (t == "deepseek_v32") set(m.index_head_dim, get_int(c, cfg, p, "index_head_dim", true, 1, kMaxDim));
  // transformers' per-family default; MiniCPM3Config and Phi3SmallConfig (remote code) keep
  // PretrainedConfig's true (vLLM phi3_small.py ties lm_head: _tied_weights_keys).
  m.tie_word_embeddings = gemma || t == "minicpm3" || t == "phi3small";
  set(m.tie_word_embeddings, get_bool(c, cfg, p, "tie_word_embeddings", false));
  // An explicit head_dim wins over hidden_size / num_attention_heads.
  if (present(cfg, "head_dim")) set(m.head_dim, get_int(c, cfg, p, "head_dim", false, 1, kMaxDim));
  else if (m.num_heads > 0) m.head_dim = m.hidden_size / m.num_heads;
  set(m.qkv_bias, get_bool(c, cfg, p, "attention_bias", false));
  set(m.mlp_bias, get_bool(c, cfg, p, "mlp_bias", false));

  derive_max_model_len(c, cfg, p, t, m);

  // Sliding window: honoured unless the config switches it off (use_sliding_window false). The Qwen2/Qwen3 config
  // classes default it to off (transformers Qwen2Config, Qwen3Config and their MoE twins: use_sliding_window=False),
  // so a Qwen config that gives a window without the switch does not slide.
  bool use_sw = !(t == "qwen2" || t == "qwen2_moe" || t == "qwen3" || t == "qwen3_moe");
  if (auto u = get_bool(c, cfg, p, "use_sliding_window", false)) use_sw = *u;
  if (use_sw && present(cfg, "sliding_window")) set(m.sliding_window, get_int(c, cfg, p, "sliding_window", false, 1, kMaxDim));
  if (m.sliding_window > 0) sliding_layers(c, cfg, p, t, m);

  if (t == "granitemoehybrid" || t == "jamba") {
    // Mamba hybrids. Granite 4.0 H (vllm/model_executor/models/granitemoehybrid.py): layer_types of "mamba" (Mamba-2)
    // and "attention" layers, each followed by a MoE (or, without experts, a dense shared MLP); attention without
    // RoPE. Jamba (jamba.py): Mamba-1 layers with an attention layer every attn_layer_period-th (at
    // attn_layer_offset), MoE every expert_layer_period-th (at expert_layer_offset).
    auto& a = m.linear;
    const bool granite = t == "granitemoehybrid";
    a.kind = granite ? LinearAttentionSpec::Kind::mamba2 : LinearAttentionSpec::Kind::mamba1;
    std::int64_t expand = 2;
    set(expand, get_int(c, cfg, p, "mamba_expand", true, 1, 1'000'000));
    a.intermediate_size = expand * m.hidden_size;
    set(a.state_size, get_int(c, cfg, p, "mamba_d_state", true, 1, kMaxDim));
    set(a.conv_kernel, get_int(c, cfg, p, "mamba_d_conv", true, 2, 1'000'000));
    set(a.conv_bias, get_bool(c, cfg, p, "mamba_conv_bias", false));
    set(a.proj_bias, get_bool(c, cfg, p, "mamba_proj_bias", false));
    if (granite) {
      set(a.num_value_heads, get_int(c, cfg, p, "mamba_n_heads", true, 1, kMaxDim));
      set(a.value_head_dim, get_int(c, cfg, p, "mamba_d_head", true, 1, kMaxDim));
      set(a.n_groups, get_int(c, cfg, p, "mamba_n_groups", false, 1, kMaxDim));
      read_layer_types(c, cfg, p, true, m.num_layers,
                       {{"mamba", LayerAttention::linear}, {"attention", LayerAttention::full}}, m.layer_pattern);
      std::int64_t experts = 0, shared = 0;
      set(experts, get_int(c, cfg, p, "num_local_experts", false, 0, 1'000'000));
      set(shared, get_int(c, cfg, p, "shared_intermediate_size", false, 0, kMaxDim));
      if (experts > 0) {
        m.moe.num_experts = experts;
        set(m.moe.experts_per_token, get_int(c, cfg, p, "num_experts_per_tok", true, 1, 1'000'000));
        m.moe.expert_intermediate_size = m.intermediate_size;
        m.moe.shared_intermediate_size = shared;
      } else if (shared > 0) {
        m.intermediate_size = shared;  // without experts the shared MLP is the dense MLP
      }
    } else {
      set(a.dt_rank, get_int(c, cfg, p, "mamba_dt_rank", true, 1, kMaxDim));
      std::int64_t period = 8, offset = 4, eperiod = 2, eoffset = 1;
      set(period, get_int(c, cfg, p, "attn_layer_period", false, 1, 1'000'000));
      set(offset, get_int(c, cfg, p, "attn_layer_offset", false, 0, 1'000'000));
      set(eperiod, get_int(c, cfg, p, "expert_layer_period", false, 1, 1'000'000));
      set(eoffset, get_int(c, cfg, p, "expert_layer_offset", false, 0, 1'000'000));
      m.layer_pattern.assign(static_cast<std::size_t>(period), LayerAttention::linear);
      if (offset < period) m.layer_pattern[static_cast<std::size_t>(offset)] = LayerAttention::full;
      set(m.moe.num_experts, get_int(c, cfg, p, "num_experts", true, 1, 1'000'000));
      set(m.moe.experts_per_token, get_int(c, cfg, p, "num_experts_per_tok", true, 1, 1'000'000));
      m.moe.expert_intermediate_size = m.intermediate_size;
      // Layer l is MoE when l % period == offset, i.e. (l + period - offset) % period == 0.
      m.moe.layer_frequency = eperiod;
      m.moe.layer_offset = (eperiod - eoffset % eperiod) % eperiod;
    }
  }
  if (t == "falcon_h1") falcon_h1(c, cfg, p, m);
  if (t == "nemotron_h") nemotron_h(c, cfg, p, m);
  if (t == "granitemoehybrid" || t == "jamba" || t == "falcon_h1" || t == "nemotron_h") {
    // The SSD kernel's chunk as vLLM reads it (vllm/config/model.py ModelConfig.get_mamba_chunk_size:
    // mamba_chunk_size, else chunk_size, else 2048), with the transformers config classes' defaults for an absent
    // key: GraniteMoeHybridConfig and FalconH1Config mamba_chunk_size 256, NemotronHConfig chunk_size 128;
    // JambaConfig has none.
    m.linear.chunk_size = t == "nemotron_h" ? 128 : t == "jamba" ? 0 : 256;
    for (const char* key : {"chunk_size", "mamba_chunk_size"})
      if (present(cfg, key)) set(m.linear.chunk_size, get_int(c, cfg, p, key, false, 1, kMaxDim));
  }
  const bool gdn = t == "qwen3_next" || t.rfind("qwen3_5", 0) == 0;
  if (gdn) {
    // Gated DeltaNet layers with a gated full-attention layer every full_attention_interval-th layer
    // (transformers Qwen3NextConfig / Qwen3_5TextConfig: layer_types[i] = "linear_attention" if
    // (i + 1) % interval else "full_attention"); the attention layers' q_proj also emits an output gate
    // (attn_output_gate, default true), with q/k norms.
    m.qk_norm = m.attention_output_gate = true;
    set(m.attention_output_gate, get_bool(c, cfg, p, "attn_output_gate", false));
    auto& a = m.linear;
    set(a.num_key_heads, get_int(c, cfg, p, "linear_num_key_heads", true, 1, kMaxDim));
    set(a.num_value_heads, get_int(c, cfg, p, "linear_num_value_heads", true, 1, kMaxDim));
    set(a.key_head_dim, get_int(c, cfg, p, "linear_key_head_dim", true, 1, kMaxDim));
    set(a.value_head_dim, get_int(c, cfg, p, "linear_value_head_dim", true, 1, kMaxDim));
    set(a.conv_kernel, get_int(c, cfg, p, "linear_conv_kernel_dim", true, 2, 1'000'000));
    if (auto sd = get_string(c, cfg, p, "mamba_ssm_dtype", false)) {
      auto dt = parse_dtype(*sd);
      if (!dt || !info(*dt).activation_ok || *dt == DType::auto_)
        c.error(cfg["mamba_ssm_dtype"], join(p, "mamba_ssm_dtype"), "expected float32, bfloat16 or float16, got '" + *sd + "'");
      else
        a.state_dtype = *dt;
    }
    if (!read_layer_types(c, cfg, p, false, m.num_layers,
                          {{"linear_attention", LayerAttention::linear}, {"full_attention", LayerAttention::full}},
                          m.layer_pattern)) {
      std::int64_t interval = 4;
      if (auto fi = get_int(c, cfg, p, "full_attention_interval", false, 1, 1'000'000)) interval = *fi;
      m.layer_pattern.assign(static_cast<std::size_t>(interval), LayerAttention::linear);
      m.layer_pattern.back() = LayerAttention::full;
    }
  }
  if (t == "qwen2" || t == "qwen2_moe") m.qkv_bias = true;
  if (t == "qwen3" || t == "qwen3_moe") m.qk_norm = true;
  if (t == "gemma2") {
    m.norms_per_layer = 4;
    // vllm gemma2.py: even layers use the sliding window, odd layers are global.
    if (m.layer_pattern.empty() && m.sliding_window > 0) m.layer_pattern = {LayerAttention::sliding, LayerAttention::full};
  }
  if (t == "llama4_text") {
    // Chunked local attention on the RoPE layers, global NoPE attention on the others
    // (vllm/model_executor/models/llama4.py: use_chunked_local_attn = not nope and attention_chunk_size).
    // no_rope_layers[i] == 0 marks a NoPE layer; empty or absent: every 4th layer (transformers default).
    set(m.attention_chunk_size, get_int(c, cfg, p, "attention_chunk_size", false, 1, kMaxDim));
    std::vector<std::int64_t> rope;
    if (present(cfg, "no_rope_layers") && cfg["no_rope_layers"].IsSequence())
      for (const auto& e : cfg["no_rope_layers"]) rope.push_back(e.as<std::int64_t>(1));
    if (rope.empty())
      for (std::int64_t i = 0; i < m.num_layers; ++i) rope.push_back((i + 1) % 4 != 0 ? 1 : 0);
    if (m.attention_chunk_size > 0)
      for (auto r : rope) m.layer_pattern.push_back(r ? LayerAttention::chunked : LayerAttention::full);
    set(m.moe.num_experts, get_int(c, cfg, p, "num_local_experts", true, 1, 1'000'000));
    set(m.moe.experts_per_token, get_int(c, cfg, p, "num_experts_per_tok", true, 1, 1'000'000));
    m.moe.expert_intermediate_size = m.intermediate_size;
    m.moe.shared_intermediate_size = m.intermediate_size;  // one shared expert of the expert width
    set(m.moe.layer_frequency, get_int(c, cfg, p, "interleave_moe_layer_step", false, 1, 1'000'000));
    // transformers Llama4: moe_layers = range(step - 1, num_hidden_layers, step).
    m.moe.layer_offset = m.moe.layer_frequency - 1;
    set(m.intermediate_size, get_int(c, cfg, p, "intermediate_size_mlp", false, 0, kMaxDim));
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
  // DeepSeek's expert keys (n_routed_experts, n_shared_experts x moe_intermediate_size, first_k_dense_replace,
  // moe_layer_freq), shared by deepseek_v2/v3/v32, kimi_k2 and glm4_moe.
  const auto deepseek_style_moe = [&] {
    set(m.moe.num_experts, get_int(c, cfg, p, "n_routed_experts", true, 1, 1'000'000));
    set(m.moe.experts_per_token, get_int(c, cfg, p, "num_experts_per_tok", true, 1, 1'000'000));
    set(m.moe.expert_intermediate_size, get_int(c, cfg, p, "moe_intermediate_size", true, 1, kMaxDim));
    std::int64_t shared = 0;
    set(shared, get_int(c, cfg, p, "n_shared_experts", false, 0, 1'000'000));
    m.moe.shared_intermediate_size = shared * m.moe.expert_intermediate_size;
    set(m.moe.first_dense_layers, get_int(c, cfg, p, "first_k_dense_replace", false, 0, 1'000'000));
    set(m.moe.layer_frequency, get_int(c, cfg, p, "moe_layer_freq", false, 1, 1'000'000));
  };
  if (t == "mixtral") {
    set(m.moe.num_experts, get_int(c, cfg, p, "num_local_experts", true, 1, 1'000'000));
    set(m.moe.experts_per_token, get_int(c, cfg, p, "num_experts_per_tok", true, 1, 1'000'000));
    m.moe.expert_intermediate_size = m.intermediate_size;
  } else if (t == "qwen2_moe" || t == "qwen3_moe" || t == "qwen3_next" || t.rfind("qwen3_5_moe", 0) == 0) {
    set(m.moe.num_experts, get_int(c, cfg, p, "num_experts", true, 1, 1'000'000));
    set(m.moe.experts_per_token, get_int(c, cfg, p, "num_experts_per_tok", true, 1, 1'000'000));
    set(m.moe.expert_intermediate_size, get_int(c, cfg, p, "moe_intermediate_size", true, 1, kMaxDim));
    set(m.moe.layer_frequency, get_int(c, cfg, p, "decoder_sparse_step", false, 1, 1'000'000));
    if (t == "qwen2_moe" || t == "qwen3_next" || t.rfind("qwen3_5_moe", 0) == 0) {
      set(m.moe.shared_intermediate_size, get_int(c, cfg, p, "shared_expert_intermediate_size", false, 0, kMaxDim));
      m.moe.shared_expert_gate = m.moe.shared_intermediate_size > 0;
    }
    if (auto mo = get_string_list(c, cfg, p, "mlp_only_layers", false); mo && !mo->empty())
      c.error(cfg["mlp_only_layers"], join(p, "mlp_only_layers"), "dense-only layers inside a MoE stack are not supported");
  } else if (t == "deepseek_v2" || t == "deepseek_v3" || t == "deepseek_v32") {
    m.attention = AttentionType::mla;
    set(m.mla.kv_lora_rank, get_int(c, cfg, p, "kv_lora_rank", true, 1, kMaxDim));
    if (present(cfg, "q_lora_rank")) set(m.mla.q_lora_rank, get_int(c, cfg, p, "q_lora_rank", false, 0, kMaxDim));
    set(m.mla.qk_rope_head_dim, get_int(c, cfg, p, "qk_rope_head_dim", true, 1, kMaxDim));
    set(m.mla.qk_nope_head_dim, get_int(c, cfg, p, "qk_nope_head_dim", true, 1, kMaxDim));
    set(m.mla.v_head_dim, get_int(c, cfg, p, "v_head_dim", true, 1, kMaxDim));
    m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
    if (present(cfg, "n_routed_experts")) deepseek_style_moe();
    if (auto tm = get_string(c, cfg, p, "topk_method", false)) m.moe.score_correction_bias = *tm == "noaux_tc";
    // num_nextn_predict_layers (DeepSeek-V3's multi-token-prediction module) is not part of serving
    // without speculative decoding and is left out, as in the published 671B figure.
  } else if (t == "minicpm3") {
    // MiniCPM3 (vllm/model_executor/models/minicpm3.py MiniCPM3Attention): DeepSeek's low-rank q and kv
    // projections, but vLLM caches every head's key (nope + rope) and value (zero-padded to that width):
    // Attention(num_heads, qk_head_dim, num_kv_heads=num_heads). v_head_dim defaults to hidden_size /
    // num_attention_heads (MiniCPM3Config, configuration_minicpm.py).
    set(m.mla.kv_lora_rank, get_int(c, cfg, p, "kv_lora_rank", true, 1, kMaxDim));
    if (present(cfg, "q_lora_rank")) set(m.mla.q_lora_rank, get_int(c, cfg, p, "q_lora_rank", false, 0, kMaxDim));
    set(m.mla.qk_rope_head_dim, get_int(c, cfg, p, "qk_rope_head_dim", true, 1, kMaxDim));
    set(m.mla.qk_nope_head_dim, get_int(c, cfg, p, "qk_nope_head_dim", true, 1, kMaxDim));
    if (m.num_heads > 0) m.mla.v_head_dim = m.hidden_size / m.num_heads;
    if (present(cfg, "v_head_dim")) set(m.mla.v_head_dim, get_int(c, cfg, p, "v_head_dim", false, 1, kMaxDim));
    m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
    m.num_kv_heads = m.num_heads;
  } else if (t == "phi3small") {
    // Phi-3-small (vllm/model_executor/models/phi3_small.py until v0.9): GQA with q/k/v and dense biases,
    // a GeGLU MLP (up_proj 2 x intermediate, down_proj, both with biases), LayerNorms with biases. Its
    // block-sparse layers skip reads of old blocks but vLLM's paged cache still held every token.
    m.qkv_bias = m.o_bias = m.mlp_bias = true;
    m.norms_per_layer = 4;
    m.vllm_note =
        "vLLM removed Phi-3-small (Phi3SmallForCausalLM, block-sparse attention) in v0.10.0 "
        "(vllm-project/vllm#21217); the figures are for its paged cache as vLLM 0.9 kept it, every token of every "
        "layer";
  } else if (t == "glm4_moe") {
    // GLM-4.5 / 4.6 (vllm/model_executor/models/glm4_moe.py): GQA with q/k/v biases (attention_bias) and
    // optional q/k norms (use_qk_norm), DeepSeek-style experts after first_k_dense_replace dense layers,
    // sigmoid routing with e_score_correction_bias; the MTP layer (num_nextn_predict_layers) is not served.
    deepseek_style_moe();
    m.moe.score_correction_bias = true;
    set(m.qk_norm, get_bool(c, cfg, p, "use_qk_norm", false));
  } else if (t == "phimoe") {
    // Phi-3.5-MoE (vllm/model_executor/models/phimoe.py): Mixtral-style experts, biases on q/k/v/o
    // (attention_bias) and on the LM head, LayerNorm (weight and bias) instead of RMSNorm.
    set(m.moe.num_experts, get_int(c, cfg, p, "num_local_experts", true, 1, 1'000'000));
    set(m.moe.experts_per_token, get_int(c, cfg, p, "num_experts_per_tok", true, 1, 1'000'000));
    m.moe.expert_intermediate_size = m.intermediate_size;
    m.o_bias = m.qkv_bias;
    m.norms_per_layer = 4;
  } else if (t == "gpt_oss") {
    set(m.moe.num_experts, get_int(c, cfg, p, "num_local_experts", true, 1, 1'000'000));
    const char* k = present(cfg, "num_experts_per_tok") ? "num_experts_per_tok" : "experts_per_token";
    set(m.moe.experts_per_token, get_int(c, cfg, p, k, true, 1, 1'000'000));
    m.moe.expert_intermediate_size = m.intermediate_size;
    m.moe.router_bias = m.moe.expert_bias = true;
    m.qkv_bias = m.o_bias = m.attention_sinks = true;
  }
  const bool dense_layers_too = t == "deepseek_v2" || t == "deepseek_v3" || t == "deepseek_v32" || t == "glm4_moe" || t == "jamba" ||
                                (t == "llama4_text" && m.moe.layer_frequency > 1);
  if (m.moe.enabled() && !dense_layers_too) m.intermediate_size = 0;

  // The vision encoder vLLM builds beside the language model (weights only), from vision_config.
  if (present(root, "vision_config") && root["vision_config"].IsMap() &&
      (top_family == "gemma3" || top_family == "llama4"))
    vision_encoder(c, root["vision_config"], top_family, m);

  // Checkpoint weight format (vLLM reads quantization_config).
  if (present(root, "quantization_config")) {
    if (root["quantization_config"].IsMap())
      checkpoint_format(c, root["quantization_config"], m);
    else  // read as absent, a quantised checkpoint would be sized as 16-bit weights
      c.error(root["quantization_config"], "quantization_config", "expected an object with quant_method");
  }

  if (c.diags.empty()) {
    try {
      validate(m);
    } catch (const SpecError& e) {
      // Point at the config.json key the model field came from, so the error names what the user wrote.
      static const std::vector<std::pair<std::string, std::vector<std::string>>> kHfKeys = {
          {"num_layers", {"num_hidden_layers"}},
          {"attention.num_heads", {"num_attention_heads"}},
          {"attention.num_kv_heads", {"num_key_value_heads", "num_attention_heads"}},
          {"attention.head_dim", {"head_dim", "hidden_size"}},
          {"attention.sliding_window", {"sliding_window"}},
          {"attention.chunk_size", {"attention_chunk_size"}},
          {"moe.experts_per_token", {"num_experts_per_tok", "experts_per_token"}},
          {"moe.expert_intermediate_size", {"moe_intermediate_size", "intermediate_size"}},
          {"moe.first_dense_layers", {"first_k_dense_replace"}},
          {"moe.layer_frequency", {"interleave_moe_layer_step", "moe_layer_freq", "decoder_sparse_step"}},
          {"mla.kv_lora_rank", {"kv_lora_rank"}},
          {"mla.qk_rope_head_dim", {"qk_rope_head_dim"}},
          {"mla.qk_nope_head_dim", {"qk_nope_head_dim"}},
          {"mla.v_head_dim", {"v_head_dim"}},
          {"mla.q_lora_rank", {"q_lora_rank"}},
          {"hidden_size", {"hidden_size"}},
          {"vocab_size", {"vocab_size"}},
          {"intermediate_size", {"intermediate_size"}},
          {"max_position_embeddings", {"max_position_embeddings", "n_positions"}},
      };
      std::string where = e.field();
      YAML::Node at = root;
      for (const auto& [field, keys] : kHfKeys) {
        if (field != e.field()) continue;
        for (const auto& k : keys)
          if (present(cfg, k.c_str())) {
            where = join(p, k) + " (" + e.field() + ")";
            at.reset(cfg[k]);
            break;
          }
        break;
      }
      c.error(at, where, e.reason());
    }
  }
  c.throw_if_any();
  return m;
}

}  // namespace kvcap::profiles
