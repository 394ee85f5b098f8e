#include "common.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <new>

#include "kvcap/escape.hpp"
#include "kvcap/planner/engine.hpp"
#include "kvcap/planner/error.hpp"
#include "kvcap/profiles/flags.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/profiles/units.hpp"

namespace kvcap::cli {

std::vector<std::string> parse_name_list(const std::string& s, const std::string& flag) {
  auto r = split_list(s, ',', true);
  // An empty item ("a,,b", "a,") is a typo, not a shorter list.
  if (r.empty() || std::find(r.begin(), r.end(), std::string()) != r.end())
    throw UsageError(flag + ": expected a comma-separated list of names without empty items, got '" + s + "'");
  for (auto it = r.begin(); it != r.end(); ++it) {
    if (std::find(r.begin(), it, *it) == it) continue;
    std::string msg = flag;
    msg.append(": '").append(*it).append("' given twice in '").append(s).append("'");
    throw UsageError(msg);
  }
  return r;
}

po::options_description deployment_options(bool with_model_gpu) {
  po::options_description d("Deployment (vLLM flag names and semantics)");
  if (with_model_gpu) {
    // clang-format off
    d.add_options()
      ("model,m", po::value<std::string>(), "model: built-in name, YAML profile, or Hugging Face config.json")
      ("gpu,g", po::value<std::string>(), "GPU: built-in name or YAML profile");
    // clang-format on
  }
  // clang-format off
  d.add_options()
    ("num-gpus", po::value<std::string>(), "total GPUs (default TP x PP); extra GPUs form data-parallel replicas")
    ("tensor-parallel-size", po::value<std::string>()->default_value("1"), "tensor-parallel size")
    ("pipeline-parallel-size", po::value<std::string>()->default_value("1"), "pipeline-parallel size")
    ("data-parallel-size", po::value<std::string>(), "data-parallel replicas (vLLM's flag): --num-gpus = DP x TP x PP; with --enable-expert-parallel the attention is data-parallel")
    ("decode-context-parallel-size", po::value<std::string>()->default_value("1"), "split each request's KV over this many ranks of a TP group that hold the same KV heads (vLLM DCP)")
    ("gpu-memory-utilization", po::value<std::string>()->default_value("0.9"), "fraction of device memory vLLM may use")
    ("free-gpu-memory-fraction", po::value<std::string>(), kFreeFractionHelp)
    ("dtype", po::value<std::string>()->default_value("auto"), "model dtype: auto, bf16, fp16, fp32")
    ("quantization,q", po::value<std::string>()->default_value("auto"), "weight format: auto (checkpoint's), bf16, fp8, int4 (AWQ/GPTQ), mxfp4, nvfp4 (fp4 GEMMs on GPUs with fp4 tensor cores)")
    ("kv-cache-dtype", po::value<std::string>()->default_value("auto"), "KV format: auto (= model dtype, or a ModelOpt checkpoint's fp8 KV), bf16, fp16, fp8, fp8_e5m2, nvfp4, fp8_per_token_head, int8_per_token_head, int4_per_token_head; int8, int4, int2 (KIVI-style groups)")
    ("kv-cache-dtype-skip-layers", po::value<std::string>(), "attention layers kept in the model dtype under --kv-cache-dtype: layer indices and/or sliding_window, comma-separated (vLLM's flag)")
    ("block-size", po::value<std::string>()->default_value("16"), "tokens per KV block")
    ("max-model-len", po::value<std::string>(), "context limit per request (default: the model's max_position_embeddings); 32K = 32768, 32k = 32000")
    ("max-num-batched-tokens", po::value<std::string>(), "token budget per step (default: vLLM serve's, 8192 on >= 70 GiB GPUs except A100, else 2048)")
    ("max-num-seqs", po::value<std::string>(), "sequences per step (default 1024 / 256 by the same rule)")
    ("kv-cache-memory", po::value<std::string>(), "KV bytes per rank, skipping the estimate (e.g. 32.06GiB); comma-separated for one per pipeline stage")
    ("num-gpu-blocks-override", po::value<std::string>(), "a KV pool of this many blocks on every rank, whatever the memory gives (vLLM's flag; applied after its start-up memory check)")
    ("activation-peak-memory", po::value<std::string>(), "override the activation-peak estimate per rank (bytes or 4.7GiB)")
    ("non-torch-memory", po::value<std::string>(), "override the non-torch memory default per rank")
    ("shared-prefix-tokens", po::value<std::string>()->default_value("0"), "a common prefix held once (prefix caching)")
    ("enable-expert-parallel", po::bool_switch(), "split a MoE model's routed experts over all GPUs (expert parallel over the data-parallel x "
                                                   "tensor-parallel ranks, as vLLM's flag; give --num-gpus for the data-parallel size)")
    ("all2all-backend", po::value<std::string>()->default_value("allgather_reducescatter"), "expert parallelism's token exchange, as vLLM's flag: allgather_reducescatter, naive, deepep_high_throughput, deepep_low_latency (DeepEP's buffers take GPU memory)")
    ("enable-eplb", po::bool_switch(), "expert-parallel load balancing, as vLLM's flag (with --eplb-config's redundant experts)")
    ("eplb-config", po::value<std::string>(), "vLLM's EPLBConfig as JSON: '{\"num_redundant_experts\": 32}' adds that many expert copies, ceil((E + R) / EP) experts per rank")
    ("language-model-only", po::bool_switch(), "serve a multimodal checkpoint (Gemma 3, Llama 4) as text only, as vLLM's flag: its vision encoder is not loaded")
    ("disable-hybrid-kv-cache-manager", po::bool_switch(), "charge sliding-window and chunked layers the whole context, as vLLM's flag of that name")
    ("hybrid-chunked-local", po::bool_switch(), "keep the hybrid KV cache manager for chunked local attention (Llama 4), as VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1")
    ("mamba-cache-mode", po::value<std::string>()->default_value("auto"), "linear-attention state caching: auto (all for Mamba hybrids, align for Gated DeltaNet; none for vLLM 0.10-0.11), none (prefix caching off, as --no-enable-prefix-caching: 1 state block per request and group), align (2, with prefix caching), all (a checkpoint per block, with prefix caching)")
    ("mamba-ssm-cache-dtype", po::value<std::string>()->default_value("auto"), "recurrent state dtype of linear-attention layers: auto (config's mamba_ssm_dtype, else the model dtype), fp32, bf16, fp16")
    ("vllm-version", po::value<std::string>()->default_value("current"), "vLLM release whose logged \"GPU KV cache size\" to reproduce: current, or 0.10 ... 0.19 (num_blocks // groups x block size)");
  // clang-format on
  add_what_if_options(d);
  return d;
}

void add_what_if_options(po::options_description& d) {
  // clang-format off
  d.add_options()
    ("kv-eviction", po::value<std::string>(), "what-if, not a vLLM option: streaming:sink=S,window=W (StreamingLLM) or h2o:budget=F[,recent=R] "
                                             "(H2O): full-attention layers keep only those tokens; quality is not modelled")
    ("kv-quant-group-size", po::value<std::string>(), "what-if, not a vLLM option: elements per fp16 scale + zero point of --kv-cache-dtype int4/int2 "
                                                     "(KIVI; default 32, e.g. 64 or 128)")
    ("kv-layer-sharing", po::value<std::string>(), "what-if, not a vLLM option: cla:N (N adjacent layers share one KV cache, CLA) or minicache:from=L "
                                                  "(layer pairs from layer L on share one, MiniCache); quality is not modelled");
  // clang-format on
}

void add_host_tier_options(po::options_description& d) {
  // clang-format off
  d.add_options()
    ("kv-offloading-size", po::value<std::string>(), "GiB of host memory for vLLM's CPU KV offloading (its flag: all TP x PP ranks together)")
    ("lmcache-cpu-size", po::value<std::string>(), "LMCache's CPU backend, GiB per rank (LMCACHE_MAX_LOCAL_CPU_SIZE; LMCache's default 5)")
    ("lmcache-disk-size", po::value<std::string>(), "LMCache's local disk backend, GiB per rank (LMCACHE_MAX_LOCAL_DISK_SIZE; default 0)")
    ("lmcache-chunk-size", po::value<std::string>(), "LMCache's chunk in tokens (LMCACHE_CHUNK_SIZE; default 256)")
    ("lmcache-disk-read-rate", po::value<std::string>(), "the local disk's sequential read rate in GB/s (default 6.9: an NVMe PCIe Gen4 SSD)");
  // clang-format on
}

HostTierFlags host_tier_flags(const po::variables_map& vm) {
  HostTierFlags f;
  const auto text = [&](const char* k) { return vm[k].as<std::string>(); };
  if (vm.count("kv-offloading-size"))
    f.offloading_size_gib = parse_real(text("kv-offloading-size"), "--kv-offloading-size",
                                       "a size in GiB > 0 (vLLM's flag: all TP x PP ranks together)", kPositive, 1e9);
  const bool lmcache = vm.count("lmcache-cpu-size") || vm.count("lmcache-disk-size") ||
                       vm.count("lmcache-chunk-size") || vm.count("lmcache-disk-read-rate");
  if (!lmcache) return f;
  if (f.offloading_size_gib > 0)
    throw UsageError(
        "--kv-offloading-size and --lmcache-*: vLLM's CPU offloading and LMCache are two KV connectors; "
        "give one of them");
  LmcacheSpec l;
  if (vm.count("lmcache-cpu-size"))
    l.cpu_gib = parse_real(text("lmcache-cpu-size"), "--lmcache-cpu-size", "GiB per rank >= 0", 0.0, 1e9);
  if (vm.count("lmcache-disk-size"))
    l.disk_gib = parse_real(text("lmcache-disk-size"), "--lmcache-disk-size", "GiB per rank >= 0", 0.0, 1e9);
  if (vm.count("lmcache-chunk-size"))
    l.chunk_tokens = parse_int(text("lmcache-chunk-size"), "--lmcache-chunk-size", 1, 1 << 20);
  if (vm.count("lmcache-disk-read-rate"))
    l.disk_read_bytes_per_s = 1e9 * parse_real(text("lmcache-disk-read-rate"), "--lmcache-disk-read-rate",
                                               "GB/s within 0.01 and 1000", 0.01, 1000);
  f.lmcache = l;
  return f;
}

void add_trace_read_options(po::options_description& d) {
  // clang-format off
  d.add_options()
    ("trace-columns", po::value<std::string>(), "TIME,PROMPT,OUTPUT column names of the trace (default: auto-detect)")
    ("trace-speedup", po::value<std::string>()->default_value("1"), "replay the trace this many times faster");
  // clang-format on
}

sim::TraceOptions trace_read_options(const po::variables_map& vm) {
  if (!vm.count("trace"))
    for (const char* flag : {"trace-columns", "trace-speedup"})
      if (vm.count(flag) && !vm[flag].defaulted()) throw UsageError(std::string("--") + flag + " applies to --trace");
  sim::TraceOptions to;
  if (vm.count("trace-columns")) {
    try {
      to = sim::parse_trace_columns(vm["trace-columns"].as<std::string>());
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  if (vm.count("trace-speedup"))
    to.speedup =
        parse_real(vm["trace-speedup"].as<std::string>(), "--trace-speedup", "a positive number such as 2", kPositive);
  return to;
}

po::options_description speed_options() {
  po::options_description d("Speed model");
  // clang-format off
  d.add_options()
    ("engine", po::value<std::string>()->default_value("datasheet"), "serving-engine profile: datasheet (the plain roofline), vllm, sglang or trtllm "
                                                                      "(efficiencies and overheads fitted to that engine's published measurements; docs/accuracy.md)")
    ("enable-mixed-chunk", "SGLang's flag: prefill chunks share steps with the running decodes, as vLLM V1 and TensorRT-LLM do always (with --engine sglang, "
                           "whose default runs prefills in steps of their own)")
    ("calibration", po::value<std::string>(), "calibration.yaml from `kvcap calibrate`: measured bandwidth and FLOP/s replace datasheet x default efficiency")
    ("calibration-force", "use --calibration even when it was measured on another device (a CPU, another GPU model)");
  // clang-format on
  return d;
}

std::optional<Calibration> calibration_from(const po::variables_map& vm, const GpuSpec& g, std::vector<Finding>* findings) {
  if (!vm.count("calibration")) return std::nullopt;
  auto cal = profiles::load_calibration_file(vm["calibration"].as<std::string>());
  auto found = check_calibration(cal, g, vm.count("calibration-force") > 0);
  for (const auto& f : found)
    if (f.level == Finding::Level::error) throw FindingError(f);
  if (findings) findings->insert(findings->end(), found.begin(), found.end());
  else print_findings("", found);
  return cal;
}

SpeedOptions speed_options_from(const po::variables_map& vm) {
  SpeedOptions o;
  try {
    if (vm.count("engine")) o = engine_profile(vm["engine"].as<std::string>()).speed;
  } catch (const SpecError& e) {
    throw UsageError("--engine: " + e.reason());
  }
  if (vm.count("enable-mixed-chunk")) {
    if (!o.prefill_first)
      throw UsageError(
          "--enable-mixed-chunk: only with --engine sglang (the other engines mix prefill chunks into "
          "decode steps already)");
    o.prefill_first = false;
  }
  return o;
}

SpeedContext speed_context_from(const po::variables_map& vm, const ModelSpec& m, const GpuSpec& g, const MemoryPlan& plan,
                                std::vector<Finding>* findings) {
  return make_speed_context(m, g, plan, speed_options_from(vm), calibration_from(vm, g, findings));
}

void print_findings(const std::string& cmd, const std::vector<Finding>& findings, const std::string& context) {
  for (const auto& f : findings)
    std::cerr << (cmd.empty() ? "kvcap" : "kvcap " + cmd) << ": "
              << escape::terminal_text((context.empty() ? "" : context + ": ") + to_string(f)) << "\n";
}

void add_findings_json(nlohmann::ordered_json& report, const std::vector<Finding>& findings) {
  auto& w = report["warnings"];
  if (w.is_null()) w = nlohmann::ordered_json::array();
  for (const auto& f : findings) w.push_back(f.code + ": " + f.message);
  report["findings"] = findings_json(findings);
}

nlohmann::ordered_json findings_json(const std::vector<Finding>& findings) {
  auto j = nlohmann::ordered_json::array();
  for (const auto& f : findings)
    j.push_back({{"code", f.code}, {"level", f.level == Finding::Level::error ? "error" : "warning"}, {"message", f.message}});
  return j;
}

profiles::FlagTexts flag_texts(const po::variables_map& vm, const po::options_description& options) {
  profiles::FlagTexts flags;
  for (const auto& opt : options.options()) {
    const std::string& name = opt->long_name();
    if (!vm.count(name)) continue;
    const auto& v = vm[name].value();
    if (const auto* on = boost::any_cast<bool>(&v)) {
      if (*on) flags[name] = "";
    } else {
      flags[name] = boost::any_cast<std::string>(v);
    }
  }
  return flags;
}

Deployment deployment_from(const po::variables_map& vm) {
  Deployment d = profiles::deployment_from_flags(flag_texts(vm, deployment_options(false)));
  apply_engine_memory_rule(vm, d);
  return d;
}

void apply_engine_memory_rule(const po::variables_map& vm, Deployment& d) {
  const bool utilization = vm.count("gpu-memory-utilization") && !vm["gpu-memory-utilization"].defaulted();
  if (utilization && vm.count("free-gpu-memory-fraction"))
    throw UsageError(
        "--gpu-memory-utilization and --free-gpu-memory-fraction are two KV budgets (vLLM's and TensorRT-LLM's): "
        "give one");
  if (!vm.count("engine") || d.free_gpu_memory_fraction || !d.kv_cache_memory_bytes.empty() || utilization) return;
  try {
    d.free_gpu_memory_fraction = engine_profile(vm["engine"].as<std::string>()).free_gpu_memory_fraction;
  } catch (const SpecError& e) {
    throw UsageError("--engine: " + e.reason());
  }
}

namespace {

/// The flags that name a file kvcap writes (every command spells them this way).
constexpr std::array<const char*, 4> kOutputFlags = {"out", "junit", "timeline", "requests-out"};

/// The string values of one parsed option (a flag or a positional list); empty for other types.
std::vector<std::string> string_values(const po::variable_value& v) {
  if (const auto* s = boost::any_cast<std::string>(&v.value())) return {*s};
  if (const auto* l = boost::any_cast<std::vector<std::string>>(&v.value())) return *l;
  return {};
}

/// Whether two paths name one file: the same inode when both exist (links included), else the same
/// normalised absolute path (two outputs that do not exist yet).
bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec) && !ec;
  // Absolute first: weakly_canonical leaves "x.csv" relative while "./x.csv" resolves through ".".
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
  if (ec) return false;
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
  return !ec && ca == cb;
}

/// kvcap never writes over a file it reads (`--timeline trace.csv` would truncate the trace before
/// reading it), nor two outputs into one file: an output flag naming the same file as any other string
/// flag or positional argument is a usage error, before anything is opened.
void refuse_output_over_input(const po::variables_map& vm) {
  for (const char* out : kOutputFlags) {
    if (!vm.count(out)) continue;
    for (const std::string& path : string_values(vm[out])) {
      for (const auto& [name, value] : vm) {
        if (name == out || value.defaulted()) continue;
        for (const std::string& other : string_values(value)) {
          if (other.empty() || path.empty() || !same_file(path, other)) continue;
          const bool is_output = std::find(kOutputFlags.begin(), kOutputFlags.end(), name) != kOutputFlags.end();
          const std::string what = is_output ? "also written by --" + name : "also read as input (" + name + ")";
          std::string msg = std::string("--") + out;
          msg.append(": '").append(path).append("' is ").append(what);
          msg += "; kvcap does not write over a file it reads, nor two outputs into one (choose another path)";
          throw UsageError(msg);
        }
      }
    }
  }
}

}  // namespace

po::variables_map parse(const std::vector<std::string>& args, const po::options_description& desc,
                        const po::positional_options_description* pos) {
  po::variables_map vm;
  // Without a positional description a stray word is refused (Boost would otherwise drop it silently).
  const po::positional_options_description none;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos ? *pos : none).run(), vm);
    po::notify(vm);
  } catch (const po::too_many_positional_options_error&) {
    // Name the word: the first one that no option takes (the parser's leftovers, positional ones included).
    std::string word;
    try {
      const auto parsed = po::command_line_parser(args).options(desc).allow_unregistered().run();
      const auto left = po::collect_unrecognized(parsed.options, po::include_positional);
      if (!left.empty()) word = " '" + left.front() + "'";
    } catch (const po::error&) {
    }
    throw UsageError("unexpected argument" + word +
                     " on the command line: every option starts with -- and its value follows it"
                     " (quote a value with spaces)");
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  refuse_output_over_input(vm);
  return vm;
}

