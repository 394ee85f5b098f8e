#pragma once
// Cluster sizing: the cheapest deployments that serve a workload within latency targets.
//
// For each candidate (GPU type x TP x PP x weight dtype x KV dtype) the memory model says whether it fits
// and how many requests its KV cache holds; the speed model gives prefill time and TPOT(batch); a
// queueing model (docs/sizing.md) turns the arrival rate into a steady in-flight batch per replica, a
// prefill queue and a TTFT percentile; the replica count is the smallest that meets the targets.
// Pure functions: no I/O. Every formula is documented in docs/sizing.md.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvcap/planner/disagg.hpp"
#include "kvcap/planner/speed.hpp"
#include "kvcap/planner/workload.hpp"

namespace kvcap {

/// The workload as the sizer needs it: mean lengths and either an open-loop arrival rate or a closed
/// loop of concurrent users (exactly one of the two).
struct SizingWorkload {
  double prompt_tokens = 0;       ///< mean prompt tokens per request (>= 1)
  double output_tokens = 0;       ///< mean output tokens per request (>= 1; the first comes from prefill)
  i64 max_context_tokens = 0;     ///< max_model_len to deploy with (0: ceil(prompt + output); -1: the model's own)
  double arrival_rate_per_s = 0;  ///< open loop: mean requests per second over the whole cluster
  double arrival_scv = 1;         ///< squared coefficient of variation of the gaps (Poisson 1, fixed rate 0)
  double prompt_scv = 0;          ///< squared coefficient of variation of prompt lengths (prefill service)
  double output_scv = 0;          ///< squared coefficient of variation of output lengths
  bool random_think_time = false;  ///< closed loop: the users think for random times (a workload file's exponential)
  i64 concurrent_users = 0;       ///< closed loop: users each sending the next request when the last ends
  std::string derivation;         ///< how the means came from the workload when not directly (conversations), or ""
  bool open_loop() const { return arrival_rate_per_s > 0; }
};

/// Means, max context and variability of a WorkloadSpec (arrival.rate_per_s is the open-loop rate).
/// Prompt SCV: exact for fixed/uniform/empirical; lognormal uses the unclamped exp(sigma^2) - 1 (an upper bound).
SizingWorkload sizing_workload(const WorkloadSpec& w);
/// The max_model_len every candidate deploys with: `given` (--max-model-len), else the workload's longest request
/// (max_context_tokens; 0: the mean request's, ceil(prompt + output)); nullopt when it is the model's own (-1).
std::optional<i64> sizing_max_model_len(const SizingWorkload& w, std::optional<i64> given);

struct SizingTargets {
  double ttft_s = 0;              ///< TTFT at `ttft_percentile` must not exceed this
  double ttft_percentile = 0.90;  ///< in (0, 1)
  double tpot_s = 0;              ///< mean time per output token (after the first) must not exceed this
};

/// The search space and the fixed parts of every deployment.
struct SizingSpace {
  std::vector<GpuSpec> gpus;         ///< GPU types to try (price_per_gpu_hour_usd is the cost)
  std::vector<DType> weight_dtypes;  ///< empty: the checkpoint's, plus fp8 when the checkpoint is 16/32-bit
  std::vector<DType> kv_dtypes;      ///< empty: auto (the model dtype) and fp8
  i64 max_tp = 8;                    ///< TP sizes tried: 1, 2, 4, ... <= max_tp
  i64 max_pp = 8;                    ///< PP sizes tried: 1, 2, 4, ... <= max_pp
  /// TP x PP within one node (NVLink-class interconnect); also the GPUs of one expert-parallel group (its
  /// data-parallel replicas x TP x PP), whose all-to-all crosses that interconnect.
  i64 max_gpus_per_replica = 8;
  i64 max_gpus = 100000;             ///< a candidate needing more GPUs in total is rejected
  Deployment base;                   ///< other flags (gpu_memory_utilization, block_size, max_num_seqs, ...)
  SpeedOptions speed;
  std::optional<Calibration> calibration;  ///< applied to every candidate (give one GPU type with it)
  /// Also search disaggregated prefill/decode (xPyD) for an open-loop workload: in front of each aggregated
  /// candidate's deployment (then decoding only), the cheapest prefill pool of any GPU type and TP (PP 1, the same
  /// formats) that meets the targets, the KV crossing `kv_link` (planner/disagg.hpp; docs/sizing.md).
  bool disaggregated = false;
  KvLinkKind kv_link = KvLinkKind::network;
};

enum class CandidateStatus : std::uint8_t {
  ok,             ///< meets every target
  invalid,        ///< the deployment is impossible (TP does not divide the heads, ...)
  does_not_fit,   ///< weights + activations + one request of max_context_tokens exceed memory
  tpot_too_high,  ///< even at batch 1 the TPOT target is missed
  ttft_too_high,  ///< even unloaded the TTFT target is missed
  too_many_gpus,  ///< meets the targets only with more than max_gpus GPUs
};
std::string_view to_string(CandidateStatus s);  ///< "ok" | "invalid" | "does not fit" | ...

/// The prefill workers of a disaggregated (xPyD) candidate. The candidate's own figures are then those of its decode
/// workers (gpu, tp, pp, replicas = y, batch, decode step) and of the whole (gpus = both pools, TTFT, cost).
struct SizingPrefillPool {
  std::string gpu;
  i64 tp = 1;
  i64 replicas = 0;          ///< x
  i64 gpus = 0;              ///< x x TP
  double prefill_s = 0;      ///< the mean prompt alone on a worker (front end included)
  double utilization = 0;    ///< rate per worker x its busy time per prompt
  double ttft_wait_s = 0;    ///< queueing for a prefill worker at the TTFT percentile
  double kv_transfer_s = 0;  ///< the mean prompt's KV to its decode worker (planner/disagg.hpp)
  std::string link;          ///< the link it crosses
  double price_per_gpu_hour_usd = 0;
  std::optional<Deployment> deployment{};  ///< as launched (num_gpus = gpus)
};

/// One candidate deployment and, when it can meet the targets, its operating point at the workload.
struct SizingCandidate {
  std::string gpu;  ///< GpuSpec::name
  i64 tp = 1;
  i64 pp = 1;
  DType weight_dtype = DType::bf16;  ///< resolved
  DType kv_dtype = DType::bf16;      ///< resolved
  CandidateStatus status = CandidateStatus::invalid;
  std::string reason;  ///< why it was rejected ("" when ok)

