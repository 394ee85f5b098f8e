#include "kvcap/planner/speed.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <numbers>
#include <optional>
#include <stdexcept>
#include <string>

namespace kvcap {

namespace {
double dbl(i64 v) { return static_cast<double>(v); }
double dbl(u64 v) { return static_cast<double>(v); }
// Recurrent-state FLOPs per token and layer on this rank. Gated delta rule, per value head: S k, the rank-1
// state update and S q, each d_k x d_v multiply-adds (Yang, Kautz, Hatamizadeh, "Gated Delta Networks", ICLR 2025).
// Mamba-2, per head: the state update x B^T and the read-out C h, head_dim x state each (Dao & Gu, "Transformers
// are SSMs", 2024); Mamba-1, per channel: discretisation, update and read-out over the state (Gu & Dao, 2023).
// Expert parallelism (vllm --enable-expert-parallel): the data-parallel replicas whose tokens a rank's experts serve.
i64 ep_token_scale(const SpeedContext& c) {
  return c.plan.dep.expert_parallel_size > 1 ? c.plan.dep.replicas : 1;
}
/// The routed experts' grouped-GEMM FLOP rate relative to a dense GEMM's (SpeedOptions::expert_gemm_half_width):
/// W / (W + half width), W the width of an expert's shard on a rank: moe_intermediate_size, divided by TP unless
/// expert parallelism keeps experts whole (vLLM FusedMoE: EP over DP x TP ranks, TP 1 within an expert). A narrow
/// shard gives the down projection a short K loop and gate_up few N tiles, where the kernel does little but load.
/// Whether a MoE model's routed experts are timed apart as a grouped GEMM (expert_gemm_half_width > 0), or
/// join the dense GEMMs (0: the plain roofline, kept to compare with).
bool experts_grouped(const SpeedContext& c) {
  return c.model.moe.enabled() && c.options.expert_gemm_half_width > 0;
}

double expert_gemm_factor(const SpeedContext& c) {
  const auto& moe = c.model.moe;
  const double half = c.options.expert_gemm_half_width;
  if (!experts_grouped(c) || moe.expert_intermediate_size <= 0) return 1.0;
  const i64 shard = c.plan.dep.expert_parallel_size > 1 ? 1 : c.plan.dep.d.tensor_parallel_size;
  const double width = dbl(moe.expert_intermediate_size) / dbl(std::max<i64>(1, shard));
  return width / (width + half);
}

/// The routed experts a layer holds over all ranks: E, plus EPLB's redundant copies under expert parallelism.
i64 physical_experts(const SpeedContext& c) {
  return c.model.moe.num_experts + (c.plan.dep.expert_parallel_size > 1 ? c.plan.dep.d.num_redundant_experts : 0);
}

// Expert parallelism: every MoE layer moves each token's hidden state to its experts' ranks and the results back
// (--all2all-backend): DeepEP 2 x tokens x top-k x hidden x activation bytes x (EP-1)/EP per rank and layer,
// all-gather + reduce-scatter 2 x tokens x (DP-1) x hidden x bytes, over the interconnect, plus its latency twice (no
// overlap with compute).
double moe_all_to_all_s(const SpeedContext& c, const StagePlan& st, double tokens);
double dcp_comm_s(const SpeedContext& c, const StagePlan& st, double decode_tokens, double prefill_past_tokens);

double linear_flops_per_token_per_layer(const ModelSpec& m, i64 tp) {
  const auto& a = m.linear;
  if (!a.enabled()) return 0;
  switch (a.kind) {
    case LinearAttentionSpec::Kind::gated_delta_net:
      return 6.0 * dbl(a.key_head_dim) * dbl(a.value_head_dim) * dbl(a.num_value_heads / tp);
    case LinearAttentionSpec::Kind::mamba2:
      return 4.0 * dbl(a.value_head_dim) * dbl(a.state_size) * dbl(a.num_value_heads / tp);
    case LinearAttentionSpec::Kind::mamba1:
      return 6.0 * dbl(a.intermediate_size / tp) * dbl(a.state_size);
  }
  return 0;
}
std::string str(double v) { return std::to_string(v); }

void finite_non_negative(double v, const char* field) {
  if (!std::isfinite(v) || v < 0) throw SpecError(field, "must be a finite number >= 0 (got " + str(v) + ")");
}
void efficiency(double v, const char* field) {
  if (!std::isfinite(v) || !(v > 0) || v > 1) throw SpecError(field, "must be in (0, 1] (got " + str(v) + ")");
}
void positive_count(i64 v, const char* field) {
  if (v < 1) throw SpecError(field, "must be >= 1 (got " + std::to_string(v) + ")");
}

double bytes_of(DType d) { return info(d).payload_bits / 8.0; }

/// Dense tensor-core rate that a GEMM in `d` runs at; falls back to bf16 where the GPU lacks the path.
double dense_flops(const GpuSpec& g, DType d) {
  switch (d) {
    case DType::fp8:
    case DType::fp8_e5m2:
      return g.fp8_dense_flops > 0 ? g.fp8_dense_flops : g.bf16_dense_flops;
    case DType::nvfp4:
      return g.fp4_dense_flops > 0 ? g.fp4_dense_flops : g.bf16_dense_flops;
    case DType::fp16:
      return g.fp16_dense_flops > 0 ? g.fp16_dense_flops : g.bf16_dense_flops;
    case DType::fp32:
      return g.fp32_flops > 0 ? g.fp32_flops : g.bf16_dense_flops;
    default:
      return g.bf16_dense_flops;
  }
}

/// The dtype the linear layers compute in: fp8 weights run fp8 GEMMs (W8A8, as vLLM does on GPUs with
/// fp8 tensor cores); NVFP4 weights run fp4 GEMMs (W4A4, activations quantised to NVFP4: vLLM's CUTLASS /
/// FlashInfer NVFP4 path) where the GPU has fp4 tensor cores; integer and MX formats are weight-only
/// (dequantised to the activation dtype).
DType gemm_dtype(const ResolvedDeployment& d, const GpuSpec& g) {
  if (d.weight_dtype == DType::nvfp4) return g.fp4_dense_flops > 0 ? DType::nvfp4 : d.dtype;
  switch (d.weight_dtype) {
    case DType::fp8:
    case DType::fp8_e5m2:
    case DType::bf16:
    case DType::fp16:
    case DType::fp32:
      return d.weight_dtype;
    default:
      return d.dtype;
  }
}

struct Rates {
  double weight_bw = 0;   ///< bytes/s reading weights
  double kv_bw = 0;       ///< bytes/s reading KV
  double kv_t0 = 0;       ///< per attention-kernel call (calibrated only)
  double gemm_flops = 0;
  double attn_flops = 0;
  RateSource source;
};

/// Tokens beyond every calibration GEMM class: gemm_flops_for gives the largest (compute-bound) class's rate.
constexpr i64 kLargestClassTokens = i64{1} << 40;

/// The calibration's GEMM FLOP rate for a step of `tokens`, weights read at `weight_bw`. A class is a FLOP rate
/// over its points (sum of FLOPs / sum of times): where those GEMMs were read-limited it holds the weights' read,
/// which weights_read_s already counts, and it holds it more the larger M: on the 2026-11-27 H200 calibration the
/// 1-16 class ran 18 TFLOP/s, and a step of 16 tokens took 1.8x longer than one of 17 (the next class). A class
/// is read-limited when its rate reaches m_min x the bandwidth (2 FLOPs per bf16 weight of 2 bytes per token: at
/// its smallest M its FLOPs take no longer than their read); within it the rate is at least M x the bandwidth, at
/// which the FLOPs take as long as the read, up to the largest class's rate. Compute-bound classes (a rate below
/// m_min x the bandwidth: 257-2048 tokens on that H200) are used as measured. `floor_bw`: the bandwidth of that floor
/// for the step's weights (weight_bw for bf16; x 4 for int4 weights, whose read is a quarter as long).
/// A step of more tokens never takes less GEMM time than one fewer: across a class's lower edge the rate grows with
/// T from the class below's (its time at that edge held) until it reaches the class's own, as a measured GEMM's
/// time does not fall when M grows by one (2,048 -> 2,049 tokens fell 8% on the H200 file's two compute-bound
/// classes, 7.02e14 and 7.70e14).
double calibrated_gemm_rate(const Calibration& k, i64 tokens, double weight_bw, double floor_bw) {
  const CalibrationGemmClass* cls = gemm_class_for(k, tokens);
  if (!cls) return 0;
  const bool read_limited = cls->flops_per_s >= dbl(cls->m_min) * weight_bw;
  double rate = read_limited ? std::max(cls->flops_per_s,
                                        std::min(dbl(tokens) * floor_bw, gemm_flops_for(k, kLargestClassTokens)))
                             : cls->flops_per_s;
  if (tokens >= cls->m_min && cls->m_min > 1) {
    const CalibrationGemmClass* below = gemm_class_for(k, cls->m_min - 1);
    if (below && below != cls && below->m_max == cls->m_min - 1) {
      const double edge = calibrated_gemm_rate(k, below->m_max, weight_bw, floor_bw);
      rate = std::min(rate, std::max(edge, edge * dbl(tokens) / dbl(below->m_max)));
    }
  }
  return rate;
}

Rates rates(const SpeedContext& c, i64 tokens) {
  const auto& g = c.gpu;
  const auto& o = c.options;
  const auto& d = c.plan.dep;
  Rates r;
  const double bw = o.bandwidth_efficiency * g.memory_bandwidth_bytes_per_s;
  const DType gd = gemm_dtype(d, g);
  const double gemm_peak = dense_flops(g, gd);
  // fp4 GEMMs take the low-precision efficiency too (no fp4 measurement among the fixtures).
  const bool gemm_8bit = ((gd == DType::fp8 || gd == DType::fp8_e5m2) && g.fp8_dense_flops > 0) ||
                         (gd == DType::nvfp4 && g.fp4_dense_flops > 0);
  r.weight_bw = r.kv_bw = bw;
  r.gemm_flops = gemm_peak * (gemm_8bit ? o.compute_efficiency_8bit : o.compute_efficiency_16bit);
  r.attn_flops = dense_flops(g, d.dtype) * o.compute_efficiency_16bit;
  r.source = {"datasheet", "datasheet", "datasheet"};
  if (c.calibration) {
    const auto& k = *c.calibration;
    const double stream = k.stream.read_bytes_per_s, dec = k.decode.bandwidth_bytes_per_s;
    if (stream > 0 || dec > 0) {
      r.weight_bw = stream > 0 ? stream : dec;
      r.kv_bw = dec > 0 ? dec : stream;
      r.kv_t0 = dec > 0 ? k.decode.t0_s : 0;
      r.source.memory = "calibrated";
    }
    // The calibration's GEMM classes are measured with bf16 inputs (docs/calibration-format.md); an fp8 GEMM is
    // credited the datasheet's fp8 / bf16 ratio on top. The read-limited floor is for the step's weights: 2 FLOPs
    // per weight per token over its bytes (bf16 2, fp8 1 with that ratio, int4 weight-only 0.5).
    const double ratio = gemm_8bit ? dense_flops(g, gd) / g.bf16_dense_flops : 1.0;
    const double bytes = dbl(weight_bytes(d.weight_dtype, u64{1} << 20)) / dbl(u64{1} << 20);
    const double gf = calibrated_gemm_rate(k, tokens, r.weight_bw, r.weight_bw * 2.0 / (bytes * ratio));
    if (gf > 0) {
      r.gemm_flops = gf * ratio;
      r.source.compute = "calibrated";
    }
    // Prefill attention: a CPU calibration's rate is the CPU's own. A GPU's is kvcap's kernel, not the engine's:
    // on an H100 kvcap's tensor-core kernel ran 168 TFLOP/s (its CUDA-core predecessor 10.4) where FlashAttention-2
    // runs about 350 and FlashAttention-3 600+ (docs/kernels.md), so GPU plans keep datasheet x efficiency here.
    if (k.prefill_attention.flops_per_s > 0 && k.device_kind == "cpu") {
      r.attn_flops = k.prefill_attention.flops_per_s;
      r.source.attention = "calibrated";
    }
  }
  return r;
}

/// The routed experts' grouped-GEMM FLOP rate: the dense GEMM rate at a compute-bound size x expert_gemm_factor.
/// The experts' time holds their weight read apart (read, then computed), so their rate must not hold one: a
/// calibration's small-M GEMM classes are memory-bound rates that do, and the experts take its largest class, as
/// the datasheet rate, which the grouped-GEMM fit used, does not depend on the tokens.
double expert_gemm_rate(const SpeedContext& c) {
  return rates(c, kLargestClassTokens).gemm_flops * expert_gemm_factor(c);
}

/// Requests of one step that share a shape: `count` requests with `past` tokens in the KV cache each
/// processing `fresh` new tokens; `samples`: the step produces a token (logits computed) for them.
struct Seq {
  i64 past = 0;
  i64 fresh = 1;
  i64 count = 1;
  bool samples = true;
};

/// sum_{j=lo}^{hi} min(j, w) (w = 0: no cap): key positions attended by query positions lo..hi (1-based).
double attended(i64 lo, i64 hi, i64 w) {
  if (hi < lo) return 0;
  auto sum = [](double a, double b) { return (a + b) * (b - a + 1) / 2; };
  if (w <= 0 || hi <= w) return sum(dbl(lo), dbl(hi));
  if (lo > w) return dbl(hi - lo + 1) * dbl(w);
  return sum(dbl(lo), dbl(w)) + dbl(hi - w) * dbl(w);
}

// NCCL's protocol overhead: "450GB/s is the line rate. With the protocol overhead (~20%) NCCL can get an effective
// NVLink bandwidth of 370GB/s" (NCCL maintainer, NVIDIA/nccl-tests#212, H100); assumed for NCCL's ring collectives on
// every link (all-reduce, all-gather). A ring moves (tp-1)/tp of the message over each link per pass.
constexpr double kNcclLinkEfficiency = 370.0 / 450.0;

/// One pass of NCCL's ring over `tp` ranks: (tp-1)/tp of the message over each link at NCCL's achieved rate.
double ring_pass_s(const GpuSpec& g, i64 tp, double message_bytes) {
  return dbl(tp - 1) / dbl(tp) * message_bytes / (kNcclLinkEfficiency * g.interconnect_bandwidth_bytes_per_s);
}

double ring_allgather_s(const GpuSpec& g, i64 tp, double message_bytes) {
  if (tp <= 1) return 0;
  return ring_pass_s(g, tp, message_bytes) + g.interconnect_latency_s;
}

/// What bounds a step: memory when its reads (the dense ones and the routed experts') take at least as long as its
/// FLOPs (the dense GEMMs and attention, and the experts' GEMMs: experts_s less their read).
Bound bound_of(double memory_s, double compute_s, double experts_s, double experts_read_s) {
  return memory_s + experts_read_s >= compute_s + (experts_s - experts_read_s) ? Bound::memory : Bound::compute;
}

void finish(StepBreakdown& b) {
  b.memory_s = b.weights_read_s + b.kv_read_s;
  b.compute_s = b.gemm_s + b.attention_s;
  b.bound = bound_of(b.memory_s, b.compute_s, b.experts_s, b.experts_read_s);
}

/// One step of pipeline stage `s` on one of its ranks. `step_samples`: the sequences that sample a token in the whole
/// step, over every micro-batch (-1: those of `seqs`); the host's cost per sequence is theirs, a PP-th on each stage,
/// so that PP stage times hold it once.
StepBreakdown stage_step(const SpeedContext& c, std::size_t s, const std::vector<Seq>& seqs, i64 step_samples = -1) {
  const auto& m = c.model;
  const auto& d = c.plan.dep;
  const auto& st = c.plan.stages[s];
  const i64 tp = d.d.tensor_parallel_size, pp = d.d.pipeline_parallel_size;
  StepBreakdown b;
  i64 samples = 0;
  for (const auto& q : seqs) {
    b.tokens += q.fresh * q.count;
    if (q.samples) samples += q.count;
  }
  // GEMMs, the MoE router and the all-reduces run on the CUDA graph's padded tokens; attention on the real ones.
  const bool has_prefill = std::any_of(seqs.begin(), seqs.end(), [](const Seq& q) { return q.fresh > 1; });
  const i64 graph = graph_tokens(c, b.tokens, has_prefill);
  const double t = dbl(graph);
  const Rates r = rates(c, graph);

  // Weights: every tensor of the stage's layers once, sharded as the memory model shards them; routed
  // experts only in the expected fraction the step's tokens activate. With expert parallelism a rank's experts
  // serve the tokens of every data-parallel replica (balanced routing: the replicas' steps have this one's load).
  const double ep_tokens = dbl(ep_token_scale(c));
  // EPLB's redundant copies share their expert's tokens: picks spread over the E + R physical experts, so the rank's
  // extra copies add memory and weight reads, not GEMM work.
  const i64 physical = physical_experts(c);
  const double moe_frac =
      m.moe.enabled() ? expected_active_experts(physical, m.moe.experts_per_token, t * ep_tokens) / dbl(physical) : 0;
  const double top_k_frac = m.moe.enabled() ? dbl(m.moe.experts_per_token) / dbl(physical) : 0;
  // The busiest EP rank's share (routed experts are only in the layers, whose tokens are t): once per step.
  const double imbalance =
      m.moe.enabled() ? expert_load_imbalance(d.expert_parallel_size, t * ep_tokens * dbl(m.moe.experts_per_token))
                      : 1.0;
  if (s >= c.stage_weights.size()) throw std::logic_error("speed context without its stages' weights");
  const StageWeights& sw = c.stage_weights[s];
  const double routed_bytes = sw.routed_bytes * moe_frac;
  const double routed_flops = 2.0 * t * ep_tokens * sw.routed_elements * top_k_frac * imbalance;
  b.weight_bytes = sw.bytes + routed_bytes;
  b.gemm_flops = 2.0 * t * sw.elements + routed_flops + 2.0 * dbl(samples) * sw.head_elements;

  // KV: the tokens each request's attention reads, per layer group, in the bytes the memory model stores.
  i64 attn_layers = 0;
  // Query heads per rank (with decode context parallelism too: the group's heads over 1/DCP of the tokens).
  const double heads = dbl(m.num_heads / tp);
  for (const auto& g : st.groups) {
    if (g.attention == LayerAttention::linear) {
      // Linear attention (gated delta rule): each request's state is read and written back once per
      // step, whatever its context; per token and value head about 3 products of the key x value state
      // (S k, the rank-1 update, S q): 6 x d_k x d_v FLOPs (Yang et al., "Gated Delta Networks", 2024).
      for (const auto& q : seqs) {
        b.kv_bytes += dbl(q.count) * 2.0 * dbl(g.state_bytes_per_layer) * dbl(g.num_layers);
        b.attention_flops += dbl(q.count) * dbl(q.fresh) * linear_flops_per_token_per_layer(m, tp) * dbl(g.num_layers);
      }
      continue;
    }
    // Every layer that attends reads the cache and computes attention: a layer sharing an earlier layer's cache
    // (--kv-layer-sharing) reads it again (its queries come after the owner's output, so no kernel reads it once).
    attn_layers += g.attending_layers;
    const i64 w = g.attention != LayerAttention::full ? g.window_tokens : 0;  // chunked: at most one chunk
    for (const auto& q : seqs) {
      const i64 held = q.past + q.fresh;
      const double read = dbl(w > 0 ? std::min(held, w) : g.evict.held(held));
      b.kv_bytes += dbl(q.count) * read * dbl(g.bytes_per_token_per_layer) * dbl(g.attending_layers);
      // Decode attends what is kept (a window, or the what-if eviction's tokens); a prefill chunk its window.
      const double pairs = q.fresh == 1 ? read : attended(q.past + 1, held, w);
      double per_pair = 0, extra = 0;
      if (m.attention == AttentionType::gqa) {
        per_pair = 2.0 * (2.0 * dbl(m.head_dim));  // QK^T and PV, head_dim each
      } else if (q.fresh == 1) {
        // MLA decode, weights absorbed (vLLM MLA decode / FlashMLA): MQA over the latent,
        // scores over kv_lora_rank + rope dims, values kv_lora_rank wide.
        per_pair = 2.0 * (dbl(m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) + dbl(m.mla.kv_lora_rank));
      } else {
        // MLA prefill (vLLM forward_prefill): decompress the cached latents of the earlier context with
        // kv_b_proj, then ordinary attention with qk = nope + rope and v = v_head_dim.
        per_pair = 2.0 * (dbl(m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim) + dbl(m.mla.v_head_dim));
        extra = 2.0 * dbl(q.past) * dbl(m.mla.kv_lora_rank) * heads * dbl(m.mla.qk_nope_head_dim + m.mla.v_head_dim);
      }
      b.attention_flops += dbl(q.count) * (pairs * heads * per_pair + extra) * dbl(g.attending_layers);
    }
  }

  // The routed experts' grouped GEMM in series with the rest: read, then computed at its own rate (SpeedOptions::
  // expert_gemm_half_width); with the factor off, its reads and FLOPs join the dense ones, overlapped.
  const bool grouped = experts_grouped(c);
  b.experts_read_s = grouped ? routed_bytes / r.weight_bw : 0;
  b.experts_s = grouped ? b.experts_read_s + routed_flops / expert_gemm_rate(c) : 0;
  b.weights_read_s = (b.weight_bytes - (grouped ? routed_bytes : 0)) / r.weight_bw;
  b.kv_read_s = b.kv_bytes / r.kv_bw + (b.kv_bytes > 0 ? dbl(attn_layers) * r.kv_t0 : 0);
  b.gemm_s = (b.gemm_flops - (grouped ? routed_flops : 0)) / r.gemm_flops;
  b.attention_s = b.attention_flops / r.attn_flops;

  // Tensor parallelism: the all-reduces of the hidden state (StageWeights::allreduces: after o_proj and after the
  // MLP down projection / MoE combine in an attention + MLP layer, one after the vocabulary-parallel embedding),
  // and a gather of the logits of the sampling requests.
  double prefill_past = 0, decode_tokens = 0;
  for (const auto& q : seqs)
    (q.fresh > 1 ? prefill_past : decode_tokens) += dbl(q.count) * (q.fresh > 1 ? dbl(q.past) : 1.0);
  b.communication_s += moe_all_to_all_s(c, st, t) + dcp_comm_s(c, st, decode_tokens, prefill_past);
  if (tp > 1) {
    const double act = bytes_of(d.dtype);
    const double msg = t * dbl(m.hidden_size) * act;
    const i64 reduces = c.stage_weights.at(s).allreduces;
    b.communication_s += dbl(reduces) * allreduce_time_s(c.gpu, tp, msg);
    b.comm_bytes = dbl(reduces) * 2.0 * dbl(tp - 1) / dbl(tp) * msg;
    if (static_cast<i64>(s) == pp - 1 && samples > 0) {
      const double logits = dbl(samples) * dbl(m.vocab_size) * act;
      b.communication_s += ring_allgather_s(c.gpu, tp, logits);
      b.comm_bytes += dbl(tp - 1) / dbl(tp) * logits;
    }
  }
  b.overhead_s = c.options.step_overhead_s / dbl(pp) + c.options.layer_overhead_s * dbl(st.num_layers) +
                 c.options.sequence_overhead_s * dbl(step_samples < 0 ? samples : step_samples) / dbl(pp);
  finish(b);
  b.total_s = std::max(b.memory_s, b.compute_s) + b.experts_s + b.communication_s + b.overhead_s;
  return b;
}

void accumulate(StepBreakdown& a, const StepBreakdown& b) {
  a.tokens += b.tokens;
  a.weight_bytes += b.weight_bytes;
  a.kv_bytes += b.kv_bytes;
  a.gemm_flops += b.gemm_flops;
  a.attention_flops += b.attention_flops;
  a.comm_bytes += b.comm_bytes;
  a.weights_read_s += b.weights_read_s;
  a.kv_read_s += b.kv_read_s;
  a.gemm_s += b.gemm_s;
  a.attention_s += b.attention_s;
  a.experts_s += b.experts_s;
  a.experts_read_s += b.experts_read_s;
  a.communication_s += b.communication_s;
  a.overhead_s += b.overhead_s;
  a.total_s += b.total_s;
  finish(a);
}

/// Activation send from one pipeline stage to the next.
double p2p_s(const SpeedContext& c, i64 tokens) {
  if (c.plan.dep.d.pipeline_parallel_size <= 1) return 0;
  const double msg = dbl(tokens) * dbl(c.model.hidden_size) * bytes_of(c.plan.dep.dtype);
  return msg / c.gpu.interconnect_bandwidth_bytes_per_s + c.gpu.interconnect_latency_s;
}

/// `micro`: the distinct micro-batch shapes to time (the heaviest paces the pipeline); `micro_batches`: how many run.
DecodeStep decode_from(const SpeedContext& c, i64 batch, i64 micro_batches, const std::vector<std::vector<Seq>>& micro) {
  DecodeStep r;
  const i64 pp = c.plan.dep.d.pipeline_parallel_size;
  r.batch = batch;
  r.pipeline_stages = pp;
  r.micro_batches = micro_batches;
  for (const auto& q : micro.front()) r.micro_batch_size += q.count;
  // The slowest (stage, micro-batch) pair paces the pipeline.
  bool first = true;
  for (std::size_t s = 0; s < c.plan.stages.size(); ++s) {
    for (const auto& mb : micro) {
      StepBreakdown b = stage_step(c, s, mb, batch);  // a decode step: every sequence samples
      if (first || b.total_s > r.stage.total_s) {
        r.stage = b;
        r.binding_stage = s;
        first = false;
      }
    }
  }
  r.pipeline_p2p_s = p2p_s(c, r.micro_batch_size);
  const double cycle = r.stage.total_s + r.pipeline_p2p_s;
  r.pipeline_bubble_s = dbl(pp - r.micro_batches) * cycle;
  r.tpot_s = dbl(pp) * cycle;
  r.tokens_per_s_per_user = 1.0 / r.tpot_s;
  r.tokens_per_s = dbl(batch) / r.tpot_s;
  r.cluster_tokens_per_s = r.tokens_per_s * dbl(c.plan.dep.replicas);
  r.bound = r.stage.bound;
  r.source = rates(c, r.micro_batch_size).source;
  return r;
}

void check_context(const SpeedContext& c, i64 s, const char* field) {
  positive_count(s, field);
  (void)c;
}

double moe_all_to_all_s(const SpeedContext& c, const StagePlan& st, double tokens) {
  const i64 ep = c.plan.dep.expert_parallel_size;
  if (ep <= 1 || tokens <= 0 || c.plan.dep.replicas <= 1) return 0;  // one replica: the TP all-reduce carries it
  i64 moe_layers = 0;
  for (i64 l = st.first_layer; l < st.first_layer + st.num_layers; ++l) moe_layers += layer_is_moe(c.model, l) ? 1 : 0;
  if (moe_layers == 0) return 0;
  // DeepEP sends each token to its top-k experts' ranks and back: top-k x (EP-1)/EP of the tokens leave the rank.
  // allgather_reducescatter and naive (vLLM's default) gather every data-parallel rank's tokens and reduce-scatter
  // the outputs over the DP group (AgRsAll2AllManager): (DP-1) x the tokens each way; with one replica the experts'
  // outputs join the TP all-reduce the step already has.
  const double per_token = uses_deepep(c.plan.dep) ? dbl(c.model.moe.experts_per_token) * dbl(ep - 1) / dbl(ep)
                                                   : dbl(c.plan.dep.replicas - 1);
  if (per_token <= 0) return 0;
  const double bytes = 2.0 * tokens * per_token * dbl(c.model.hidden_size) * bytes_of(c.plan.dep.dtype);
  return dbl(moe_layers) * (bytes / c.gpu.interconnect_bandwidth_bytes_per_s + 2.0 * c.gpu.interconnect_latency_s);
}

// Decode context parallelism (vLLM DCP, docs/serving/context_parallel_deployment.md): the ranks of a DCP group
// hold interleaved 1/DCP slices of every request's KV. In each attention layer of a decode step every rank
// all-gathers the group's queries, attends with all of them over its slice, and the partial outputs (with their
// log-sum-exp) are reduce-scattered back: a ring moves (DCP - 1) x tokens x heads-per-rank x (q + o) elements per
// rank. MLA exchanges absorbed queries of kv_lora_rank + rope and outputs of kv_lora_rank; GQA head_dim each way.
// A prefill chunk attends over its earlier context, which each rank gathers from the group: (DCP - 1) / DCP of
// the context's KV bytes; its own new tokens' KV is computed on every rank, so a fresh prompt moves nothing.
// Attention FLOPs per rank are unchanged (all the group's heads over 1/DCP of the tokens).
double dcp_comm_s(const SpeedContext& c, const StagePlan& st, double decode_tokens, double prefill_past_tokens) {
  const i64 dcp = c.plan.dep.d.decode_context_parallel_size;
  if (dcp <= 1 || (decode_tokens <= 0 && prefill_past_tokens <= 0)) return 0;
  const auto& m = c.model;
  i64 layers = 0;
  double context_bytes_per_token = 0;  // the whole request's KV per token over the stage's attention layers
  for (const auto& g : st.groups) {
    if (g.attention == LayerAttention::linear) continue;
    layers += g.attending_layers;
    context_bytes_per_token += dbl(g.bytes_per_token_per_layer) * dbl(g.num_layers) * dbl(dcp);
  }
  const bool mla = m.attention == AttentionType::mla;
  const double q_dim = mla ? dbl(m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) : dbl(m.head_dim);
  const double o_dim = (mla ? dbl(m.mla.kv_lora_rank) : dbl(m.head_dim)) + 1.0;  // + the log-sum-exp
  const double heads = dbl(m.num_heads / c.plan.dep.d.tensor_parallel_size);
  const double exchange = decode_tokens * heads * (q_dim + o_dim) * bytes_of(c.plan.dep.dtype) * dbl(dcp - 1);
  const double gather = prefill_past_tokens * context_bytes_per_token * dbl(dcp - 1) / dbl(dcp);
  return (exchange * dbl(layers) + gather) / c.gpu.interconnect_bandwidth_bytes_per_s +
         dbl(layers) * 2.0 * c.gpu.interconnect_latency_s;
}
}  // namespace

std::string_view to_string(Bound b) { return b == Bound::memory ? "memory" : "compute"; }

void validate(const Calibration& k) {
  finite_non_negative(k.decode.t0_s, "calibration.decode.t0_s");
  finite_non_negative(k.decode.bandwidth_bytes_per_s, "calibration.decode.bandwidth_bytes_per_s");
  finite_non_negative(k.stream.read_bytes_per_s, "calibration.stream.read_bytes_per_s");
  finite_non_negative(k.prefill_attention.flops_per_s, "calibration.prefill_attention.flops_per_s");
  finite_non_negative(k.host_to_device.per_copy_s, "calibration.host_link.host_to_device.per_copy_s");
  finite_non_negative(k.host_to_device.bandwidth_bytes_per_s,
                      "calibration.host_link.host_to_device.bandwidth_bytes_per_s");
  finite_non_negative(k.device_to_host.per_copy_s, "calibration.host_link.device_to_host.per_copy_s");
  finite_non_negative(k.device_to_host.bandwidth_bytes_per_s,
                      "calibration.host_link.device_to_host.bandwidth_bytes_per_s");
  for (const auto& g : k.gemm) {
    finite_non_negative(g.flops_per_s, "calibration.gemm.flops_per_s");
    if (!(g.flops_per_s > 0)) throw SpecError("calibration.gemm.flops_per_s", "must be > 0 in a measured class");
    if (g.m_min < 1 || g.m_max < g.m_min)
      throw SpecError("calibration.gemm", "class [m_min, m_max] must satisfy 1 <= m_min <= m_max (got [" +
                                              std::to_string(g.m_min) + ", " + std::to_string(g.m_max) + "])");
  }
}

const CalibrationGemmClass* gemm_class_for(const Calibration& c, i64 m_tokens) {
  const CalibrationGemmClass* best = nullptr;
  i64 best_gap = std::numeric_limits<i64>::max();
  for (const auto& g : c.gemm) {
    if (m_tokens >= g.m_min && m_tokens <= g.m_max) return &g;
    const i64 gap = m_tokens < g.m_min ? g.m_min - m_tokens : m_tokens - g.m_max;
    if (gap < best_gap) {
      best_gap = gap;
      best = &g;
    }
  }
  return best;
}

double gemm_flops_for(const Calibration& c, i64 m_tokens) {
  const CalibrationGemmClass* g = gemm_class_for(c, m_tokens);
  return g ? g->flops_per_s : 0;
}

std::vector<i64> cuda_graph_capture_sizes(i64 max_num_seqs, i64 max_num_batched_tokens) {
  const i64 top = std::min({2 * max_num_seqs, i64{512}, max_num_batched_tokens});
  std::vector<i64> sizes;
  for (i64 v : {1, 2, 4})
    if (v <= top) sizes.push_back(v);
  for (i64 v = 8; v <= top && v < 256; v += 8) sizes.push_back(v);
  for (i64 v = 256; v <= top; v += 16) sizes.push_back(v);
  // vllm-project/vllm#40734 (2026-04): max_num_batched_tokens is captured too when within the largest size.
  if (max_num_batched_tokens <= top && (sizes.empty() || sizes.back() != max_num_batched_tokens))
    sizes.push_back(max_num_batched_tokens);
  return sizes;
}

bool runs_as_graph(const SpeedContext& c, i64 tokens, bool has_prefill) {
  if (c.cuda_graph_sizes.empty() || (has_prefill && c.options.cuda_graph_decode_only)) return false;
  return tokens <= c.cuda_graph_sizes.back();
}

i64 graph_tokens(const SpeedContext& c, i64 tokens, bool has_prefill) {
  if (!runs_as_graph(c, tokens, has_prefill)) return tokens;
  return *std::lower_bound(c.cuda_graph_sizes.begin(), c.cuda_graph_sizes.end(), tokens);
}

SpeedContext make_speed_context(const ModelSpec& m, const GpuSpec& g, MemoryPlan plan, SpeedOptions o,
                                std::optional<Calibration> c) {
  efficiency(o.bandwidth_efficiency, "speed.bandwidth_efficiency");
  efficiency(o.compute_efficiency_16bit, "speed.compute_efficiency_16bit");
  efficiency(o.compute_efficiency_8bit, "speed.compute_efficiency_8bit");
  finite_non_negative(o.step_overhead_s, "speed.step_overhead_s");
  finite_non_negative(o.layer_overhead_s, "speed.layer_overhead_s");
  finite_non_negative(o.sequence_overhead_s, "speed.sequence_overhead_s");
  finite_non_negative(o.request_overhead_s, "speed.request_overhead_s");
  if (c) validate(*c);
  if (plan.stages.empty()) throw SpecError("plan", "the memory plan has no pipeline stages");
  const i64 ranks = plan.dep.d.tensor_parallel_size * plan.dep.d.pipeline_parallel_size;
  if (ranks > 1 && !(g.interconnect_bandwidth_bytes_per_s > 0))
    throw SpecError("interconnect.bandwidth_bytes_per_s",
                    "must be > 0 to time tensor- or pipeline-parallel communication");
  SpeedContext ctx{m, g, std::move(plan), o, std::move(c), {}, {}};
  const auto& d = ctx.plan.dep;
  if (o.cuda_graph_padding && o.cuda_graph_decode_only) {
    // V0 (vllm/worker/model_runner.py of 0.6.0): _BATCH_SIZES_TO_CAPTURE 1, 2, 4 and every 8 to 256, captured up to
    // _get_max_graph_batch_size(max_num_seqs), max_num_seqs rounded up to a captured size.
    const i64 top = d.max_num_seqs <= 2   ? d.max_num_seqs
                    : d.max_num_seqs <= 4 ? 4
                                          : std::min<i64>(256, (d.max_num_seqs + 7) / 8 * 8);
    for (i64 v : {1, 2, 4})
      if (v <= top) ctx.cuda_graph_sizes.push_back(v);
    for (i64 v = 8; v <= top; v += 8) ctx.cuda_graph_sizes.push_back(v);
  } else if (o.cuda_graph_padding) {
    ctx.cuda_graph_sizes = cuda_graph_capture_sizes(d.max_num_seqs, d.max_num_batched_tokens);
  }
  const i64 tp = d.d.tensor_parallel_size, pp = d.d.pipeline_parallel_size;
  for (std::size_t s = 0; s < ctx.plan.stages.size(); ++s) {
    const auto& st = ctx.plan.stages[s];
    StageWeights w;
    auto account = [&](const WeightTensor& t, bool logits) {
      const u64 e = static_cast<u64>(elements_per_rank(m, t, tp, d.expert_parallel_size, d.d.num_redundant_experts));
      const double bytes = dbl(weight_bytes(t.quantizable ? d.weight_dtype : d.dtype, e));
      (t.routed_expert ? w.routed_bytes : w.bytes) += bytes;
      (logits ? w.head_elements : t.routed_expert ? w.routed_elements : w.elements) += dbl(e);
    };
    for (i64 l = st.first_layer; l < st.first_layer + st.num_layers; ++l) {
      for (const auto& t : layer_tensors(m, l)) account(t, false);
      w.allreduces += allreduces_per_layer(m, l);
    }
    if (s == 0) w.allreduces += 1;
    // The embedding lookup gathers rows (negligible, not counted); the LM head reads its whole matrix
    // (a tied head reads the shared embedding) but computes logits only for the requests that sample.
    if (static_cast<i64>(s) == pp - 1)
      for (const auto& t : head_tensors(m, true)) account(t, t.name == "lm_head");
    ctx.stage_weights.push_back(w);
  }
  return ctx;
}

SpeedContext make_speed_context(const ModelSpec& m, const GpuSpec& g, const Deployment& d, SpeedOptions o,
                                std::optional<Calibration> c) {
  return make_speed_context(m, g, plan_memory(m, g, d, {}), o, std::move(c));
}

double expected_active_experts(i64 num_experts, i64 top_k, double tokens) {
  if (num_experts < 1) throw SpecError("moe.num_experts", "must be >= 1 (got " + std::to_string(num_experts) + ")");
  if (top_k < 0 || top_k > num_experts)
    throw SpecError("moe.experts_per_token", "must be in [0, num_experts] (got " + std::to_string(top_k) + ")");
  if (!std::isfinite(tokens) || tokens < 0) throw SpecError("tokens", "must be a finite number >= 0");
  const double e = dbl(num_experts);
  return e * (1.0 - std::pow(1.0 - dbl(top_k) / e, tokens));
}

namespace {
double expected_max_std_normal_by_quadrature(i64 n) {
  // E[max of n iid N(0,1)] = integral of x n phi(x) Phi(x)^(n-1) dx, by Simpson's rule over [-8, 8 + sqrt(2 ln n)]
  // (the integrand is below 1e-14 outside it).
  const double lo = -8.0, hi = 8.0 + std::sqrt(2.0 * std::log(dbl(n)));
  constexpr int kSteps = 800;
  const double h = (hi - lo) / kSteps;
  const auto f = [n](double x) {
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    return x * dbl(n) * phi * std::pow(cdf, dbl(n - 1));
  };
  double s = f(lo) + f(hi);
  for (int i = 1; i < kSteps; ++i) s += (i % 2 ? 4.0 : 2.0) * f(lo + i * h);
  return s * h / 3.0;
}
}  // namespace

double expected_max_std_normal(i64 n) {
  if (n < 1) throw SpecError("n", "must be >= 1 (got " + std::to_string(n) + ")");
  if (n == 1) return 0;
  // 800 quadrature points per call were 90% of a MoE model's size search (every step of every expert-parallel
  // candidate asks for it): each n is computed once per process. Shared by the verifying threads.
  static std::mutex mutex;
  static std::map<i64, double> known;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = known.find(n); it != known.end()) return it->second;
  }
  const double v = expected_max_std_normal_by_quadrature(n);
  const std::lock_guard<std::mutex> lock(mutex);
  known.emplace(n, v);
  return v;
}

