#pragma once
// A simulation run as one value in and one value out: what `kvcap simulate`, `kvcap accuracy` and the sizing
// search's verification ask of the simulator. The request says what to simulate (the deployment's speed
// context, what arrives, the cluster and scheduler settings, the closed loop); run_simulation() assembles the
// SimConfig (replica_config of the memory plan, the overrides, the engine profile's costs, the closed loop's
// stagger), draws or replays the requests and runs them. Front ends only map their inputs to a request and pick
// a reporter. docs/architecture.md, docs/simulator.md.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "kvcap/planner/disagg.hpp"
#include "kvcap/planner/host_tier.hpp"
#include "kvcap/planner/plausibility.hpp"
#include "kvcap/planner/speed.hpp"
#include "kvcap/planner/workload.hpp"
#include "kvcap/simulator/simulator.hpp"
#include "kvcap/simulator/workload.hpp"

namespace kvcap::sim {

struct SimulationRequest {
  /// Model, GPU, memory plan (blocks per replica, max_model_len, budgets), speed options, calibration.
  SpeedContext speed;
  /// What arrives: a trace's requests (replayed, cut at `limits`), or else `workload` drawn with `seed`
  /// (arrivals, lengths, shared prefixes; a closed loop when its arrival process is `closed`).
  std::optional<std::vector<RequestSpec>> trace;
  WorkloadSpec workload;
  SourceLimits limits;
  std::uint64_t seed = 0;

  /// Cluster and scheduler: overrides of what the memory plan implies.
  std::optional<std::uint32_t> replicas;  ///< default: the plan's data-parallel replicas
  RouterPolicy router = RouterPolicy::round_robin;
  Allocator allocator = Allocator::paged;
  bool prefix_caching = true;
  i64 num_scheduler_steps = 1;  ///< vLLM 0.6 multi-step scheduling (1: every step)
  /// > 0: a host KV tier of this many GiB (vLLM --kv-offloading-size, all TP x PP ranks of a replica together):
  /// prefix-cache hits continue there and cost their reload (planner/host_tier.hpp). Needs prefix caching.
  double kv_offloading_size_gib = 0;
  /// LMCache's local backends instead (CPU memory, local disk; planner/host_tier.hpp plan_lmcache_tier).
  std::optional<LmcacheSpec> lmcache;
  /// Disaggregated prefill/decode (xPyD; SimConfig::prefill): `replicas` prefill workers, each a deployment of its own
  /// (its GPU type, TP, formats: `speed`), in front of the replicas above, which then only decode; each request's KV
  /// crosses `link` (planner/disagg.hpp kv_transfer_s).
  struct PrefillWorkers {
    std::uint32_t replicas = 1;
    SpeedContext speed;
    KvTransferLink link;
  };
  std::optional<PrefillWorkers> prefill;

  /// Closed loop (`vllm bench serve --max-concurrency`): > 0 keeps at most this many requests in flight. A workload
  /// whose arrival process is `closed` sets these itself.
  std::uint32_t max_concurrency = 0;
  double think_time_s = 0;
  bool think_time_exponential = false;
  /// Clients' first requests spread over one cycle (SimConfig::client_stagger_s), or all at t = 0; a run of fewer
  /// than 2N requests is one wave of a benchmark and starts together whatever this says. Unset: together with a
  /// prefill-first engine (SpeedOptions::prefill_first), whose clients stay in lockstep (docs/simulator.md), staggered
  /// otherwise (staggered_start_of).
  std::optional<bool> staggered_start;