void print_help(const std::string& usage, const std::string& about, const po::options_description& desc,
                const std::string& examples) {
  std::cout << "Usage: " << usage << "\n\n" << about << "\n\n" << desc << "\n";
  if (!examples.empty()) std::cout << "Examples:\n" << examples << "\n";
}

std::optional<po::variables_map> parse_or_help(const std::vector<std::string>& args,
                                               const po::options_description& desc, const CommandHelp& help) {
  auto vm = parse(args, desc);
  if (!vm.count("help")) return vm;
  print_help(help.usage, help.about, desc, help.examples);
  return std::nullopt;
}

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> s = {
      {"plan", "memory breakdown and concurrency vs context for one deployment", cmd_plan},
      {"compare", "concurrency vs context table for several deployments (the main job)", cmd_compare},
      {"import-hf", "convert a Hugging Face config.json into a kvcap YAML model profile", cmd_import_hf},
      {"size", "the cheapest deployments that serve a workload within TTFT and TPOT targets", cmd_size},
      {"sweep", "speed and memory over a grid of models x GPUs x contexts x batches, as CSV or JSON", cmd_sweep},
      {"simulate", "discrete-event serving simulation: latency percentiles, preemptions, KV use over time", cmd_simulate},
      {"accuracy", "the scorecard: published serving measurements vs kvcap's predictions, MAPE per engine", cmd_accuracy},
      {"list", "list the built-in model and GPU profiles", cmd_list},
      {"validate", "check YAML profiles (schema, ranges, references) with file:line errors", cmd_validate},
      {"check", "evaluate the capacity promises of a requirements file (pass/fail, JUnit XML)", cmd_check},
#ifdef KVCAP_HAVE_KERNELS
      {"calibrate", "measure this GPU (or CPU) with the microkernels and write calibration.yaml", cmd_calibrate},
#endif
      {"plot", "render concurrency vs context for several models to a PNG or SVG file (runs kvcap-plot)", cmd_plot},
  };
  return s;
}

