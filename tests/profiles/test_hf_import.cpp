// The Hugging Face importer across model types (configs written from the published ones).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "kvcap/planner/deployment.hpp"
#include "kvcap/planner/launch.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/params.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

namespace {
ModelSpec imp(const std::string& s) { return profiles::import_hf(s, "config.json"); }
}  // namespace

TEST_CASE("an explicit head_dim wins over hidden / heads", "[hf]") {
  const auto m = imp(R"({"model_type":"qwen3","hidden_size":1024,"intermediate_size":3072,"num_hidden_layers":28,
    "num_attention_heads":16,"num_key_value_heads":8,"head_dim":128,"vocab_size":151936,"max_position_embeddings":40960,
    "tie_word_embeddings":true,"torch_dtype":"bfloat16"})");
  CHECK(m.head_dim == 128);  // not 1024 / 16 = 64
  CHECK(m.qk_norm);
  CHECK(std::round(static_cast<double>(param_counts(m).total) / 1e7) == 60);  // Qwen3-0.6B: 0.60B (tied)
}

TEST_CASE("gemma2 alternates sliding and global layers, gemma3 nests text_config", "[hf]") {
  const auto g2 = imp(R"({"model_type":"gemma2","hidden_size":3584,"intermediate_size":14336,"num_hidden_layers":42,
    "num_attention_heads":16,"num_key_value_heads":8,"head_dim":256,"vocab_size":256000,"max_position_embeddings":8192,
    "sliding_window":4096,"torch_dtype":"float32"})");
  CHECK(g2.tie_word_embeddings);
  CHECK(layer_attention(g2, 0) == LayerAttention::sliding);
  CHECK(layer_attention(g2, 1) == LayerAttention::full);
  CHECK(std::round(static_cast<double>(param_counts(g2).total) / 1e7) == 924);  // Gemma-2-9B: 9.24B
  const auto g3 = imp(R"({"model_type":"gemma3","architectures":["Gemma3ForConditionalGeneration"],"text_config":{
    "model_type":"gemma3_text","hidden_size":2560,"intermediate_size":10240,"num_hidden_layers":34,"num_attention_heads":8,
    "num_key_value_heads":4,"head_dim":256,"vocab_size":262208,"max_position_embeddings":131072,"sliding_window":1024,
    "sliding_window_pattern":6,"torch_dtype":"bfloat16"}})");
  CHECK(g3.num_layers == 34);
  CHECK(layer_attention(g3, 4) == LayerAttention::sliding);
  CHECK(layer_attention(g3, 5) == LayerAttention::full);
  CHECK(layer_attention(g3, 11) == LayerAttention::full);
}

TEST_CASE("qwen2 carries q/k/v biases and honours use_sliding_window: false", "[hf]") {
  const auto m = imp(R"({"model_type":"qwen2","hidden_size":3584,"intermediate_size":18944,"num_hidden_layers":28,
    "num_attention_heads":28,"num_key_value_heads":4,"vocab_size":152064,"max_position_embeddings":32768,
    "sliding_window":131072,"use_sliding_window":false,"tie_word_embeddings":false,"torch_dtype":"bfloat16"})");
  CHECK(m.qkv_bias);
  CHECK(m.sliding_window == 0);
  CHECK(std::round(static_cast<double>(param_counts(m).total) / 1e7) == 762);  // Qwen2-7B: 7.62B
}

TEST_CASE("qwen2_moe: 60 routed experts beside a gated shared expert", "[hf]") {
  // Qwen/Qwen1.5-MoE-A2.7B config.json shape; published 14.3B total, "2.7B activated" (embeddings included).
  const auto m = imp(R"({"model_type":"qwen2_moe","hidden_size":2048,"intermediate_size":5632,"num_hidden_layers":24,
    "num_attention_heads":16,"num_key_value_heads":16,"vocab_size":151936,"max_position_embeddings":8192,"num_experts":60,
    "num_experts_per_tok":4,"moe_intermediate_size":1408,"shared_expert_intermediate_size":5632,"decoder_sparse_step":1,
    "tie_word_embeddings":false,"torch_dtype":"bfloat16"})");
  CHECK(m.qkv_bias);
  CHECK(m.moe.shared_expert_gate);
  const auto c = param_counts(m);
  CHECK(std::fabs(static_cast<double>(c.total) / 14.3e9 - 1) < 0.005);
  CHECK(std::fabs(static_cast<double>(c.active) / 2.7e9 - 1) < 0.01);
}

TEST_CASE("qwen3_moe and gpt_oss experts, mixture counts active per token", "[hf]") {
  const auto q = imp(R"({"model_type":"qwen3_moe","hidden_size":2048,"intermediate_size":6144,"moe_intermediate_size":768,
    "num_hidden_layers":48,"num_attention_heads":32,"num_key_value_heads":4,"head_dim":128,"vocab_size":151936,
    "max_position_embeddings":40960,"num_experts":128,"num_experts_per_tok":8,"decoder_sparse_step":1,
    "mlp_only_layers":[],"tie_word_embeddings":false,"torch_dtype":"bfloat16"})");
  const auto qc = param_counts(q);
  CHECK(std::round(static_cast<double>(qc.total) / 1e8) == 305);   // Qwen3-30B-A3B: 30.5B
  CHECK(std::fabs(static_cast<double>(qc.active) / 3.3e9 - 1) < 0.02);  // "3.3B activated"
  const auto g = imp(R"({"model_type":"gpt_oss","hidden_size":2880,"intermediate_size":2880,"num_hidden_layers":24,
    "num_attention_heads":64,"num_key_value_heads":8,"head_dim":64,"vocab_size":201088,"max_position_embeddings":131072,
    "num_local_experts":32,"num_experts_per_tok":4,"sliding_window":128,"tie_word_embeddings":false,
    "layer_types":["sliding_attention","full_attention"],"quantization_config":{"quant_method":"mxfp4"},
    "torch_dtype":"bfloat16"})");
  const auto gc = param_counts(g);
  CHECK(std::round(static_cast<double>(gc.total) / 1e8) == 209);  // gpt-oss-20b: 20.9B
  CHECK(std::round(static_cast<double>(gc.active - gc.embedding) / 1e8) == 36);  // 3.6B, OpenAI's count
  CHECK(g.quantization == DType::mxfp4);
  CHECK(layer_attention(g, 0) == LayerAttention::sliding);
}