namespace {
// expert_load_imbalance with E[max of ep standard normals] given (StepCostModel computes it once per model).
double load_imbalance(i64 ep, double picks, double max_normal) {
  if (ep <= 1 || !(picks > 0)) return 1;
  const double e = dbl(ep);
  return std::min(e, 1.0 + max_normal * std::sqrt((e - 1.0) / picks));
}
}  // namespace

double expert_load_imbalance(i64 ep, double picks) {
  // Balls into bins: each of the N picks lands on a rank with probability 1/EP (a rank holds E/EP experts), so a
  // rank's load is Binomial(N, 1/EP), near normal with sigma/mean = sqrt((EP - 1) / N), and the busiest of EP ranks
  // carries mean + sigma E[max of EP standard normals] (1.42 sigma for EP 8). Uniform routing is the optimistic case:
  // real routers are skewed, which EPLB's rebalancing counters (not modelled; its redundant copies' memory is).
  return load_imbalance(ep, picks, ep > 1 ? expected_max_std_normal(ep) : 0);
}

namespace {
/// A ring all-reduce's bandwidth term: a reduce-scatter pass and an all-gather pass.
double ring_allreduce_s(const GpuSpec& g, i64 tp, double message_bytes) {
  return 2.0 * ring_pass_s(g, tp, message_bytes);
}

/// The measured all-reduce over exactly `tp` GPUs (GpuSpec::allreduce_measured, in increasing size): linear between
/// the measured sizes, the smallest one's time below them (a latency floor), and past the largest the ring's
/// bandwidth term for the bytes beyond it. nullopt when `tp` was not measured.
std::optional<double> measured_allreduce_s(const GpuSpec& g, i64 tp, double m) {
  const GpuSpec::AllReducePoint* prev = nullptr;
  for (const auto& p : g.allreduce_measured) {
    if (p.tp != tp) continue;
    if (m <= p.message_bytes)
      return prev == nullptr ? p.time_s
                             : prev->time_s + (p.time_s - prev->time_s) * (m - prev->message_bytes) /
                                                  (p.message_bytes - prev->message_bytes);
    prev = &p;
  }
  if (prev == nullptr) return std::nullopt;
  return prev->time_s + ring_allreduce_s(g, tp, m - prev->message_bytes);
}
}  // namespace