namespace {
// The size flags of a command line, "--max-model-len 9e15, --contexts 1M", for an overflow message: the
// arithmetic fails deep in the planner, but the user typed these.
std::string size_flags_given(const std::vector<std::string>& args) {
  static const std::vector<std::string> kSizes = {"--max-model-len",
                                                  "--contexts",
                                                  "--max-num-batched-tokens",
                                                  "--max-num-seqs",
                                                  "--prompt-tokens",
                                                  "--output-tokens",
                                                  "--batch",
                                                  "--batches",
                                                  "--kv-cache-memory",
                                                  "--num-gpus",
                                                  "--block-size",
                                                  "--shared-prefix-tokens",
                                                  "--tensor-parallel-size",
                                                  "--pipeline-parallel-size",
                                                  "--data-parallel-size"};
  std::string r;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto eq = args[i].find('=');
    const std::string flag = args[i].substr(0, eq);
    if (std::find(kSizes.begin(), kSizes.end(), flag) == kSizes.end()) continue;
    const std::string value = eq != std::string::npos ? args[i].substr(eq + 1) : i + 1 < args.size() ? args[i + 1] : "";
    r.append(r.empty() ? "" : ", ").append(flag).append(" ").append(value);
  }
  return r;
}
}  // namespace

namespace {
// One line: a flag's value may carry a line break or an escape sequence, shown as \n or \x1b.
int report_usage_error(const std::string& name, const std::string& text) {
  std::cerr << "kvcap " << name << ": error: " << escape::terminal_text(text) << "\n(see: kvcap " << name
            << " --help)\n";
  return kExitUsage;
}

int report_spec_error(const std::string& name, const SpecError& e) {
  // Options the planner checks against the model and the deployment (what-ifs, the host tier): usage errors naming
  // the flag.
  // A rule vLLM's own checks apply keeps its exit code 3 below.
  static const std::array<std::pair<std::string_view, std::string_view>, 7> kFlagFields = {
      {{"all2all_backend", "--all2all-backend"},
       {"num_redundant_experts", "--eplb-config"},
       {"kv_layer_sharing", "--kv-layer-sharing"},
       {"kv_eviction", "--kv-eviction"},
       {"kv_quant_group_size", "--kv-quant-group-size"},
       {"kv_offloading_size", "--kv-offloading-size"},
       {"lmcache", "--lmcache-*"}}};
  for (const auto& [field, flag] : kFlagFields)
    if (e.field() == field && !e.vllm_refuses()) return report_usage_error(name, std::string(flag) + ": " + e.reason());
  // A parallel layout or KV format vLLM's own config checks refuse (heads not divisible by TP, DCP beyond the
  // KV-head replicas, nvfp4 KV without fp4 tensor cores): vLLM would not start, exit 3 as for E101/E102.
  const bool startup = e.vllm_refuses();
  std::cerr << "kvcap " << name << ": error: " << escape::terminal_lines(e.what())
            << (startup ? " (vLLM would not start)" : "") << "\n";
  return startup ? kExitWouldNotStart : kExitFailed;
}
}  // namespace