TEST_CASE("which layers slide: gpt-oss's even layers, max_window_layers, layer_types of every layer", "[hf]") {
  const std::string oss = R"({"model_type":"gpt_oss","hidden_size":2880,"intermediate_size":2880,"num_hidden_layers":24,
    "num_attention_heads":64,"num_key_value_heads":8,"head_dim":64,"vocab_size":201088,"max_position_embeddings":131072,
    "num_local_experts":32,"num_experts_per_tok":4,"sliding_window":128,"torch_dtype":"bfloat16")";
  // vLLM's gpt_oss.py slides the even layers with or without layer_types (and whatever it says).
  for (const std::string& extra : {std::string(), std::string(R"(,"layer_types":["sliding_attention"])")}) {
    const auto g = imp(oss + extra + "}");
    int sliding = 0;
    for (std::int64_t i = 0; i < g.num_layers; ++i) sliding += layer_attention(g, i) == LayerAttention::sliding;
    CHECK(sliding == 12);
    CHECK(layer_attention(g, 0) == LayerAttention::sliding);
    CHECK(layer_attention(g, 23) == LayerAttention::full);
  }
  // Qwen2 with its window switched on: layers from max_window_layers on slide (transformers Qwen2Config).
  const std::string qwen = R"({"model_type":"qwen2","hidden_size":3584,"intermediate_size":18944,"num_hidden_layers":28,
    "num_attention_heads":28,"num_key_value_heads":4,"vocab_size":152064,"max_position_embeddings":32768,
    "sliding_window":4096,"use_sliding_window":true,)";
  const auto q = imp(qwen + R"("max_window_layers":21})");
  CHECK(layer_attention(q, 20) == LayerAttention::full);
  CHECK(layer_attention(q, 21) == LayerAttention::sliding);
  CHECK(layer_attention(q, 27) == LayerAttention::sliding);
  // Without use_sliding_window a Qwen config does not slide (the config class defaults it to False).
  std::string unswitched = qwen;
  unswitched.replace(unswitched.find("\"use_sliding_window\":true,"), 26, "");
  CHECK(imp(unswitched + R"("max_window_layers":21})").sliding_window == 0);
  // max_window_layers at the layer count: no layer slides.
  const auto none = imp(qwen + R"("max_window_layers":28})");
  CHECK(none.sliding_window == 0);
  CHECK(layer_attention(none, 27) == LayerAttention::full);
  // layer_types must name every layer (transformers' layer_type_validation).
  CHECK_THROWS_WITH(imp(qwen + R"("layer_types":["full_attention","sliding_attention"]})"),
                    Catch::Contains("layer_types: has 2 entries; expected one per layer (num_hidden_layers 28)"));
}

TEST_CASE("phi3 and DeepSeek V2/V3 import, yarn scaling sets max_model_len as vLLM does", "[hf]") {
  const auto p = imp(R"({"model_type":"phi3","hidden_size":3072,"intermediate_size":8192,"num_hidden_layers":32,
    "num_attention_heads":32,"num_key_value_heads":32,"vocab_size":32064,"max_position_embeddings":4096,
    "sliding_window":2047,"tie_word_embeddings":false,"torch_dtype":"bfloat16"})");
  CHECK(std::round(static_cast<double>(param_counts(p).total) / 1e7) == 382);  // Phi-3-mini: 3.82B
  CHECK(p.sliding_window == 2047);
  const auto v3 = profiles::load_model_file(std::string(KVCAP_FIXTURES) + "/hf/DeepSeek-V3.json");
  CHECK(v3.max_position_embeddings == 4096 * 40);
  CHECK(v3.attention == AttentionType::mla);
  CHECK(v3.moe.first_dense_layers == 3);
}

