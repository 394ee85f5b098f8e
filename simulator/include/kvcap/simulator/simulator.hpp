#pragma once
// The serving simulator: a cluster of replicas behind a router, each a vLLM-V1-like continuous-batching
// scheduler over a paged KV block manager, driven by one discrete-event queue (event_queue.hpp).
// Capacity comes from the planner's memory plan (blocks per replica), step times from its speed model
// (step_timer.hpp). Deterministic: the same config, timer and source give the same result, bit for bit.
// Semantics and sources: docs/simulator.md.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/speed.hpp"
#include "kvcap/planner/workload.hpp"
#include "kvcap/simulator/block_manager.hpp"
#include "kvcap/simulator/metrics.hpp"
#include "kvcap/simulator/step_timer.hpp"
#include "kvcap/simulator/workload.hpp"

namespace kvcap::sim {

/// One replica (one vLLM engine: TP x PP GPUs).
struct ReplicaConfig {
  std::uint32_t num_blocks = 0;     ///< KV blocks (MemoryPlan::num_blocks)
  i64 block_size = 16;              ///< tokens per block (--block-size)
  i64 max_num_batched_tokens = 8192;///< token budget per step (--max-num-batched-tokens)
  i64 max_num_seqs = 256;           ///< running requests at most (--max-num-seqs)
  i64 max_model_len = 0;            ///< prompt + output at most; longer outputs are cut, longer prompts rejected
  Allocator allocator = Allocator::paged;
  bool prefix_caching = true;       ///< vLLM V1's default; affects shared-prefix groups only
  /// Linear-attention state blocks each admitted request holds beside its token blocks (one or two per
  /// state group, whatever the context; 0 for models without linear-attention layers).
  i64 state_blocks_per_request = 0;
  /// vLLM's hybrid KV cache manager: the block table is that of the full-attention groups, `full_groups` of them
  /// sharing the pool (a table entry stands for one block in each, `num_blocks` counts entries); sliding-window
  /// and chunked-local groups (`local_groups`) hold a bounded number of blocks per request beside it, charged in
  /// entries, rounded up.
  i64 full_groups = 1;
  std::vector<KvLayerSpec> local_groups;
  /// The what-if --kv-eviction (a full-attention model): a request keeps only the policy's tokens, so its blocks are
  /// held beside an empty table, as a local group's (local_groups holds the full-attention spec with its policy), and
  /// its tokens are never found in the prefix cache (what is kept depends on the request's own attention).
  bool table_evicts = false;
  /// Blocks (in table entries) a request holds outside its block table after a step that brings it to `tokens`
  /// tokens with `step_tokens` of them computed in that step: per local group the window (or chunk) plus the
  /// step's tokens (SlidingWindowManager frees the blocks that left the window), plus its state blocks. Under
  /// --kv-eviction: the tokens kept before the step in whole blocks plus the step's tokens in blocks (a prefill chunk
  /// is held whole until the policy evicts after it), every token's block while nothing is evicted.
  i64 side_blocks(i64 tokens, i64 step_tokens) const;
  /// vLLM 0.6's multi-step scheduling (--num-scheduler-steps k): the scheduler plans k steps at once, so waiting
  /// requests are admitted only every k steps (or when nothing runs). 1: every step (vLLM V1, SGLang, TensorRT-LLM).
  i64 num_scheduler_steps = 1;
  /// Prefill-first steps (SpeedOptions::prefill_first: SGLang, vLLM V0): when a running request has prompt tokens left
  /// or a waiting one can be admitted, the step holds prefills only and the decodes wait for the next step.
  bool prefill_first = false;
  /// Host KV tier (vLLM CPU offloading; planner/host_tier.hpp): blocks it holds (0: none) and the time to bring one
  /// block back to the GPU. A prefix-cache hit continued in the host tier loads those blocks before the request runs.
  std::uint64_t host_blocks = 0;
  double host_reload_s_per_block = 0;
  /// LMCache (planner/host_tier.hpp plan_lmcache_tier): its local disk's blocks beside host memory's, the time one
  /// block read from disk adds, and the blocks a hit counts in (its chunk; 1: vLLM's offloading, block by block).
  std::uint64_t host_disk_blocks = 0;
  double host_disk_reload_s_per_block = 0;
  i64 host_unit_blocks = 1;
  /// Steps in which a request only appends one decode token (no new block, no prefix-cache registration, no
  /// completion) count it in aggregate instead of visiting it (replica.cpp): the same results bit for bit, several
  /// times faster. false: the per-request reference loop (tests and bench/bench_simulate compare the two).
  bool aggregate_decodes = true;
  /// A disaggregated prefill worker: a request ends here when its prompt is computed and its first token sampled, and
  /// goes on to a decode worker (SimConfig::prefill) instead of completing.
  bool hand_off = false;
};
/// The replica settings a memory plan implies (blocks, block size, budgets, max_model_len).
ReplicaConfig replica_config(const MemoryPlan& plan);

enum class RouterPolicy : std::uint8_t {
  round_robin,        ///< request i to replica i mod R
  least_outstanding,  ///< fewest running + waiting requests (ties: the next in round-robin order)
  least_kv,           ///< lowest KV load: used blocks + blocks the waiting requests' tokens need
};
std::string_view to_string(RouterPolicy p);  ///< "round-robin" | "lor" | "kv"
std::optional<RouterPolicy> parse_router(std::string_view s);

struct Progress {
  std::uint64_t arrived = 0;
  std::uint64_t completed = 0;
  std::optional<std::uint64_t> total;  ///< when the source knows
  double time_s = 0;                   ///< simulated
};

/// Disaggregated prefill/decode (xPyD; planner/disagg.hpp, docs/disaggregation.md): `num_replicas` prefill workers
/// in front of the SimConfig's replicas, which then only decode. The router sends each request to a prefill worker
/// (the same policy as the decode pool's); when its prompt is computed and one token sampled there, it goes to a decode
/// worker, which allocates the prompt's blocks, reads all but its last token's KV over the link (`kv_transfer_s`;
/// vLLM's NixlConnector: WAITING_FOR_REMOTE_KVS), then computes the last prompt token and samples the first output
/// token: TTFT counts from the arrival at the prefill worker to that token.
struct PrefillPool {
  std::uint32_t num_replicas = 0;  ///< 0: aggregated serving (every replica prefills and decodes)
  ReplicaConfig replica;           ///< hand_off is set by the simulator
  const StepTimer* timer = nullptr;
  std::function<double(i64)> kv_transfer_s;  ///< seconds to move the KV of a prompt's first n tokens
};

struct SimConfig {
  ReplicaConfig replica;
  std::uint32_t num_replicas = 1;
  PrefillPool prefill;  ///< disaggregated prefill workers (num_replicas 0: none)
  RouterPolicy router = RouterPolicy::round_robin;
  LatencyTargets slo;                  ///< goodput targets (none: every completed request counts)
  double timeline_interval_s = 0;      ///< > 0: Observer::on_sample every this many simulated seconds
  Observer* observer = nullptr;
  std::function<void(const Progress&)> progress;  ///< called every 2^16 events and at the end
  bool check_invariants = false;       ///< verify the block manager after every step (O(blocks): tests)
  /// Closed loop, as `vllm bench serve --max-concurrency N` and AIPerf's concurrency mode run it (vllm/benchmarks/
  /// serve.py: a semaphore of N around each request): > 0 keeps at most this many requests in flight. A request is
  /// sent at the later of its own arrival time and the time a client is free: the first N at once, then one each
  /// time an earlier request finishes (completed, or rejected by the engine) plus `think_time_s`. Its TTFT and
  /// queueing count from the moment it is sent. 0: open loop (the source's arrival times).
  std::uint32_t max_concurrency = 0;
  double think_time_s = 0;             ///< closed loop: a client's pause between an answer and its next request (mean)
  /// Closed loop: think times drawn exponentially with mean think_time_s (a user reading at a random pace; seeded by
  /// think_seed) instead of all equal.
  bool think_time_exponential = false;
  std::uint64_t think_seed = 0;
  /// Closed loop: client i (0-based) sends its first request `i x client_stagger_s / N` after the start instead
  /// of all N at once. Identical requests sent together stay in lockstep for ever in a simulation (they finish in
  /// the same step and come back together), where real clients drift apart (output lengths, network and
  /// detokenisation jitter) until their requests are spread over one request's cycle; a stagger of one cycle
  /// (closed_loop_cycle_s) starts the run in that steady state. 0: all at once (the first wave of a real run).
  double client_stagger_s = 0;
  /// The serving front end's fixed cost per request, before the engine sees it (HTTP, tokenisation, the hop to
  /// the engine process) and after (detokenising and streaming the first token): it delays the request's
  /// admission and counts in its TTFT and end-to-end latency. From the engine profile (planner/engine.hpp).
  double request_overhead_s = 0;
};

/// One client's cycle in a closed loop of `clients` (the spread of a desynchronised loop): the planner's
/// end-to-end estimate of a request of `prompt` + `output` tokens among the requests the engine runs at once
/// (min(clients, max_num_seqs, what the KV cache holds)), times clients / that batch when the clients outnumber it
/// (Little's law), plus the think time.
double closed_loop_cycle_s(const SpeedContext& c, i64 clients, i64 prompt_tokens, i64 output_tokens, double think_time_s);

/// What the speed model decides of a run, the one place front ends take it from: the engine profile's front-end
/// cost per request, and for a closed loop started `staggered` the stagger of one cycle (closed_loop_cycle_s of a
/// replica's share of the clients over the workload's mean lengths and cfg.think_time_s). Call after num_replicas,
/// max_concurrency and think_time_s are set.
void apply_speed_model(SimConfig& cfg, const SpeedContext& c, i64 mean_prompt_tokens, i64 mean_output_tokens, bool staggered);

/// Time-weighted over [first arrival, end] unless said otherwise.
struct ReplicaStats {
  std::uint64_t routed = 0, completed = 0, rejected = 0, preemptions = 0;
  std::uint64_t steps = 0;
  double busy_s = 0;                   ///< time with a step in flight
  double kv_utilization_mean = 0, kv_utilization_max = 0;
  double running_mean = 0, waiting_mean = 0;
  i64 running_max = 0, waiting_max = 0;
  std::uint64_t prefill_tokens = 0;    ///< tokens computed by steps with new_tokens > 1 or first-pass prompt tokens
  std::uint64_t decode_tokens = 0;     ///< tokens computed one at a time after the first output token
  std::uint64_t recomputed_tokens = 0; ///< tokens computed again after a preemption
  /// Of decode_tokens, those counted in aggregate (ReplicaConfig::aggregate_decodes): what the simulator saved, not
  /// a result (0 when the per-request loop runs; every other figure is the same either way).
  std::uint64_t decode_tokens_aggregated = 0;
  std::uint64_t prefix_cache_hit_tokens = 0;
  std::uint64_t prefix_cache_query_tokens = 0;  ///< tokens of the requests admitted while prefix caching was on
  std::uint64_t host_hit_tokens = 0;            ///< of the prefix-cache hits, tokens loaded from the host tier
  std::uint64_t host_disk_hit_tokens = 0;       ///< of them, read from LMCache's local disk first
  double host_load_s = 0;                       ///< time requests waited for those loads, summed
  std::uint64_t kv_received_tokens =
      0;                     ///< disaggregated decode worker: prompt tokens whose KV came from a prefill worker
  double kv_transfer_s = 0;  ///< time requests waited for those transfers, summed
  std::uint64_t kv_used_blocks_end = 0;///< blocks referenced at the end (0: nothing leaked)
};

struct SimResult;
/// Offered against served load of an open-loop run: the admitted (not rejected) arrivals' rate over their span, and the
/// completion rate over the run less one mean service time (E2E - queueing), which is the saturated
/// throughput when the offered load exceeds it. {0, 0} for closed loops, offline runs and < 2 arrivals.
std::pair<double, double> offered_and_served_per_s(const SimResult& r, bool closed_loop);
/// Whether an open-loop run was fed beyond what it serves: offered > 1.02 x served, and requests queued on
/// average for more than a quarter of their service time (a bursty trace's long last request alone can
/// lower the served rate; a queue that does not build up is not an overload).
bool overloaded(const SimResult& r, bool closed_loop);

struct SimResult {
  std::uint64_t requests_arrived = 0;
  std::uint64_t requests_completed = 0;
  std::uint64_t requests_rejected = 0;   ///< prompt >= max_model_len (vLLM rejects them)
  std::uint64_t requests_truncated = 0;  ///< output cut so that prompt + output <= max_model_len
  /// The longest request (prompt + output) a replica holds: max_model_len, or less when the KV pool holds fewer
  /// tokens beside a request's sliding-window and state blocks (the limit of the rejections and cuts above).
  std::int64_t max_request_tokens = 0;
  LatencySummary ttft_s, tpot_s, e2e_s;
  LatencySummary queue_s;                ///< arrival to first scheduled step
  /// Inter-token latency: every gap between two consecutive output tokens of a request, pooled over all requests
  /// (`vllm bench serve`'s and sglang.bench_serving's ITL; TPOT is its per-request mean). Tokens count when sampled:
  /// streaming in bursts (multi-step scheduling) is not modelled. On a disaggregated decode worker the gaps start
  /// after its first sampled token.
  LatencySummary itl_s;
  double first_arrival_s = 0, end_s = 0; ///< end: the last completion
  double last_arrival_s = 0;             ///< the last request sent
  /// Closed loop: sends at the very instant of the send before them. Clients whose requests finish in one step send
  /// together again after a fixed think time, are prefilled together and, with equal lengths, finish together: in a
  /// deterministic run such clients stay in lockstep (the report says how many sends did).
  std::uint64_t coincident_sends = 0;
  double requests_per_s = 0;             ///< completed / (end - first arrival)
  double output_tokens_per_s = 0;
  double prompt_tokens_per_s = 0;
  std::uint64_t prompt_tokens = 0, output_tokens = 0;  ///< of completed requests
  std::uint64_t slo_met = 0;
  double goodput_requests_per_s = 0;     ///< completed requests meeting every target / (end - first arrival)
  std::uint64_t preemptions = 0;
  std::uint64_t recomputed_tokens = 0;
  /// Prefix cache: tokens found cached at admission / tokens admitted (a re-admission after a preemption counts again,
  /// with the tokens generated so far), over all replicas; 0 without prefix caching or admissions.
  std::uint64_t prefix_cache_hit_tokens = 0;
  std::uint64_t host_hit_tokens = 0;       ///< of them, loaded from the host tier
  std::uint64_t host_disk_hit_tokens = 0;  ///< of those, read from LMCache's local disk first
  double host_load_s = 0;
  double prefix_cache_hit_rate = 0;
  double kv_utilization_mean = 0;        ///< mean over replicas of the time-weighted used / total blocks
  double kv_utilization_max = 0;         ///< peak over replicas
  double kv_waste_fraction = 0;          ///< time-weighted (allocated - filled) / allocated KV slots
  bool kv_waste_measured = true;         ///< false under --kv-eviction (kept tokens are not tracked per slot)
  double kv_waste_tokens_per_request_max = 0;  ///< largest (allocated - filled) / running seen in a step
  double running_mean = 0;               ///< mean concurrency per replica
  i64 running_max = 0;                   ///< peak concurrency on one replica
  double waiting_mean = 0;
  i64 waiting_max = 0;
  StepCost busy_breakdown_s;             ///< sum over steps, all replicas: step_s and the binding stage's terms x PP
  std::uint64_t steps = 0, events = 0;
  std::vector<ReplicaStats> replicas;
  double balance_max_over_mean = 0;      ///< max / mean completed requests per replica (1: even)
  /// Disaggregated serving: the prefill workers (their `completed` counts hand-offs), and the KV transfers to the
  /// decode workers (`replicas` above). The cluster's figures above are the decode pool's, but for steps, preemptions,
  /// recomputed tokens and busy_breakdown_s, which add both pools.
  std::vector<ReplicaStats> prefill_replicas;
  std::uint64_t kv_transfers = 0;
  double kv_transfer_s_mean = 0;       ///< per transfer
  double kv_transfer_tokens_mean = 0;  ///< per transfer
};

/// Runs the source to exhaustion and every request to completion.
SimResult simulate(const SimConfig& config, const StepTimer& timer, RequestSource& source);

}  // namespace kvcap::sim
