#include "common.hpp"

#include "kvcap/planner/engine.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <iostream>

#include "kvcap/escape.hpp"
#include "kvcap/planner/error.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/profiles/units.hpp"

namespace kvcap::cli {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

namespace {

// Splits "12.5GiB" into number and suffix; throws UsageError naming the flag.
std::pair<double, std::string> number_and_unit(const std::string& in, const std::string& flag, const char* expected) {
  const std::string s = trim(in);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end == s.c_str() || errno == ERANGE || !std::isfinite(v))
    throw UsageError(flag + ": expected " + expected + ", got '" + in + "'");
  return {v, trim(std::string(end))};
}
}  // namespace

std::int64_t parse_tokens(const std::string& in, const std::string& flag) {
  auto [v, unit] = number_and_unit(in, flag, "a token count such as 4096, 32K or 1M");
  const auto mult = profiles::token_unit_multiplier(unit);
  if (!mult) throw UsageError(flag + ": unknown unit '" + unit + "' in '" + in + "'; " + profiles::kTokenUnitsHelp);
  const double t = v * *mult;
  if (t < 1 || t != std::floor(t) || t > 9.0e15)
    throw UsageError(flag + ": expected a whole number of tokens >= 1, got '" + in + "'");
  return static_cast<std::int64_t>(t);
}

std::uint64_t parse_bytes(const std::string& in, const std::string& flag) {
  auto [v, unit] = number_and_unit(in, flag, "a size such as 40GiB, 80GB or 42949672960");
  const auto mult = profiles::byte_unit_multiplier(unit);
  if (!mult) throw UsageError(flag + ": unknown unit '" + unit + "'; " + profiles::kByteUnitsHelp);
  const double b = std::floor(v * *mult);
  if (v < 0 || b > 1.8e19) throw UsageError(flag + ": expected a size between 0 and 2^64 bytes, got '" + in + "'");
  return static_cast<std::uint64_t>(b);
}