double allreduce_time_s(const GpuSpec& g, i64 tp, double message_bytes) {
  if (tp <= 1) return 0;
  if (!(message_bytes >= 0) || !std::isfinite(message_bytes))
    throw SpecError("all-reduce message", "must be a finite number of bytes >= 0");
  const double formula = ring_allreduce_s(g, tp, message_bytes) + g.interconnect_latency_s;
  if (g.allreduce_measured.empty()) return formula;
  // Between two measured TP sizes: linear in TP; below the smallest, the smallest's time; above the largest, at
  // least the largest's and at least the formula (the measurements stop there; TP 16 or 72 is extrapolated).
  i64 lo = 0, hi = 0;
  for (const auto& p : g.allreduce_measured) {
    if (p.tp <= tp && p.tp > lo) lo = p.tp;
    if (p.tp >= tp && (hi == 0 || p.tp < hi)) hi = p.tp;
  }
  if (hi == 0) return std::max(formula, *measured_allreduce_s(g, lo, message_bytes));
  if (lo == 0 || lo == hi) return *measured_allreduce_s(g, hi, message_bytes);
  const double a = *measured_allreduce_s(g, lo, message_bytes), b = *measured_allreduce_s(g, hi, message_bytes);
  return a + (b - a) * dbl(tp - lo) / dbl(hi - lo);
}