TEST_CASE("importer errors: unsupported type, missing keys, tab-indented JSON still parses", "[hf]") {
  CHECK_THROWS_WITH(imp(R"({"model_type":"bert","hidden_size":768})"), Catch::Contains("unsupported model_type 'bert'"));
  CHECK_THROWS_WITH(imp(R"({"model_type":"llama","hidden_size":4096})"), Catch::Contains("num_hidden_layers"));
  const auto m = imp("{\n\t\"model_type\": \"llama\",\n\t\"hidden_size\": 4096, \"intermediate_size\": 11008,\n\t\"num_hidden_layers\": 32,"
                     " \"num_attention_heads\": 32, \"vocab_size\": 32000, \"max_position_embeddings\": 4096\n}");
  CHECK(m.num_kv_heads == 32);
  CHECK(param_counts(m).total == 6'738'415'616);  // Llama-2-7B
}

TEST_CASE("importer strictness: duplicate keys, quoted numbers, tab positions, validation errors at the key", "[hf]") {
  const std::string base = "{\n\t\"model_type\": \"llama\",\n\t\"hidden_size\": 4096,\n\t\"intermediate_size\": 11008,\n"
                           "\t\"num_hidden_layers\": 32,\n\t\"vocab_size\": 32000,\n\t\"max_position_embeddings\": 4096,\n";
  // transformers keeps the last of two equal keys without a word; we refuse and name both lines.
  CHECK_THROWS_WITH(imp(base + "\t\"num_attention_heads\": 32,\n\t\"hidden_size\": 5120\n}"),
                    Catch::Contains("config.json:9:2: error: hidden_size: duplicate key (first at line 3)"));
  // A quoted number is a string in JSON: transformers would not read it as 32, nor do we.
  CHECK_THROWS_WITH(imp(base + "\t\"num_attention_heads\": \"32\"\n}"),
                    Catch::Contains("config.json:8:25: error: num_attention_heads: expected an integer, got the string \"32\""));
  CHECK_THROWS_WITH(imp(R"({"model_type": 7})"), Catch::Contains("model_type: expected a string, got 7"));
  // A planner check reports at the config.json key it came from, in the user's name for it.
  CHECK_THROWS_WITH(imp(base + "\t\"num_attention_heads\": 32,\n\t\"num_key_value_heads\": 7\n}"),
                    Catch::Contains("config.json:9:25: error: num_key_value_heads (attention.num_kv_heads): num_heads (32) must be "
                                    "divisible by num_kv_heads (7)"));
  // A text_config or rope_scaling of the wrong type is an error at the key (they were ignored: a default model, no
  // scaling).
  CHECK_THROWS_WITH(imp(base + "\t\"num_attention_heads\": 32,\n\t\"text_config\": \"oops\"\n}"),
                    Catch::Contains("config.json:9:17: error: text_config: expected a mapping"));
  CHECK_THROWS_WITH(imp(base + "\t\"num_attention_heads\": 32,\n\t\"rope_scaling\": \"yarn\"\n}"),
                    Catch::Contains("config.json:9:18: error: rope_scaling: expected a mapping"));
  CHECK(imp(base + "\t\"num_attention_heads\": 32,\n\t\"rope_scaling\": null\n}").max_position_embeddings == 4096);
  // Neither JSON nor YAML (a comment line): JSON's complaint, not yaml-cpp's.
  CHECK_THROWS_WITH(
      imp("// exported by a tool\n" + base + "\t\"num_attention_heads\": 32\n}"),
      Catch::Contains("not valid JSON") && Catch::Contains("line 1, column 1") && !Catch::Contains("YAML"));
  // A length key out of range is that one error, not also "no length key is given".
  try {
    imp("{\"model_type\":\"llama\",\"hidden_size\":4096,\"intermediate_size\":11008,\"num_hidden_layers\":32,"
        "\"num_attention_heads\":32,\"vocab_size\":32000,\"max_position_embeddings\":0}");
    FAIL("max_position_embeddings: 0 imported");
  } catch (const std::exception& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("max_position_embeddings: expected an integer between 1 and"));
    CHECK_THAT(msg, !Catch::Contains("no length key"));
  }
  // The same text without the error still imports (JSON typing does not reject what is well-formed).
  CHECK(imp(base + "\t\"num_attention_heads\": 32,\n\t\"num_key_value_heads\": 8\n}").num_kv_heads == 8);
}

TEST_CASE("max_model_len as vLLM derives it: longrope, already-scaled yarn, rope_parameters, Gemma 3", "[hf][max_model_len]") {
  const std::string base = R"("hidden_size":3072,"intermediate_size":8192,"num_hidden_layers":32,"num_attention_heads":32,
    "num_key_value_heads":32,"vocab_size":32064,"torch_dtype":"bfloat16",)";
  // Phi-3-mini-128k: longrope is never multiplied; vLLM's default is original_max_position_embeddings.
  const auto phi = imp(R"({"model_type":"phi3",)" + base + R"("max_position_embeddings":131072,
    "original_max_position_embeddings":4096,"rope_scaling":{"type":"longrope","long_factor":[1.0],"short_factor":[1.0]}})");
  CHECK(phi.max_position_embeddings == 131072);
  CHECK(phi.default_max_model_len == 4096);
  CHECK(resolve(phi, profiles::resolve_gpu("h100-sxm"), Deployment{}).max_model_len == 4096);
  // yarn from original_max_position_embeddings x factor (gpt-oss, DeepSeek) ...
  const auto y = imp(R"({"model_type":"qwen3",)" + base + R"("max_position_embeddings":131072,"head_dim":96,
    "rope_scaling":{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":32768}})");
  CHECK(y.max_position_embeddings == 131072);
  // ... and "already scaled" without it: max_position_embeddings is taken as the scaled length.
  const auto ys = imp(R"({"model_type":"qwen3",)" + base + R"("max_position_embeddings":32768,"head_dim":96,
    "rope_scaling":{"rope_type":"yarn","factor":40.0}})");
  CHECK(ys.max_position_embeddings == 32768);
  // linear scaling multiplies; transformers v5's rope_parameters key, also nested per layer type.
  const auto lin = imp(R"({"model_type":"llama",)" + base + R"("max_position_embeddings":4096,
    "rope_parameters":{"rope_type":"linear","factor":2.0,"rope_theta":10000}})");
  CHECK(lin.max_position_embeddings == 8192);
  const auto nested = imp(R"({"model_type":"llama",)" + base + R"("max_position_embeddings":4096,
    "rope_parameters":{"full_attention":{"rope_type":"linear","factor":2.0},"sliding_attention":{"rope_type":"default"}}})");
  CHECK(nested.max_position_embeddings == 8192);
  // The smallest length key binds; llama3 scaling never multiplies.
  const auto small = imp(R"({"model_type":"llama",)" + base + R"("max_position_embeddings":8192,"seq_length":4096,
    "rope_scaling":{"rope_type":"llama3","factor":8.0,"original_max_position_embeddings":8192}})");
  CHECK(small.max_position_embeddings == 4096);
  // Gemma 3's 131072 is already scaled (its linear factor 8 is not applied again).
  const auto g3 = profiles::load_model_file(std::string(KVCAP_FIXTURES) + "/hf/gemma-3-27b-it.json");
  CHECK(g3.max_position_embeddings == 131072);
}

