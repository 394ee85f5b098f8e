// `kvcap simulate`'s flags -> sim::SimulationRequest (simulate_request.hpp). docs/simulator.md.
#include "simulate_request.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kvcap/planner/engine.hpp"
#include "kvcap/planner/error.hpp"
#include "kvcap/planner/plausibility.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/simulator/trace.hpp"

namespace kvcap::cli {

namespace {
/// A deployment with an error among its memory findings (planner/plausibility.hpp check_memory_plan: vLLM would not
/// start it, E101, E102, E103, E106, E110, E111, or never schedules a request of max_model_len, E102 under
/// --num-gpu-blocks-override) has nothing to simulate: the first such finding, with its code and exit status, as
/// `plan` reports it. `pool` names the prefill workers' ("" otherwise).
void check_starts(const GpuSpec& g, const MemoryPlan& plan, const std::string& pool = "") {
  for (auto f : check_memory_plan(g, plan))
    if (f.level == Finding::Level::error) {
      if (!pool.empty()) f.message = pool + ": " + f.message;
      throw FindingError(f);
    }
  sim::check_fits(plan);
}

/// Bounded work: 10^7 requests take about 40 s of CPU (bench/bench_simulate: ~250,000 requests per CPU-second).
constexpr std::uint64_t kMaxRequests = 10'000'000;

std::string str(const po::variables_map& vm, const char* k) {
  return vm[k].as<std::string>();
}

UsageError no_end() {
  return UsageError("give --duration SECONDS or --num-requests N (a synthetic workload has no end of its own)");
}

/// Exactly one of --workload, --trace and --rate (--max-concurrency alone: vllm bench serve's --request-rate inf).
void check_sources(const po::variables_map& vm) {
  if (!vm.count("model"))
    throw UsageError("--model is required (a built-in name such as llama-3.1-8b, a YAML profile, or a config.json)");
  if (!vm.count("gpu")) throw UsageError("--gpu is required (a built-in name such as h100-sxm, or a YAML profile)");
  const bool closed_default_rate =
      vm.count("max-concurrency") && !vm.count("workload") && !vm.count("trace") && !vm.count("rate");
  const auto sources = vm.count("workload") + vm.count("trace") + vm.count("rate") + (closed_default_rate ? 1 : 0);
  if (sources != 1)
    throw UsageError(sources == 0 ? "give a workload: --workload FILE.yaml, --trace FILE.csv, or --rate R with "
                                    "--prompt-tokens and --output-tokens"
                                  : "give only one of --workload, --trace and --rate");
  if (vm.count("trace") && (vm.count("prompt-tokens") || vm.count("output-tokens")))
    throw UsageError("--prompt-tokens/--output-tokens do not apply to a trace (its rows give the lengths)");
}

/// --rate's text: given, or "inf" for a closed loop without one, or "" for a file or a trace.
std::string rate_text(const po::variables_map& vm) {
  if (vm.count("rate")) return str(vm, "rate");
  return vm.count("max-concurrency") && !vm.count("workload") && !vm.count("trace") ? "inf" : "";
}

/// --duration, --num-requests and their bounds; the seed.
void limits_into(const po::variables_map& vm, sim::SimulationRequest& r) {
  if (vm.count("duration")) r.limits.duration_s = parse_seconds(str(vm, "duration"), "--duration");
  if (vm.count("num-requests"))
    r.limits.num_requests = static_cast<std::uint64_t>(parse_int(str(vm, "num-requests"), "--num-requests", 1));
  if (!vm.count("trace") && !vm.count("workload") && !r.limits.duration_s && !r.limits.num_requests) throw no_end();
  r.seed = static_cast<std::uint64_t>(parse_int(str(vm, "seed"), "--seed", 0));
  if (r.limits.num_requests && *r.limits.num_requests > kMaxRequests && !vm.count("force"))
    throw UsageError("--num-requests " + grouped(*r.limits.num_requests) + ": about " +
                     grouped(*r.limits.num_requests / 250'000 + 1) + " s of CPU at ~250,000 requests/s; at most " +
                     grouped(kMaxRequests) + " without --force");
  if (rate_text(vm) == "inf" && !r.limits.num_requests)
    throw UsageError(std::string(vm.count("rate") ? "--rate inf sends every request at once"
                                                  : "--max-concurrency without --rate sends a request whenever a "
                                                    "client is free (--rate inf)") +
                     ": give --num-requests N (a duration would never end it)");
  if (vm.count("think-time") && !vm.count("max-concurrency") && !vm.count("workload"))
    throw UsageError("--think-time applies to a closed loop: give --max-concurrency N too");
}

/// --replicas, --router, --allocator, --prefix-caching, --max-concurrency, --think-time.
void cluster_into(const po::variables_map& vm, const Deployment& dep, SimulateCommand& c) {
  auto& r = c.request;
  const auto& plan = r.speed.plan;
  if (vm.count("replicas")) {
    const i64 want = parse_int(str(vm, "replicas"), "--replicas", 1);
    if (vm.count("num-gpus") && want != plan.dep.replicas)
      throw UsageError("--replicas " + std::to_string(want) + " disagrees with --num-gpus " +
                       std::to_string(dep.num_gpus) + " / (TP x PP) = " + std::to_string(plan.dep.replicas) +
                       "; give one of them");
    if (want > 100000) throw UsageError("--replicas: at most 100,000");
    r.replicas = static_cast<std::uint32_t>(want);
  } else if (plan.dep.replicas > 100000) {
    throw UsageError("--replicas: at most 100,000");
  }
  const auto router = sim::parse_router(str(vm, "router"));
  if (!router) throw UsageError("--router: expected round-robin, lor or kv, got '" + str(vm, "router") + "'");
  r.router = *router;
  const std::string allocator = str(vm, "allocator");
  c.compare_allocators = allocator == "compare";
  if (allocator == "paged" || c.compare_allocators)
    r.allocator = sim::Allocator::paged;
  else if (allocator == "contiguous")
    r.allocator = sim::Allocator::contiguous;
  else
    throw UsageError("--allocator: expected paged, contiguous or compare, got '" + allocator + "'");
  if (c.compare_allocators && (vm.count("timeline") || vm.count("requests-out")))
    throw UsageError("--timeline and --requests-out follow one run; leave them out with --allocator compare");
  const std::string prefix = str(vm, "prefix-caching");
  if (prefix != "on" && prefix != "off") throw UsageError("--prefix-caching: expected on or off, got '" + prefix + "'");
  r.prefix_caching = prefix == "on";
  if (!vm.count("max-concurrency")) return;
  const i64 n = parse_int(str(vm, "max-concurrency"), "--max-concurrency", 1);
  if (n > 10'000'000)
    throw UsageError("--max-concurrency: at most 10,000,000 clients, got '" + str(vm, "max-concurrency") + "'");
  r.max_concurrency = static_cast<std::uint32_t>(n);
  if (!vm.count("think-time")) return;
  std::string t(trim(str(vm, "think-time")));
  if (t.rfind("exp:", 0) == 0) r.think_time_exponential = true, t = t.substr(4);
  r.think_time_s = (t == "0" || t == "0s" || t == "0ms") ? 0.0 : parse_seconds(t, "--think-time");
}

/// --shared-prefix-tokens N: every prompt begins with one common prefix of N tokens (one group, every request), as
/// in kvcap plan. A workload file gives it in its shared_prefix block instead (not both). Longer than the longest
/// prompt it is KVCAP-E108 (exit 2); a shorter prompt of a trace or a distribution carries a part of it, as the
/// workload generator does for a group's prefix (simulator/src/workload.cpp).
i64 shared_prefix_tokens(const SimulateCommand& c) {
  return c.request.speed.plan.dep.d.shared_prefix_tokens;
}

/// validate(w), with --rate inf (offline: every request at once) checked as any finite rate.
void validate_workload(const WorkloadSpec& w) {
  WorkloadSpec checked = w;
  if (std::isinf(checked.arrival.rate_per_s)) checked.arrival.rate_per_s = 1;
  validate(checked);
}

void shared_prefix_into_trace(std::vector<sim::RequestSpec>& requests, i64 prefix) {
  if (prefix == 0) return;
  i64 longest = 0;
  for (const auto& q : requests) longest = std::max(longest, q.prompt_tokens);
  if (prefix > longest)
    throw UsageError("KVCAP-E108: --shared-prefix-tokens " + std::to_string(prefix) +
                     " is longer than the trace's longest prompt (" + std::to_string(longest) +
                     " tokens): every prompt begins with the shared prefix");
  for (auto& q : requests) {
    q.prefix_group = 0;
    q.prefix_tokens = std::min(prefix, q.prompt_tokens);
  }
}

void shared_prefix_into_workload(WorkloadSpec& w, i64 prefix) {
  if (prefix == 0) return;
  if (w.shared_prefix.enabled())
    throw UsageError(
        "--shared-prefix-tokens: the workload file has a shared_prefix block already; give the prefix in "
        "one place");
  w.shared_prefix = {1, prefix, 1.0};
  try {
    validate_workload(w);
  } catch (const SpecError& e) {
    if (e.field() == "shared_prefix.tokens") throw UsageError("KVCAP-E108: --shared-prefix-tokens " + e.reason());
    throw UsageError(e.what());
  }
}

/// --trace: the requests replayed.
void trace_into(const po::variables_map& vm, SimulateCommand& c) {
  const sim::TraceOptions to = trace_read_options(vm);
  sim::Trace t = sim::read_trace_csv(str(vm, "trace"), to);
  const std::string file = str(vm, "trace");
  const auto slash = file.find_last_of('/');
  c.info.workload_name = slash == std::string::npos ? file : file.substr(slash + 1);
  c.info.workload_source = "trace";
  shared_prefix_into_trace(t.requests, shared_prefix_tokens(c));
  c.info.workload_desc = describe_trace(c.info.workload_name, t, to.speedup, c.request.limits);
  if (shared_prefix_tokens(c) > 0)
    c.info.workload_desc += "; every prompt begins with a shared prefix of " +
                            grouped(static_cast<u64>(shared_prefix_tokens(c))) + " tokens";
  c.request.trace = std::move(t.requests);
  c.timeline_span_s = sim::arrival_span_s(c.request, t.span_s);
}

/// --rate with --arrival, --cv, --prompt-tokens and --output-tokens.
WorkloadSpec workload_from_flags(const po::variables_map& vm) {
  WorkloadSpec w;
  w.name = "flags";
  if (!vm.count("prompt-tokens") || !vm.count("output-tokens"))
    throw UsageError(std::string(vm.count("rate") ? "--rate" : "--max-concurrency") +
                     " needs --prompt-tokens and --output-tokens");
  const std::string rate = rate_text(vm);
  w.arrival.rate_per_s = rate == "inf" ? std::numeric_limits<double>::infinity()
                                       : parse_real(rate, "--rate",
                                                    "arrivals per second from 1e-9 to 1e9 "
                                                    "(as a workload file's rate_per_s) such as 4.5, or inf",
                                                    1e-9, 1e9);
  const std::string a = str(vm, "arrival");
  if (a == "poisson")
    w.arrival.kind = ArrivalProcess::Kind::poisson;
  else if (a == "gamma")
    w.arrival.kind = ArrivalProcess::Kind::gamma;
  else if (a == "fixed" || a == "fixed_rate")
    w.arrival.kind = ArrivalProcess::Kind::fixed_rate;
  else
    throw UsageError("--arrival: expected poisson, gamma or fixed, got '" + a + "'");
  if (vm.count("cv")) {
    if (w.arrival.kind != ArrivalProcess::Kind::gamma) throw UsageError("--cv applies to --arrival gamma only");
    w.arrival.cv = parse_real(str(vm, "cv"), "--cv", "a coefficient of variation such as 2");
  } else if (w.arrival.kind == ArrivalProcess::Kind::gamma) {
    throw UsageError("--arrival gamma needs --cv (the gaps' coefficient of variation; 1 is Poisson)");
  }
  w.prompt = parse_length(str(vm, "prompt-tokens"), "--prompt-tokens");
  w.output = parse_length(str(vm, "output-tokens"), "--output-tokens");
  try {
    validate_workload(w);
  } catch (const SpecError& e) {
    throw UsageError(e.what());
  }
  return w;
}

/// --workload FILE, or the workload flags.
void workload_into(const po::variables_map& vm, SimulateCommand& c) {
  auto& r = c.request;
  if (vm.count("workload")) {
    r.workload = profiles::load_workload_file(str(vm, "workload"));
    c.info.workload_source = "workload";
    // Rate phases end the arrivals by themselves; anything else needs a limit.
    if (r.workload.arrival.phases.empty() && !r.limits.duration_s && !r.limits.num_requests) throw no_end();
    const bool closed = r.workload.arrival.kind == ArrivalProcess::Kind::closed;
    if (closed && (vm.count("max-concurrency") || vm.count("think-time")))
      throw UsageError(
          "--max-concurrency/--think-time: the workload file already describes a closed loop (arrival.process: "
          "closed); set its concurrency and think_time_s there");
    if (!closed && vm.count("think-time") && !vm.count("max-concurrency"))
      throw UsageError(
          "--think-time applies to a closed loop: give --max-concurrency N too (or, in the workload "
          "file, arrival: {process: closed, concurrency: N, think_time_s: T})");
    if (closed && !r.limits.num_requests)
      throw UsageError(
          "the workload file's closed loop (arrival.process: closed) sends a request whenever a client "
          "is free: give --num-requests N (a duration would never end it)");
  } else {
    c.info.workload_source = "flags";
    r.workload = workload_from_flags(vm);
  }
  if (vm.count("workload") && (vm.count("prompt-tokens") || vm.count("output-tokens") || vm.count("cv")))
    throw UsageError("--prompt-tokens/--output-tokens/--cv do not apply with --workload (the file gives them)");
  shared_prefix_into_workload(r.workload, shared_prefix_tokens(c));
  // Bounded work: as --num-requests, the requests a duration or the phases imply (conversations: times their turns).
  if (const double n = sim::expected_requests(r);
      std::isfinite(n) && n > static_cast<double>(kMaxRequests) && !vm.count("force"))
    throw UsageError("about " + grouped(static_cast<std::uint64_t>(std::min(n, 9e18))) +
                     " requests (the arrivals over the duration or the phases" +
                     (r.workload.conversation.enabled() ? std::string(", times the conversations' mean turns") : "") +
                     "): about " + grouped(static_cast<std::uint64_t>(std::min(n, 9e18)) / 250'000 + 1) +
                     " s of CPU at ~250,000 requests/s; at most " + grouped(kMaxRequests) +
                     " without --force (or give --num-requests)");
  c.info.workload_name = r.workload.name;
  c.info.workload_desc = describe_workload(r.workload, vm.count("workload") ? str(vm, "workload") : "", r.limits,
                                           r.seed, r.max_concurrency > 0);
  c.timeline_span_s = sim::arrival_span_s(r);
}

/// --engine, --calibration, --num-scheduler-steps, the host tier.
void speed_into(const po::variables_map& vm, const ModelSpec& model, const GpuSpec& gpu, SimulateCommand& c) {
  auto& r = c.request;
  r.speed = speed_context_from(vm, model, gpu, r.speed.plan);
  const std::string engine = str(vm, "engine");
  c.info.step_time_source = "roofline speed model (" +
                            std::string(r.speed.calibration     ? "calibrated: " + str(vm, "calibration")
                                        : engine == "datasheet" ? "datasheet x default efficiencies"
                                                                : "engine profile " + engine) +
                            ")";
  if (!r.speed.calibration) c.info.expected_error = error_band(engine_profile(engine));
  r.num_scheduler_steps = parse_int(str(vm, "num-scheduler-steps"), "--num-scheduler-steps", 1, 1024);
  const HostTierFlags host = host_tier_flags(vm);
  if (!host.any()) return;
  r.kv_offloading_size_gib = host.offloading_size_gib;
  r.lmcache = host.lmcache;
  sim::ReplicaConfig checked = sim::replica_config(r.speed.plan);
  sim::apply_host_tier(r, checked);  // its checks before anything runs (run_guarded names the flag)
}

/// --prefill-replicas, --prefill-gpu, --prefill-tp, --kv-transfer-*: disaggregated prefill workers in front of the
/// replicas, which then decode only (planner/disagg.hpp).
void prefill_into(const po::variables_map& vm, const Deployment& dep, const ModelSpec& model, const GpuSpec& gpu,
                  SimulateCommand& c) {
  const bool any = vm.count("prefill-gpu") || vm.count("prefill-tp") || vm.count("kv-transfer-bandwidth") ||
                   vm.count("kv-transfer-latency") || !vm["kv-transfer-link"].defaulted();
  if (!vm.count("prefill-replicas")) {
    if (any)
      throw UsageError(
          "--prefill-gpu, --prefill-tp and --kv-transfer-* describe disaggregated prefill workers: give "
          "--prefill-replicas N too");
    return;
  }
  auto& r = c.request;
  if (r.kv_offloading_size_gib > 0 || r.lmcache)
    throw UsageError(
        "--kv-offloading-size / --lmcache-* beside --prefill-replicas: a host KV tier with disaggregated prefill is "
        "not "
        "modelled; leave one of them out");
  sim::SimulationRequest::PrefillWorkers w;
  w.replicas = static_cast<std::uint32_t>(parse_int(str(vm, "prefill-replicas"), "--prefill-replicas", 1, 100000));
  const GpuSpec pgpu = vm.count("prefill-gpu") ? profiles::resolve_gpu(str(vm, "prefill-gpu")) : gpu;
  Deployment pdep = dep;
  pdep.num_gpus = 0;
  if (vm.count("prefill-tp")) pdep.tensor_parallel_size = parse_int(str(vm, "prefill-tp"), "--prefill-tp", 1, 1024);
  try {
    w.speed = speed_context_from(vm, model, pgpu, plan_memory(model, pgpu, pdep, {}));
    check_starts(pgpu, w.speed.plan, "prefill workers");
  } catch (const SpecError& e) {
    throw UsageError("the prefill workers (--prefill-gpu " + pgpu.name + ", --prefill-tp " +
                     std::to_string(pdep.tensor_parallel_size) + "): " + e.field() + ": " + e.reason());
  }
  const std::string link = str(vm, "kv-transfer-link");
  if (link != "network" && link != "nvlink")
    throw UsageError(
        "--kv-transfer-link: expected network (pools on different nodes) or nvlink (one NVLink domain), "
        "got '" +
        link + "'");
  const KvLinkKind kind = link == "network" ? KvLinkKind::network : KvLinkKind::nvlink;
  if (vm.count("kv-transfer-bandwidth")) {
    w.link.name = "--kv-transfer-bandwidth";
    w.link.bandwidth_bytes_per_s = 1e9 * parse_real(str(vm, "kv-transfer-bandwidth"), "--kv-transfer-bandwidth",
                                                    "GB/s (10^9 bytes per second) per GPU, > 0", kPositive, 1e6);
    w.link.latency_s = std::max(kind == KvLinkKind::network ? gpu.network_latency_s : gpu.interconnect_latency_s,
                                kind == KvLinkKind::network ? pgpu.network_latency_s : pgpu.interconnect_latency_s);
  } else {
    try {
      w.link = kv_transfer_link(pgpu, gpu, kind);
    } catch (const SpecError& e) {
      throw UsageError("--kv-transfer-link " + link + ": " + e.reason());
    }
  }
  if (vm.count("kv-transfer-latency"))
    w.link.latency_s = parse_seconds(str(vm, "kv-transfer-latency"), "--kv-transfer-latency");
  const auto& pd = w.speed.plan.dep.d;
  c.info.prefill_desc = std::to_string(w.replicas) + " prefill worker" + (w.replicas == 1 ? "" : "s") + " x (TP " +
                        std::to_string(pd.tensor_parallel_size) + " x PP " + std::to_string(pd.pipeline_parallel_size) +
                        " " + (pgpu.display_name.empty() ? pgpu.name : pgpu.display_name) + "), KV over " +
                        w.link.name + " (" + amount(w.link.bandwidth_bytes_per_s / 1e9, 1) + " GB/s per GPU, " +
                        (w.link.latency_s > 0 ? human_seconds(w.link.latency_s) : std::string("no latency")) + ")";
  c.info.prefill_gpu = pgpu.name;
  c.info.kv_link = w.link;
  r.prefill = std::move(w);
}

/// --timeline, --timeline-interval, --requests-out: refuses a timeline of more than 2,000,000 rows (~120 MB)
/// before any file is written (a two-row trace 10^9 s long is not a gigabyte file).
void outputs_into(const po::variables_map& vm, SimulateCommand& c) {
  if (vm.count("requests-out")) c.requests_path = str(vm, "requests-out");
  if (!vm.count("timeline")) return;
  c.timeline_path = str(vm, "timeline");
  c.force = vm.count("force") > 0;
  const double interval_s = c.request.timeline_interval_s =
      parse_seconds(str(vm, "timeline-interval"), "--timeline-interval");
  // A row per decode replica and per prefill worker (disaggregated) at each sample.
  const auto replicas = c.request.replicas.value_or(static_cast<std::uint32_t>(c.request.speed.plan.dep.replicas)) +
                        (c.request.prefill ? c.request.prefill->replicas : 0U);
  constexpr auto kMaxRows = static_cast<double>(kMaxTimelineRows);
  const double rows = sim::timeline_rows(c.timeline_span_s, interval_s, replicas);
  if (rows <= kMaxRows || vm.count("force")) return;
  const double need_s = c.timeline_span_s * replicas / kMaxRows;
  throw UsageError("--timeline: about " + grouped(static_cast<std::uint64_t>(std::min(rows, 9e18))) + " rows (" +
                   fixed(c.timeline_span_s, 0) + " s of arrivals / " + fixed(interval_s, 3) + " s x " +
                   std::to_string(replicas) + " replicas); at most 2,000,000: use --timeline-interval " +
                   fixed(std::ceil(need_s), 0) + "s or longer, or --force");
}

/// --client-start, once the workload, the engine and the decode workers are known (sim::staggered_start_of); the step
/// composition of a prefill-first engine in the step-time source.
void client_start_into(const po::variables_map& vm, SimulateCommand& c) {
  auto& r = c.request;
  const std::string start = str(vm, "client-start");
  if (start != "auto" && start != "staggered" && start != "together")
    throw UsageError("--client-start: expected auto, staggered or together, got '" + start + "'");
  if (start != "auto" && !sim::closed_loop(r))
    throw UsageError("--client-start " + start +
                     " applies to a closed loop: give --max-concurrency N too (or a workload file's arrival: "
                     "{process: closed, ...})");
  if (start == "staggered" && r.max_concurrency > 0 && sim::arrivals_paced(r))
    throw UsageError(
        "--client-start staggered: the arrivals (a finite --rate, rate phases or a trace) already pace the "
        "clients, each sending at the later of its request's arrival and its previous answer; staggering "
        "applies to --rate inf or a workload file's closed loop");
  if (start != "auto") r.staggered_start = start == "staggered";
  c.staggered_asked = sim::staggered_start_of(r);
  c.lockstep_engine = start == "auto" && !c.staggered_asked && !sim::arrivals_paced(r);
  if (r.speed.options.prefill_first && !r.prefill) {
    c.info.step_time_source.pop_back();  // ")"
    c.info.step_time_source += "; prefills in steps of their own)";
  }
}

/// The disaggregated prefill/decode flags (prefill_into).
po::options_description disagg_options() {
  po::options_description pd("Disaggregated prefill/decode (xPyD: x prefill workers, y = --replicas decode workers)");
  // clang-format off
  pd.add_options()
    ("prefill-replicas", po::value<std::string>(), "x prefill workers in front of the replicas, which then only decode; "
                                                    "each request's KV moves to its decode worker (vLLM NixlConnector, Dynamo, llm-d)")
    ("prefill-gpu", po::value<std::string>(), "the prefill workers' GPU type (default: --gpu)")
    ("prefill-tp", po::value<std::string>(), "the prefill workers' tensor-parallel size (default: --tensor-parallel-size)")
    ("kv-transfer-link", po::value<std::string>()->default_value("network"),
     "network (pools on different nodes: the GPU profiles' NIC per GPU) or nvlink (one NVLink domain)")
    ("kv-transfer-bandwidth", po::value<std::string>(), "the link's GB/s (10^9 bytes/s) per GPU and direction, instead of the profiles'")
    ("kv-transfer-latency", po::value<std::string>(), "fixed cost per transfer (e.g. 20us, 2ms), instead of the profiles'");
  // clang-format on
  return pd;
}

}  // namespace

po::options_description simulate_options() {
  auto desc = deployment_options();
  po::options_description wl("Workload (one of --workload, --trace, --rate)");
  // clang-format off
  wl.add_options()
    ("workload", po::value<std::string>(), "workload file (kind: workload; see profiles/examples/workload-chat.yaml)")
    ("trace", po::value<std::string>(), "CSV trace: arrival time, prompt tokens, output tokens per row (Azure LLM traces auto-detected)")
    ("rate", po::value<std::string>(), "arrivals per second (with --prompt-tokens and --output-tokens); inf: all at once (offline)")
    ("max-concurrency", po::value<std::string>(), "closed loop: at most N requests in flight, each client sending its next when its last "
                                                   "finishes (vllm bench serve --max-concurrency); without --rate, --rate inf")
    ("think-time", po::value<std::string>(), "closed loop: a client's pause between an answer and its next request: 2s (fixed) or exp:2s "
                                              "(exponential with that mean); default 0s")
    ("num-scheduler-steps", po::value<std::string>()->default_value("1"), "vLLM 0.6 multi-step scheduling: admit waiting requests only every k steps")
    ("client-start", po::value<std::string>()->default_value("auto"),
     "closed loop: staggered (clients' first requests spread over one request's cycle: the steady state real clients drift "
     "into), together (all N at t = 0, the first wave of a benchmark; identical requests then stay in lockstep) or auto: "
     "together with a prefill-first engine (--engine sglang), whose clients stay in lockstep, staggered otherwise")
    ("arrival", po::value<std::string>()->default_value("poisson"), "arrival process with --rate: poisson, gamma or fixed")
    ("cv", po::value<std::string>(), "gamma arrivals: coefficient of variation of the gaps (> 1: bursty)")
    ("prompt-tokens", po::value<std::string>(), "prompt lengths: 512 | uniform:128-2K | lognormal:mean=1K,sigma=0.9[,min=16,max=8K] | empirical:128@0.5,1K@0.5")
    ("output-tokens", po::value<std::string>(), "output lengths, same forms")
    ("duration", po::value<std::string>(), "arrivals during this many seconds (e.g. 600, 10min); every one runs to completion")
    ("num-requests", po::value<std::string>(), "this many requests (a trace: its first N)")
    ("seed", po::value<std::string>()->default_value("0"), "random seed (same seed, same output)");
  // clang-format on
  add_trace_read_options(wl);
  po::options_description cl("Cluster and scheduler");
  // clang-format off
  cl.add_options()
    ("replicas", po::value<std::string>(), "data-parallel replicas (default: --num-gpus / (TP x PP), else 1)")
    ("router", po::value<std::string>()->default_value("round-robin"), "round-robin, lor (least outstanding requests) or kv (least KV load)")
    ("allocator", po::value<std::string>()->default_value("paged"), "paged (vLLM blocks), contiguous (reserve max_model_len per request), or compare (both, same workload)")
    ("prefix-caching", po::value<std::string>()->default_value("on"), "on or off (vLLM V1 default on; matters for shared-prefix groups)")
    ("ttft-target", po::value<std::string>(), "goodput target for time to first token (default: the workload's slo)")
    ("tpot-target", po::value<std::string>(), "goodput target for time per output token (default: the workload's slo)");
  // clang-format on
  add_host_tier_options(cl);
  po::options_description out("Output");
  // clang-format off
  out.add_options()
    ("format,f", po::value<std::string>()->default_value("table"), "table (people), json or csv (one summary row)")
    ("timeline", po::value<std::string>(), "write running/waiting/KV per replica over time to this CSV")
    ("timeline-interval", po::value<std::string>()->default_value("1s"), "simulated time between timeline samples")
    ("requests-out", po::value<std::string>(), "write one CSV row per completed request (arrival, first token, finish, ...)")
    ("no-wall-time", "leave wall-clock timing out of the output (reproducible output, e.g. for golden tests)")
    ("no-progress", "no progress indicator (it is shown on stderr only when stderr is a terminal)")
    ("force", "run even when --num-requests or the timeline exceed the limits that keep a run to minutes and megabytes")
    ("help,h", "show this help");
  // clang-format on
  desc.add(speed_options());
  desc.add(wl);
  desc.add(cl);
  desc.add(disagg_options());
  desc.add(out);
  return desc;
}

SimulateCommand simulate_command_from(const po::variables_map& vm) {
  check_sources(vm);
  SimulateCommand c;
  auto& r = c.request;
  limits_into(vm, r);
  const Deployment dep = deployment_from(vm);
  const ModelSpec model = profiles::resolve_model(str(vm, "model"));
  const GpuSpec gpu = profiles::resolve_gpu(str(vm, "gpu"));
  r.speed.plan = plan_memory(model, gpu, dep, {});
  check_starts(gpu, r.speed.plan);
  c.info.model = model.name;
  c.info.model_display = model.display_name.empty() ? model.name : model.display_name;
  c.info.gpu = gpu.name;
  c.info.gpu_display =
      std::to_string(r.speed.plan.dep.d.tensor_parallel_size * r.speed.plan.dep.d.pipeline_parallel_size) + " x " +
      (gpu.display_name.empty() ? gpu.name : gpu.display_name) + " per replica";
  cluster_into(vm, dep, c);
  if (vm.count("trace")) {
    trace_into(vm, c);
  } else {
    trace_read_options(vm);  // refuses --trace-columns / --trace-speedup without --trace
    workload_into(vm, c);
  }
  if (vm.count("ttft-target")) r.slo.ttft_s = parse_seconds(str(vm, "ttft-target"), "--ttft-target");
  if (vm.count("tpot-target")) r.slo.tpot_s = parse_seconds(str(vm, "tpot-target"), "--tpot-target");
  speed_into(vm, model, gpu, c);
  prefill_into(vm, dep, model, gpu, c);
  client_start_into(vm, c);
  outputs_into(vm, c);
  return c;
}

}  // namespace kvcap::cli