DecodeStep decode_step(const SpeedContext& c, const std::vector<i64>& contexts) {
  if (contexts.empty()) throw SpecError("batch", "must be >= 1 (no contexts given)");
  for (i64 s : contexts) check_context(c, s, "context_tokens");
  std::vector<i64> sorted = contexts;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  const i64 b = static_cast<i64>(sorted.size());
  const i64 mbs = std::min(b, c.plan.dep.d.pipeline_parallel_size);
  std::vector<std::vector<Seq>> micro(static_cast<std::size_t>(mbs));
  for (std::size_t i = 0; i < sorted.size(); ++i)
    micro[i % micro.size()].push_back(Seq{sorted[i] - 1, 1, 1, true});
  return decode_from(c, b, mbs, micro);
}

DecodeStep decode_step(const SpeedContext& c, i64 batch, i64 context_tokens) {
  positive_count(batch, "batch");
  check_context(c, context_tokens, "context_tokens");
  const i64 mbs = std::min(batch, c.plan.dep.d.pipeline_parallel_size);
  const i64 size = batch / mbs + (batch % mbs != 0 ? 1 : 0);
  // The largest micro-batch paces the pipeline.
  return decode_from(c, batch, mbs, {std::vector<Seq>{Seq{context_tokens - 1, 1, size, true}}});
}