TEST_CASE("2026 configs: architectures fallback, Kimi-K2, Llama 4, DeepSeek-V3.2, Gemma 3 defaults", "[hf]") {
  const std::string dir = std::string(KVCAP_FIXTURES) + "/hf/";
  const auto kimi = profiles::load_model_file(dir + "Kimi-K2-Instruct.json");
  CHECK(kimi.attention == AttentionType::mla);
  CHECK(kimi.moe.num_experts == 384);
  CHECK(kimi.name == "Kimi-K2-Instruct");  // the file's stem, not imported-<type>
  // An unknown model_type is read by its architecture; an unknown architecture names both.
  const auto arch = imp(R"({"model_type":"my_llama","architectures":["LlamaForCausalLM"],"hidden_size":4096,
    "intermediate_size":11008,"num_hidden_layers":32,"num_attention_heads":32,"vocab_size":32000,"max_position_embeddings":4096})");
  CHECK(param_counts(arch).total == 6'738'415'616);
  CHECK_THROWS_WITH(imp(R"({"model_type":"zamba2","architectures":["Zamba2ForCausalLM"]})"),
                    Catch::Contains("unsupported model_type 'zamba2' (architecture Zamba2ForCausalLM)"));
  const auto scout = profiles::load_model_file(dir + "Llama-4-Scout-17B-16E.json");
  CHECK(layer_attention(scout, 0) == LayerAttention::chunked);
  CHECK(layer_attention(scout, 3) == LayerAttention::full);
  CHECK(scout.attention_chunk_size == 8192);
  const auto mav = profiles::load_model_file(dir + "Llama-4-Maverick-17B-128E-Instruct.json");
  CHECK_FALSE(layer_is_moe(mav, 0));  // transformers: moe_layers = range(step - 1, L, step)
  CHECK(layer_is_moe(mav, 1));
  CHECK(std::fabs(static_cast<double>(param_counts(mav).total) / 400e9 - 1) < 0.005);
  const auto v32 = profiles::load_model_file(dir + "DeepSeek-V3.2.json");
  CHECK(v32.index_head_dim == 128);
  // Gemma 3's text_config leaves vocab_size and max_position_embeddings to transformers' defaults.
  const auto g3 = profiles::load_model_file(dir + "gemma-3-27b-it.json");
  CHECK(g3.vocab_size == 262208);
  CHECK(g3.dtype == DType::bf16);
  // A text_config that leaves everything to transformers' defaults gets each class's defaults.
  const auto g3d = imp(R"({"model_type":"gemma3","text_config":{"model_type":"gemma3_text"}})");
  CHECK(g3d.num_layers == 26);
  CHECK(g3d.hidden_size == 2304);
  CHECK(g3d.intermediate_size == 9216);
  CHECK(g3d.num_heads == 8);
  CHECK(g3d.num_kv_heads == 4);
  CHECK(g3d.head_dim == 256);
  CHECK(g3d.sliding_window == 4096);
  const auto l4d = imp(R"({"model_type":"llama4","text_config":{"model_type":"llama4_text"}})");
  CHECK(l4d.num_layers == 48);
  CHECK(l4d.hidden_size == 5120);
  CHECK(l4d.num_heads == 40);
  CHECK(l4d.num_kv_heads == 8);
  CHECK(l4d.moe.num_experts == 16);
  CHECK(l4d.moe.experts_per_token == 1);
  CHECK(l4d.vocab_size == 202048);
  CHECK(l4d.attention_chunk_size == 8192);
  // A key set to null stays null, as transformers keeps it: vLLM's get_total_num_kv_heads then falls back to the
  // attention heads, and gemma3.py's sliding layers get no window (every layer is full).
  const auto g3n = imp(R"({"model_type":"gemma3","text_config":{"model_type":"gemma3_text","num_key_value_heads":null,
    "sliding_window":null}})");
  CHECK(g3n.num_kv_heads == g3n.num_heads);
  CHECK(g3n.sliding_window == 0);
  CHECK(layer_attention(g3n, 0) == LayerAttention::full);
  // A multimodal config without its text_config would plan the default text model whatever the checkpoint is.
  for (const char* cfg : {R"({"model_type":"gemma3"})", R"({"model_type":"gemma3","text_config":null})",
                          R"({"model_type":"llama4","hidden_size":5120})"})
    CHECK_THROWS_WITH(imp(cfg), Catch::Contains("text_config: a ") && Catch::Contains("missing or null"));
  // gpt-oss without sliding_window: GptOssConfig's 128 on the even layers.
  const auto oss = imp(R"({"model_type":"gpt_oss","hidden_size":2880,"intermediate_size":2880,"num_hidden_layers":24,
    "num_attention_heads":64,"num_key_value_heads":8,"head_dim":64,"vocab_size":201088,"max_position_embeddings":131072,
    "num_local_experts":32,"num_experts_per_tok":4,"torch_dtype":"bfloat16"})");
  CHECK(oss.sliding_window == 128);
  CHECK(layer_attention(oss, 0) == LayerAttention::sliding);
  CHECK(layer_attention(oss, 1) == LayerAttention::full);
  // A float32 checkpoint is served in bf16 under --dtype auto.
  const auto f32 = imp(R"({"model_type":"gemma2","hidden_size":3584,"intermediate_size":14336,"num_hidden_layers":42,
    "num_attention_heads":16,"num_key_value_heads":8,"head_dim":256,"vocab_size":256000,"max_position_embeddings":8192,
    "sliding_window":4096,"torch_dtype":"float32"})");
  CHECK(f32.dtype == DType::fp32);
  CHECK(resolve(f32, profiles::resolve_gpu("h100-sxm"), Deployment{}).kv_dtype == DType::bf16);
}

TEST_CASE("GLM-4.5-Air and Phi-3.5-MoE import with their published parameter counts", "[hf]") {
  const std::string data = std::string(KVCAP_TEST_DATA) + "/hf/";
  // GLM-4.5-Air (zai-org; config as published, copied in a public conversion script): 106B total / 12B active.
  const auto glm = profiles::load_model_file(data + "GLM-4.5-Air.json");
  CHECK(glm.family == "glm4_moe");
  CHECK(glm.qkv_bias);
  CHECK_FALSE(glm.o_bias);
  CHECK(glm.moe.first_dense_layers == 1);
  CHECK(glm.moe.shared_intermediate_size == 1408);
  CHECK(glm.intermediate_size == 10944);  // the first, dense layer
  CHECK(glm.moe.score_correction_bias);
  CHECK(static_cast<double>(param_counts(glm).total) == Approx(106e9).epsilon(0.01));
  CHECK(kv_elements_per_token_per_layer(glm, 1) == 2 * 8 * 128);
  // Phi-3.5-MoE-instruct (rope factors trimmed): 41.9B total / 6.6B active; longrope: vLLM's default
  // max_model_len is the original 4096.
  const auto phi = profiles::load_model_file(data + "Phi-3.5-MoE-instruct-trimmed.json");
  CHECK(phi.family == "phimoe");
  CHECK(static_cast<double>(param_counts(phi).total) == Approx(41.9e9).epsilon(0.005));
  CHECK(static_cast<double>(param_counts(phi).active) == Approx(6.6e9).epsilon(0.01));
  CHECK(phi.default_max_model_len == 4096);
  CHECK(phi.sliding_window == 0);  // a window as long as the context is no window
}

