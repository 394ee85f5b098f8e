// The deployment flags' one reader (profiles/flags.hpp), shared by the CLI and the dashboard (issue 12: the
// dashboard's own regex refused "1.5K", which the CLI accepts).
#include <catch2/catch.hpp>

#include "kvcap/profiles/flags.hpp"
#include "kvcap/profiles/units.hpp"

using namespace kvcap;
using namespace kvcap::profiles;

TEST_CASE("deployment flags: vLLM names, the value grammar, absent flags keep the base", "[flags]") {
  Deployment base;
  base.block_size = 32;
  base.gpu_memory_utilization = 0.8;
  const Deployment d = deployment_from_flags({{"tensor-parallel-size", "4"},
                                              {"max-model-len", "1.5K"},
                                              {"max-num-batched-tokens", "16k"},
                                              {"kv-cache-dtype", "fp8"},
                                              {"kv-cache-memory", "10GiB,12GiB"},
                                              {"enable-expert-parallel", ""},
                                              {"language-model-only", ""},
                                              {"mamba-cache-mode", "none"},
                                              {"num-gpu-blocks-override", "16"}},
                                             base);
  CHECK(d.tensor_parallel_size == 4);
  CHECK(d.max_model_len == 1536);
  CHECK(d.max_num_batched_tokens == 16000);
  CHECK(d.kv_cache_dtype == DType::fp8);
  CHECK(d.kv_cache_memory_bytes == std::vector<u64>{10ull << 30, 12ull << 30});
  CHECK(d.enable_expert_parallel);
  CHECK(d.language_model_only);
  CHECK_FALSE(base.language_model_only);
  CHECK(d.mamba_cache_mode == Deployment::MambaCache::none);
  CHECK(d.num_gpu_blocks_override == 16u);
  CHECK_FALSE(base.num_gpu_blocks_override);
  CHECK(d.block_size == 32);               // from the base
  CHECK(d.gpu_memory_utilization == 0.8);  // from the base
  CHECK(d.pipeline_parallel_size == 1);
}

TEST_CASE("deployment flags: errors name the flag", "[flags]") {
  CHECK_THROWS_WITH(deployment_from_flags({{"gpu-memory-utilization", "1.5"}}),
                    "--gpu-memory-utilization: expected a fraction in (0, 1], got '1.5'");
  CHECK_THROWS_WITH(deployment_from_flags({{"num-gpus", "1000000"}}),
                    "--num-gpus: expected an integer between 1 and 100000, got '1000000'");
  CHECK_THROWS_WITH(deployment_from_flags({{"quantization", "fp7"}}),
                    Catch::StartsWith("--quantization: unknown value 'fp7'"));
  CHECK_THROWS_WITH(deployment_from_flags({{"mamba-cache-mode", "some"}}),
                    "--mamba-cache-mode: expected auto, none, align or all, got 'some'");
  CHECK(deployment_from_flags({{"mamba-cache-mode", "all"}}).mamba_cache_mode == Deployment::MambaCache::all);
  // Every mode's printed name reads back as that mode (plan's text and JSON and the dashboard's command line print
  // mamba_cache_mode_name).
  for (const auto m : {Deployment::MambaCache::auto_, Deployment::MambaCache::none, Deployment::MambaCache::align,
                       Deployment::MambaCache::all}) {
    CHECK(deployment_from_flags({{"mamba-cache-mode", mamba_cache_mode_name(m)}}).mamba_cache_mode == m);
  }
  CHECK_THROWS_WITH(deployment_from_flags({{"vllm-version", "0.3"}}), Catch::StartsWith("--vllm-version: "));
  CHECK_THROWS_WITH(deployment_from_flags({{"disable-hybrid-kv-cache-manager", ""}, {"hybrid-chunked-local", ""}}),
                    Catch::Contains("contradict each other"));
  CHECK_THROWS_AS(deployment_from_flags({{"max-model-len", "lots"}}), InputError);
  CHECK_THROWS_WITH(
      deployment_from_flags({{"tensor-parallel-size", "2"}, {"data-parallel-size", "4"}, {"num-gpus", "4"}}),
      "--data-parallel-size 4 x (TP 2 x PP 1) = 8 GPUs contradicts --num-gpus 4; give one of the two");
  CHECK_THROWS_WITH(deployment_from_flags({{"decode-context-parallel-size", "0"}}),
                    Catch::StartsWith("--decode-context-parallel-size: expected an integer between 1 and"));
}