PrefillResult prefill(const SpeedContext& c, i64 prompt_tokens) {
  positive_count(prompt_tokens, "prompt_tokens");
  PrefillResult r;
  r.prompt_tokens = prompt_tokens;
  r.chunk_tokens = c.plan.dep.max_num_batched_tokens;
  // One breakdown is kept per chunk: bound the count so an absurd prompt / token budget is a clear error,
  // not minutes of work and gigabytes of chunks.
  if (prompt_tokens / r.chunk_tokens > kMaxPrefillChunks)
    throw SpecError("prompt_tokens", "needs more than " + std::to_string(kMaxPrefillChunks) +
                                         " prefill chunks of max_num_batched_tokens " + std::to_string(r.chunk_tokens));
  for (i64 a = 0; a < prompt_tokens; a += r.chunk_tokens) {
    const i64 n = std::min(r.chunk_tokens, prompt_tokens - a);
    const std::vector<Seq> chunk{Seq{a, n, 1, a + n == prompt_tokens}};
    // One request's chunk passes through the stages in order (vLLM V1 keeps a request in at most one
    // in-flight batch), so a chunk costs the sum of its stage steps plus the sends between them.
    StepBreakdown pass;
    for (std::size_t s = 0; s < c.plan.stages.size(); ++s) accumulate(pass, stage_step(c, s, chunk));
    pass.tokens = n;
    r.pipeline_p2p_s += dbl(c.plan.dep.d.pipeline_parallel_size - 1) * p2p_s(c, n);
    accumulate(r.total, pass);
    r.chunks.push_back(pass);
  }
  r.total.tokens = prompt_tokens;
  r.ttft_s = r.total.total_s + r.pipeline_p2p_s + c.options.request_overhead_s;
  r.bound = r.total.bound;
  r.source = rates(c, std::min(prompt_tokens, r.chunk_tokens)).source;
  return r;
}

