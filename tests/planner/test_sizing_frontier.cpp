// The purchase answer of a sizing search (issue 17): the Pareto frontier (no dominated point kept, no non-dominated
// point dropped), the best deployment per GPU type, and the launch commands, whose flags plan the same deployment.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>

#include "kvcap/planner/launch.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/sizing.hpp"
#include "kvcap/profiles/flags.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

namespace {
bool dominates(const std::vector<double>& a, const std::vector<double>& b) {
  bool better = false;
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k] < b[k]) return false;
    better = better || a[k] > b[k];
  }
  return better;
}

/// The Llama 3.1 70B question of the README over four GPU types, formats as size searches them.
SizingResult search(const ModelSpec& m) {
  SizingWorkload w;
  w.prompt_tokens = 2048;
  w.output_tokens = 256;
  w.arrival_rate_per_s = 10;
  SizingTargets t;
  t.ttft_s = 2;
  t.tpot_s = 0.05;
  SizingSpace s;
  for (const char* g : {"h100-sxm", "h200", "a100-80gb", "l40s"}) s.gpus.push_back(profiles::resolve_gpu(g));
  s.max_pp = 2;
  return size_cluster(m, w, t, s);
}

/// "--flag value" words after the command -> FlagTexts, as the CLI reads them.
profiles::FlagTexts flags_of(const std::vector<std::string>& argv, std::size_t first) {
  profiles::FlagTexts f;
  for (std::size_t i = first; i < argv.size(); ++i) {
    REQUIRE(argv[i].rfind("--", 0) == 0);
    const std::string name = argv[i].substr(2);
    const bool value = i + 1 < argv.size() && argv[i + 1].rfind("--", 0) != 0;
    f[name] = value ? argv[++i] : "";
  }
  return f;
}
}  // namespace

TEST_CASE("pareto_frontier keeps exactly the points no other dominates", "[sizing][pareto]") {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t n = 1 + rng() % 40, dims = 1 + rng() % 3;
    std::vector<std::vector<double>> p(n, std::vector<double>(dims));
    for (auto& x : p)
      for (auto& v : x) v = static_cast<double>(rng() % 6);  // few values: many ties and duplicates
    const auto front = pareto_frontier(p);
    std::vector<bool> on(n, false);
    for (const auto i : front) on[i] = true;
    for (std::size_t i = 0; i < n; ++i) {
      bool dominated = false, earlier_twin = false;
      for (std::size_t j = 0; j < n; ++j) {
        dominated = dominated || (j != i && dominates(p[j], p[i]));
        earlier_twin = earlier_twin || (j < i && p[j] == p[i]);
      }
      INFO("trial " << trial << " point " << i);
      CHECK(on[i] == (!dominated && !earlier_twin));
    }
  }
  CHECK(pareto_frontier({}).empty());
  CHECK(pareto_frontier({{1, 5}, {2, 4}, {3, 3}, {1, 1}, {3, 3}}) == std::vector<std::size_t>{0, 1, 2});
}

TEST_CASE("size lists the best deployment per GPU type and a frontier of feasible, non-dominated ones",
          "[sizing][pareto]") {
  const auto m = profiles::resolve_model("llama-3.1-70b");
  const auto r = search(m);
  REQUIRE(r.feasible > 10);
  // Best per GPU type: the first (cheapest) feasible candidate of each type, cheapest type first.
  std::set<std::string> types;
  for (std::size_t k = 0; k < r.best_per_gpu.size(); ++k) {
    const auto i = r.best_per_gpu[k];
    REQUIRE(i < r.feasible);
    if (k > 0) CHECK(i > r.best_per_gpu[k - 1]);
    const auto& c = r.candidates[i];
    types.insert(c.gpu);
    for (std::size_t j = 0; j < i; ++j) CHECK(r.candidates[j].gpu != c.gpu);
  }
  CHECK(types == std::set<std::string>{"h100-sxm", "h200", "a100-80gb", "l40s"});
  CHECK(r.best_per_gpu.size() == 4);
  CHECK(r.best_per_gpu.front() == 0);
  // The frontier: feasible, and no feasible candidate beats one of them on all three axes.
  REQUIRE(!r.pareto.empty());
  auto axes = [&](std::size_t i) {
    const auto& c = r.candidates[i];
    return std::vector<double>{c.tokens_per_s_per_gpu, c.tokens_per_s_per_user, -c.cost_per_million_output_tokens_usd};
  };
  for (const auto i : r.pareto) {
    REQUIRE(i < r.feasible);
    for (std::size_t j = 0; j < r.feasible; ++j) CHECK_FALSE(dominates(axes(j), axes(i)));
  }
  for (std::size_t k = 1; k < r.pareto.size(); ++k)
    CHECK(r.candidates[r.pareto[k - 1]].tokens_per_s_per_gpu >= r.candidates[r.pareto[k]].tokens_per_s_per_gpu);
  // The per-candidate figures: tokens/s/GPU = output tokens/s / GPUs; tokens/s/user = 1 / TPOT; blended cost.
  for (std::size_t i = 0; i < r.feasible; ++i) {
    const auto& c = r.candidates[i];
    CHECK(c.tokens_per_s_per_gpu == Approx(10.0 * 256 / static_cast<double>(c.gpus)));
    CHECK(c.tokens_per_s_per_user == Approx(1 / c.tpot_s));
    CHECK(c.input_tokens_per_s == Approx(10.0 * 2048));
    CHECK(c.cost_per_million_tokens_usd == Approx(c.cost_per_hour_usd / ((10.0 * 2048 + 10.0 * 256) * 3600 / 1e6)));
  }
}