TEST_CASE("deployment flags: vLLM's data- and decode-context-parallel sizes", "[flags][dcp]") {
  // --data-parallel-size N: N replicas of TP x PP ranks, i.e. --num-gpus = N x TP x PP (vLLM's flag).
  const Deployment dp = deployment_from_flags({{"tensor-parallel-size", "2"}, {"data-parallel-size", "4"}});
  CHECK(dp.num_gpus == 8);
  const Deployment same =
      deployment_from_flags({{"tensor-parallel-size", "2"}, {"data-parallel-size", "4"}, {"num-gpus", "8"}});
  CHECK(same.num_gpus == 8);
  const Deployment dcp = deployment_from_flags({{"tensor-parallel-size", "8"}, {"decode-context-parallel-size", "8"}});
  CHECK(dcp.decode_context_parallel_size == 8);
  CHECK(deployment_from_flags({}).decode_context_parallel_size == 1);
}

TEST_CASE("deployment flags: --kv-eviction's grammar", "[flags]") {
  const Deployment s = deployment_from_flags({{"kv-eviction", "streaming:sink=4,window=4092"}});
  CHECK(s.kv_eviction.kind == Deployment::Eviction::Kind::streaming);
  CHECK(s.kv_eviction.sink_tokens == 4);
  CHECK(s.kv_eviction.window_tokens == 4092);
  CHECK(s.kv_eviction.describe() == "streaming:sink=4,window=4092");
  const Deployment h = deployment_from_flags({{"kv-eviction", "h2o:budget=0.2,recent=1K"}});
  CHECK(h.kv_eviction.kind == Deployment::Eviction::Kind::h2o);
  CHECK(h.kv_eviction.budget == 0.2);
  CHECK(h.kv_eviction.recent_tokens == 1024);
  CHECK(h.kv_eviction.describe() == "h2o:budget=0.2,recent=1024");
  CHECK(deployment_from_flags({{"kv-eviction", "streaming:sink=0,window=2K"}}).kv_eviction.sink_tokens == 0);
  for (const char* bad : {"h2o", "h2o:budget=x", "h2o:recent=5", "streaming:sink=4", "streaming:window=0",
                          "streaming:budget=0.2,window=8", "lru:budget=0.2", "h2o:budget=0.2,window=8"}) {
    INFO(bad);
    CHECK_THROWS_WITH(deployment_from_flags({{"kv-eviction", bad}}), Catch::StartsWith("--kv-eviction"));
  }
}

TEST_CASE("expert-parallel flags as vLLM spells them: --all2all-backend, --enable-eplb, --eplb-config", "[flags][ep]") {
  const Deployment d = deployment_from_flags({{"enable-expert-parallel", ""},
                                              {"enable-eplb", ""},
                                              {"eplb-config", R"({"num_redundant_experts": 32, "window_size": 1000})"},
                                              {"all2all-backend", "deepep_low_latency"}});
  CHECK(d.enable_eplb);
  CHECK(d.num_redundant_experts == 32);
  CHECK(d.all2all_backend == Deployment::All2All::deepep_low_latency);
  CHECK(std::string(all2all_backend_name(d.all2all_backend)) == "deepep_low_latency");
  CHECK(deployment_from_flags({{"eplb-config", "{}"}}).num_redundant_experts == 0);
  for (const char* bad : {"32", "{\"num_redundant_experts\": -1}", "{\"num_redundant_experts\": 1.5}",
                          "{\"redundant\": 4}", "{not json"}) {
    INFO(bad);
    CHECK_THROWS_WITH(deployment_from_flags({{"eplb-config", bad}}), Catch::StartsWith("--eplb-config"));
  }
  CHECK_THROWS_WITH(deployment_from_flags({{"all2all-backend", "pplx"}}),
                    Catch::StartsWith("--all2all-backend") && Catch::Contains("deepep_low_latency"));
}

