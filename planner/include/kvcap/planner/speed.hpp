#pragma once
// The speed model: how long a decode step and a prefill take on a deployment, term by term, and the
// answers derived from it (TTFT, TPOT, tokens/s, the largest batch meeting a TPOT target, the
// throughput-latency curve). Every formula and default is documented in docs/speed-model.md.
//
// Bytes read per rank are the bytes the memory model stores: weights per rank of each pipeline stage
// (params.hpp tensors, sharded as vLLM shards them) and the KV cache per rank (memory.hpp layer groups:
// GQA replication, MLA latents, sliding windows and quantised KV carry over).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvcap/planner/calibration.hpp"
#include "kvcap/planner/memory.hpp"

namespace kvcap {

/// Defaults fitted to the published measurements in shared/fixtures/speed_measurements.md
/// (docs/speed-model.md, "Default efficiencies").
struct SpeedOptions {
  double bandwidth_efficiency = 0.80;       ///< achieved / datasheet HBM bandwidth
  double compute_efficiency_16bit = 0.65;   ///< achieved / datasheet dense FLOP/s, bf16/fp16/fp32 GEMMs
  double compute_efficiency_8bit = 0.45;    ///< achieved / datasheet dense FLOP/s, fp8 GEMMs
  double step_overhead_s = 0.0;             ///< per engine step (scheduler, sampler); the fit puts it at 0
  double layer_overhead_s = 50.0e-6;        ///< per layer per step (small kernels: norms, rope, activations)
  /// Per sequence that samples a token in a step: the host's work for it (sampling parameters, detokenising,
  /// streaming the token out, the scheduler's bookkeeping), which grows with the batch; 0 for the plain roofline, set
  /// by an engine profile. Under pipeline parallelism it is spread over the stages like step_overhead_s.
  double sequence_overhead_s = 0.0;
  /// The serving front end's fixed cost per request (HTTP, tokenisation, the hop to the engine, streaming the
  /// first token), added to TTFT; 0 for the plain roofline, set by an engine profile (planner/engine.hpp).
  double request_overhead_s = 0.0;
  /// The engine runs steps of up to its largest capture size as CUDA graphs captured at fixed token counts, padding
  /// a step's tokens to the next one (vLLM V1: decode steps as full graphs, mixed steps piecewise): the padded rows go
  /// through every GEMM, the MoE router and the all-reduces, not attention. Set by the vllm engine profile.
  bool cuda_graph_padding = false;
  /// vLLM's V0 engine (0.7 and earlier): only decode-only steps of up to min(max_num_seqs, 256) sequences run as
  /// graphs (vllm/worker/model_runner.py _BATCH_SIZES_TO_CAPTURE: 1, 2, 4, then every 8); steps with a prefill eager.
  bool cuda_graph_decode_only = false;
  /// The engine runs a step of prefills alone whenever it has one to run, and its decodes in steps of their own (SGLang
  /// without --enable-mixed-chunk: Scheduler.get_next_batch_to_run, sglang/srt/managers/scheduler.py; vLLM V0 without
  /// chunked prefill: Scheduler._schedule_default, "Don't schedule decodes if prefills are scheduled"). false: prefill
  /// chunks ride the decode steps (vLLM V1, TensorRT-LLM's in-flight batching). Set by the sglang engine profile.
  bool prefill_first = false;
  /// Routed experts run as a grouped GEMM (vLLM's fused_moe, SGLang's fork of it, TensorRT-LLM's CUTLASS MoE) whose
  /// FLOP rate falls with the expert's width per rank W (moe_intermediate_size, / TP without expert parallelism):
  /// dense rate x W / (W + this), and it reads its experts' weights then computes, without the overlap a dense GEMM
  /// gets (docs/speed-model.md, "Routed experts"). Fitted to 506 measured fused_moe kernel times on an H200
  /// (aiconfigurator's campaign_checkpoints/h200_sxm/moe_perf.txt, vLLM 0.20): RMS log error 0.21 against 0.49 for
  /// the dense roofline. 0: routed experts as dense GEMMs, overlapped like them.
  double expert_gemm_half_width = 300;
};

/// vLLM's CUDA-graph capture sizes (vllm/config/vllm.py VllmConfig._set_cudagraph_sizes, default
/// --max-cudagraph-capture-size): up to min(2 x max_num_seqs, 512, max_num_batched_tokens) tokens, 1, 2, 4, then every
/// 8 below 256 and every 16 from 256, and max_num_batched_tokens itself when it is within that bound (vllm#40734).
std::vector<i64> cuda_graph_capture_sizes(i64 max_num_seqs, i64 max_num_batched_tokens);

enum class Bound : std::uint8_t { memory, compute };
std::string_view to_string(Bound b);  ///< "memory" | "compute"

/// One engine step on one rank of one pipeline stage (or a sum of such steps). Per rank.
struct StepBreakdown {
  i64 tokens = 0;              ///< new tokens processed (batch B for decode, chunk size for prefill)
  double weight_bytes = 0;     ///< weights read (MoE: expected activated experts only)
  double kv_bytes = 0;         ///< KV cache read
  double gemm_flops = 0;       ///< 2 x (active) weight elements per rank x tokens
  double attention_flops = 0;  ///< QK^T and PV
  double comm_bytes = 0;       ///< bytes each rank sends in all-reduces / gathers (ring)
  double weights_read_s = 0;
  double kv_read_s = 0;
  double gemm_s = 0;
  double attention_s = 0;
  /// Routed experts' grouped GEMM: their weights read, then their FLOPs at the grouped rate, in series
  /// (SpeedOptions::expert_gemm_half_width); weights_read_s and gemm_s are then the rest of the weights
  double experts_s = 0;
  double experts_read_s = 0;   ///< of experts_s, the routed experts' weights read (the rest is their GEMM)
  double communication_s = 0;  ///< tensor-parallel all-reduces (and the logits gather)
  double overhead_s = 0;       ///< fixed per step + per layer
  double memory_s = 0;         ///< weights_read_s + kv_read_s
  double compute_s = 0;        ///< gemm_s + attention_s
  double total_s = 0;          ///< max(memory_s, compute_s) + experts_s + communication_s + overhead_s
  /// memory when memory_s + experts_read_s >= compute_s + the experts' GEMM time
  Bound bound = Bound::memory;
};

/// Where the achieved rates came from.
struct RateSource {
  std::string memory;   ///< "calibrated" | "datasheet"
  std::string compute;  ///< "calibrated" | "datasheet"
  /// Prefill attention FLOP/s: "calibrated" (a CPU calibration), or "datasheet" (also under a GPU calibration,
  /// whose attention rate is kvcap's own kernel's, about half of FlashAttention-2's: recorded, not used).
  std::string attention;
};

/// One decode step of a batch (every running request produces one token).
struct DecodeStep {
  i64 batch = 0;
  i64 pipeline_stages = 1;
  i64 micro_batches = 1;        ///< min(B, PP): vLLM keeps PP batches in flight
  i64 micro_batch_size = 0;     ///< ceil(B / micro_batches)
  std::size_t binding_stage = 0;///< the slowest stage
  StepBreakdown stage;          ///< the binding stage's step for one micro-batch
  double pipeline_p2p_s = 0;    ///< activation send to the next stage (0 without PP)
  double pipeline_bubble_s = 0; ///< (PP - micro_batches) x (stage + p2p): stages idle for want of work
  double tpot_s = 0;            ///< PP x (stage.total_s + p2p): time between two tokens of one request
  double tokens_per_s_per_user = 0;  ///< 1 / tpot
  double tokens_per_s = 0;           ///< B / tpot, per replica
  double cluster_tokens_per_s = 0;   ///< x replicas
  Bound bound = Bound::memory;
  RateSource source;
};

/// Prefill of one prompt, chunked by max_num_batched_tokens.
struct PrefillResult {
  i64 prompt_tokens = 0;
  i64 chunk_tokens = 0;               ///< max_num_batched_tokens
  std::vector<StepBreakdown> chunks;  ///< each chunk's pass, summed over pipeline stages
  StepBreakdown total;                ///< sum over chunks (bound: of the larger summed term)
  double pipeline_p2p_s = 0;          ///< sum of activation sends between stages
  double ttft_s = 0;                  ///< sum of chunk passes + p2p + the front end's request overhead: time to the first token
  Bound bound = Bound::compute;
  RateSource source;
};

/// One pipeline stage's weights on one rank, summed over its layers' tensors (sharded as the memory model shards
/// them): what every step of the stage reads, computed once per deployment rather than tensor by tensor per step.
struct StageWeights {
  double bytes = 0, elements = 0;                ///< tensors every token goes through
  double routed_bytes = 0, routed_elements = 0;  ///< routed experts (a step reads the fraction its tokens activate)
  double head_elements = 0;                      ///< the LM head (last stage): logits of the sampling requests only
  /// Tensor-parallel all-reduces of the hidden state per forward pass: one per row-parallel output of the stage's
  /// layers (allreduces_per_layer: two for an attention + MLP layer), one after the first stage's
  /// vocabulary-parallel embedding.
  i64 allreduces = 0;
};

/// Everything the speed model needs; make_speed_context() runs the memory model once.
struct SpeedContext {
  ModelSpec model;
  GpuSpec gpu;
  MemoryPlan plan;
  SpeedOptions options;
  std::optional<Calibration> calibration;
  std::vector<StageWeights> stage_weights;  ///< one per plan.stages entry (make_speed_context)
  /// options.cuda_graph_padding: the capture sizes of the deployment, ascending (empty: every step runs unpadded).
  std::vector<i64> cuda_graph_sizes;
};
/// The tokens a step of `tokens` runs its GEMMs on: the next capture size, or `tokens` beyond the largest (eager);
/// `tokens` when the step has a prefill and only decode-only steps run as graphs (cuda_graph_decode_only).
i64 graph_tokens(const SpeedContext& c, i64 tokens, bool has_prefill);
/// Whether a step of `tokens` runs as a CUDA graph (padded) rather than eagerly.
bool runs_as_graph(const SpeedContext& c, i64 tokens, bool has_prefill);

/// Validates the options (efficiencies in (0, 1], overheads >= 0) and the calibration; throws SpecError.
SpeedContext make_speed_context(const ModelSpec& m, const GpuSpec& g, const Deployment& d, SpeedOptions o = {},
                                std::optional<Calibration> c = std::nullopt);
SpeedContext make_speed_context(const ModelSpec& m, const GpuSpec& g, MemoryPlan plan, SpeedOptions o = {},
                                std::optional<Calibration> c = std::nullopt);

/// prefill() refuses prompts needing more chunks of max_num_batched_tokens than this (SpecError "prompt_tokens").
inline constexpr i64 kMaxPrefillChunks = 100'000;

/// Expected distinct experts activated when `tokens` tokens each pick top-k of E experts uniformly:
/// E x (1 - (1 - k/E)^tokens).
double expected_active_experts(i64 num_experts, i64 top_k, double tokens);
/// E[max of n independent standard normal variables] (0 for n = 1; 1.4236 for n = 8), by quadrature.
double expected_max_std_normal(i64 n);
/// Expert parallelism: how much more routed-expert work the busiest of `ep` ranks gets than the mean, for `picks`
/// expert choices (tokens x top-k) routed uniformly: 1 + E[max of ep standard normals] sqrt((ep - 1) / picks), at most
/// ep (one rank takes all); 1 without EP. A step waits for its busiest rank.
double expert_load_imbalance(i64 ep, double picks);

/// One all-reduce of `message_bytes` over `tp` ranks (0 when tp = 1): the GPU profile's measured times where it has
/// them (interconnect.allreduce_measured: interpolated in size and TP, the ring's bandwidth term past the largest
/// size), else the ring formula 2(tp-1)/tp x message / (NCCL's 82% of the link bandwidth) + latency.
double allreduce_time_s(const GpuSpec& g, i64 tp, double message_bytes);

/// Decode step for requests with KV lengths `contexts` (tokens attended to, the new one included).
DecodeStep decode_step(const SpeedContext& c, const std::vector<i64>& contexts);
/// Decode step for `batch` requests all at context `context_tokens`.
DecodeStep decode_step(const SpeedContext& c, i64 batch, i64 context_tokens);
/// Prefill of `prompt_tokens` for one request (batch 1).
PrefillResult prefill(const SpeedContext& c, i64 prompt_tokens);

double ttft_s(const SpeedContext& c, i64 prompt_tokens);
double tpot_s(const SpeedContext& c, i64 batch, i64 context_tokens);

/// One request's life at a steady batch: TTFT, mean TPOT over its output (context growing from
/// prompt + 1 to prompt + output), end-to-end latency = TTFT + (output - 1) x mean TPOT.
struct RequestEstimate {
  i64 batch = 0;
  i64 prompt_tokens = 0;
  i64 output_tokens = 0;
  double ttft_s = 0;
  double mean_tpot_s = 0;
  double e2e_s = 0;
  double tokens_per_s_per_user = 0;  ///< 1 / mean TPOT
  double tokens_per_s = 0;           ///< batch / mean TPOT, per replica (decode only)
  DecodeStep first_step;             ///< at context prompt + 1
  DecodeStep last_step;              ///< at context prompt + output
  PrefillResult prefill;
};
RequestEstimate estimate_request(const SpeedContext& c, i64 batch, i64 prompt_tokens, i64 output_tokens);

/// The largest batch whose TPOT at context S meets a target, bounded by memory.
struct BatchLimit {
  i64 batch = 0;            ///< 0: not even one request meets the target (or fits)
  i64 memory_limit = 0;     ///< min(floor(running_concurrency_at(S)), max_num_seqs)
  std::string limited_by;   ///< "tpot" | "memory" | "max_num_seqs" | "none fits"
  DecodeStep step;          ///< at `batch` (at 1 when batch is 0 and memory allows one)
};
BatchLimit max_batch_for_tpot(const SpeedContext& c, double tpot_target_s, i64 context_tokens);

/// Decode steps at context S over batches 1, 2, 4, ... up to the memory limit (and the limit itself);
/// max_batch > 0 caps the batch further.
std::vector<DecodeStep> throughput_latency_curve(const SpeedContext& c, i64 context_tokens, i64 max_batch = 0);

// ---- Mixed engine steps (the serving simulator's clock) --------------------------------------------
// vLLM V1 schedules decode tokens and prefill chunks in one batch (vllm/v1/core/sched/scheduler.py,
// schedule()): a step is a list of requests, each computing `new_tokens` on top of `past_tokens`.

/// One request's share of a mixed step: `past_tokens` already in the KV cache, `new_tokens` computed
/// now (1 for a decode token, a chunk for prefill); `samples`: the step ends in a sampled token for it
/// (every decode, the last chunk of a prefill).
struct StepSequence {
  i64 past_tokens = 0;
  i64 new_tokens = 1;
  bool samples = true;
};

/// One engine step of a replica. With PP > 1 the sequences are split round-robin (heaviest first) into
/// min(B, PP) micro-batches, as decode_step does; the slowest (stage, micro-batch) paces the pipeline.
struct MixedStep {
  i64 sequences = 0;
  i64 tokens = 0;
  i64 samples = 0;  ///< sequences that sample a token in the step
  i64 micro_batches = 1;
  std::size_t binding_stage = 0;
  StepBreakdown stage;          ///< the binding stage's step for its micro-batch, per rank
  double pipeline_p2p_s = 0;    ///< activation send of that micro-batch (0 without PP)
  double step_s = 0;            ///< PP x (stage.total_s + p2p): time until every sequence's tokens are done
  Bound bound = Bound::memory;
};
/// The reference (tensor by tensor) time of one mixed step. Throws SpecError for an empty step.
MixedStep mixed_step(const SpeedContext& c, const std::vector<StepSequence>& seqs);

/// The sums over a step's sequences that its time depends on. Fill with StepCostModel::add, O(1) per
/// sequence. Index [0]: full-attention layers, [1]: sliding-window layers.
struct StepLoad {
  i64 sequences = 0;
  i64 tokens = 0;                  ///< sum of new_tokens
  i64 samples = 0;                 ///< sequences that sample a token
  i64 decode_tokens = 0;           ///< sequences with new_tokens == 1 (DCP's query exchange)
  double kv_read_tokens[2] = {0, 0};  ///< sum of min(past + new, window): KV tokens read per layer
  double decode_pairs[2] = {0, 0};    ///< attended (query, key) pairs of sequences with new_tokens == 1
  double prefill_pairs[2] = {0, 0};   ///< attended pairs of sequences with new_tokens > 1
  double prefill_past_tokens =
      0;  ///< sum of past_tokens of sequences with new_tokens > 1 (MLA decompression, DCP gather)
};

/// A step's time and the binding stage's per-operation breakdown (per micro-batch, per rank).
struct StepCost {
  double step_s = 0;  ///< PP x (stage total + p2p), as MixedStep::step_s
  double weights_read_s = 0;
  double kv_read_s = 0;
  double gemm_s = 0;
  double attention_s = 0;
  double experts_s = 0;  ///< as StepBreakdown::experts_s
  double communication_s = 0;
  double overhead_s = 0;
  double pipeline_p2p_s = 0;
  Bound bound = Bound::memory;
  /// PP: the stages a micro-batch passes, step_s = depth x (stage total + p2p); the terms above are one stage's.
  int pipeline_depth = 1;
};

/// mixed_step() with everything that does not depend on the step precomputed: weight bytes and FLOPs
/// per token of each stage, KV bytes per token per window class, GEMM rates per token count up to
/// max_num_batched_tokens. cost() is O(stages), so a simulator can time millions of steps. Agrees with
/// mixed_step() to rounding for PP = 1 (tests/planner/test_step_cost.cpp); for PP > 1 it splits the load
/// into min(B, PP) equal micro-batches where mixed_step() takes the heaviest round-robin micro-batch.
class StepCostModel {
 public:
  explicit StepCostModel(const SpeedContext& c);
  /// Adds one sequence to `load` (inline: called per scheduled request per step).
  void add(StepLoad& load, i64 past_tokens, i64 new_tokens, bool samples) const {
    load.sequences += 1;
    load.tokens += new_tokens;
    load.samples += samples ? 1 : 0;
    const i64 held = past_tokens + new_tokens;
    for (int w = 0; w < 2; ++w) {
      const i64 win = window_[w];
      if (w == 1 && win <= 0) break;
      // Full layers under the what-if --kv-eviction read only the tokens they keep.
      const i64 read = win > 0 ? (held > win ? win : held) : (evict_.on() ? evict_.held(held) : held);
      load.kv_read_tokens[w] += static_cast<double>(read);
      if (new_tokens == 1)
        load.decode_pairs[w] += static_cast<double>(read);
      else load.prefill_pairs[w] += attended_pairs(past_tokens + 1, held, win);
    }
    if (new_tokens != 1) load.prefill_past_tokens += static_cast<double>(past_tokens);
    else
      load.decode_tokens += 1;
  }
  /// Whether a decode sequence's reads are its held tokens in every layer (no sliding-window class, no what-if
  /// eviction): then add_decodes() of many decode sequences equals add() of each.
  bool decode_reads_held() const { return window_[0] <= 0 && window_[1] <= 0 && !evict_.on(); }
  /// `count` decode sequences (one new token each, each sampling) holding `sum_held` tokens in all (past + new):
  /// the same load as `count` calls of add() when decode_reads_held() (sums of integers, exact in a double below
  /// 2^53, so the order of the additions cannot change a bit).
  void add_decodes(StepLoad& load, i64 count, i64 sum_held) const {
    load.sequences += count;
    load.tokens += count;
    load.samples += count;
    load.decode_tokens += count;
    load.kv_read_tokens[0] += static_cast<double>(sum_held);
    load.decode_pairs[0] += static_cast<double>(sum_held);
  }
  StepCost cost(const StepLoad& load) const;
  /// sum over query positions lo..hi (1-based) of min(position, window) (window 0: no cap).
  static double attended_pairs(i64 lo, i64 hi, i64 window);