TEST_CASE("the emitted vLLM command plans the same deployment kvcap sized", "[sizing][launch]") {
  const auto m = profiles::resolve_model("llama-3.1-70b");
  const auto r = search(m);
  REQUIRE(r.feasible > 0);
  for (std::size_t i = 0; i < r.feasible; ++i) {
    const auto& c = r.candidates[i];
    REQUIRE(c.deployment);
    const auto cmd = launch_command(LaunchEngine::vllm, m, *c.deployment);
    REQUIRE(cmd.argv.size() > 3);
    CHECK(cmd.argv[0] == "vllm");
    CHECK(cmd.argv[2] == "meta-llama/Llama-3.1-70B");
    // Every flag round-trips through kvcap's own reader of vLLM's flags into the same plan.
    const Deployment back = profiles::deployment_from_flags(flags_of(cmd.argv, 3));
    const auto gpu = profiles::resolve_gpu(c.gpu);
    const auto plan = plan_memory(m, gpu, back, {});
    INFO(c.gpu << " TP" << c.tp << " PP" << c.pp);
    CHECK(to_signed(plan.kv_capacity_tokens, "kv") == c.kv_capacity_tokens);
    CHECK(plan.dep.replicas == c.replicas);
    CHECK(plan.dep.max_model_len == *c.deployment->max_model_len);
    CHECK(plan.dep.max_num_seqs == *c.deployment->max_num_seqs);
    CHECK(plan.dep.max_num_batched_tokens == *c.deployment->max_num_batched_tokens);
    CHECK(plan.dep.weight_dtype == c.weight_dtype);
    CHECK(plan.dep.kv_dtype == c.kv_dtype);
    CHECK(cmd.notes.size() == (c.gpus > 8 && c.replicas > 1 ? 1u : 0u));
  }
}

TEST_CASE("an expert-parallel group launches as DP x EP in vLLM and as DP attention in SGLang",
          "[sizing][launch][ep]") {
  const auto m = profiles::resolve_model("deepseek-r1");
  Deployment d;
  d.num_gpus = 8;  // TP 1 x 8 replicas, experts over all 8
  d.enable_expert_parallel = true;
  d.all2all_backend = Deployment::All2All::deepep_low_latency;
  const auto has = [](const LaunchCommand& c, const std::vector<std::string>& seq) {
    return std::search(c.argv.begin(), c.argv.end(), seq.begin(), seq.end()) != c.argv.end();
  };
  const auto v = launch_command(LaunchEngine::vllm, m, d);
  CHECK(has(v, {"--data-parallel-size", "8"}));
  CHECK(has(v, {"--enable-expert-parallel"}));
  CHECK(has(v, {"--all2all-backend", "deepep_low_latency"}));
  CHECK_FALSE(has(v, {"--tensor-parallel-size"}));
  // SGLang: one TP group of 8 whose attention is data-parallel and whose experts are split over all 8 (its
  // --enable-ep-moe would set EP = --tp-size = 1 here: eight whole copies of the model).
  const auto s = launch_command(LaunchEngine::sglang, m, d);
  CHECK(has(s, {"--tp-size", "8"}));
  CHECK(has(s, {"--dp-size", "8"}));
  CHECK(has(s, {"--enable-dp-attention"}));
  CHECK(has(s, {"--ep-size", "8"}));
  CHECK_FALSE(has(s, {"--enable-ep-moe"}));
  // And the plan of the vLLM command read back is the deployment planned.
  d.tensor_parallel_size = 2;
  d.num_gpus = 8;  // TP 2 x 4 replicas: SGLang TP 8, DP 4, EP 8
  const auto s2 = launch_command(LaunchEngine::sglang, m, d);
  CHECK(has(s2, {"--tp-size", "8"}));
  CHECK(has(s2, {"--dp-size", "4"}));
  CHECK(has(s2, {"--ep-size", "8"}));
}