double ttft_s(const SpeedContext& c, i64 prompt_tokens) { return prefill(c, prompt_tokens).ttft_s; }
double tpot_s(const SpeedContext& c, i64 batch, i64 context_tokens) {
  return decode_step(c, batch, context_tokens).tpot_s;
}

RequestEstimate estimate_request(const SpeedContext& c, i64 batch, i64 prompt_tokens, i64 output_tokens) {
  positive_count(batch, "batch");
  positive_count(prompt_tokens, "prompt_tokens");
  positive_count(output_tokens, "output_tokens");
  RequestEstimate r;
  r.batch = batch;
  r.prompt_tokens = prompt_tokens;
  r.output_tokens = output_tokens;
  r.prefill = prefill(c, prompt_tokens);
  r.ttft_s = r.prefill.ttft_s;
  // Decode steps run at contexts prompt + 1 .. prompt + output - 1 (the first token comes from prefill).
  // Step time is piecewise linear in the context, so a trapezoid over 9 points is close to the mean.
  const i64 lo = prompt_tokens + 1, hi = prompt_tokens + std::max<i64>(output_tokens - 1, 1);
  r.first_step = decode_step(c, batch, lo);
  r.last_step = decode_step(c, batch, hi);
  constexpr int kPoints = 9;
  double sum = 0;
  for (int i = 0; i < kPoints; ++i) {
    const i64 s = lo + static_cast<i64>(std::llround(dbl(hi - lo) * i / (kPoints - 1)));
    const double w = (i == 0 || i == kPoints - 1) ? 0.5 : 1.0;
    sum += w * (i == 0 ? r.first_step.tpot_s : i == kPoints - 1 ? r.last_step.tpot_s : tpot_s(c, batch, s));
  }
  r.mean_tpot_s = sum / (kPoints - 1);
  r.e2e_s = r.ttft_s + dbl(output_tokens - 1) * r.mean_tpot_s;
  r.tokens_per_s_per_user = 1.0 / r.mean_tpot_s;
  r.tokens_per_s = dbl(batch) / r.mean_tpot_s;
  return r;
}