  /// Expert parallelism (a MoE model; vLLM --enable-expert-parallel): the data-parallel replicas of one EP group, whose
  /// routed experts are split over ep_group_replicas x TP GPUs while each replica keeps its own requests and KV cache
  /// (docs/sizing.md). `replicas` is then a multiple of it, and every per-replica figure is one data-parallel rank's.
  /// 0: no expert parallelism.
  i64 ep_group_replicas = 0;
  /// The GPUs one routed expert layer is split over: ep_group_replicas x TP (1 without expert parallelism).
  i64 expert_parallel_size() const { return ep_group_replicas > 0 ? ep_group_replicas * tp : 1; }
  /// Expert-parallel groups running side by side (0 without expert parallelism).
  i64 ep_groups() const { return ep_group_replicas > 0 ? replicas / ep_group_replicas : 0; }
  i64 gpus_per_replica = 0;
  i64 replicas = 0;                       ///< smallest count meeting the targets
  i64 gpus = 0;                           ///< replicas x TP x PP
  i64 kv_capacity_tokens = 0;             ///< per replica
  i64 max_batch_memory = 0;               ///< min(floor(concurrency at the mean context), max_num_seqs)
  bool kv_limited = false;                ///< max_batch_memory is the KV cache's (below max_num_seqs)
  i64 max_batch_targets = 0;              ///< largest in-flight batch per replica that still meets the targets
  double max_rate_per_replica_per_s = 0;  ///< open loop: arrival rate one replica sustains within the targets

  // Operating point per replica at the workload (the most loaded replica).
  double rate_per_replica_per_s = 0;  ///< open loop: lambda / replicas; closed loop: throughput (req/s)
  i64 batch = 0;                      ///< in-flight decode batch N (Little's law, rounded up)
  double prefill_s = 0;               ///< T_prefill: TTFT of the mean prompt on an idle replica
  double prefill_busy_s = 0;          ///< C_prefill: GPU time a prefill adds to a busy replica (per stage)
  double prefill_utilization = 0;     ///< u = rate x C_prefill
  double decode_step_s = 0;           ///< TPOT(N) at the mean context, no prefill interference
  double ttft_wait_s = 0;             ///< queueing delay at the percentile
  double ttft_s = 0;                  ///< at the percentile
  double tpot_s = 0;                  ///< TPOT(N) / (1 - u)
  double e2e_s = 0;                   ///< mean: mean-TTFT + (output - 1) x tpot
  Bound decode_bound = Bound::memory;

