// The deployment flags' reader (flags.hpp), over the value grammar of units.hpp.
#include "kvcap/profiles/flags.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "kvcap/planner/error.hpp"
#include "kvcap/profiles/units.hpp"

namespace kvcap::profiles {

DType parse_dtype_text(const std::string& s, const std::string& what, bool (*accept)(const DTypeInfo&)) {
  auto d = parse_dtype(s);
  if (!d || !accept(info(*d)))
    throw InputError(what + ": unknown value '" + s + "'; expected one of " + dtype_names(accept));
  return *d;
}

namespace {

bool activation(const DTypeInfo& i) {
  return i.activation_ok;
}
bool weights(const DTypeInfo& i) {
  return i.weights_ok;
}
bool kv(const DTypeInfo& i) {
  return i.kv_ok;
}

/// --kv-layer-sharing: cla:N or minicache:from=L (what-ifs; the planner checks N and L against the model).
Deployment::LayerSharing layer_sharing(const std::string& text) {
  const std::string what = "--kv-layer-sharing";
  const std::string expected =
      "cla:N (N adjacent layers share one cache, N >= 2) or minicache:from=L (layer pairs "
      "from layer L on share one), e.g. cla:2";
  Deployment::LayerSharing s;
  if (text.rfind("cla:", 0) == 0) {
    s.kind = Deployment::LayerSharing::Kind::cla;
    s.factor = parse_int(text.substr(4), what, 2, 1'000'000);
    return s;
  }
  if (text.rfind("minicache:from=", 0) == 0) {
    s.kind = Deployment::LayerSharing::Kind::minicache;
    s.from_layer = parse_int(text.substr(15), what, 0, 1'000'000);
    return s;
  }
  throw InputError(what + ": expected " + expected + ", got '" + text + "'");
}

/// --kv-eviction: streaming:sink=S,window=W or h2o:budget=F[,recent=R] (what-ifs; the planner checks them against
/// the model).
Deployment::Eviction eviction(const std::string& text) {
  const std::string what = "--kv-eviction";
  const std::string expected =
      "streaming:sink=S,window=W (StreamingLLM) or h2o:budget=F[,recent=R] (H2O, F in (0, 1)), "
      "e.g. streaming:sink=4,window=4092 or h2o:budget=0.2";
  const std::string refused = what + ": expected " + expected + ", got '" + text + "'";
  Deployment::Eviction e;
  std::string rest;
  if (text.rfind("streaming:", 0) == 0) {
    e.kind = Deployment::Eviction::Kind::streaming;
    rest = text.substr(10);
  } else if (text.rfind("h2o:", 0) == 0) {
    e.kind = Deployment::Eviction::Kind::h2o;
    rest = text.substr(4);
  } else {
    throw InputError(refused);
  }
  bool window = false, budget = false;
  for (const auto& item : split_list(rest, ',', true)) {
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    const bool streaming = e.kind == Deployment::Eviction::Kind::streaming;
    if (streaming && key == "sink")
      e.sink_tokens = item == "sink=0" ? 0 : parse_tokens(value, what + " sink");
    else if (streaming && key == "window")
      e.window_tokens = parse_tokens(value, what + " window"), window = true;
    else if (!streaming && key == "budget")
      e.budget = parse_real(value, what + " budget", "a fraction in (0, 1)", kPositive, 1), budget = true;
    else if (!streaming && key == "recent")
      e.recent_tokens = item == "recent=0" ? 0 : parse_tokens(value, what + " recent");
    else
      throw InputError(refused);
  }
  if (e.kind == Deployment::Eviction::Kind::streaming && !window)
    throw InputError(what + ": streaming needs window=W, got '" + text + "'");
  if (e.kind == Deployment::Eviction::Kind::h2o && !budget)
    throw InputError(what + ": h2o needs budget=F, got '" + text + "'");
  return e;
}

/// --all2all-backend: the backends whose memory and traffic kvcap models.
Deployment::All2All all2all_backend(const std::string& b) {
  using A = Deployment::All2All;
  if (b == "allgather_reducescatter") return A::allgather_reducescatter;
  if (b == "naive") return A::naive;
  if (b == "deepep_high_throughput") return A::deepep_high_throughput;
  if (b == "deepep_low_latency") return A::deepep_low_latency;
  throw InputError(
      "--all2all-backend: expected allgather_reducescatter, naive, deepep_high_throughput or "
      "deepep_low_latency (the backends kvcap models), got '" +
      b + "'");
}

/// --eplb-config: vLLM's EPLBConfig as JSON; num_redundant_experts is what kvcap models (the memory of the extra
/// expert copies); the balancing schedule's keys are accepted and do not change a plan.
i64 eplb_redundant_experts(const std::string& text) {
  static const char* kKeys[] = {"num_redundant_experts",     "window_size", "step_interval", "log_balancedness",
                                "log_balancedness_interval", "use_async",   "policy"};
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw InputError("--eplb-config: expected JSON such as '{\"num_redundant_experts\": 32}', got '" + text + "'");
  }
  if (!j.is_object())
    throw InputError("--eplb-config: expected a JSON object such as '{\"num_redundant_experts\": 32}', got '" + text +
                     "'");
  for (const auto& item : j.items()) {
    const std::string& k = item.key();
    if (std::find_if(std::begin(kKeys), std::end(kKeys), [&](const char* x) { return k == x; }) == std::end(kKeys))
      throw InputError("--eplb-config: unknown key '" + k +
                       "'; expected num_redundant_experts, window_size, step_interval, log_balancedness, "
                       "log_balancedness_interval, use_async or policy (vLLM's EPLBConfig)");
  }
  if (!j.contains("num_redundant_experts")) return 0;
  const auto& n = j["num_redundant_experts"];
  if (!n.is_number_integer() || n.get<i64>() < 0)
    throw InputError("--eplb-config: num_redundant_experts must be a whole number >= 0, got " + n.dump());
  return n.get<i64>();
}

/// --mamba-cache-mode.
Deployment::MambaCache mamba_cache_mode(const std::string& mcm) {
  if (mcm == "none") return Deployment::MambaCache::none;
  if (mcm == "align") return Deployment::MambaCache::align;
  if (mcm == "all") return Deployment::MambaCache::all;
  if (mcm == "auto") return Deployment::MambaCache::auto_;
  throw InputError("--mamba-cache-mode: expected auto, none, align or all, got '" + mcm + "'");
}

}  // namespace

