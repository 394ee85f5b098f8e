// Built-in profiles: every one loads, follows its published config.json, and its derived parameter
// counts match the published figures.
#include <catch2/catch.hpp>

#include <cmath>

#include "kvcap/planner/params.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

TEST_CASE("the required built-in names exist", "[profiles]") {
  const auto models = profiles::builtin_model_names();
  for (const char* n : {"llama-2-7b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "llama-3.1-8b", "llama-3.1-70b",
                        "llama-3.1-405b", "mistral-7b-v0.1", "mistral-7b-v0.3", "mixtral-8x7b", "mixtral-8x22b",
                        "deepseek-v2-lite", "deepseek-v3"})
    CHECK(std::find(models.begin(), models.end(), n) != models.end());
  const auto gpus = profiles::builtin_gpu_names();
  for (const char* n : {"a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "l40s", "b200", "mi300x", "rtx-4090"})
    CHECK(std::find(gpus.begin(), gpus.end(), n) != gpus.end());
}

TEST_CASE("derived parameter counts match the published ones", "[profiles][params]") {
  for (const auto& n : profiles::builtin_model_names()) {
    const auto m = profiles::resolve_model(n);
    const auto c = param_counts(m);
    INFO(n << ": derived " << c.total << " total, " << c.active << " active");
    REQUIRE(m.published_params_total > 0);
    // Published totals are rounded to 3-4 significant figures (a profile may state a coarser precision).
    CHECK(std::fabs(static_cast<double>(c.total) / m.published_params_total - 1) < m.published_params_tolerance);
    if (m.published_params_active > 0) {
      // Mistral counts embeddings in "active"; DeepSeek leaves the input embedding out.
      const double active = static_cast<double>(m.family.rfind("deepseek", 0) == 0 ? c.active - c.embedding : c.active);
      CHECK(std::fabs(active / m.published_params_active - 1) < 0.025);  // "2.4B" is 2.45B rounded
    }
  }
  CHECK(param_counts(profiles::resolve_model("llama-3-8b")).total == 8'030'261'248);
  const auto mixtral = param_counts(profiles::resolve_model("mixtral-8x7b"));
  CHECK(std::round(static_cast<double>(mixtral.total) / 1e8) == 467);
  CHECK(std::round(static_cast<double>(mixtral.active) / 1e8) == 129);
  const auto v3 = param_counts(profiles::resolve_model("deepseek-v3"));
  CHECK(std::round(static_cast<double>(v3.total) / 1e9) == 671);
  CHECK(std::round(static_cast<double>(v3.active - v3.embedding) / 1e9) == 37);
}

TEST_CASE("each built-in model equals the import of its config.json", "[profiles][hf]") {
  const std::pair<const char*, const char*> pairs[] = {{"llama-2-7b", "Llama-2-7b-hf"},
                                                       {"llama-2-70b", "Llama-2-70b-hf"},
                                                       {"llama-3-8b", "Meta-Llama-3-8B"},
                                                       {"llama-3-70b", "Meta-Llama-3-70B"},
                                                       {"llama-3.1-8b", "Llama-3.1-8B"},
                                                       {"llama-3.1-70b", "Llama-3.1-70B"},
                                                       {"llama-3.1-405b", "Llama-3.1-405B"},
                                                       {"mistral-7b-v0.1", "Mistral-7B-v0.1"},
                                                       {"mistral-7b-v0.3", "Mistral-7B-Instruct-v0.3"},
                                                       {"mixtral-8x7b", "Mixtral-8x7B-v0.1"},
                                                       {"mixtral-8x22b", "Mixtral-8x22B-v0.1"},
                                                       {"deepseek-v2-lite", "DeepSeek-V2-Lite"},
                                                       {"deepseek-v3", "DeepSeek-V3"},
                                                       {"gemma-3-27b", "gemma-3-27b-it"},
                                                       {"llama-4-scout", "Llama-4-Scout-17B-16E"}};
  for (const auto& [name, file] : pairs) {
    INFO(name);
    const auto b = profiles::resolve_model(name);
    const auto h = profiles::load_model_file(std::string(KVCAP_FIXTURES) + "/hf/" + file + ".json");
    CHECK(b.num_layers == h.num_layers);
    CHECK(b.hidden_size == h.hidden_size);
    CHECK(b.num_heads == h.num_heads);
    CHECK(b.num_kv_heads == h.num_kv_heads);
    CHECK(b.head_dim == h.head_dim);
    CHECK(b.vocab_size == h.vocab_size);
    CHECK(b.sliding_window == h.sliding_window);
    CHECK(b.max_position_embeddings == h.max_position_embeddings);
    CHECK(b.quantization == h.quantization);
    CHECK(param_counts(b).total == param_counts(h).total);
    CHECK(param_counts(b).vision == param_counts(h).vision);
    CHECK(kv_elements_per_token_per_layer(b, 1) == kv_elements_per_token_per_layer(h, 1));
    // And the writer round-trips.
    const auto again = profiles::parse_model(profiles::to_yaml(h), "roundtrip.yaml");
    CHECK(param_counts(again).total == param_counts(h).total);
    CHECK(param_counts(again).vision == param_counts(h).vision);
    CHECK(again.layer_pattern == h.layer_pattern);
  }
}

TEST_CASE("LLaMA 3.1 405B follows its config (8 KV heads), not the seed's 16", "[profiles]") {
  const auto m = profiles::resolve_model("llama-3.1-405b");
  CHECK(m.num_kv_heads == 8);
  CHECK(kv_elements_per_token_per_layer(m, 1) * 2 * m.num_layers == 516'096);  // 504 KiB per token in bf16
}

TEST_CASE("GPU profiles are physically sensible", "[profiles][gpu]") {
  for (const auto& n : profiles::builtin_gpu_names()) {
    INFO(n);
    const auto g = profiles::resolve_gpu(n);
    CHECK(g.name == n);
    CHECK(g.memory_bytes > (16ull << 30));
    CHECK(g.memory_bytes <= g.memory_marketed_bytes * 11 / 10);  // CUDA reports less than marketed
    CHECK(g.memory_bandwidth_bytes_per_s > 1e11);
    CHECK(g.bf16_dense_flops > 1e13);
    if (g.fp8_dense_flops > 0) CHECK(g.fp8_dense_flops == Approx(2 * g.bf16_dense_flops).epsilon(0.05));
    CHECK(g.interconnect_bandwidth_bytes_per_s > 0);
    // A default price, except where none is published (mi355x.yaml says so; `size --price` skips it).
    if (g.price_per_gpu_hour_usd == 0) CHECK(n == "mi355x");
    CHECK(g.price_per_gpu_hour_usd >= 0);
    CHECK_FALSE(g.sources.empty());
  }
  CHECK(profiles::resolve_gpu("h100-sxm").memory_bytes == 85'028'896'768ull);  // deviceQuery, 79.19 GiB
}