int run_guarded(const std::string& name, const std::function<int()>& run, const std::vector<std::string>& args) {
  try {
    const int rc = run();
    // A report that could not be written (disk full, closed pipe) is not a result: say so, exit 1.
    errno = 0;
    std::cout.flush();
    if (!std::cout) {
      const int err = errno;
      std::cerr << "kvcap " << name << ": error: writing the output failed"
                << (err ? std::string(": ") + std::strerror(err) : std::string()) << "\n";
      return std::max(rc, static_cast<int>(kExitFailed));
    }
    return rc;
  } catch (const UsageError& e) {
    return report_usage_error(name, e.what());
  } catch (const FindingError& e) {
    print_findings(name, {e.finding});
    return e.finding.exit_code;
  } catch (const profiles::ProfileError& e) {
    // One line per diagnostic; a line break inside one (a value quoted from the input) is shown as \n.
    if (e.diagnostics().empty()) std::cerr << escape::terminal_lines(e.what()) << "\n";
    for (const auto& d : e.diagnostics()) std::cerr << escape::terminal_text(d.format()) << "\n";
    return kExitFailed;
  } catch (const OverflowError& e) {
    const std::string flags = size_flags_given(args);
    std::cerr << "kvcap " << name << ": error: " << e.what()
              << (flags.empty() ? std::string("; the profiles' sizes are too large for 64-bit arithmetic")
                                : "; from the sizes given (" + escape::terminal_text(flags) + "): reduce them")
              << "\n";
    return kExitFailed;
  } catch (const std::filesystem::filesystem_error& e) {
    // The OS's words, without the library's "filesystem error:" prefix, naming the path.
    std::cerr << "kvcap " << name << ": error: " << escape::terminal_text(e.path1().string()) << ": "
              << e.code().message() << "\n";
    return kExitFailed;
  } catch (const SpecError& e) {
    return report_spec_error(name, e);
  } catch (const std::bad_alloc&) {
    std::cerr << "kvcap " << name << ": error: out of memory (the input asks for more work or data than this "
              << "machine can hold; reduce it)\n";
    return kExitFailed;
  } catch (const std::exception& e) {
    std::cerr << "kvcap " << name << ": error: " << escape::terminal_lines(e.what()) << "\n";
    return kExitFailed;
  }
}