namespace {
constexpr const char* kValueFlags[] = {"activation-peak-memory",
                                       "all2all-backend",
                                       "block-size",
                                       "data-parallel-size",
                                       "decode-context-parallel-size",
                                       "dtype",
                                       "eplb-config",
                                       "free-gpu-memory-fraction",
                                       "gpu-memory-utilization",
                                       "kv-cache-dtype",
                                       "kv-cache-dtype-skip-layers",
                                       "kv-cache-memory",
                                       "kv-eviction",
                                       "kv-layer-sharing",
                                       "kv-quant-group-size",
                                       "mamba-cache-mode",
                                       "mamba-ssm-cache-dtype",
                                       "max-model-len",
                                       "max-num-batched-tokens",
                                       "max-num-seqs",
                                       "non-torch-memory",
                                       "num-gpu-blocks-override",
                                       "num-gpus",
                                       "pipeline-parallel-size",
                                       "quantization",
                                       "shared-prefix-tokens",
                                       "tensor-parallel-size",
                                       "vllm-version"};
constexpr const char* kSwitchFlags[] = {"enable-expert-parallel", "enable-eplb", "hybrid-chunked-local",
                                        "language-model-only", "disable-hybrid-kv-cache-manager"};
}  // namespace

bool is_deployment_switch(const std::string& name) {
  return std::find(std::begin(kSwitchFlags), std::end(kSwitchFlags), name) != std::end(kSwitchFlags);
}

std::vector<std::string> deployment_value_flags() {
  return {std::begin(kValueFlags), std::end(kValueFlags)};
}

std::vector<std::string> deployment_switches() {
  return {std::begin(kSwitchFlags), std::end(kSwitchFlags)};
}

bool is_deployment_flag(const std::string& name) {
  return is_deployment_switch(name) ||
         std::find(std::begin(kValueFlags), std::end(kValueFlags), name) != std::end(kValueFlags);
}

FlagTexts flag_texts_from_line(const std::string& line, const std::vector<std::string>& extra) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  FlagTexts flags;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i].rfind("--", 0) != 0 || words[i].size() == 2)
      throw InputError("expected a flag such as --kv-cache-dtype, got '" + words[i] + "'");
    std::string name = words[i].substr(2);
    std::string value;
    const auto eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) value = name.substr(eq + 1), name.resize(eq);
    const bool is_extra = std::find(extra.begin(), extra.end(), name) != extra.end();
    if (!is_extra && !is_deployment_flag(name)) {
      std::string msg = "unknown flag '--" + name + "'; expected ";
      for (const auto& e : extra) msg.append("--").append(e).append(", ");
      msg += "a deployment flag of kvcap plan (vLLM's names)";
      throw InputError(msg);
    }
    if (flags.count(name)) throw InputError("--" + name + " is given twice");
    if (!is_extra && is_deployment_switch(name)) {
      if (inline_value) throw InputError("--" + name + " is a switch and takes no value");
      flags[name] = "";
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= words.size()) throw InputError("--" + name + " needs a value");
      value = words[++i];
    }
    flags[name] = value;
  }
  return flags;
}