  LatencyTargets slo;              ///< goodput targets (each one given overrides the workload's)
  double timeline_interval_s = 0;  ///< > 0: Observer::on_sample every this many simulated seconds
  Observer* observer = nullptr;
  std::function<void(const Progress&)> progress;
  bool check_invariants = false;
};

/// Whether the request runs a closed loop: --max-concurrency N, or a workload file's `arrival.process: closed`
/// (not under a trace, whose rows are the arrivals).
bool closed_loop(const SimulationRequest& r);

/// Whether arrival times pace the closed loop's clients: a trace's times, a finite rate or rate phases. Unpaced
/// (`--rate inf`, a workload file's closed loop) every request is due at t = 0 and only the clients hold them back.
bool arrivals_paced(const SimulationRequest& r);

/// Whether the closed loop's clients start staggered: SimulationRequest::staggered_start, or its default; never when
/// arrivals pace them (each client sends at the later of its request's arrival and its previous request's end).
bool staggered_start_of(const SimulationRequest& r);

/// SpecError when one request of max_model_len does not fit the plan's KV cache (vLLM would refuse to start).
void check_fits(const MemoryPlan& plan);

/// The host KV tier of `r.kv_offloading_size_gib` or `r.lmcache` (nothing without either) into `c`: its blocks per
/// replica and the reload time of one block (planner/host_tier.hpp). SpecError ("kv_offloading_size" or "lmcache")
/// without prefix caching, for both at once, for a model of several KV groups, or when no host-link rate is known.
void apply_host_tier(const SimulationRequest& r, ReplicaConfig& c);

/// The configuration a request runs with: replica_config(plan) with the overrides, the closed loop, the engine
/// profile's front-end cost and the stagger (apply_speed_model). check_fits first.
SimConfig config_for(const SimulationRequest& r);

/// Whether a closed loop's clients start together because the run is one wave (fewer than 2N requests).
bool one_wave(const SimulationRequest& r);

/// Mean prompt and output lengths of what arrives (the trace's, or the workload's distributions').
std::pair<double, double> mean_lengths_tokens(const SimulationRequest& r);

/// Simulated seconds over which requests arrive, as far as the request tells before running: the trace's span or
/// the phases' sum, cut at limits.duration_s, or num_requests / rate; 0 when unknown (a closed loop).
double arrival_span_s(const SimulationRequest& r, double trace_span_s = 0);
/// Requests a synthetic run will simulate, as far as the request tells before running: num_requests when given (it
/// counts conversation turns too), else the arrivals over the phases or the duration, times the mean turns of the
/// conversations they start. +inf when nothing bounds it; 0 for a trace (its rows are counted when read).
double expected_requests(const SimulationRequest& r);

/// Rows a timeline at `interval_s` writes over `span_s` for `replicas` replicas (the drain after the last arrival
/// adds to it).
double timeline_rows(double span_s, double interval_s, std::uint32_t replicas);

struct SimulationRun {
  SimConfig config;  ///< as run (replicas, stagger, front-end cost)
  SimResult result;
  double wall_s = 0;  ///< wall-clock time of the simulation itself
  /// The plausibility policy's findings on the run: KVCAP-W202 when an open loop was fed beyond what it serves.
  std::vector<Finding> findings;
};

/// Runs the request: config_for, the requests (a fresh source each call), simulate(), findings.
SimulationRun run_simulation(const SimulationRequest& r);

/// What a closed-loop benchmark (AIPerf's concurrency mode, `vllm bench serve --max-concurrency`) reports as its
/// mean over a run of M requests. Its N clients start together, so its first N requests arrive as one wave, and
/// then drift apart. A simulation started staggered (staggered_start_of) is the drifted-apart steady state, the
/// load a deployment serves for hours; the benchmark's mean also holds the first wave's queueing, 1/10 of the run
/// with AIPerf's default of 10 x N requests. aiconfigurator corrects its own TensorRT-LLM TTFT for the same first
/// round (sdk/backends/trtllm_backend.py, "mitigate the impact of first round latency"). docs/simulator.md.
struct BenchmarkMean {
  std::uint64_t requests = 0;             ///< M: the steady-state run's completed requests
  std::uint32_t clients = 0;              ///< N: the closed loop's clients, the wave's requests
  std::uint64_t first_wave_requests = 0;  ///< the wave's completed requests (fewer than N where some were rejected)
  sim::LatencySummary first_wave_ttft_s;  ///< the wave simulated on its own, every client sending at t = 0
  /// Means over the M requests: the wave's N and the steady state's other M - N, (N x wave + (M - N) x steady) / M
  /// (each over the requests that have the metric; NaN when none has it: TPOT of one-token outputs).
  double ttft_s = 0, tpot_s = 0, e2e_s = 0;
};

/// The benchmark's mean of a closed loop started staggered (`steady` is its result): the first wave simulated
/// together (N requests, nothing observed), weighed with `steady`. nullopt for an open loop, a closed loop whose
/// arrivals are paced (a finite rate, phases or a trace's times: its clients do not send together), a loop started
/// together (its result already is the benchmark's), a run of fewer than 2N requests (one wave), conversations (their
/// users start turns, not a wave of one kind) or a run that completed no more than N requests.
std::optional<BenchmarkMean> benchmark_mean(const SimulationRequest& r, const SimResult& steady);

}  // namespace kvcap::sim