TEST_CASE("MiniCPM3: MLA projections, every head cached, Phi-3-small with vLLM's removal noted", "[hf]") {
  // openbmb/MiniCPM3-4B's published shape (config.json keys; v_head_dim and tie_word_embeddings left to
  // MiniCPM3Config's defaults: hidden / heads = 64, tied).
  const auto mc = imp(R"({"model_type":"minicpm3","architectures":["MiniCPM3ForCausalLM"],"hidden_size":2560,
    "num_hidden_layers":62,"num_attention_heads":40,"num_key_value_heads":40,"intermediate_size":6400,"vocab_size":73448,
    "q_lora_rank":768,"kv_lora_rank":256,"qk_nope_head_dim":64,"qk_rope_head_dim":32,"max_position_embeddings":32768,
    "rope_scaling":{"type":"longrope","long_factor":[1.0],"short_factor":[1.0],"original_max_position_embeddings":32768},
    "torch_dtype":"bfloat16"})");
  CHECK(mc.attention == AttentionType::gqa);
  CHECK(mc.head_dim == 96);  // qk_nope + qk_rope: the value is zero-padded to it in the cache
  CHECK(mc.num_kv_heads == 40);
  CHECK(mc.mla.v_head_dim == 64);
  // vLLM caches 2 x 40 heads x 96 x 2 bytes per layer: 952,320 bytes per token over 62 layers (an MLA
  // latent would be 62 x 288 x 2 = 35,712).
  Deployment d;
  d.kv_cache_memory_bytes = {8ull << 30};
  const auto p = plan_memory(mc, profiles::resolve_gpu("h100-sxm"), d, {4096});
  CHECK(p.kv_bytes_per_token_per_rank == 62u * 2 * 40 * 96 * 2);
  // Parameters by hand: per layer q_a 2560x768 + 768 + q_b 768x3840 + kv_a 2560x288 + 256 + kv_b 256x5120
  // + o 2560x2560 + norms 2x2560 + MLP 3x2560x6400 = 62,674,944; x 62 + embeddings 73448x2560 (tied)
  // = 4,073,873,408 (+ the final norm): "MiniCPM3-4B".
  CHECK(std::fabs(static_cast<double>(param_counts(mc).total) / 4'073'873'408.0 - 1) < 1e-5);
  // The YAML round trip keeps the MLA projections beside the per-head cache.
  const auto back = profiles::parse_model(profiles::to_yaml(mc), "minicpm3.yaml");
  CHECK(param_counts(back).total == param_counts(mc).total);
  CHECK(back.head_dim == 96);

  // microsoft/Phi-3-small-8k-instruct's shape: GQA 32/8, GeGLU MLP of ff_intermediate_size, biases,
  // LayerNorms, tied embeddings. Published: 7.39B.
  const auto ps = imp(R"({"model_type":"phi3small","architectures":["Phi3SmallForCausalLM"],"hidden_size":4096,
    "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"ff_intermediate_size":14336,
    "vocab_size":100352,"max_position_embeddings":8192,"blocksparse_block_size":64,"dense_attention_every_n_layers":2,
    "hidden_act":"gegelu","torch_dtype":"bfloat16"})");
  CHECK(std::fabs(static_cast<double>(param_counts(ps).total) / 7.39e9 - 1) < 0.005);
  const auto pp = plan_memory(ps, profiles::resolve_gpu("h100-sxm"), d, {4096});
  CHECK(pp.kv_bytes_per_token_per_rank == 32u * 2 * 8 * 128 * 2);
  CHECK(std::find_if(pp.warnings.begin(), pp.warnings.end(), [](const std::string& w) {
          return w.find("removed Phi-3-small") != std::string::npos && w.find("#21217") != std::string::npos;
        }) != pp.warnings.end());
}

TEST_CASE("Gemma (v1): GeGLU, tied embeddings, MQA on 2B", "[hf]") {
  // google/gemma-7b config.json shape; published 8.54B.
  const auto g7 =
      imp(R"({"model_type":"gemma","architectures":["GemmaForCausalLM"],"hidden_size":3072,"intermediate_size":24576,
    "num_hidden_layers":28,"num_attention_heads":16,"num_key_value_heads":16,"head_dim":256,"vocab_size":256000,
    "max_position_embeddings":8192,"torch_dtype":"bfloat16"})");
  CHECK(g7.tie_word_embeddings);
  CHECK(std::fabs(static_cast<double>(param_counts(g7).total) / 8.54e9 - 1) < 0.005);
  // google/gemma-2b: one KV head (MQA); published 2.51B.
  const auto g2 = imp(R"({"model_type":"gemma","hidden_size":2048,"intermediate_size":16384,"num_hidden_layers":18,
    "num_attention_heads":8,"num_key_value_heads":1,"head_dim":256,"vocab_size":256000,"max_position_embeddings":8192})");
  CHECK(std::fabs(static_cast<double>(param_counts(g2).total) / 2.51e9 - 1) < 0.005);
  Deployment d;
  d.kv_cache_memory_bytes = {1ull << 30};
  CHECK(plan_memory(g2, profiles::resolve_gpu("l4"), d, {}).kv_bytes_per_token_per_rank == 18u * 2 * 1 * 256 * 2);
}