  double output_tokens_per_s = 0;                 ///< the whole cluster, at the workload
  double input_tokens_per_s = 0;                  ///< prompt tokens per second, the whole cluster, at the workload
  /// Output tokens/s / GPUs and 1 / TPOT: the two axes of NVIDIA aiconfigurator's frontier ("tokens/s/gpu",
  /// "tokens/s/user"), at the workload's operating point.
  double tokens_per_s_per_gpu = 0;
  double tokens_per_s_per_user = 0;
  double cost_per_hour_usd = 0;                   ///< gpus x price per GPU-hour
  double cost_per_million_output_tokens_usd = 0;  ///< cost per hour / (output tokens per hour / 10^6)
  double cost_per_million_input_tokens_usd = 0;   ///< cost per hour / (input tokens per hour / 10^6)
  double cost_per_million_tokens_usd = 0;  ///< blended: cost per hour / ((input + output) tokens per hour / 10^6)
  bool priced = true;                             ///< false when the GPU profile has no price (cost 0, ranked last)
  /// The deployment as it is launched (every vLLM default made explicit: max_model_len, max_num_seqs,
  /// max_num_batched_tokens; num_gpus = gpus); set when the candidate fits. `--emit vllm` prints it.
  std::optional<Deployment> deployment{};
  /// Disaggregated (xPyD): its prefill workers; `deployment` is then the decode workers' (num_gpus = their GPUs).
  std::optional<SizingPrefillPool> prefill{};
};
/// "2P3D" for a disaggregated candidate, "" for an aggregated one.
std::string xpyd(const SizingCandidate& c);
/// " EP8 (DP 8)" for an expert-parallel candidate (EP size, data-parallel replicas per group), "" otherwise.
std::string ep_text(const SizingCandidate& c);
/// Open loop (`open_loop`): a replica's decoding requests vary about their mean `batch` (Poisson: by its square root).
/// Their mean plus three standard deviations when that exceeds the requests its KV cache holds (kv_limited: not
/// max_num_seqs, beyond which vLLM queues), 0 otherwise. Beyond the cache vLLM preempts requests and recomputes their
/// prompts (vllm/v1/core/sched/scheduler.py, preemption), which can cut the capacity below the load.
double kv_burst_requests(const SizingCandidate& c, bool open_loop);

struct SizingResult {
  std::vector<SizingCandidate> candidates;  ///< feasible first (cheapest first), then the rejected
  std::size_t feasible = 0;                 ///< how many lead the list with status ok
  std::string diagnosis;                    ///< when none is feasible: what stands closest and why it fails
  /// Per GPU type that has a feasible candidate, the index of its cheapest, in rank order (cheapest type first).
  std::vector<std::size_t> best_per_gpu{};
  /// The feasible candidates no other matches or beats on tokens/s/GPU, tokens/s/user and cost per million output
  /// tokens at once (pareto_frontier; an unpriced GPU's cost counts as infinite), by tokens/s/GPU descending.
  std::vector<std::size_t> pareto{};
};

/// The indices of the points no other point dominates, maximising every coordinate (a dominates b when it is >= on
/// each and > on one); of identical points, the first. In index order. O(n^2 x dimensions): n is a search's
/// candidates (hundreds).
std::vector<std::size_t> pareto_frontier(const std::vector<std::vector<double>>& points);

/// Throws SpecError naming the field when a value is impossible (lengths < 1, neither or both of rate
/// and users, targets <= 0 or not finite, percentile outside (0, 1), empty GPU list, bounds < 1).
void validate(const SizingWorkload& w);
void validate(const SizingTargets& t);

/// The whole search. Candidates that the model or GPU reject come back with status and reason.
SizingResult size_cluster(const ModelSpec& m, const SizingWorkload& w, const SizingTargets& t, const SizingSpace& s);

/// What `kvcap size` (and any front end) asks of the sizer, as one value.
struct SizingRequest {
  ModelSpec model;
  SizingWorkload workload;
  SizingTargets targets;
  SizingSpace space;
};
inline SizingResult size_cluster(const SizingRequest& r) {
  return size_cluster(r.model, r.workload, r.targets, r.space);
}

// ---- The queueing model, exposed for tests (docs/sizing.md, "Queueing") ---------------------------

/// Kingman's G/G/1 mean wait: rho / (1 - rho) x (ca2 + cs2) / 2 x E[S]; exact (Pollaczek-Khinchine)
/// for M/G/1 (ca2 = 1). Infinity when rho >= 1.
double kingman_mean_wait_s(double rho, double mean_service_s, double arrival_scv, double service_scv);
/// The p-quantile of the wait with the exponential-tail approximation P(W > t) = rho exp(-rho t / E[W]):
/// (E[W] / rho) ln(rho / (1 - p)) when rho > 1 - p, else 0.
double wait_percentile_s(double rho, double mean_wait_s, double p);

/// One replica's steady state at a load level (docs/sizing.md, "Queueing").
struct OperatingPoint {
  double rate_per_s = 0;           ///< requests per second into this replica
  i64 batch = 0;                   ///< in-flight decode batch N
  double prefill_utilization = 0;  ///< u = rate x C_prefill
  double decode_step_s = 0;        ///< TPOT(N) at the mean context
  double ttft_wait_s = 0;          ///< queueing delay at the percentile
  double ttft_mean_s = 0;
  double ttft_s = 0;            ///< at the percentile
  double tpot_s = 0;            ///< TPOT(N) / (1 - u)
  double e2e_s = 0;             ///< ttft_mean + (output - 1) x tpot
  Bound bound = Bound::memory;  ///< of the decode step
};

/// One replica of one deployment serving the workload: what every load level shares, computed once
/// (prefill time of the mean prompt, the memory limit), and TPOT(N) memoised. Not thread-safe.
class ReplicaModel {
 public:
  ReplicaModel(SpeedContext c, const SizingWorkload& w, double ttft_percentile);