int run_main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto usage = [] {
    std::cout << "kvcap " KVCAP_VERSION " - how many concurrent LLM requests fit, and what to buy\n\n"
              << "Usage: kvcap <command> [options]    (kvcap <command> --help for each)\n\nCommands:\n";
    for (const auto& c : subcommands()) std::cout << "  " << c.name << std::string(12 - std::min<std::size_t>(11, c.name.size()), ' ') << c.summary << "\n";
    std::cout << "\nExample:\n  kvcap plan --model llama-3.1-70b --gpu h100-sxm --tensor-parallel-size 4 --max-model-len 32K\n";
  };
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    usage();
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::cout << "kvcap " KVCAP_VERSION "\n";
    return 0;
  }
  const std::string name = args[0];
  args.erase(args.begin());
  for (const auto& c : subcommands())
    if (c.name == name) return run_guarded(name, [&] { return c.run(args); }, args);
  std::cerr << "kvcap: unknown command '" << name << "'\n";
  std::vector<std::string> names;
  for (const auto& c : subcommands()) names.push_back(c.name);
  const std::string s = profiles::did_you_mean(name, names);
  if (!s.empty()) std::cerr << "did you mean '" << s << "'?\n";
  std::cerr << "(see: kvcap --help)\n";
  return 2;
}

}  // namespace kvcap::cli