std::vector<std::string> split_list(const std::string& s, char sep, bool keep_empty) {
  std::vector<std::string> r;
  std::size_t start = 0;
  while (true) {
    const auto p = s.find(sep, start);
    std::string item = trim(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (keep_empty || !item.empty()) r.push_back(std::move(item));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return r;
}

std::vector<std::string> parse_name_list(const std::string& s, const std::string& flag) {
  auto r = split_list(s);
  if (r.empty()) throw UsageError(flag + ": expected a comma-separated list, got '" + s + "'");
  return r;
}

std::vector<std::int64_t> parse_token_list(const std::string& s, const std::string& flag) {
  std::vector<std::int64_t> r;
  for (const auto& item : split_list(s)) r.push_back(parse_tokens(item, flag));
  if (r.empty()) throw UsageError(flag + ": expected a comma-separated list of token counts, e.g. 1K,32K,128K");
  return r;
}

double parse_seconds(const std::string& in, const std::string& flag) {
  auto [v, unit] = number_and_unit(in, flag, "a duration with a unit such as 2s, 50ms or 800us");
  // A bare number is ambiguous (is --tpot 40 forty seconds or forty milliseconds?): a unit is required.
  if (unit.empty())
    throw UsageError(flag + ": '" + in + "' has no unit; write " + trim(in) + "ms or " + trim(in) +
                     "s (a bare number is ambiguous)");
  const auto mult = profiles::seconds_unit_multiplier(unit);
  if (!mult) throw UsageError(flag + ": unknown unit '" + unit + "'; " + profiles::kSecondsUnitsHelp);
  if (!(v > 0)) throw UsageError(flag + ": expected a positive duration, got '" + in + "'");
  const double s = v * *mult;
  if (!(s <= 3.2e9)) throw UsageError(flag + ": at most 100 years, got '" + in + "'");
  return s;
}

DType parse_dtype_flag(const std::string& s, const std::string& flag, bool (*accept)(const DTypeInfo&)) {
  auto d = parse_dtype(s);
  if (!d || !accept(info(*d))) throw UsageError(flag + ": unknown value '" + s + "'; expected one of " + dtype_names(accept));
  return *d;
}

po::options_description deployment_options(bool with_model_gpu) {
  po::options_description d("Deployment (vLLM flag names and semantics)");
  if (with_model_gpu) {
    d.add_options()
      ("model,m", po::value<std::string>(), "model: built-in name, YAML profile, or Hugging Face config.json")
      ("gpu,g", po::value<std::string>(), "GPU: built-in name or YAML profile");
  }
  d.add_options()
    ("num-gpus", po::value<std::string>(), "total GPUs (default TP x PP); extra GPUs form data-parallel replicas")
    ("tensor-parallel-size", po::value<std::string>()->default_value("1"), "tensor-parallel size")
    ("pipeline-parallel-size", po::value<std::string>()->default_value("1"), "pipeline-parallel size")
    ("gpu-memory-utilization", po::value<std::string>()->default_value("0.9"), "fraction of device memory vLLM may use")
    ("dtype", po::value<std::string>()->default_value("auto"), "model dtype: auto, bf16, fp16, fp32")
    ("quantization,q", po::value<std::string>()->default_value("auto"), "weight format: auto (checkpoint's), bf16, fp8, int4 (AWQ/GPTQ), mxfp4, nvfp4 (fp4 GEMMs on GPUs with fp4 tensor cores)")
    ("kv-cache-dtype", po::value<std::string>()->default_value("auto"), "KV format: auto (= model dtype), bf16, fp16, fp8, fp8_e5m2, int8, int4, int2")
    ("block-size", po::value<std::string>()->default_value("16"), "tokens per KV block")
    ("max-model-len", po::value<std::string>(), "context limit per request (default: the model's max_position_embeddings); 32K = 32768, 32k = 32000")
    ("max-num-batched-tokens", po::value<std::string>(), "token budget per step (default: vLLM serve's, 8192 on >= 70 GiB GPUs except A100, else 2048)")
    ("max-num-seqs", po::value<std::string>(), "sequences per step (default 1024 / 256 by the same rule)")
    ("kv-cache-memory", po::value<std::string>(), "KV bytes per rank, skipping the estimate (e.g. 32.06GiB); comma-separated for one per pipeline stage")
    ("activation-peak-memory", po::value<std::string>(), "override the activation-peak estimate per rank (bytes or 4.7GiB)")
    ("non-torch-memory", po::value<std::string>(), "override the non-torch memory default per rank")
    ("shared-prefix-tokens", po::value<std::string>()->default_value("0"), "a common prefix held once (prefix caching)")
    ("enable-expert-parallel", po::bool_switch(), "split a MoE model's routed experts over all GPUs (expert parallel over the data-parallel x "
                                                   "tensor-parallel ranks, as vLLM's flag; give --num-gpus for the data-parallel size)")
    ("disable-hybrid-kv-cache-manager", po::bool_switch(), "charge sliding-window and chunked layers the whole context, as vLLM's flag of that name")
    ("hybrid-chunked-local", po::bool_switch(), "keep the hybrid KV cache manager for chunked local attention (Llama 4), as VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1")
    ("mamba-cache-mode", po::value<std::string>()->default_value("auto"), "linear-attention state caching: auto, none (1 state block per request and group), align (2, with prefix caching)")
    ("mamba-ssm-cache-dtype", po::value<std::string>()->default_value("auto"), "recurrent state dtype of linear-attention layers: auto (config's mamba_ssm_dtype, else the model dtype), fp32, bf16, fp16")
    ("vllm-version", po::value<std::string>()->default_value("current"), "vLLM release whose logged \"GPU KV cache size\" to reproduce: current, or 0.10 ... 0.19 (num_blocks // groups x block size)");
  return d;
}

po::options_description speed_options() {
  po::options_description d("Speed model");
  d.add_options()
    ("engine", po::value<std::string>()->default_value("datasheet"), "serving-engine profile: datasheet (the plain roofline), vllm, sglang or trtllm "
                                                                      "(efficiencies and overheads fitted to that engine's published measurements; docs/accuracy.md)")
    ("calibration", po::value<std::string>(), "calibration.yaml from `kvcap calibrate`: measured bandwidth and FLOP/s replace datasheet x default efficiency")
    ("calibration-force", "use --calibration even when it was measured on another device (a CPU, another GPU model)");
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
  if (!vm.count("engine")) return SpeedOptions{};
  try {
    return engine_profile(vm["engine"].as<std::string>()).speed;
  } catch (const SpecError& e) {
    throw UsageError("--engine: " + e.reason());
  }
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

nlohmann::ordered_json findings_json(const std::vector<Finding>& findings) {
  auto j = nlohmann::ordered_json::array();
  for (const auto& f : findings)
    j.push_back({{"code", f.code}, {"level", f.level == Finding::Level::error ? "error" : "warning"}, {"message", f.message}});
  return j;
}

double parse_real(const std::string& s, const std::string& flag, const std::string& expected, double lo, double hi) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v < lo || v > hi)
    throw UsageError(flag + ": expected " + expected + ", got '" + s + "'");
  return v;
}

std::int64_t parse_int(const std::string& s, const std::string& flag, std::int64_t min, std::int64_t max) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  const std::string range = max == std::numeric_limits<std::int64_t>::max()
                                ? ">= " + std::to_string(min)
                                : "between " + std::to_string(min) + " and " + std::to_string(max);
  if (s.empty() || *end != '\0' || errno == ERANGE || v < min || v > max)
    throw UsageError(flag + ": expected an integer " + range + ", got '" + s + "'");
  return v;
}

