// `kvcap size`'s flags -> SizingRequest (size_request.hpp). docs/sizing.md.
#include "size_request.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <thread>

#include "kvcap/escape.hpp"
#include "kvcap/planner/engine.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/profiles/units.hpp"
#include "kvcap/simulator/trace.hpp"

namespace kvcap::cli {

namespace {

/// "90", "p90", "99.9" -> 0.90, 0.90, 0.999.
double parse_percentile(const std::string& in, const std::string& flag) {
  std::string s = in;
  if (!s.empty() && (s[0] == 'p' || s[0] == 'P')) s = s.substr(1);
  errno = 0;
  char* end = nullptr;
  const double v = strtod_decimal(s.c_str(), &end);  // decimal only, as every number flag
  if (s.empty() || *end != '\0' || errno == ERANGE || !(v > 0 && v < 100))
    throw UsageError(flag + ": expected a percentile strictly between 0 and 100 such as 90, p90 or 99.9, got '" + in +
                     "'");
  return v / 100;
}

/// The deployment flags every candidate shares (vLLM names).
po::options_description size_deployment_options() {
  po::options_description dep("Deployment (every candidate; vLLM flag names)");
  // clang-format off
  dep.add_options()
    ("gpu-memory-utilization", po::value<std::string>()->default_value("0.9"), "fraction of device memory vLLM may use")
    ("free-gpu-memory-fraction", po::value<std::string>(), kFreeFractionHelp)
    ("dtype", po::value<std::string>()->default_value("auto"), "model dtype: auto, bf16, fp16, fp32")
    ("block-size", po::value<std::string>()->default_value("16"), "tokens per KV block")
    ("max-model-len", po::value<std::string>(), "context limit per request (default: prompt + output of the workload)")
    ("max-num-batched-tokens", po::value<std::string>(), "token budget per step (default: vLLM serve's)")
    ("max-num-seqs", po::value<std::string>(), "sequences per step (default: vLLM serve's)")
    ("enable-expert-parallel", po::bool_switch(), "search only expert-parallel layouts (a MoE model is searched with "
     "and without by default: groups of 1, 2, 4, ... data-parallel replicas within --max-gpus-per-replica)")
    ("all2all-backend", po::value<std::string>()->default_value("allgather_reducescatter"), "the expert-parallel candidates' token exchange (vLLM's flag; DeepEP's buffers take memory)")
    ("enable-eplb", po::bool_switch(), "the expert-parallel candidates run EPLB (vLLM's flag)")
    ("eplb-config", po::value<std::string>(), "their EPLBConfig as JSON, e.g. '{\"num_redundant_experts\": 32}'");
  // clang-format on
  add_what_if_options(dep);
  return dep;
}

/// --workload, or --prompt-tokens and --output-tokens; --rate or --concurrent-users / --max-concurrency.
std::optional<WorkloadSpec> workload_into(const po::variables_map& vm, SizingWorkload& w) {
  auto str = [&](const char* k) { return vm[k].as<std::string>(); };
  // Workload: a file, or flags; --rate / --concurrent-users override the file's arrivals.
  std::optional<WorkloadSpec> spec;
  if (vm.count("workload")) {
    if (vm.count("prompt-tokens") || vm.count("output-tokens"))
      throw UsageError(
          "--workload: give the lengths in the workload file or with --prompt-tokens/--output-tokens, not both");
    spec = profiles::load_workload_file(str("workload"));
    w = sizing_workload(*spec);
  } else {
    if (!vm.count("prompt-tokens") || !vm.count("output-tokens"))
      throw UsageError("give --workload FILE, or --prompt-tokens and --output-tokens (mean tokens per request)");
    w.prompt_tokens = static_cast<double>(parse_tokens(str("prompt-tokens"), "--prompt-tokens"));
    w.output_tokens = static_cast<double>(parse_tokens(str("output-tokens"), "--output-tokens"));
  }
  if (vm.count("concurrent-users") && vm.count("max-concurrency"))
    throw UsageError("--concurrent-users and --max-concurrency name the same thing: give one");
  const char* users_flag = vm.count("max-concurrency") ? "max-concurrency" : "concurrent-users";
  if (vm.count("rate") && vm.count(users_flag))
    throw UsageError(std::string("--rate and --") + users_flag +
                     ": give one (open loop: a rate; closed loop: a number of users)");
  if (vm.count("rate")) {
    w.arrival_rate_per_s =
        parse_real(str("rate"), "--rate", "requests per second from 1e-9 to 1e9, such as 10 or 0.5", 1e-9, 1e9);
    w.concurrent_users = 0;
    if (!spec) w.arrival_scv = 1;
  } else if (vm.count(users_flag)) {
    w.concurrent_users = parse_int(str(users_flag), std::string("--") + users_flag, 1);
    w.arrival_rate_per_s = 0;
  } else if (!spec) {
    throw UsageError("give --rate R (requests per second, open loop) or --concurrent-users U (closed loop)");
  } else if (!(w.arrival_rate_per_s > 0) && w.concurrent_users == 0) {
    throw UsageError("--workload: the file has no arrival rate; give --rate or --concurrent-users");
  }
  if (spec && spec->arrival.kind == ArrivalProcess::Kind::closed && spec->arrival.think_time_s > 0 &&
      w.concurrent_users > 0)
    std::cerr << "kvcap size: note: the workload's think time (" << spec->arrival.think_time_s
              << " s) is not in size's queueing model: its " << w.concurrent_users
              << " clients are sized as always busy"
              << (spec->arrival.think_time_exponential
                      ? " (conservative)"
                      : "; a fixed think time can bring them into step, sending in waves that queue behind each "
                        "other, which that does not bound")
              << "; --verify and kvcap simulate run the think time\n";
  return spec;
}

/// A target's flag, else the workload file's slo, else an error saying what is needed.
double target_s(const po::variables_map& vm, const char* flag, const std::optional<double>& from_file,
                const std::string& needed) {
  if (vm.count(flag)) return parse_seconds(vm[flag].as<std::string>(), std::string("--") + flag);
  if (from_file) return *from_file;
  throw UsageError(needed);
}

/// --ttft-p at --ttft-percentile and --tpot, or the workload file's slo.
SizingTargets targets_of(const po::variables_map& vm, const std::optional<WorkloadSpec>& spec) {
  SizingTargets t;
  t.ttft_percentile = parse_percentile(vm["ttft-percentile"].as<std::string>(), "--ttft-percentile");
  t.ttft_s = target_s(vm, "ttft-p", spec ? spec->slo.ttft_s : std::nullopt,
                      "--ttft-p is required (the TTFT target at --ttft-percentile, e.g. 2s), or an slo.ttft_s in the "
                      "workload file");
  t.tpot_s = target_s(vm, "tpot", spec ? spec->slo.tpot_s : std::nullopt,
                      "--tpot is required (the mean time per output token target, e.g. 50ms), or an slo.tpot_s in the "
                      "workload file");
  return t;
}

/// --price USD per GPU-hour over the profiles' prices.
void prices_into(const std::string& text, std::vector<GpuSpec>& gpus) {
  std::vector<std::string> seen;
  for (const auto& item : split_list(text)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("--price: expected GPU=USD_PER_GPU_HOUR items such as h100-sxm=2.5, got '" + item + "'");
    const std::string g = item.substr(0, eq);
    if (std::find(seen.begin(), seen.end(), g) != seen.end())
      throw UsageError("--price: '" + g + "' is priced twice; give one price per GPU");
    seen.push_back(g);
    const double usd =
        parse_real(item.substr(eq + 1), "--price", "a price >= 0 in USD per GPU-hour for '" + g + "'", 0);
    bool found = false;
    for (auto& gs : gpus)
      if (gs.name == g) gs.price_per_gpu_hour_usd = usd, found = true;
    if (!found) {
      std::string msg = "--price: '" + g + "' is not among the GPUs searched (";
      for (std::size_t i = 0; i < gpus.size(); ++i) msg.append(i ? ", " : "").append(gpus[i].name);
      throw UsageError(msg + ")");
    }
  }
}

/// The search space: GPU types and prices, formats, parallelism bounds, the shared deployment, speed.
SizingSpace space_of(const po::variables_map& vm) {
  auto str = [&](const char* k) { return vm[k].as<std::string>(); };
  SizingSpace s;
  for (const auto& g : vm.count("gpus") ? parse_name_list(str("gpus"), "--gpus") : profiles::builtin_gpu_names())
    s.gpus.push_back(profiles::resolve_gpu(g));
  if (s.gpus.empty()) throw UsageError("--gpus: expected a comma-separated list of GPU names, e.g. h100-sxm,h200");
  if (vm.count("price")) prices_into(str("price"), s.gpus);
  if (vm.count("quantization"))
    for (const auto& q : split_list(str("quantization")))
      s.weight_dtypes.push_back(parse_dtype_text(q, "--quantization", [](const DTypeInfo& i) { return i.weights_ok; }));
  for (const auto& k : split_list(str("kv-cache-dtype")))
    s.kv_dtypes.push_back(parse_dtype_text(k, "--kv-cache-dtype", [](const DTypeInfo& i) { return i.kv_ok; }));
  if (s.kv_dtypes.empty()) throw UsageError("--kv-cache-dtype: expected a comma-separated list such as auto,fp8");
  s.max_tp = parse_int(str("max-tp"), "--max-tp", 1);
  s.max_pp = parse_int(str("max-pp"), "--max-pp", 1);
  s.max_gpus_per_replica = parse_int(str("max-gpus-per-replica"), "--max-gpus-per-replica", 1);
  s.max_gpus = parse_int(str("max-gpus"), "--max-gpus", 1);
  s.disaggregated = vm.count("disagg") > 0;
  const std::string link = str("kv-transfer-link");
  if (link != "network" && link != "nvlink")
    throw UsageError("--kv-transfer-link: expected network or nvlink, got '" + link + "'");
  if (!s.disaggregated && !vm["kv-transfer-link"].defaulted())
    throw UsageError("--kv-transfer-link applies to --disagg");
  s.kv_link = link == "network" ? KvLinkKind::network : KvLinkKind::nvlink;
  s.base = profiles::deployment_from_flags(flag_texts(vm, size_deployment_options()));
  apply_engine_memory_rule(vm, s.base);
  // A calibration measures one device: it applies only when exactly one GPU type is searched.
  if (vm.count("calibration")) {
    if (s.gpus.size() != 1)
      throw UsageError(
          "--calibration: a calibration describes the GPU it was measured on; give exactly one GPU type with --gpus "
          "(got " +
          std::to_string(s.gpus.size()) + ")");
    s.calibration = calibration_from(vm, s.gpus.front());
  }
  s.speed = speed_options_from(vm);
  return s;
}

/// --trace: the trace's requests (replayed by --verify, which --trace implies) and the sizer's workload from them.
std::optional<WorkloadSpec> trace_into(const po::variables_map& vm, SizeCommand& c) {
  for (const char* other :
       {"workload", "prompt-tokens", "output-tokens", "rate", "concurrent-users", "max-concurrency"})
    if (vm.count(other))
      throw UsageError(std::string("--trace: the trace gives the lengths and the arrivals; --") + other +
                       " does not apply");
  auto t = sim::read_trace_csv(vm["trace"].as<std::string>(), trace_read_options(vm));
  if (vm.count("num-requests")) {
    const auto n = static_cast<std::size_t>(parse_int(vm["num-requests"].as<std::string>(), "--num-requests", 2));
    if (t.requests.size() > n) t.requests.resize(n);
  }
  try {
    c.request.workload = sim::sizing_workload_of_trace(t.requests);
  } catch (const SpecError& e) {
    throw UsageError("--trace " + vm["trace"].as<std::string>() + ": " + e.reason());
  }
  c.verify.emplace();
  c.verify->trace = std::move(t.requests);
  return std::nullopt;
}

/// What a drawn workload simulates: the file's, or fixed lengths at the rate (Poisson) or with the users (closed
/// loop); the rate or users of the flags override the file's, as they do for the analytic search.
WorkloadSpec simulated_workload(const std::optional<WorkloadSpec>& spec, const SizingWorkload& w) {
  WorkloadSpec s;
  if (spec) {
    s = *spec;
  } else {
    s.name = "flags";
    s.prompt.tokens = static_cast<i64>(std::llround(w.prompt_tokens));
    s.output.tokens = static_cast<i64>(std::llround(w.output_tokens));
  }
  if (w.open_loop() &&
      (!spec || s.arrival.kind == ArrivalProcess::Kind::closed || s.arrival.rate_per_s != w.arrival_rate_per_s)) {
    s.arrival = ArrivalProcess::renewal(ArrivalProcess::Kind::poisson, w.arrival_rate_per_s);
  } else if (!w.open_loop()) {
    const ArrivalProcess file = s.arrival;
    s.arrival = ArrivalProcess{};
    s.arrival.kind = ArrivalProcess::Kind::closed;
    s.arrival.concurrency = w.concurrent_users;
    s.arrival.rate_per_s = std::numeric_limits<double>::infinity();
    // The file's think time is simulated (the analytic search leaves it out), whoever sets the clients' count.
    if (spec && file.kind == ArrivalProcess::Kind::closed) {
      s.arrival.think_time_s = file.think_time_s;
      s.arrival.think_time_exponential = file.think_time_exponential;
    }
  }
  return s;
}

/// --verify N, --num-requests, --seed, --threads, --no-progress.
void verify_into(const po::variables_map& vm, const std::optional<WorkloadSpec>& spec, SizeCommand& c) {
  if (!vm.count("verify") && !c.verify) {
    for (const char* flag : {"num-requests", "threads"})
      if (vm.count(flag)) throw UsageError(std::string("--") + flag + " applies to --verify or --trace");
    return;
  }
  if (!c.verify) c.verify.emplace();
  auto& o = *c.verify;
  c.verify_top =
      vm.count("verify") ? static_cast<std::size_t>(parse_int(vm["verify"].as<std::string>(), "--verify", 1, 100)) : 5;
  o.seed = static_cast<std::uint64_t>(parse_int(vm["seed"].as<std::string>(), "--seed", 0));
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  o.threads = vm.count("threads")
                  ? static_cast<unsigned>(parse_int(vm["threads"].as<std::string>(), "--threads", 1, 1024))
                  : hw;
  if (o.threads > hw) {
    std::cerr << "kvcap size: note: --threads " << o.threads << " is more than this machine's " << hw
              << " hardware threads; using " << hw << "\n";
    o.threads = hw;
  }
  c.progress = !vm.count("no-progress") && isatty(STDERR_FILENO) != 0;
  if (o.trace) return;  // --num-requests cut the trace already
  const auto& w = c.request.workload;
  o.workload = simulated_workload(spec, w);
  if (vm.count("num-requests")) {
    o.limits.num_requests =
        static_cast<std::uint64_t>(parse_int(vm["num-requests"].as<std::string>(), "--num-requests", 1, 10'000'000));
    // A run whose arrivals end within seconds ends before an overloaded count's queue has grown: it can pass.
    const double span_s = w.open_loop() && o.workload.arrival.phases.empty()
                              ? static_cast<double>(*o.limits.num_requests) / w.arrival_rate_per_s
                              : INFINITY;
    // 30 s: an overload of 10% queues 3 s by then, beyond most TTFT targets.
    if (span_s < 30)
      std::cerr << "kvcap size: warning: --verify's runs end their arrivals after " << amount(span_s, 1) << " s ("
                << grouped(*o.limits.num_requests) << " requests at " << amount(w.arrival_rate_per_s, 2)
                << " req/s): too short for an overloaded replica count's queue to grow, so one can pass; give at "
                   "least "
                << grouped(static_cast<std::uint64_t>(std::ceil(30 * w.arrival_rate_per_s)))
                << " requests (30 s; without --num-requests the runs take 120 s of arrivals, or 50,000 requests "
                   "and at least 30 s)\n";
  } else if (!o.workload.arrival.phases.empty()) {
    // Rate phases end the arrivals by themselves.
  } else {
    // 120 s of arrivals within 2,000 to 50,000 requests, and never less than 30 s (the short-run warning above).
    const double n = w.open_loop() ? 120 * w.arrival_rate_per_s : 10.0 * static_cast<double>(w.concurrent_users);
    const double at_least = w.open_loop() ? std::min(30 * w.arrival_rate_per_s, 1e7) : 0;
    o.limits.num_requests = static_cast<std::uint64_t>(std::ceil(std::max(std::clamp(n, 2000.0, 50000.0), at_least)));
  }
}

/// The search space's flags (space_of).
po::options_description size_search_options() {
  po::options_description search("Search space");
  // clang-format off
  search.add_options()
    ("gpus", po::value<std::string>(), "GPU types (built-in names or YAML profiles), comma-separated (default: all built-in)")
    ("quantization,q", po::value<std::string>(), "weight formats to try (default: the checkpoint's, plus fp8 for 16-bit checkpoints); e.g. auto,fp8,int4")
    ("kv-cache-dtype", po::value<std::string>()->default_value("auto,fp8"), "KV formats to try (auto = the model dtype, or a ModelOpt checkpoint's fp8 KV)")
    ("max-tp", po::value<std::string>()->default_value("8"), "largest tensor-parallel size (1, 2, 4, ... are tried)")
    ("max-pp", po::value<std::string>()->default_value("8"), "largest pipeline-parallel size (1, 2, 4, ... are tried)")
    ("max-gpus-per-replica", po::value<std::string>()->default_value("8"), "TP x PP limit, and the GPUs of one expert-parallel group: one node")
    ("max-gpus", po::value<std::string>()->default_value("100000"), "reject candidates needing more GPUs in total")
    ("price", po::value<std::string>(), "price per GPU-hour in USD overriding the profiles', e.g. h100-sxm=2.5,h200=3.1")
    ("disagg", "also search disaggregated prefill/decode (xPyD): a prefill pool of any GPU type and TP in front of each "
               "deployment, ranked beside the aggregated ones (open loop only; docs/sizing.md)")
    ("kv-transfer-link", po::value<std::string>()->default_value("network"),
     "--disagg: the link the KV crosses, network (the GPU profiles' NIC per GPU) or nvlink (one NVLink domain)");
  // clang-format on
  return search;
}

/// The what-ifs (--kv-eviction, --kv-layer-sharing, int4/int2 KV: not vLLM options) change the model whatever the
/// candidate: checked once against the model on the first GPU type (a usage error naming the flag when the model
/// cannot take them, rather than every candidate "invalid"), and said as KVCAP-W207 in the report, as in kvcap plan.
void what_if_findings(const SizingRequest& q, std::vector<Finding>& findings) {
  const auto& s = q.space;
  const std::vector<DType> kvs = s.kv_dtypes.empty() ? std::vector<DType>{DType::auto_} : s.kv_dtypes;
  if (s.base.kv_quant_group_size != 0 && std::none_of(kvs.begin(), kvs.end(), kv_group_size_settable))
    throw UsageError(
        "--kv-quant-group-size: the group of the KIVI KV formats; none of the --kv-cache-dtype formats "
        "searched is int4 or int2");
  for (const DType kv : kvs) {
    Deployment d = s.base;
    d.kv_cache_dtype = kv;
    if (!kv_group_size_settable(kv)) d.kv_quant_group_size = 0;  // the KIVI formats' group only, as the search
    d.num_gpus = 0;
    // The what-ifs are checked on one GPU: without the expert-parallel options, which need a group.
    d.enable_expert_parallel = d.enable_eplb = false;
    d.num_redundant_experts = 0;
    d.all2all_backend = Deployment::All2All::allgather_reducescatter;
    for (auto& f : check_what_ifs(plan_memory(q.model, s.gpus.front(), d, {})))
      if (std::none_of(findings.begin(), findings.end(), [&](const Finding& e) { return e.message == f.message; }))
        findings.push_back(std::move(f));
  }
}

}  // namespace

po::options_description size_options() {
  po::options_description work("Workload (a file, or mean lengths with a rate or a number of users)");
  // clang-format off
  work.add_options()
    ("model,m", po::value<std::string>(), "model: built-in name, YAML profile, or Hugging Face config.json")
    ("workload,w", po::value<std::string>(), "workload YAML (kind: workload): arrival rate, length distributions, slo")
    ("prompt-tokens", po::value<std::string>(), "mean prompt tokens per request (e.g. 2K)")
    ("output-tokens", po::value<std::string>(), "mean output tokens per request")
    ("rate", po::value<std::string>(), "open loop: requests per second over the whole cluster (overrides the file's)")
    ("concurrent-users", po::value<std::string>(), "closed loop: users each sending the next request as the last ends")
    ("max-concurrency", po::value<std::string>(), "the same as --concurrent-users, in vllm bench serve's words (no think time; "
                                                  "`kvcap simulate --max-concurrency N --think-time T` runs one)");
  // clang-format on
  po::options_description targets("Targets");
  // clang-format off
  targets.add_options()
    ("ttft-p", po::value<std::string>(), "TTFT target at the percentile --ttft-percentile (e.g. 2s, 800ms)")
    ("ttft-percentile", po::value<std::string>()->default_value("90"), "percentile of the TTFT target (90, p99, 99.9)")
    ("tpot", po::value<std::string>(), "mean time per output token target (e.g. 50ms)");
  // clang-format on
  po::options_description verify("Verified by simulation (docs/sizing.md)");
  // clang-format off
  verify.add_options()
    ("verify", po::value<std::string>()->implicit_value("5"), "simulate the N best candidates (default 5) and the best of each GPU type on the "
                                                             "workload, and find for each the smallest replica count whose simulated TTFT "
                                                             "percentile and mean TPOT meet the targets")
    ("trace", po::value<std::string>(), "CSV trace (kvcap simulate's columns): size for its mean lengths and arrival rate, and verify by replaying it")
    ("num-requests", po::value<std::string>(), "requests per simulation (default: the whole trace; drawn: 120 s of arrivals, "
                                              "2,000 to 50,000 but at least 30 s; closed loop: 10 per user, 2,000 to 50,000)")
    ("seed", po::value<std::string>()->default_value("1"), "random seed of the drawn workload")
    ("threads", po::value<std::string>(), "candidates simulated at once (default: the machine's hardware threads)")
    ("mpi", "under mpirun: split the candidates simulated over the MPI ranks (each with --threads); rank 0 prints "
            "the single-process result")
    ("no-progress", "no progress line on stderr");
  // clang-format on
  add_trace_read_options(verify);
  po::options_description out("Output");
  // clang-format off
  out.add_options()
    ("format,f", po::value<std::string>()->default_value("table"), "table (people), json or csv (programs)")
    ("top", po::value<std::string>()->default_value("10"), "rows in the table (0: all that meet the targets)")
    ("explain", "also list every rejected candidate and why it failed")
    ("emit", po::value<std::string>(), "also print the launch command of the recommended deployments with the flags "
                                       "kvcap planned with: vllm (vllm serve) or sglang (sglang.launch_server)")
    ("help,h", "show this help");
  // clang-format on
  po::options_description desc;
  desc.add(work)
      .add(targets)
      .add(size_search_options())
      .add(size_deployment_options())
      .add(speed_options())
      .add(verify)
      .add(out);
  return desc;
}

SizeCommand size_command_from(const po::variables_map& vm) {
  if (!vm.count("model"))
    throw UsageError("--model is required (a built-in name such as llama-3.1-70b, a YAML profile, or a config.json)");
  SizeCommand c;
  c.format = parse_format(vm["format"].as<std::string>());
  if (!vm.count("trace")) trace_read_options(vm);  // refuses --trace-columns / --trace-speedup without --trace
  const auto spec = vm.count("trace") ? trace_into(vm, c) : workload_into(vm, c.request.workload);
  c.request.targets = targets_of(vm, spec);
  c.request.model = profiles::resolve_model(vm["model"].as<std::string>());
  c.request.space = space_of(vm);
  if (c.request.space.base.enable_expert_parallel && !c.request.model.moe.enabled())
    std::cerr << "kvcap size: note: --enable-expert-parallel: " << escape::terminal_text(c.request.model.name)
              << " has no experts, so its plain layouts are searched (vLLM ignores the flag on a dense model)\n";
  if (c.request.space.disaggregated && !c.request.workload.open_loop())
    throw UsageError(
        "--disagg sizes prefill and decode pools from an arrival rate: give --rate, a trace, or a workload "
        "with an open-loop arrival process (a closed loop of users has no rate to split between them)");
  // The plausibility policy: a max_model_len shorter than the workload's requests (E104 / W205).
  if (const auto& len = c.request.space.base.max_model_len) {
    const auto& w = c.request.workload;
    c.report.findings = check_request_lengths(w.prompt_tokens, w.output_tokens, w.max_context_tokens, *len,
                                              budget_engine(c.request.space.base));
  }
  // Every candidate's max_model_len within the model's derived maximum (E111).
  if (const auto len = sizing_max_model_len(c.request.workload, c.request.space.base.max_model_len))
    if (auto beyond = check_model_max_len(*len, c.request.model.max_position_embeddings)) {
      // Without --max-model-len the length is the workload's: say which lengths made it.
      if (!c.request.space.base.max_model_len)
        beyond->message += " (max_model_len is the workload's longest request: " +
                           (vm.count("trace")      ? std::string("the trace's longest prompt + output")
                            : vm.count("workload") ? std::string("the workload file's longest prompt + output")
                                                   : std::string("--prompt-tokens + --output-tokens")) +
                           ")";
      c.report.findings.push_back(*beyond);
    }
  what_if_findings(c.request, c.report.findings);
  c.mpi = vm.count("mpi") > 0;
  if (c.mpi && !vm.count("verify") && !vm.count("trace"))
    throw UsageError("--mpi splits the verification's simulations over MPI ranks: give --verify or --trace too");
  c.report.top = parse_int(vm["top"].as<std::string>(), "--top", 0);
  c.report.explain = vm.count("explain") > 0;
  c.report.prices_overridden = vm.count("price") > 0;
  if (vm.count("engine")) c.report.engine = engine_profile(vm["engine"].as<std::string>()).name;
  verify_into(vm, spec, c);
  c.report.mixed_chunk = !c.request.space.speed.prefill_first;
  if (vm.count("emit")) {
    try {
      c.report.emit = parse_launch_engine(vm["emit"].as<std::string>());
    } catch (const SpecError& e) {
      throw UsageError("--emit: " + e.reason());
    }
  }
  return c;
}

}  // namespace kvcap::cli