BatchLimit max_batch_for_tpot(const SpeedContext& c, double tpot_target_s, i64 context_tokens) {
  if (!std::isfinite(tpot_target_s) || !(tpot_target_s > 0))
    throw SpecError("tpot_target_s", "must be a positive, finite number of seconds (got " + str(tpot_target_s) + ")");
  check_context(c, context_tokens, "context_tokens");
  BatchLimit r;
  const double conc = running_concurrency_at(c.plan, context_tokens, context_tokens);
  const i64 seqs = c.plan.dep.max_num_seqs;
  const bool seq_bound = !(conc < dbl(seqs));
  r.memory_limit = seq_bound ? seqs : static_cast<i64>(std::floor(conc));
  if (r.memory_limit < 1) {
    r.limited_by = "none fits";
    return r;
  }
  r.step = decode_step(c, 1, context_tokens);
  if (r.step.tpot_s > tpot_target_s) {
    r.limited_by = "tpot";
    return r;
  }
  // TPOT is non-decreasing in the batch: binary search the last batch that meets the target.
  i64 lo = 1, hi = r.memory_limit;
  while (lo < hi) {
    const i64 mid = lo + (hi - lo + 1) / 2;
    if (tpot_s(c, mid, context_tokens) <= tpot_target_s) lo = mid; else hi = mid - 1;
  }
  r.batch = lo;
  r.step = decode_step(c, lo, context_tokens);
  r.limited_by = lo < r.memory_limit ? "tpot" : seq_bound ? "max_num_seqs" : "memory";
  return r;
}

std::vector<DecodeStep> throughput_latency_curve(const SpeedContext& c, i64 context_tokens, i64 max_batch) {
  check_context(c, context_tokens, "context_tokens");
  if (max_batch < 0) throw SpecError("max_batch", "must be >= 0 (0: the memory limit)");
  const double conc = running_concurrency_at(c.plan, context_tokens, context_tokens);
  i64 limit = std::min<i64>(c.plan.dep.max_num_seqs, conc < dbl(c.plan.dep.max_num_seqs)
                                                         ? static_cast<i64>(std::floor(conc))
                                                         : c.plan.dep.max_num_seqs);
  if (max_batch > 0) limit = std::min(limit, max_batch);
  std::vector<DecodeStep> r;
  for (i64 b = 1; b < limit; b *= 2) r.push_back(decode_step(c, b, context_tokens));
  if (limit >= 1) r.push_back(decode_step(c, limit, context_tokens));
  return r;
}


// ---- Mixed steps ------------------------------------------------------------------------------------

MixedStep mixed_step(const SpeedContext& c, const std::vector<StepSequence>& seqs) {
  if (seqs.empty()) throw SpecError("sequences", "a step needs at least one sequence");
  std::vector<StepSequence> sorted = seqs;
  for (const auto& q : sorted) {
    if (q.past_tokens < 0) throw SpecError("past_tokens", "must be >= 0 (got " + std::to_string(q.past_tokens) + ")");
    positive_count(q.new_tokens, "new_tokens");
  }
  // Heaviest first, then round-robin into micro-batches (as decode_step splits a decode batch).
  std::sort(sorted.begin(), sorted.end(), [](const StepSequence& a, const StepSequence& b) {
    return a.new_tokens != b.new_tokens ? a.new_tokens > b.new_tokens : a.past_tokens > b.past_tokens;
  });
  const i64 pp = c.plan.dep.d.pipeline_parallel_size;
  MixedStep r;
  r.sequences = static_cast<i64>(sorted.size());
  r.micro_batches = std::min(r.sequences, pp);
  std::vector<std::vector<Seq>> micro(static_cast<std::size_t>(r.micro_batches));
  std::vector<i64> micro_tokens(micro.size(), 0);
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const auto& q = sorted[i];
    micro[i % micro.size()].push_back(Seq{q.past_tokens, q.new_tokens, 1, q.samples});
    micro_tokens[i % micro.size()] += q.new_tokens;
    r.tokens += q.new_tokens;
    r.samples += q.samples ? 1 : 0;
  }
  bool first = true;
  std::size_t binding_micro = 0;
  for (std::size_t s = 0; s < c.plan.stages.size(); ++s)
    for (std::size_t k = 0; k < micro.size(); ++k) {
      StepBreakdown b = stage_step(c, s, micro[k], r.samples);
      if (first || b.total_s > r.stage.total_s) {
        r.stage = b;
        r.binding_stage = s;
        binding_micro = k;
        first = false;
      }
    }
  r.pipeline_p2p_s = p2p_s(c, micro_tokens[binding_micro]);
  r.step_s = dbl(pp) * (r.stage.total_s + r.pipeline_p2p_s);
  r.bound = r.stage.bound;
  return r;
}

double StepCostModel::attended_pairs(i64 lo, i64 hi, i64 window) { return attended(lo, hi, window); }