TEST_CASE("the listed deployment flags are exactly those the reader takes", "[flags]") {
  // Each listed value flag with a malformed value is refused naming it: the reader reads it. The other way round, the
  // reader refuses (std::logic_error) to read a flag missing from the list, so every test that reads one fails.
  const auto values = deployment_value_flags();
  CHECK(values.size() == 28);
  for (const std::string& f : values) {
    INFO(f);
    CHECK(is_deployment_flag(f));
    CHECK_FALSE(is_deployment_switch(f));
    bool read = false;
    try {
      deployment_from_flags({{f, "7?"}});
    } catch (const InputError& e) {
      read = std::string(e.what()).find("--" + f) != std::string::npos;
    }
    CHECK(read);
  }
  for (const std::string& f : deployment_switches()) {
    INFO(f);
    CHECK(is_deployment_switch(f));
    CHECK(is_deployment_flag(f));
  }
  CHECK(deployment_switches().size() == 5);
  CHECK_FALSE(is_deployment_flag("kv-cach-dtype"));
  CHECK_FALSE(is_deployment_flag("model"));
}

TEST_CASE("deployment flags from a line as typed: names, inline values, switches, and what is refused", "[flags]") {
  const FlagTexts f =
      flag_texts_from_line("  --kv-cache-dtype fp8 --max-model-len=32K\t--enable-expert-parallel --gpu h200 ", {"gpu"});
  CHECK(f == FlagTexts{
                 {"kv-cache-dtype", "fp8"}, {"max-model-len", "32K"}, {"enable-expert-parallel", ""}, {"gpu", "h200"}});
  CHECK(flag_texts_from_line("").empty());
  CHECK(deployment_from_flags(flag_texts_from_line("--kv-eviction h2o:budget=0.2")).kv_eviction.describe() ==
        "h2o:budget=0.2");
  CHECK_THROWS_WITH(flag_texts_from_line("fp8"), Catch::Contains("expected a flag") && Catch::Contains("'fp8'"));
  CHECK_THROWS_WITH(flag_texts_from_line("--gpu h200"), Catch::Contains("unknown flag '--gpu'"));
  CHECK_THROWS_WITH(flag_texts_from_line("--foo 1", {"gpu"}), Catch::Contains("expected --gpu, a deployment flag"));
  CHECK_THROWS_WITH(flag_texts_from_line("--enable-expert-parallel=1"), Catch::Contains("switch and takes no value"));
  CHECK_THROWS_WITH(flag_texts_from_line("--max-model-len"), Catch::Contains("--max-model-len needs a value"));
  CHECK_THROWS_WITH(flag_texts_from_line("--block-size 16 --block-size 32"), Catch::Contains("given twice"));
  CHECK_THROWS_WITH(flag_texts_from_line("--"), Catch::Contains("expected a flag"));
}

TEST_CASE("TensorRT-LLM's KV budget: --free-gpu-memory-fraction, replaced by a later --gpu-memory-utilization",
          "[flags]") {
  const Deployment trt = deployment_from_flags({{"free-gpu-memory-fraction", "0.85"}});
  REQUIRE(trt.free_gpu_memory_fraction);
  CHECK(*trt.free_gpu_memory_fraction == 0.85);
  // Both flags in one set (the command line's defaulted --gpu-memory-utilization): the fraction stands.
  CHECK(deployment_from_flags({{"gpu-memory-utilization", "0.9"}, {"free-gpu-memory-fraction", "0.5"}})
            .free_gpu_memory_fraction == std::optional<double>(0.5));
  // A compare row's own --gpu-memory-utilization over a base with a fraction: vLLM's budget again.
  const Deployment row = deployment_from_flags({{"gpu-memory-utilization", "0.5"}}, trt);
  CHECK(!row.free_gpu_memory_fraction);
  CHECK(row.gpu_memory_utilization == 0.5);
  for (const char* bad : {"0", "1.5", "-0.2", "abc", "nan"}) {
    INFO(bad);
    CHECK_THROWS_WITH(deployment_from_flags({{"free-gpu-memory-fraction", bad}}),
                      Catch::StartsWith("--free-gpu-memory-fraction"));
  }
}