TEST_CASE("a ModelOpt checkpoint's KV format is what vLLM's --kv-cache-dtype auto serves (0.13 on)",
          "[hf][quantization][kv]") {
  const std::string base =
      R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
    "torch_dtype": "bfloat16", "quantization_config": )";
  const auto kv = [&](const std::string& cfg) { return imp(base + cfg + "}").kv_cache_dtype; };
  // vllm/utils/torch_utils.py get_kv_cache_quant_algo_string: kv_cache_scheme or kv_cache_quant_algo, in the nested
  // `quantization` mapping or at the top; "FP8" in any case, or a static 8-bit float scheme.
  CHECK(kv(R"({"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"})") == DType::fp8);
  CHECK(kv(R"({"quant_method": "modelopt_fp4", "kv_cache_quant_algo": "fp8"})") == DType::fp8);
  CHECK(kv(R"({"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}})") ==
        DType::fp8);
  CHECK(kv(R"({"quant_method": "modelopt", "quant_algo": "FP8",
                "kv_cache_scheme": {"dynamic": false, "num_bits": 8, "type": "float"}})") == DType::fp8);
  // vLLM maps nothing else (it warns and keeps auto), and reads only ModelOpt checkpoints.
  CHECK(kv(R"({"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "NVFP4"})") == DType::auto_);
  CHECK(kv(R"({"quant_method": "modelopt", "quant_algo": "FP8",
                "kv_cache_scheme": {"dynamic": true, "num_bits": 8, "type": "float"}})") == DType::auto_);
  CHECK(kv(R"({"quant_method": "modelopt", "quant_algo": "FP8"})") == DType::auto_);
  CHECK(kv(R"({"quant_method": "fp8", "kv_cache_quant_algo": "FP8"})") == DType::auto_);
  // vLLM's order: a scheme anywhere before an algo anywhere; null and "" pass over; num_bits is a number.
  CHECK(kv(R"({"quant_method": "modelopt", "quant_algo": "FP8", "quantization": {"kv_cache_quant_algo": "FP8"},
                "kv_cache_scheme": {"dynamic": true, "num_bits": 8, "type": "float"}})") == DType::auto_);
  CHECK(
      kv(R"({"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_scheme": null, "kv_cache_quant_algo": "FP8"})") ==
      DType::fp8);
  CHECK(
      kv(R"({"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_scheme": "", "kv_cache_quant_algo": "FP8"})") ==
      DType::fp8);
  CHECK(kv(R"({"quant_method": "modelopt", "quant_algo": "FP8",
                "kv_cache_scheme": {"dynamic": false, "num_bits": 8.0, "type": "float"}})") == DType::fp8);

  const auto m = imp(base + R"({"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}})");
  const auto g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  CHECK(resolve(m, g, d).kv_dtype == DType::fp8);
  CHECK(auto_kv_dtype(m, d) == DType::fp8);
  d.vllm_version = "0.12";  // before vllm#29980
  CHECK(resolve(m, g, d).kv_dtype == DType::bf16);
  d.vllm_version = "current";
  d.kv_cache_dtype = DType::bf16;  // an explicit format wins
  CHECK(resolve(m, g, d).kv_dtype == DType::bf16);
  // The launch command names bf16, since auto would serve fp8; fp8 needs no flag.
  const auto kv_flag = [](const LaunchCommand& c) {
    const auto it = std::find(c.argv.begin(), c.argv.end(), "--kv-cache-dtype");
    return it == c.argv.end() || it + 1 == c.argv.end() ? std::string("(none)") : *(it + 1);
  };
  CHECK(kv_flag(launch_command(LaunchEngine::vllm, m, d)) == "bfloat16");
  CHECK(kv_flag(launch_command(LaunchEngine::sglang, m, d)) == "(none)");  // SGLang's auto: the model dtype
  d.kv_cache_dtype = DType::fp8;
  CHECK(kv_flag(launch_command(LaunchEngine::vllm, m, d)) == "(none)");
  // SGLang's auto is the model dtype: the checkpoint's fp8 is named.
  CHECK(kv_flag(launch_command(LaunchEngine::sglang, m, d)) == "fp8_e4m3");
  // A profile keeps it: written by import-hf, read back.
  const auto back = profiles::parse_model(profiles::to_yaml(m), "m.yaml");
  CHECK(back.kv_cache_dtype == DType::fp8);
}