 private:
  KvEviction evict_;  ///< full-attention layers' what-if eviction (off: every token read)
  struct Stage {
    double weight_bytes_fixed = 0;     ///< non-routed weights read once per step
    double weight_bytes_routed = 0;    ///< all routed experts (x expected active fraction per step)
    double gemm_flops_per_token = 0;   ///< non-routed
    double gemm_flops_per_token_routed = 0;  ///< routed x top_k / E (x the replicas' tokens with expert parallelism)
    i64 stage_index = 0;
    double gemm_flops_per_sample = 0;  ///< LM head logits
    double kv_bytes_per_token[2] = {0, 0};  ///< sum over the stage's layers of that window class
    double attn_layers[2] = {0, 0};
    double state_bytes_per_seq = 0;      ///< linear layers: state read + written per sequence per step
    double linear_flops_per_token = 0;   ///< linear layers: gated-delta-rule FLOPs per token
    i64 attention_layers = 0;
    i64 allreduces = 0;
    bool last = false;
    double overhead_s = 0;
  };
  std::vector<Stage> stages_;
  i64 window_[2] = {0, 0};
  i64 pp_ = 1, tp_ = 1;
  bool moe_ = false, mla_ = false;
  i64 num_experts_ = 0, top_k_ = 0;
  double ep_tokens_ = 1;  ///< expert parallelism: the replicas whose tokens a rank's experts serve
  i64 ep_size_ = 1;       ///< ranks the routed experts are split over
  double ep_max_normal_ = 0;  ///< expected_max_std_normal(ep_size_)
  double heads_ = 0;
  double per_pair_decode_ = 0, per_pair_prefill_ = 0, mla_extra_per_past_ = 0;
  double weight_bw_ = 0, kv_bw_ = 0, kv_t0_ = 0, attn_flops_ = 0;
  double expert_gemm_rate_ = 0;               ///< expert_gemm_rate(): the experts' grouped-GEMM FLOP/s; 0: not grouped
  std::vector<double> gemm_flops_by_tokens_;  ///< [T] achieved GEMM FLOP/s for a step of T tokens
  double act_bytes_ = 0, hidden_ = 0, vocab_ = 0;
  SpeedContext ctx_;  ///< for GEMM rates beyond the table and the interconnect
  double gemm_rate(i64 tokens) const;
};

}  // namespace kvcap