Deployment deployment_from(const po::variables_map& vm) {
  Deployment d;
  auto str = [&](const char* k) { return vm[k].as<std::string>(); };
  if (vm.count("num-gpus")) d.num_gpus = parse_int(str("num-gpus"), "--num-gpus", 1, kMaxGpuCount);
  d.tensor_parallel_size = parse_int(str("tensor-parallel-size"), "--tensor-parallel-size", 1, kMaxGpuCount);
  d.pipeline_parallel_size = parse_int(str("pipeline-parallel-size"), "--pipeline-parallel-size", 1, kMaxGpuCount);
  d.gpu_memory_utilization = parse_real(str("gpu-memory-utilization"), "--gpu-memory-utilization", "a fraction in (0, 1]", kPositive, 1);
  d.dtype = parse_dtype_flag(str("dtype"), "--dtype", [](const DTypeInfo& i) { return i.activation_ok; });
  d.quantization = parse_dtype_flag(str("quantization"), "--quantization", [](const DTypeInfo& i) { return i.weights_ok; });
  d.kv_cache_dtype = parse_dtype_flag(str("kv-cache-dtype"), "--kv-cache-dtype", [](const DTypeInfo& i) { return i.kv_ok; });
  d.block_size = parse_int(str("block-size"), "--block-size", 1);
  if (vm.count("max-model-len")) d.max_model_len = parse_tokens(str("max-model-len"), "--max-model-len");
  if (vm.count("max-num-batched-tokens"))
    d.max_num_batched_tokens = parse_tokens(str("max-num-batched-tokens"), "--max-num-batched-tokens");
  if (vm.count("max-num-seqs")) d.max_num_seqs = parse_int(str("max-num-seqs"), "--max-num-seqs", 1, 1'000'000'000);
  if (vm.count("kv-cache-memory")) {
    for (const auto& item : split_list(str("kv-cache-memory"), ',', true))
      d.kv_cache_memory_bytes.push_back(parse_bytes(item, "--kv-cache-memory"));
  }
  if (vm.count("activation-peak-memory")) d.activation_peak_bytes = parse_bytes(str("activation-peak-memory"), "--activation-peak-memory");
  if (vm.count("non-torch-memory")) d.non_torch_bytes = parse_bytes(str("non-torch-memory"), "--non-torch-memory");
  d.shared_prefix_tokens = str("shared-prefix-tokens") == "0" ? 0 : parse_tokens(str("shared-prefix-tokens"), "--shared-prefix-tokens");
  d.enable_expert_parallel = vm["enable-expert-parallel"].as<bool>();
  const bool off = vm["disable-hybrid-kv-cache-manager"].as<bool>(), on = vm["hybrid-chunked-local"].as<bool>();
  if (off && on) throw UsageError("--disable-hybrid-kv-cache-manager and --hybrid-chunked-local contradict each other; give one");
  if (off) d.hybrid_kv_cache_manager = Deployment::Hybrid::off;
  if (on) d.hybrid_kv_cache_manager = Deployment::Hybrid::on;
  const std::string mcm = str("mamba-cache-mode");
  if (mcm == "none") d.mamba_cache_mode = Deployment::MambaCache::none;
  else if (mcm == "align") d.mamba_cache_mode = Deployment::MambaCache::align;
  else if (mcm != "auto") throw UsageError("--mamba-cache-mode: expected auto, none or align, got '" + mcm + "'");
  d.mamba_ssm_cache_dtype = parse_dtype_flag(str("mamba-ssm-cache-dtype"), "--mamba-ssm-cache-dtype", [](const DTypeInfo& i) { return i.activation_ok; });
  d.vllm_version = str("vllm-version");
  try {
    legacy_kv_size_log(d.vllm_version);
  } catch (const SpecError& e) {
    throw UsageError("--vllm-version: " + e.reason());
  }
  return d;
}

po::variables_map parse(const std::vector<std::string>& args, const po::options_description& desc,
                        const po::positional_options_description* pos) {
  po::variables_map vm;
  try {
    auto p = po::command_line_parser(args).options(desc);
    if (pos) p.positional(*pos);
    po::store(p.run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return vm;
}

void print_help(const std::string& usage, const std::string& about, const po::options_description& desc,
                const std::string& examples) {
  std::cout << "Usage: " << usage << "\n\n" << about << "\n\n" << desc << "\n";
  if (!examples.empty()) std::cout << "Examples:\n" << examples << "\n";
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
  static const std::vector<std::string> kSizes = {
      "--max-model-len", "--contexts", "--max-num-batched-tokens", "--max-num-seqs", "--prompt-tokens",
      "--output-tokens", "--batch", "--batches", "--kv-cache-memory", "--num-gpus", "--block-size",
      "--shared-prefix-tokens", "--tensor-parallel-size", "--pipeline-parallel-size"};
  std::string r;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto eq = args[i].find('=');
    const std::string flag = args[i].substr(0, eq);
    if (std::find(kSizes.begin(), kSizes.end(), flag) == kSizes.end()) continue;
    const std::string value = eq != std::string::npos ? args[i].substr(eq + 1) : i + 1 < args.size() ? args[i + 1] : "";
    r += (r.empty() ? "" : ", ") + flag + " " + value;
  }
  return r;
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
    std::cerr << "kvcap " << name << ": error: " << escape::terminal_lines(e.what()) << "\n(see: kvcap " << name << " --help)\n";
    return kExitUsage;
  } catch (const FindingError& e) {
    print_findings(name, {e.finding});
    return e.finding.exit_code;
  } catch (const profiles::ProfileError& e) {
    std::cerr << escape::terminal_lines(e.what()) << "\n";
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