  const SpeedContext& context() const { return c_; }
  i64 mean_context_tokens() const { return mean_context_; }
  /// min(floor(concurrency at the mean context), max_num_seqs); 0: not one request fits.
  i64 max_batch_memory() const { return max_batch_; }
  /// Whether the KV cache, not max_num_seqs, sets max_batch_memory() (beyond it vLLM preempts; beyond
  /// max_num_seqs it queues).
  bool kv_limited() const { return kv_limited_; }
  double prefill_s() const { return prefill_s_; }            ///< T_prefill, idle replica
  double prefill_busy_s() const { return prefill_busy_s_; }  ///< C_prefill per pipeline stage
  i64 prefill_chunks() const { return chunks_; }
  /// TPOT of a decode step of N requests at the mean context (memoised).
  double decode_step_s(i64 batch) const;
  Bound decode_bound(i64 batch) const;

  /// Open loop: the arrival rate whose Little's-law batch is N: N / ((O - 1) TPOT(N) + N C_prefill).
  double rate_for_batch(i64 batch) const;
  /// Open loop at `rate_per_s` with in-flight batch `batch` (the smallest N with rate_for_batch(N) >= rate).
  OperatingPoint open_loop(double rate_per_s, i64 batch) const;
  /// The smallest N with rate_for_batch(N) >= rate, searched in [1, limit]; 0 when none.
  i64 batch_for_rate(double rate_per_s, i64 limit) const;
  /// Closed loop of `users` users on this replica (batch = users, no think time). With a prefill-first engine
  /// (SpeedOptions::prefill_first) and identical requests (prompt and output lengths constant, no random think time)
  /// the users run in lockstep (closed_loop_lockstep), as the simulator's clients do (sim::staggered_start_of).
  OperatingPoint closed_loop(i64 users) const;
  /// A prefill-first engine's closed loop: the N prompts sent together are prefilled in a wave of steps of their own
  /// (first come first served, max_num_batched_tokens per step, priced by mixed_step), then all N decode together,
  /// finish in the same step and are sent again together. A prefill pending holds every decode back, so requests sent
  /// within one wave decode in step: lockstep is where such clients stay (docs/sizing.md). TTFT is the prompt's place
  /// in the wave; TPOT counts the rest of the wave after the request's first token.
  OperatingPoint closed_loop_lockstep(i64 users) const;

 private:
  SpeedContext c_;
  SizingWorkload w_;
  double p_ = 0.9;
  i64 mean_context_ = 0;
  i64 max_batch_ = 0;
  bool kv_limited_ = false;
  double prefill_s_ = 0;
  double prefill_busy_s_ = 0;
  i64 chunks_ = 0;
  mutable std::vector<double> tpot_;  ///< index N; 0 = not computed
  mutable std::vector<Bound> bound_;
  double own_prefill_s(double step_s) const;
};

/// The serving steady state of `clients` clients in a closed loop on one replica (each sends its next request of
/// `prompt_tokens` + `output_tokens` when its last one ends, no think time), with ReplicaModel's queueing model:
/// what `kvcap size` sizes with, what `plan --batch` prints beside its static batch (whose TTFT is one prefill alone
/// and whose TPOT has no prefill beside it), and the steady state `simulate --max-concurrency` reaches step by step.
/// nullopt when the clients' requests do not all fit at once (the clients then queue: simulate it).
std::optional<OperatingPoint> closed_loop_steady_state(const SpeedContext& c, i64 clients, i64 prompt_tokens,
                                                       i64 output_tokens);

}  // namespace kvcap