TEST_CASE("launch commands name each engine's flags and say what they cannot carry", "[sizing][launch]") {
  auto m = profiles::resolve_model("llama-3.1-8b");
  Deployment d;
  d.tensor_parallel_size = 2;
  d.num_gpus = 4;
  d.max_model_len = 8192;
  d.max_num_seqs = 256;
  d.max_num_batched_tokens = 2048;
  d.kv_cache_dtype = DType::fp8;
  d.quantization = DType::fp8;
  const auto s = launch_command(LaunchEngine::sglang, m, d);
  const std::vector<std::string> want = {"python3",
                                         "-m",
                                         "sglang.launch_server",
                                         "--model-path",
                                         "meta-llama/Llama-3.1-8B",
                                         "--tp-size",
                                         "2",
                                         "--dp-size",
                                         "2",
                                         "--context-length",
                                         "8192",
                                         "--mem-fraction-static",
                                         "0.9",
                                         "--max-running-requests",
                                         "256",
                                         "--chunked-prefill-size",
                                         "2048",
                                         "--page-size",
                                         "16",
                                         "--quantization",
                                         "fp8",
                                         "--kv-cache-dtype",
                                         "fp8_e4m3"};
  CHECK(s.argv == want);
  CHECK(s.notes.size() == 1);  // the KV pool is SGLang's own
  // int4 weights from a bf16 checkpoint: no engine quantises to int4 online; int4 KV is vLLM's only.
  d.quantization = DType::int4;
  d.kv_cache_dtype = DType::int4_per_token_head;
  const auto v = launch_command(LaunchEngine::vllm, m, d);
  CHECK(std::find(v.argv.begin(), v.argv.end(), "--quantization") == v.argv.end());
  CHECK(std::find(v.argv.begin(), v.argv.end(), "int4_per_token_head") != v.argv.end());
  REQUIRE(v.notes.size() == 1);
  CHECK_THAT(v.notes[0], Catch::Contains("checkpoint quantised to int4"));
  // A profile without a Hub source is served by its name.
  m.source = "measured in-house";
  CHECK(hf_repo_id(m) == m.name);
  m.source = "https://huggingface.co/org";
  CHECK(hf_repo_id(m) == m.name);
  // A local checkpoint read from its config.json is served from its folder, not by the file's stem ("config").
  m.source = "Hugging Face config.json: models/My-Model/config.json";
  CHECK(hf_repo_id(m) == "models/My-Model");
  m.source = "Hugging Face config.json: config.json";
  CHECK(hf_repo_id(m) == ".");
  m.source = "Hugging Face config.json: fixtures/DeepSeek-V2-Lite.json";  // not the checkpoint's own file: its name
  CHECK(hf_repo_id(m) == m.name);
  // KV formats: the engines' spellings, a note where none exists.
  m.source = "measured in-house";
  d.quantization = DType::auto_;
  d.kv_cache_dtype = DType::bf16;
  d.dtype = DType::fp16;
  const auto bf = launch_command(LaunchEngine::vllm, m, d);
  CHECK(std::find(bf.argv.begin(), bf.argv.end(), "bfloat16") != bf.argv.end());
  d.kv_cache_dtype = DType::int8;
  const auto what_if = launch_command(LaunchEngine::vllm, m, d);
  CHECK(std::find(what_if.argv.begin(), what_if.argv.end(), "--kv-cache-dtype") == what_if.argv.end());
  CHECK_THAT(what_if.notes.back(), Catch::Contains("vLLM has no int8 KV cache flag"));
  d.kv_cache_dtype = DType::fp8_e5m2;
  const auto sg = launch_command(LaunchEngine::sglang, m, d);
  CHECK(std::find(sg.argv.begin(), sg.argv.end(), "fp8_e5m2") != sg.argv.end());
  CHECK_THROWS_AS(parse_launch_engine("trtllm"), SpecError);
}