TEST_CASE("checkpoint formats from quantization_config, an unknown method an error at the key", "[hf][quantization]") {
  const std::string base =
      R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
    "quantization_config": )";
  const auto q = [&](const std::string& cfg) { return imp(base + cfg + "}").quantization; };
  CHECK(q(R"({"quant_method": "fp8"})") == DType::fp8);
  CHECK(q(R"({"quant_method": "fbgemm_fp8"})") == DType::fp8);
  CHECK(q(R"({"quant_method": "awq", "bits": 4})") == DType::int4);
  CHECK(q(R"({"quant_method": "gptq", "bits": 8})") == DType::int8);
  CHECK(q(R"({"quant_method": "bitsandbytes", "load_in_4bit": true})") == DType::int4);
  CHECK(q(R"({"quant_method": "bitsandbytes", "load_in_8bit": true})") == DType::int8);
  CHECK(
      q(R"({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}})") ==
      DType::fp8);
  CHECK(
      q(R"({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int"}}}})") ==
      DType::int4);
  CHECK(q(R"({"quant_method": "modelopt", "quant_algo": "NVFP4"})") == DType::nvfp4);
  // Before: an unknown method (or bits kvcap cannot size) silently meant 16-bit weights.
  CHECK_THROWS_WITH(
      q(R"({"quant_method": "weird_quant", "bits": 3})"),
      Catch::Contains(
          "quantization_config.quant_method: quantization method 'weird_quant' (3 bits) is not one kvcap can size"));
  CHECK_THROWS_WITH(q(R"({"quant_method": "gptq", "bits": 3})"),
                    Catch::Contains("'gptq' (3 bits) is not one kvcap can size"));
  CHECK_THROWS_WITH(q(R"({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"})"),
                    Catch::Contains("'modelopt' is not one"));
  // A present but malformed quantization_config is an error at its key, never 16-bit weights (red-team cases).
  CHECK(q(R"({"quant_method": "awq", "w_bit": 4})") == DType::int4);  // AutoAWQ's key
  CHECK_THROWS_WITH(q(R"({"quant_method": "awq", "w_bit": 3})"), Catch::Contains("'awq' (3 bits) is not one"));
  CHECK_THROWS_WITH(q(R"({"quant_method": "gptq"})"), Catch::Contains("quantization_config.bits: 'gptq' needs"));
  CHECK_THROWS_WITH(q(R"([1, 2])"), Catch::Contains("quantization_config: expected an object with quant_method"));
  CHECK_THROWS_WITH(q(R"({"bits": 4})"), Catch::Contains("quantization_config.quant_method: required key is missing"));
  CHECK_THROWS_WITH(q(R"({"quant_method": "compressed-tensors", "config_groups": {}})"),
                    Catch::Contains("quantization_config.config_groups: compressed-tensors needs"));
  CHECK_THROWS_WITH(
      q(R"({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 3, "type": "int"}}}})"),
      Catch::Contains("config_groups.g.weights.num_bits: 3-bit weights"));
  // A mapping as a group's key (YAML takes it, JSON does not) was "internal error: bad conversion".
  CHECK_THROWS_WITH(
      q(R"({"quant_method": "compressed-tensors", "config_groups": {{"a": 1}: {"weights": {"num_bits": 4, "type": "int"}}}})"),
      Catch::Contains("config_groups: expected group names (strings) as keys"));
}

TEST_CASE("first_k_dense_replace must leave layers with experts", "[hf]") {
  const std::string cfg =
      R"({"model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944, "num_hidden_layers": 27,
    "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 102400, "max_position_embeddings": 163840,
    "kv_lora_rank": 512, "q_lora_rank": null, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6, "moe_intermediate_size": 1408,
    "first_k_dense_replace": )";
  CHECK(imp(cfg + "1}").moe.first_dense_layers == 1);
  CHECK_THROWS_WITH(imp(cfg + "999}"),
                    Catch::Contains("first_k_dense_replace (moe.first_dense_layers): 999 dense layers first, of 27"));
}

TEST_CASE("multimodal checkpoints: the vision encoder vLLM loads is counted and held on the first stage",
          "[hf][vision]") {
  const std::string dir = std::string(KVCAP_FIXTURES) + "/hf/";
  // The Hub's safetensors counts of the published checkpoints, vision towers included: google/gemma-3-27b-it
  // 27,432,406,640 (keras-hub's gemma3 presets state the same), meta-llama/Llama-4-Scout-17B-16E 108,641,793,536.
  const auto g3 = profiles::load_model_file(dir + "gemma-3-27b-it.json");
  REQUIRE(g3.vision.kind == VisionSpec::Kind::siglip);
  CHECK_FALSE(g3.vision.use_head);  // vision_use_head: false
  CHECK(param_counts(g3).total == 27'432'406'640);
  CHECK(param_counts(g3).vision == 423'060'336);
  CHECK(param_counts(g3).active == param_counts(g3).total - param_counts(g3).vision);  // a text token skips the tower
  const auto scout = profiles::load_model_file(dir + "Llama-4-Scout-17B-16E.json");
  REQUIRE(scout.vision.kind == VisionSpec::Kind::llama4);
  CHECK(param_counts(scout).total == 108'641'793'536);
  CHECK(param_counts(scout).vision == 871'932'416);

  // Weights per rank: the tower's bf16 bytes on stage 0, its linear layers split over TP, none with
  // --language-model-only, and none on a later pipeline stage.
  const auto gpu = profiles::resolve_gpu("h100-sxm");
  const auto bytes = [&](const ModelSpec& m, i64 tp, i64 pp, bool text_only, i64 stage) {
    Deployment d;
    d.tensor_parallel_size = tp;
    d.pipeline_parallel_size = pp;
    d.language_model_only = text_only;
    return weights_bytes_per_rank(m, resolve(m, gpu, d), stage);
  };
  CHECK(bytes(g3, 1, 1, false, 0) - bytes(g3, 1, 1, true, 0) == 2u * 423'060'336u);
  u64 tower_tp2 = 0;
  for (const auto& w : vision_tensors(g3)) tower_tp2 += 2u * static_cast<u64>(elements_per_rank(g3, w, 2));
  CHECK(bytes(g3, 2, 1, false, 0) - bytes(g3, 2, 1, true, 0) == tower_tp2);
  CHECK(tower_tp2 < 2u * 423'060'336u);
  CHECK(tower_tp2 > 423'060'336u);  // replicated embeddings and projector: more than half on each rank
  CHECK(bytes(g3, 1, 2, false, 1) == bytes(g3, 1, 2, true, 1));
  CHECK(bytes(g3, 1, 2, false, 0) > bytes(g3, 1, 2, true, 0));
  // A quantised checkpoint keeps the tower in the model dtype.
  Deployment fp8;
  fp8.quantization = DType::fp8;
  const auto with_fp8 = weights_bytes_per_rank(g3, resolve(g3, gpu, fp8), 0);
  fp8.language_model_only = true;
  CHECK(with_fp8 - weights_bytes_per_rank(g3, resolve(g3, gpu, fp8), 0) == 2u * 423'060'336u);

  // A partial vision_config is an error at the missing key, not a tower from guessed defaults.
  CHECK_THROWS_WITH(imp(R"({"model_type":"gemma3","text_config":{"model_type":"gemma3_text"},
    "vision_config":{"hidden_size":1152,"image_size":896,"intermediate_size":4304,"patch_size":14}})"),
                    Catch::Contains("vision_config.num_hidden_layers"));
  // SigLIP's attention-pooling head is counted when vision_use_head is absent or true (SiglipVisionTransformer).
  const std::string tower = R"("vision_config":{"hidden_size":1152,"image_size":896,"intermediate_size":4304,
    "num_hidden_layers":27,"patch_size":14)";
  const auto with_head = imp(R"({"model_type":"gemma3","text_config":{"model_type":"gemma3_text"},)" + tower + "}}");
  const auto no_head = imp(R"({"model_type":"gemma3","text_config":{"model_type":"gemma3_text"},)" + tower +
                           R"(,"vision_use_head":false}})");
  const i64 h = 1152, f = 4304;
  CHECK(param_counts(with_head).vision - param_counts(no_head).vision ==
        4 * h * h + 4 * h + 3 * h + h * f + f + f * h + h);
  // A checkpoint known by its architecture (model_type unknown) is multimodal all the same.
  const auto by_arch = imp(R"({"model_type":"my_gemma","architectures":["Gemma3ForConditionalGeneration"],
    "text_config":{"model_type":"gemma3_text"},)" +
                           tower + R"(,"vision_use_head":false}})");
  CHECK(param_counts(by_arch).vision == param_counts(no_head).vision);
  // A text-only config has no tower.
  CHECK(param_counts(profiles::load_model_file(dir + "Llama-3.1-8B.json")).vision == 0);
}