StepCostModel::StepCostModel(const SpeedContext& c) : ctx_(c) {
  const auto& m = c.model;
  const auto& d = c.plan.dep;
  tp_ = d.d.tensor_parallel_size;
  pp_ = d.d.pipeline_parallel_size;
  moe_ = m.moe.enabled();
  mla_ = m.attention == AttentionType::mla;
  num_experts_ = physical_experts(c);
  top_k_ = m.moe.experts_per_token;
  heads_ = dbl(m.num_heads / tp_);  // as stage_step: query heads per rank
  if (mla_) {
    per_pair_decode_ = 2.0 * (dbl(m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) + dbl(m.mla.kv_lora_rank));
    per_pair_prefill_ = 2.0 * (dbl(m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim) + dbl(m.mla.v_head_dim));
    mla_extra_per_past_ = 2.0 * dbl(m.mla.kv_lora_rank) * heads_ * dbl(m.mla.qk_nope_head_dim + m.mla.v_head_dim);
  } else {
    per_pair_decode_ = per_pair_prefill_ = 2.0 * (2.0 * dbl(m.head_dim));
  }
  act_bytes_ = bytes_of(d.dtype);
  ep_tokens_ = dbl(ep_token_scale(c));
  ep_size_ = c.plan.dep.expert_parallel_size;
  ep_max_normal_ = ep_size_ > 1 ? expected_max_std_normal(ep_size_) : 0;
  hidden_ = dbl(m.hidden_size);
  vocab_ = dbl(m.vocab_size);
  const double top_k_frac = moe_ ? dbl(top_k_) / dbl(num_experts_) : 0;
  for (std::size_t s = 0; s < c.plan.stages.size(); ++s) {
    const auto& st = c.plan.stages[s];
    Stage g;
    g.last = static_cast<i64>(s) == pp_ - 1;
    g.stage_index = static_cast<i64>(s);
    // The stage's weights as make_speed_context summed them (one owner of the tensor-by-tensor accounting).
    const StageWeights& sw = c.stage_weights.at(s);
    g.weight_bytes_fixed = sw.bytes;
    g.weight_bytes_routed = sw.routed_bytes;
    g.gemm_flops_per_token = 2.0 * sw.elements;
    g.gemm_flops_per_token_routed = 2.0 * sw.routed_elements * top_k_frac;
    g.gemm_flops_per_sample = 2.0 * sw.head_elements;
    for (const auto& grp : st.groups) {
      if (grp.attention == LayerAttention::linear) {
        g.state_bytes_per_seq += 2.0 * dbl(grp.state_bytes_per_layer) * dbl(grp.num_layers);  // read + write
        g.linear_flops_per_token += linear_flops_per_token_per_layer(m, tp_) * dbl(grp.num_layers);
        continue;
      }
      const int k = grp.attention != LayerAttention::full && grp.window_tokens > 0 ? 1 : 0;
      if (k == 1) window_[1] = grp.window_tokens;
      if (grp.attention == LayerAttention::full) evict_ = grp.evict;
      g.kv_bytes_per_token[k] += dbl(grp.bytes_per_token_per_layer) * dbl(grp.attending_layers);  // as decode_step
      g.attn_layers[k] += dbl(grp.attending_layers);
      g.attention_layers += grp.attending_layers;
    }
    g.allreduces = sw.allreduces;
    g.overhead_s = c.options.step_overhead_s / dbl(pp_) + c.options.layer_overhead_s * dbl(st.num_layers);
    stages_.push_back(g);
  }
  const Rates r = rates(c, 1);
  expert_gemm_rate_ = experts_grouped(c) ? expert_gemm_rate(c) : 0;
  weight_bw_ = r.weight_bw;
  kv_bw_ = r.kv_bw;
  kv_t0_ = r.kv_t0;
  attn_flops_ = r.attn_flops;
  const i64 table = std::max<i64>(1, d.max_num_batched_tokens);
  gemm_flops_by_tokens_.resize(static_cast<std::size_t>(table) + 1);
  for (i64 t = 0; t <= table; ++t) gemm_flops_by_tokens_[static_cast<std::size_t>(t)] = rates(c, t).gemm_flops;
}

double StepCostModel::gemm_rate(i64 tokens) const {
  if (tokens >= 0 && static_cast<std::size_t>(tokens) < gemm_flops_by_tokens_.size())
    return gemm_flops_by_tokens_[static_cast<std::size_t>(tokens)];
  return rates(ctx_, tokens).gemm_flops;
}

StepCost StepCostModel::cost(const StepLoad& load) const {
  StepCost best;
  if (load.sequences <= 0 || load.tokens <= 0) return best;
  // PP: min(B, PP) micro-batches of equal share (docs/simulator.md "Step time").
  const i64 mbs = std::min(load.sequences, pp_);
  const double f = 1.0 / dbl(mbs);
  const double t = dbl(load.tokens) * f;
  const i64 t_int = mbs == 1 ? load.tokens : (load.tokens + mbs - 1) / mbs;
  const double samples = dbl(load.samples) * f;
  // GEMMs, the MoE router and the all-reduces run on the CUDA graph's padded tokens (as stage_step).
  // With PP the micro-batch's token count is fractional (an even share); a graph runs its ceiling padded.
  const bool has_prefill = load.tokens > load.decode_tokens;
  const i64 padded = graph_tokens(ctx_, t_int, has_prefill);
  const double tg = runs_as_graph(ctx_, t_int, has_prefill) ? dbl(padded) : t;
  const double moe_frac = moe_ ? expected_active_experts(num_experts_, top_k_, tg * ep_tokens_) / dbl(num_experts_) : 0;
  const double imbalance = load_imbalance(ep_size_, tg * ep_tokens_ * dbl(top_k_), ep_max_normal_);
  const double gemm_rate_now = gemm_rate(padded);
  bool first = true;
  double stage_total = 0;
  for (const auto& g : stages_) {
    // As stage_step: the routed experts' grouped GEMM apart, in series (experts_grouped; rate 0 when not).
    const bool grouped = expert_gemm_rate_ > 0;
    const double routed_bytes = g.weight_bytes_routed * moe_frac;
    const double routed_flops = g.gemm_flops_per_token_routed * tg * ep_tokens_ * imbalance;
    const double weight_bytes = g.weight_bytes_fixed + (grouped ? 0.0 : routed_bytes);
    const double gemm_flops = g.gemm_flops_per_token * tg + (grouped ? 0.0 : routed_flops) +
                              (g.last ? g.gemm_flops_per_sample * samples : 0.0);
    double kv_bytes = g.state_bytes_per_seq * dbl(load.sequences) * f, attn = g.linear_flops_per_token * t;
    for (int w = 0; w < 2; ++w) {
      kv_bytes += g.kv_bytes_per_token[w] * load.kv_read_tokens[w] * f;
      attn += g.attn_layers[w] * (heads_ * (per_pair_decode_ * load.decode_pairs[w] + per_pair_prefill_ * load.prefill_pairs[w]) +
                                  (mla_ ? mla_extra_per_past_ * load.prefill_past_tokens : 0.0)) * f;
    }
    StepCost c;
    c.weights_read_s = weight_bytes / weight_bw_;
    c.kv_read_s = kv_bytes / kv_bw_ + (kv_bytes > 0 ? dbl(g.attention_layers) * kv_t0_ : 0);
    c.gemm_s = gemm_flops / gemm_rate_now;
    const double experts_read_s = grouped ? routed_bytes / weight_bw_ : 0;
    c.experts_s = grouped ? experts_read_s + routed_flops / expert_gemm_rate_ : 0;
    c.attention_s = attn / attn_flops_;
    const auto& stage = ctx_.plan.stages[static_cast<std::size_t>(g.stage_index)];
    c.communication_s = moe_all_to_all_s(ctx_, stage, tg) +
                        dcp_comm_s(ctx_, stage, dbl(load.decode_tokens) * f, load.prefill_past_tokens * f);
    if (tp_ > 1) {
      const double msg = tg * hidden_ * act_bytes_;
      c.communication_s += dbl(g.allreduces) * allreduce_time_s(ctx_.gpu, tp_, msg);
      if (g.last && samples > 0) c.communication_s += ring_allgather_s(ctx_.gpu, tp_, samples * vocab_ * act_bytes_);
    }
    c.overhead_s = g.overhead_s + ctx_.options.sequence_overhead_s * dbl(load.samples) / dbl(pp_);  // as stage_step
    const double memory = c.weights_read_s + c.kv_read_s, compute = c.gemm_s + c.attention_s;
    c.bound = bound_of(memory, compute, c.experts_s, experts_read_s);
    const double total = std::max(memory, compute) + c.experts_s + c.communication_s + c.overhead_s;
    if (first || total > stage_total) {
      best = c;
      stage_total = total;
      first = false;
    }
  }
  if (pp_ > 1)
    best.pipeline_p2p_s = t * hidden_ * act_bytes_ / ctx_.gpu.interconnect_bandwidth_bytes_per_s + ctx_.gpu.interconnect_latency_s;
  best.step_s = dbl(pp_) * (stage_total + best.pipeline_p2p_s);
  best.pipeline_depth = static_cast<int>(pp_);
  return best;
}

}  // namespace kvcap