Deployment deployment_from_flags(const FlagTexts& f, Deployment d) {
  // In the order of `kvcap plan --help`: the first malformed flag is the one reported.
  // Every flag read here is in the table (is_deployment_flag): a flag added without it fails every test that reads it.
  const auto given = [&](const char* k) {
    if (!is_deployment_flag(k))
      throw std::logic_error(std::string("flags.cpp: --") + k + " is not in kValueFlags/kSwitchFlags");
    return f.count(k) > 0;
  };
  const auto text = [&](const char* k) { return f.at(k); };
  if (given("num-gpus")) d.num_gpus = parse_int(text("num-gpus"), "--num-gpus", 1, kMaxGpuCount);
  if (given("tensor-parallel-size"))
    d.tensor_parallel_size = parse_int(text("tensor-parallel-size"), "--tensor-parallel-size", 1, kMaxGpuCount);
  if (given("pipeline-parallel-size"))
    d.pipeline_parallel_size = parse_int(text("pipeline-parallel-size"), "--pipeline-parallel-size", 1, kMaxGpuCount);
  if (given("decode-context-parallel-size"))
    d.decode_context_parallel_size =
        parse_int(text("decode-context-parallel-size"), "--decode-context-parallel-size", 1, kMaxGpuCount);
  if (given("gpu-memory-utilization")) {
    d.gpu_memory_utilization =
        parse_real(text("gpu-memory-utilization"), "--gpu-memory-utilization", "a fraction in (0, 1]", kPositive, 1);
    d.free_gpu_memory_fraction.reset();  // vLLM's budget (a compare row's own flag replaces an inherited fraction)
  }
  if (given("free-gpu-memory-fraction"))
    d.free_gpu_memory_fraction = parse_real(text("free-gpu-memory-fraction"), "--free-gpu-memory-fraction",
                                            "a fraction in (0, 1]", kPositive, 1);
  if (given("dtype")) d.dtype = parse_dtype_text(text("dtype"), "--dtype", activation);
  if (given("quantization")) d.quantization = parse_dtype_text(text("quantization"), "--quantization", weights);
  if (given("kv-cache-dtype")) d.kv_cache_dtype = parse_dtype_text(text("kv-cache-dtype"), "--kv-cache-dtype", kv);
  if (given("kv-cache-dtype-skip-layers")) {
    // vLLM takes the list space-separated (nargs); a comma-separated value is accepted as well.
    std::string list = text("kv-cache-dtype-skip-layers");
    std::replace(list.begin(), list.end(), ' ', ',');
    d.kv_cache_dtype_skip_layers.clear();
    for (const auto& item : split_list(list)) {
      if (item != "sliding_window" && (item.size() > 9 || item.find_first_not_of("0123456789") != std::string::npos))
        throw InputError("--kv-cache-dtype-skip-layers: expected layer indices (0, 1, ...) or sliding_window, got '" +
                         item + "'");
      d.kv_cache_dtype_skip_layers.push_back(item);
    }
    if (d.kv_cache_dtype_skip_layers.empty())
      throw InputError(
          "--kv-cache-dtype-skip-layers: expected layer indices (0, 1, ...) or sliding_window, got an empty list");
  }
  if (given("block-size")) d.block_size = parse_int(text("block-size"), "--block-size", 1);
  if (given("max-model-len")) d.max_model_len = parse_tokens(text("max-model-len"), "--max-model-len");
  if (given("max-num-batched-tokens"))
    d.max_num_batched_tokens = parse_tokens(text("max-num-batched-tokens"), "--max-num-batched-tokens");
  if (given("max-num-seqs")) d.max_num_seqs = parse_int(text("max-num-seqs"), "--max-num-seqs", 1, 1'000'000'000);
  // vLLM reads kv_cache_memory_bytes only when it is set and non-zero (gpu_worker.py determine_available_memory);
  // 0 would silently mean its profiling run, so a size of at least one byte is asked for.
  const auto positive_bytes = [](const std::string& item) {
    const auto b = parse_bytes(item, "--kv-cache-memory");
    if (b == 0) throw InputError("--kv-cache-memory: expected a positive size such as 32.06GiB, got '" + item + "'");
    // A bare number is bytes (vLLM's unit); one below a mebibyte holds no useful KV cache and is a missing unit.
    if (b < (1u << 20) && item.find_first_not_of("0123456789. ") == std::string::npos)
      throw InputError("--kv-cache-memory: '" + item + "' is " + item +
                       " bytes (a bare number is bytes, as vLLM takes it); give a unit, e.g. " + item + "GiB");
    return b;
  };
  if (given("kv-cache-memory")) {
    d.kv_cache_memory_bytes.clear();
    for (const auto& item : split_list(text("kv-cache-memory"), ',', true))
      d.kv_cache_memory_bytes.push_back(positive_bytes(item));
  }
  if (given("num-gpu-blocks-override"))
    d.num_gpu_blocks_override =
        static_cast<u64>(parse_int(text("num-gpu-blocks-override"), "--num-gpu-blocks-override", 1, 100'000'000));
  if (given("activation-peak-memory"))
    d.activation_peak_bytes = parse_bytes(text("activation-peak-memory"), "--activation-peak-memory");
  if (given("non-torch-memory")) d.non_torch_bytes = parse_bytes(text("non-torch-memory"), "--non-torch-memory");
  if (given("shared-prefix-tokens"))
    d.shared_prefix_tokens =
        text("shared-prefix-tokens") == "0" ? 0 : parse_tokens(text("shared-prefix-tokens"), "--shared-prefix-tokens");
  if (given("enable-expert-parallel")) d.enable_expert_parallel = true;
  if (given("all2all-backend")) d.all2all_backend = all2all_backend(text("all2all-backend"));
  if (given("enable-eplb")) d.enable_eplb = true;
  if (given("eplb-config")) d.num_redundant_experts = eplb_redundant_experts(text("eplb-config"));
  if (given("language-model-only")) d.language_model_only = true;
  if (given("kv-quant-group-size"))
    d.kv_quant_group_size = parse_int(text("kv-quant-group-size"), "--kv-quant-group-size", 1, 1'000'000);
  const bool off = given("disable-hybrid-kv-cache-manager"), on = given("hybrid-chunked-local");
  if (off && on)
    throw InputError("--disable-hybrid-kv-cache-manager and --hybrid-chunked-local contradict each other; give one");
  if (off) d.hybrid_kv_cache_manager = Deployment::Hybrid::off;
  if (on) d.hybrid_kv_cache_manager = Deployment::Hybrid::on;
  if (given("mamba-cache-mode")) d.mamba_cache_mode = mamba_cache_mode(text("mamba-cache-mode"));
  if (given("kv-layer-sharing")) d.kv_layer_sharing = layer_sharing(text("kv-layer-sharing"));
  if (given("kv-eviction")) d.kv_eviction = eviction(text("kv-eviction"));
  if (given("mamba-ssm-cache-dtype"))
    d.mamba_ssm_cache_dtype = parse_dtype_text(text("mamba-ssm-cache-dtype"), "--mamba-ssm-cache-dtype", activation);
  if (given("data-parallel-size")) {
    // vLLM --data-parallel-size: replicas of TP x PP ranks; kvcap's --num-gpus is their product.
    const i64 dp = parse_int(text("data-parallel-size"), "--data-parallel-size", 1, kMaxGpuCount);
    const i64 per_replica = d.tensor_parallel_size * d.pipeline_parallel_size;
    if (dp > kMaxGpuCount / per_replica)
      throw InputError("--data-parallel-size: " + std::to_string(dp) + " replicas of " + std::to_string(per_replica) +
                       " GPUs exceed " + std::to_string(kMaxGpuCount) + " GPUs");
    if (given("num-gpus") && d.num_gpus != dp * per_replica)
      throw InputError("--data-parallel-size " + std::to_string(dp) + " x (TP " +
                       std::to_string(d.tensor_parallel_size) + " x PP " + std::to_string(d.pipeline_parallel_size) +
                       ") = " + std::to_string(dp * per_replica) + " GPUs contradicts --num-gpus " +
                       std::to_string(d.num_gpus) + "; give one of the two");
    d.num_gpus = dp * per_replica;
  }
  // vLLM: world size = TP x PP per replica; kvcap's --num-gpus counts whole replicas of it.
  const i64 per_replica = d.tensor_parallel_size * d.pipeline_parallel_size;
  if (given("num-gpus") && d.num_gpus % per_replica != 0)
    throw InputError("--num-gpus " + std::to_string(d.num_gpus) + " is not a multiple of --tensor-parallel-size " +
                     std::to_string(d.tensor_parallel_size) + " x --pipeline-parallel-size " +
                     std::to_string(d.pipeline_parallel_size) + " = " + std::to_string(per_replica) +
                     " (extra GPUs form whole data-parallel replicas)");
  if (given("vllm-version")) {
    d.vllm_version = text("vllm-version");
    try {
      legacy_kv_size_log(d.vllm_version);
    } catch (const SpecError& e) {
      throw InputError("--vllm-version: " + e.reason());
    }
  }
  return d;
}

}  // namespace kvcap::profiles