TEST_CASE("Nemotron-H and Falcon-H1 configs that kvcap cannot model are refused at the key", "[hf]") {
  const std::string nemo =
      R"({"model_type":"nemotron_h","hidden_size":1024,"num_attention_heads":8,"num_key_value_heads":2,
    "head_dim":128,"vocab_size":1000,"intermediate_size":4096,"max_position_embeddings":4096,"mamba_num_heads":16,
    "mamba_head_dim":64,)";
  CHECK(imp(nemo + R"("hybrid_override_pattern":"M-*-"})").num_layers == 4);
  CHECK_THROWS_WITH(imp(nemo + R"("hybrid_override_pattern":"M-X-"})"),
                    Catch::Contains("hybrid_override_pattern") && Catch::Contains("got 'X' at layer 2"));
  CHECK_THROWS_WITH(imp(nemo + R"("hybrid_override_pattern":"ME*-"})"), Catch::Contains("n_routed_experts"));
  CHECK_THROWS_WITH(imp(nemo + R"("hybrid_override_pattern":"M*","moe_latent_size":512})"),
                    Catch::Contains("moe_latent_size: latent MoE projections are not modelled"));
  const std::string falcon =
      R"({"model_type":"falcon_h1","hidden_size":1024,"num_hidden_layers":4,"num_attention_heads":8,
    "num_key_value_heads":2,"head_dim":64,"vocab_size":1000,"intermediate_size":2048,"max_position_embeddings":4096,
    "mamba_n_heads":16,"mamba_d_ssm":1024,)";
  CHECK(imp(falcon + R"("mamba_d_head":"auto"})").linear.value_head_dim == 64);
  CHECK_THROWS_WITH(imp(falcon + R"("mamba_d_head":64,"attn_layer_indices":[1,3]})"),
                    Catch::Contains("attn_layer_indices: attention on some layers only is not modelled"));
  CHECK_THROWS_WITH(imp(falcon + R"("mamba_d_head":48})"),
                    Catch::Contains("mamba_d_ssm: must equal mamba_n_heads x mamba_d_head (16 x 48), got 1024"));
  // Absent keys take FalconH1Config's defaults: mamba_d_ssm 1024 (null: expand x hidden), 128 heads of width / 128.
  const auto dflt = imp(R"({"model_type":"falcon_h1","hidden_size":1024,"num_hidden_layers":4,"num_attention_heads":8,
    "num_key_value_heads":2,"vocab_size":1000,"intermediate_size":2048,"max_position_embeddings":4096,
    "attention_bias":true})");
  CHECK(dflt.linear.intermediate_size == 1024);
  CHECK(dflt.linear.num_value_heads == 128);
  CHECK(dflt.linear.value_head_dim == 8);
  CHECK_FALSE(dflt.qkv_bias);  // FalconH1Config fixes it to False
  CHECK(imp(R"({"model_type":"falcon_h1","hidden_size":1024,"num_hidden_layers":4,"num_attention_heads":8,
    "num_key_value_heads":2,"vocab_size":1000,"intermediate_size":2048,"max_position_embeddings":4096,
    "mamba_d_ssm":null,"mamba_n_heads":32})")
            .linear.intermediate_size == 2048);
  // Nemotron-H: a sliding window applies to the attention blocks; a model or a pipeline stage without any cache is
  // refused.
  const auto sw = imp(nemo + R"("hybrid_override_pattern":"M-*-","sliding_window":1024})");
  CHECK(layer_attention(sw, 2) == LayerAttention::sliding);
  CHECK_THROWS_WITH(imp(nemo + R"("hybrid_override_pattern":"----"})"),
                    Catch::Contains("no layer attends or keeps a state"));
  // --kv-cache-dtype-skip-layers naming an MLP block skips no attention page: the block stays 16.
  const auto mlp_skip = imp(nemo + R"("hybrid_override_pattern":"*-*-"})");
  Deployment skip;
  skip.max_model_len = 4096;
  skip.kv_cache_dtype = DType::fp8;
  skip.kv_cache_dtype_skip_layers = {"1"};
  CHECK(resolve(mlp_skip, profiles::resolve_gpu("h100-sxm"), skip).block_size == 16);
  skip.kv_cache_dtype_skip_layers = {"0"};
  CHECK(resolve(mlp_skip, profiles::resolve_gpu("h100-sxm"), skip).block_size == 32);
  const auto four = imp(nemo + R"("hybrid_override_pattern":"*--M"})");
  Deployment d;
  d.pipeline_parallel_size = 4;
  d.max_model_len = 4096;
  CHECK_THROWS_WITH(plan_memory(four, profiles::resolve_gpu("h100-sxm"), d, {4096}),
                    Catch::Contains("stage 1 (layers 1-1) holds no attention or state layer"));
}
