// A simulation run from one request value (run.hpp): the assembly `kvcap simulate` and `kvcap accuracy` used to
// do each by hand.
#include "kvcap/simulator/run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "kvcap/planner/error.hpp"
#include "kvcap/planner/host_tier.hpp"
#include "kvcap/planner/text.hpp"

namespace kvcap::sim {

namespace {

/// The closed loop the request runs: its own settings, or the workload's when its arrival process is `closed`.
struct ClosedLoop {
  std::uint32_t clients = 0;
  double think_time_s = 0;
  bool exponential = false;
};

ClosedLoop closed_loop_of(const SimulationRequest& r) {
  const auto& a = r.workload.arrival;
  if (!r.trace && a.kind == ArrivalProcess::Kind::closed)
    return {static_cast<std::uint32_t>(a.concurrency), a.think_time_s, a.think_time_exponential};
  return {r.max_concurrency, r.think_time_s, r.think_time_exponential};
}

std::unique_ptr<RequestSource> source_of(const SimulationRequest& r) {
  if (r.trace) return list_source(*r.trace, r.limits);
  return synthetic_source(r.workload, r.seed, r.limits);
}

}  // namespace

bool closed_loop(const SimulationRequest& r) {
  return closed_loop_of(r).clients > 0;
}

bool one_wave(const SimulationRequest& r) {
  const ClosedLoop loop = closed_loop_of(r);
  return loop.clients > 0 && r.limits.num_requests && *r.limits.num_requests < 2ull * loop.clients;
}

std::pair<double, double> mean_lengths_tokens(const SimulationRequest& r) {
  if (!r.trace) return {r.workload.prompt.mean_tokens(), r.workload.output.mean_tokens()};
  double prompt = 0, output = 0;
  for (const auto& q : *r.trace)
    prompt += static_cast<double>(q.prompt_tokens), output += static_cast<double>(q.output_tokens);
  if (r.trace->empty()) return {0, 0};
  const auto n = static_cast<double>(r.trace->size());
  return {prompt / n, output / n};
}

void check_fits(const MemoryPlan& plan) {
  if (plan.seqs_exceed_state_blocks()) throw SpecError("max_num_seqs", "KVCAP-E110: " + seqs_limit_text(plan));
  if (!plan.fits())
    throw SpecError("max_model_len",
                    "one request of max_model_len " + grouped(static_cast<std::uint64_t>(plan.dep.max_model_len)) +
                        " tokens does not fit in the KV cache (" + grouped(plan.kv_capacity_tokens) +
                        " tokens per replica); vLLM would refuse to start: lower --max-model-len or add memory");
}

void apply_host_tier(const SimulationRequest& r, ReplicaConfig& c) {
  if (r.kv_offloading_size_gib <= 0 && !r.lmcache) return;
  const char* field = r.lmcache ? "lmcache" : "kv_offloading_size";
  if (r.kv_offloading_size_gib > 0 && r.lmcache)
    throw SpecError(field, "vLLM's CPU offloading and LMCache are two KV connectors: give one of them");
  if (!r.prefix_caching) throw SpecError(field, "the host tier serves prefix-cache hits: it needs prefix caching on");
  const MemoryPlan& plan = r.speed.plan;
  const HostTier t = r.lmcache ? plan_lmcache_tier(plan, r.speed.gpu, r.speed.calibration, *r.lmcache)
                               : plan_host_tier(plan, r.speed.gpu, r.speed.calibration, r.kv_offloading_size_gib);
  if (!t.link)
    throw SpecError(field,
                    "the reload time is unknown: the GPU profile has no host_link, and no "
                    "calibration measured the link (kvcap calibrate on that GPU)");
  // Per block: a unit's reload spread over its blocks (a hit is whole units: BlockManager::find_host_prefix).
  const i64 unit_blocks = t.unit_tokens / c.block_size;  // the replica's block: block_size x DCP tokens
  if (unit_blocks < 1 || unit_blocks * c.block_size != t.unit_tokens)
    throw std::logic_error("host tier unit of " + std::to_string(t.unit_tokens) + " tokens is not whole blocks of " +
                           std::to_string(c.block_size));
  c.host_unit_blocks = unit_blocks;
  c.host_blocks = t.num_blocks;
  c.host_reload_s_per_block = reload_time_s(t, t.unit_tokens) / static_cast<double>(unit_blocks);
  c.host_disk_blocks = t.disk_chunks * static_cast<std::uint64_t>(unit_blocks);
  if (t.disk)
    c.host_disk_reload_s_per_block =
        (disk_reload_time_s(t, t.unit_tokens) - reload_time_s(t, t.unit_tokens)) / static_cast<double>(unit_blocks);
}

SimConfig config_for(const SimulationRequest& r) {
  const MemoryPlan& plan = r.speed.plan;
  check_fits(plan);
  SimConfig cfg;
  cfg.replica = replica_config(plan);
  cfg.replica.allocator = r.allocator;
  cfg.replica.prefix_caching = r.prefix_caching;
  cfg.replica.num_scheduler_steps = r.num_scheduler_steps;
  // A disaggregated decode worker runs no prompt: its steps are decodes however the engine composes them.
  cfg.replica.prefill_first = r.speed.options.prefill_first && !r.prefill;
  apply_host_tier(r, cfg.replica);
  if (r.prefill) {
    const MemoryPlan& pp = r.prefill->speed.plan;
    check_fits(pp);
    if (r.prefill->replicas < 1) throw SpecError("prefill_replicas", "must be >= 1");
    cfg.prefill.num_replicas = r.prefill->replicas;
    cfg.prefill.replica = replica_config(pp);
    cfg.prefill.replica.allocator = r.allocator;
    cfg.prefill.replica.prefix_caching = r.prefix_caching;
    cfg.prefill.replica.num_scheduler_steps = r.num_scheduler_steps;
    // Checked here, before any request runs (kv_transfer_s throws SpecError naming the bad value).
    (void)kv_transfer_s(pp, plan, r.prefill->link, 1);
    cfg.prefill.kv_transfer_s = [prefill = pp, decode = plan, link = r.prefill->link](i64 tokens) {
      return kv_transfer_s(prefill, decode, link, tokens);
    };
  }
  cfg.num_replicas = r.replicas ? *r.replicas : static_cast<std::uint32_t>(plan.dep.replicas);
  cfg.router = r.router;
  cfg.slo = r.workload.slo;
  if (r.slo.ttft_s) cfg.slo.ttft_s = r.slo.ttft_s;
  if (r.slo.tpot_s) cfg.slo.tpot_s = r.slo.tpot_s;
  const ClosedLoop loop = closed_loop_of(r);
  cfg.max_concurrency = loop.clients;
  if (loop.clients > 0) {
    cfg.think_time_s = loop.think_time_s;
    cfg.think_time_exponential = loop.exponential;
    cfg.think_seed = r.seed;
  }
  cfg.timeline_interval_s = r.timeline_interval_s;
  cfg.observer = r.observer;
  cfg.progress = r.progress;
  cfg.check_invariants = r.check_invariants;
  const auto [prompt, output] = mean_lengths_tokens(r);
  apply_speed_model(cfg, r.speed, std::llround(std::max(1.0, prompt)), std::llround(std::max(1.0, output)),
                    staggered_start_of(r) && !one_wave(r));
  return cfg;
}

bool arrivals_paced(const SimulationRequest& r) {
  const auto& a = r.workload.arrival;
  return r.trace || (a.kind != ArrivalProcess::Kind::closed && (!std::isinf(a.rate_per_s) || !a.phases.empty()));
}

bool staggered_start_of(const SimulationRequest& r) {
  if (arrivals_paced(r)) return false;
  // A prefill pending holds every decode of a prefill-first engine back, so identical requests sent within one wave
  // of prefills decode in step, finish in the same step and come back together: started together, such clients stay
  // in lockstep. Lengths that vary, random think times, conversations or decode workers of their own (disaggregated)
  // spread them, and clients of an engine that mixes prefill chunks into decode steps drift apart
  // (docs/simulator.md, "Closed loop").
  const auto& w = r.workload;
  const ClosedLoop loop = closed_loop_of(r);
  const bool identical = !r.trace && w.prompt.is_constant() && w.output.is_constant() && !w.conversation.enabled() &&
                         !(loop.think_time_s > 0 && loop.exponential);
  return r.staggered_start.value_or(!(r.speed.options.prefill_first && identical && !r.prefill));
}

double arrival_span_s(const SimulationRequest& r, double trace_span_s) {
  const auto& lim = r.limits;
  if (r.trace) return lim.duration_s ? std::min(*lim.duration_s, trace_span_s) : trace_span_s;
  double phases_s = 0;
  for (const auto& ph : r.workload.arrival.phases) phases_s += ph.duration_s;
  if (phases_s > 0) return lim.duration_s ? std::min(*lim.duration_s, phases_s) : phases_s;
  if (lim.duration_s) return *lim.duration_s;
  if (lim.num_requests && std::isfinite(r.workload.arrival.rate_per_s))
    return static_cast<double>(*lim.num_requests) / r.workload.arrival.rate_per_s;
  return 0;
}

double expected_requests(const SimulationRequest& r) {
  if (r.trace) return 0;
  if (r.limits.num_requests) return static_cast<double>(*r.limits.num_requests);
  const auto& a = r.workload.arrival;
  double arrivals = 0, start_s = 0;
  const double end_s = r.limits.duration_s.value_or(std::numeric_limits<double>::infinity());
  for (const auto& ph : a.phases) {
    arrivals += ph.rate_per_s * std::max(0.0, std::min(start_s + ph.duration_s, end_s) - start_s);
    start_s += ph.duration_s;
  }
  if (a.phases.empty()) {
    if (!r.limits.duration_s || !std::isfinite(a.rate_per_s)) return std::numeric_limits<double>::infinity();
    arrivals = a.rate_per_s * *r.limits.duration_s;
  }
  const auto& cv = r.workload.conversation;
  return cv.enabled() && cv.users == 0 ? arrivals * cv.turns.mean_tokens() : arrivals;
}

double timeline_rows(double span_s, double interval_s, std::uint32_t replicas) {
  return (span_s / interval_s + 1) * replicas;
}

SimulationRun run_simulation(const SimulationRequest& r) {
  SimulationRun run;
  run.config = config_for(r);
  const StepTimer timer = StepTimer::roofline(r.speed);
  std::optional<StepTimer> prefill_timer;
  if (r.prefill) run.config.prefill.timer = &prefill_timer.emplace(StepTimer::roofline(r.prefill->speed));
  auto source = source_of(r);
  const auto t0 = std::chrono::steady_clock::now();
  run.result = simulate(run.config, timer, *source);
  run.config.prefill.timer = nullptr;  // it ends here
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Offered load beyond what the replicas serve (KVCAP-W202): the run's latency percentiles then grow with its
  // length (overloaded: offered > 1.02 x the saturated completion rate, and a queue that built up).
  const bool closed = run.config.max_concurrency > 0;
  if (overloaded(run.result, closed)) {
    const auto [offered, served] = offered_and_served_per_s(run.result, closed);
    if (auto f = check_offered_load(offered, served)) run.findings.push_back(*f);
  }
  // The pool with the shorter max_model_len decides which requests are refused (disaggregated: either may).
  const MemoryPlan& binding = r.prefill && r.prefill->speed.plan.dep.max_model_len < r.speed.plan.dep.max_model_len
                                  ? r.prefill->speed.plan
                                  : r.speed.plan;
  if (auto f = check_lowered_length(r.speed.plan)) run.findings.push_back(*f);
  if (r.prefill)
    if (auto f = check_lowered_length(r.prefill->speed.plan)) {
      f->message = "prefill workers: " + f->message;
      run.findings.push_back(*f);
    }
  if (auto f = check_rejections(run.result.requests_rejected, run.result.requests_arrived, binding,
                                run.result.max_request_tokens))
    run.findings.push_back(*f);
  const auto what_ifs = check_what_ifs(r.speed.plan);
  run.findings.insert(run.findings.end(), what_ifs.begin(), what_ifs.end());
  if (auto f = check_truncations(run.result.requests_truncated, run.result.requests_arrived, binding,
                                 run.result.max_request_tokens))
    run.findings.push_back(*f);
  return run;
}

namespace {
/// Mean over the wave's requests and the steady state's others: (N x wave + (M - N) x steady) / M; NaN when no
/// request of either has the metric (outputs of one token have no TPOT).
double weighed_mean(const LatencySummary& wave, const LatencySummary& steady) {
  if (wave.count == 0 && steady.count == 0) return std::numeric_limits<double>::quiet_NaN();
  if (wave.count == 0) return steady.mean;
  if (steady.count <= wave.count) return wave.mean;
  const auto n = static_cast<double>(wave.count), m = static_cast<double>(steady.count);
  return (n * wave.mean + (m - n) * steady.mean) / m;
}
}  // namespace

std::optional<BenchmarkMean> benchmark_mean(const SimulationRequest& r, const SimResult& steady) {
  const ClosedLoop loop = closed_loop_of(r);
  // The clients send together only when nothing paces them (staggered_start_of is false for paced arrivals: at a
  // rate, over phases or at a trace's times they start as the arrivals come).
  if (loop.clients == 0 || !staggered_start_of(r) || one_wave(r) || r.workload.conversation.enabled() ||
      steady.requests_completed <= loop.clients)
    return std::nullopt;
  SimulationRequest wave = r;
  wave.staggered_start = false;
  wave.limits.num_requests = loop.clients;
  wave.limits.duration_s.reset();
  wave.observer = nullptr;
  wave.timeline_interval_s = 0;
  wave.progress = nullptr;
  const SimResult w = run_simulation(wave).result;
  BenchmarkMean b;
  b.requests = steady.requests_completed;
  b.clients = loop.clients;
  b.first_wave_requests = w.requests_completed;
  b.first_wave_ttft_s = w.ttft_s;
  b.ttft_s = weighed_mean(w.ttft_s, steady.ttft_s);
  b.tpot_s = weighed_mean(w.tpot_s, steady.tpot_s);
  b.e2e_s = weighed_mean(w.e2e_s, steady.e2e_s);
  return b;
}

}  // namespace kvcap::sim
