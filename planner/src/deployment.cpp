#include "kvcap/planner/deployment.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>

#include "kvcap/planner/text.hpp"

namespace kvcap {

namespace {
/// interconnect.allreduce_measured: TP sizes >= 2, positive finite sizes and times, each TP size's points in
/// strictly increasing message size, at least two of them (one point has no slope to interpolate on).
void validate_allreduce_measured(const GpuSpec& g) {
  const auto& pts = g.allreduce_measured;
  const std::string field = "interconnect.allreduce_measured.points";
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto& p = pts[i];
    const std::string at = field + "[" + std::to_string(i) + "]";
    if (p.tp < 2) throw SpecError(at + ".tp", "must be a tensor-parallel size >= 2");
    if (!(p.message_bytes > 0) || !std::isfinite(p.message_bytes))
      throw SpecError(at + ".message_bytes", "must be a positive, finite number of bytes");
    if (!(p.time_s > 0) || !std::isfinite(p.time_s)) throw SpecError(at + ".time_s", "must be a positive, finite time");
    for (std::size_t j = 0; j < i; ++j)
      if (pts[j].tp == p.tp && pts[j].message_bytes >= p.message_bytes)
        throw SpecError(at + ".message_bytes", "must grow from one point of TP " + std::to_string(p.tp) +
                                                   " to the next (got " +
                                                   std::to_string(static_cast<long long>(p.message_bytes)) + " after " +
                                                   std::to_string(static_cast<long long>(pts[j].message_bytes)) + ")");
  }
  for (const auto& p : pts)
    if (std::count_if(pts.begin(), pts.end(), [&](const auto& q) { return q.tp == p.tp; }) < 2)
      throw SpecError(field, "TP " + std::to_string(p.tp) + " has one point: give at least two message sizes");
}
}  // namespace

void validate(const GpuSpec& g) {
  if (g.memory_bytes == 0) throw SpecError("memory.cuda_total_bytes", "must be a positive number of bytes");
  if (!(g.memory_bandwidth_bytes_per_s > 0) || !std::isfinite(g.memory_bandwidth_bytes_per_s))
    throw SpecError("memory.bandwidth_bytes_per_s", "must be a positive, finite number of bytes per second");
  if (!(g.bf16_dense_flops > 0) || !std::isfinite(g.bf16_dense_flops))
    throw SpecError("compute.bf16_dense_flops", "must be a positive, finite FLOP/s figure");
  if (g.fp8_dense_flops < 0 || g.int8_dense_ops < 0 || g.fp16_dense_flops < 0 || g.fp32_flops < 0)
    throw SpecError("compute", "FLOP/s figures must not be negative");
  if (!(g.host_link_bandwidth_bytes_per_s >= 0) || !std::isfinite(g.host_link_bandwidth_bytes_per_s))
    throw SpecError("gpu.host_link.bandwidth_bytes_per_s", "must be a finite number >= 0");
  if (g.interconnect_bandwidth_bytes_per_s < 0 || g.interconnect_latency_s < 0)
    throw SpecError("interconnect", "bandwidth and latency must not be negative");
  validate_allreduce_measured(g);
  if (!(g.network_bandwidth_bytes_per_s >= 0) || !std::isfinite(g.network_bandwidth_bytes_per_s) ||
      !(g.network_latency_s >= 0) || !std::isfinite(g.network_latency_s))
    throw SpecError("network", "bandwidth and latency must be finite numbers >= 0");
  if (g.price_per_gpu_hour_usd < 0) throw SpecError("price_per_gpu_hour_usd", "must not be negative");
}

namespace {
std::string str(i64 v) {
  return std::to_string(v);
}

/// A setting vLLM's own start-up checks reject (vllm/config/parallel.py, model.py, cache.py): would not start.
[[noreturn]] void vllm_refuses(std::string field, const std::string& reason) {
  throw SpecError(std::move(field), reason, SpecError::Kind::vllm_refuses);
}

// vllm/engine/arg_utils.py EngineArgs.get_batch_defaults, OpenAI API server column (`vllm serve`):
// GPUs with >= 70 GiB that are not A100s default to 8192 batched tokens and 1024 sequences,
// others to 2048 and 256.
bool large_gpu(const GpuSpec& g) {
  const std::string n = lowercase(g.name + " " + g.display_name);
  return g.memory_bytes >= 70ull * (1ull << 30) && n.find("a100") == std::string::npos;
}
}  // namespace

namespace {
// The minor release of "0.N[.x]" (validated), or 1000 for current.
int vllm_minor(const std::string& v);
}  // namespace

bool mamba_prefix_caching_off(const std::string& v) {
  // vLLM 0.10-0.11 MambaModelConfig: "Hybrid or mamba-based model detected: disabling prefix caching
  // since it is not yet supported"; later releases cache them (mamba_cache_mode align / all).
  return vllm_minor(v) < 12;
}

bool mamba_blocks_cap_max_num_seqs(const std::string& v) {
  // vllm/config/compilation.py (CompilationConfig, with full CUDA graphs, vLLM's default for hybrid models):
  // "max_num_seqs (N) exceeds available Mamba cache blocks (B). Each decode sequence requires one Mamba cache
  // block, so CUDA graph capture cannot proceed" when max_num_reqs > kv_cache_config.num_blocks.
  return vllm_minor(v) >= 19;
}

namespace {
int vllm_minor(const std::string& v) {
  if (v == "current" || v == "latest") return 1000;
  int minor = -1;
  std::size_t pos = 0;
  if (v.rfind("0.", 0) == 0) {
    try {
      minor = std::stoi(v.substr(2), &pos);
    } catch (const std::exception&) {
      minor = -1;
    }
  }
  const std::string rest = minor >= 0 ? v.substr(2 + pos) : "";
  const bool rest_ok = rest.empty() || (rest[0] == '.' && rest.size() > 1 &&
                                        rest.find_first_not_of("0123456789", 1) == std::string::npos);
  if (minor < 10 || minor > 99 || !rest_ok)
    throw SpecError("vllm_version",
                    "expected current, or a vLLM V1 release 0.10 or later such as 0.11 or 0.19.1 (got '" + v + "')");
  return minor;
}
}  // namespace

bool kv_dtype_skipped(const ModelSpec& m, const Deployment& d, i64 layer) {
  // vllm/attention/layer.py Attention.__init__: a layer keeps kv_cache_dtype "auto" when its index is
  // listed, or when it has a sliding window and "sliding_window" is listed.
  const auto& s = d.kv_cache_dtype_skip_layers;
  if (s.empty()) return false;
  if (layer_attention(m, layer) == LayerAttention::sliding &&
      std::find(s.begin(), s.end(), "sliding_window") != s.end())
    return true;
  return std::find(s.begin(), s.end(), std::to_string(layer)) != s.end();
}

namespace {
// The block size an MLA attention backend forces on NVIDIA GPUs when the user's block does not suit it
// (vllm/platforms/cuda.py CudaPlatformBase.check_and_update_config, with the default backend choice; read at
// vllm-project/vllm 002db495):
//   - Blackwell (SM100: kvcap's "blackwell" profiles are B200/GB200; an SM120 card is not modelled), dense,
//     qk_nope_head_dim 128, no DCP: FlashInfer MLA, 32 or a multiple of 64, else 64;
//   - Blackwell otherwise (dense): CUTLASS MLA, a multiple of 128, else 128;
//   - Hopper (is_flashmla_dense_supported: capability family 90): FlashMLA, a multiple of 64, else 64;
//   - sparse MLA (DeepSeek-V3.2's indexer, hf_config.index_topk): FlashMLASparse, exactly 64, on any NVIDIA GPU.
// vLLM 0.10-0.11 (--vllm-version): FlashMLA exactly 64 on Hopper, CUTLASS MLA (the Blackwell default then) exactly
// 128. Ampere, Ada (Triton MLA) and AMD keep the block (ROCm's AITER rules are not modelled). Models with
// linear-attention layers size their block in HybridAttentionMambaModelConfig instead.
void force_mla_block_size(const ModelSpec& m, const GpuSpec& g, ResolvedDeployment& r) {
  if (m.attention != AttentionType::mla || has_linear_layers(m) || lowercase(g.vendor) != "nvidia") return;
  const bool sparse = m.index_head_dim > 0, legacy = vllm_minor(r.d.vllm_version) < 12;
  const std::string arch = lowercase(g.architecture);
  const bool blackwell = arch == "blackwell", hopper = arch == "hopper";
  const i64 given = r.block_size;
  std::string backend;
  if (blackwell && !sparse && legacy) {
    backend = "CUTLASS MLA (Blackwell, vLLM 0.10-0.11) needs 128";
    r.block_size = 128;
  } else if (blackwell && !sparse && m.mla.qk_nope_head_dim == 128 && r.d.decode_context_parallel_size == 1) {
    backend = "FlashInfer MLA (Blackwell) needs 32 or a multiple of 64";
    if (r.block_size != 32 && r.block_size % 64 != 0) r.block_size = 64;
  } else if (blackwell && !sparse) {
    backend = "CUTLASS MLA (Blackwell) needs a multiple of 128";
    if (r.block_size % 128 != 0) r.block_size = 128;
  } else if (hopper) {
    backend = legacy ? "FlashMLA (Hopper, vLLM 0.10-0.11) needs 64" : "FlashMLA (Hopper) needs a multiple of 64";
    if (legacy || r.block_size % 64 != 0) r.block_size = 64;
  }
  if (sparse && r.block_size != 64) {
    backend = "FlashMLASparse (DeepSeek-V3.2's sparse attention) needs 64";
    r.block_size = 64;
  }
  if (r.block_size != given)
    r.block_size_note = "forced from " + str(given) + " by vLLM: the attention backend " + backend;
}

// --kv-cache-dtype-skip-layers: checks the entries and aligns the block sizes as
// vllm/platforms/interface.py _align_heterogeneous_kv_block_size does: one block pool holds pages of one
// size, so the quantised (primary) layers' block is raised to the smallest multiple of the kernel
// alignment whose page covers a skipped layer's page at the requested block, and the skipped layers'
// page is padded to it (cache_config.skip_page_size_padded = block_size x primary page per token).
void resolve_skip_layers(const ModelSpec& m, const Deployment& d, ResolvedDeployment& r) {
  const auto& skips = d.kv_cache_dtype_skip_layers;
  if (skips.empty()) return;
  for (const auto& s : skips) {
    if (s == "sliding_window") continue;
    const bool digits = !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoll(s) >= m.num_layers)
      throw SpecError("kv_cache_dtype_skip_layers",
                      "expected layer indices 0.." + str(m.num_layers - 1) + " or sliding_window, got '" + s + "'");
  }
  if (has_linear_layers(m) || m.index_head_dim > 0)
    throw SpecError("kv_cache_dtype_skip_layers",
                    "is not modelled for models with linear-attention (Mamba) layers or a sparse-attention indexer");
  bool any = false;
  for (i64 l = 0; l < m.num_layers && !any; ++l) any = layer_has_attention(m, l) && kv_dtype_skipped(m, d, l);
  const i64 tp = d.tensor_parallel_size;
  const u64 primary = attention_page_bytes(m, r.kv_dtype, tp, 1, static_cast<unsigned>(d.kv_quant_group_size)),
            skipped = attention_page_bytes(m, r.dtype, tp, 1);
  if (!any || skipped <= primary) return;  // nothing skipped, or the skipped page already fits
  const i64 requested = r.block_size;
  const u64 align = std::max<u64>(m.attention == AttentionType::mla ? 64 : 16, static_cast<u64>(requested));
  const u64 need =
      align * ceil_div(mul(static_cast<u64>(requested), skipped, "skipped page"), mul(align, primary, "primary page"));
  if (static_cast<u64>(r.block_size) < need) {
    r.block_size = static_cast<i64>(need);
    r.block_size_note = (r.block_size_note.empty() ? "" : r.block_size_note + "; then ") + "raised from " +
                        str(requested) + " so that one page holds a skipped layer's " + str(requested) + " tokens in " +
                        std::string(name(r.dtype));
  }
  r.skip_block_size = requested;
  r.skip_page_bytes = mul(static_cast<u64>(r.block_size), primary, "skip_page_size_padded");
}
/// The what-if options (no vLLM option) checked against the model and the resolved KV format.
void check_what_if_options(const ModelSpec& m, const Deployment& d, const ResolvedDeployment& r) {
  if (const auto& e = d.kv_eviction; e.on()) {
    for (i64 l = 0; l < m.num_layers; ++l)
      if (layer_attention(m, l) != LayerAttention::full || layer_has_linear(m, l))
        throw SpecError("kv_eviction",
                        "the eviction what-if needs a model whose layers all use full attention only; "
                        "layer " +
                            str(l) + " does not");
    if (e.kind == Deployment::Eviction::Kind::streaming && (e.sink_tokens < 0 || e.window_tokens < 1))
      throw SpecError("kv_eviction", "streaming keeps sink >= 0 tokens and a window of >= 1 (got sink=" +
                                         str(e.sink_tokens) + ", window=" + str(e.window_tokens) + ")");
    if (e.kind == Deployment::Eviction::Kind::h2o && (!(e.budget > 0 && e.budget < 1) || e.recent_tokens < 0))
      throw SpecError("kv_eviction", "h2o keeps a budget in (0, 1) of the context and recent >= 0 tokens");
  }
  if (const auto& s = d.kv_layer_sharing; s.on()) {
    if (s.kind == Deployment::LayerSharing::Kind::cla && (s.factor < 2 || s.factor > m.num_layers))
      throw SpecError("kv_layer_sharing", "cla:N shares one cache among N adjacent layers: expected 2 <= N <= " +
                                              str(m.num_layers) + " (got " + str(s.factor) + ")");
    if (s.kind == Deployment::LayerSharing::Kind::minicache && (s.from_layer < 0 || s.from_layer >= m.num_layers - 1))
      throw SpecError("kv_layer_sharing", "minicache:from=L merges layer pairs from layer L on: expected 0 <= L < " +
                                              str(m.num_layers - 1) + " (got " + str(s.from_layer) + ")");
    for (i64 l = 0; l < m.num_layers; ++l)
      if (layer_attention(m, l) != LayerAttention::full || layer_has_linear(m, l))
        throw SpecError("kv_layer_sharing",
                        "the layer-sharing what-if needs a model whose layers all use full "
                        "attention only; layer " +
                            str(l) + " does not");
    if (m.kv_shared_layers > 0)
      throw SpecError("kv_layer_sharing",
                      "this model already shares KV caches across its last " + str(m.kv_shared_layers) + " layers");
  }
  if (d.kv_quant_group_size != 0) {
    if (!kv_group_size_settable(r.kv_dtype))
      throw SpecError("kv_quant_group_size",
                      "sets the group of the KIVI KV formats: give --kv-cache-dtype int4 or int2 (got " +
                          std::string(name(r.kv_dtype)) + ")");
    const i64 gs = d.kv_quant_group_size;
    if (gs < 8 || gs > 1024 || (gs & (gs - 1)) != 0)
      throw SpecError("kv_quant_group_size",
                      "expected a power of two from 8 to 1024 (KIVI: 32, 64, 128), got " + str(gs));
  }
}
}  // namespace

bool legacy_kv_size_log(const std::string& v) {
  // vLLM 0.19.0 still logged num_blocks // groups x block size (vllm-project/vllm#40691); the fix
  // (#40694) logs int(max_concurrency x max_model_len) from the next release on.
  return vllm_minor(v) < 20;
}

std::string Deployment::LayerSharing::describe() const {
  switch (kind) {
    case Kind::cla:
      return "cla:" + std::to_string(factor);
    case Kind::minicache:
      return "minicache:from=" + std::to_string(from_layer);
    case Kind::none:
      break;
  }
  return "none";
}

std::string Deployment::Eviction::describe() const {
  switch (kind) {
    case Kind::streaming:
      return "streaming:sink=" + std::to_string(sink_tokens) + ",window=" + std::to_string(window_tokens);
    case Kind::h2o: {
      std::ostringstream o;
      o << "h2o:budget=" << budget;
      if (recent_tokens > 0) o << ",recent=" << recent_tokens;
      return o.str();
    }
    case Kind::none:
      break;
  }
  return "none";
}

const char* mamba_cache_mode_name(Deployment::MambaCache m) {
  switch (m) {
    case Deployment::MambaCache::auto_:
      return "auto";
    case Deployment::MambaCache::none:
      return "none";
    case Deployment::MambaCache::align:
      return "align";
    case Deployment::MambaCache::all:
      return "all";
  }
  return "auto";
}

const char* all2all_backend_name(Deployment::All2All b) {
  switch (b) {
    case Deployment::All2All::allgather_reducescatter:
      return "allgather_reducescatter";
    case Deployment::All2All::naive:
      return "naive";
    case Deployment::All2All::deepep_high_throughput:
      return "deepep_high_throughput";
    case Deployment::All2All::deepep_low_latency:
      return "deepep_low_latency";
  }
  return "allgather_reducescatter";
}

namespace {
/// vLLM's rules for EPLB and the all-to-all backend (resolve()); a dense model ignores them.
void check_expert_parallel(const ModelSpec& m, const Deployment& d, const ResolvedDeployment& r) {
  // Expert-parallel options of a dense model are ignored, as --enable-expert-parallel is (vLLM builds no MoE layer).
  const bool moe = m.moe.enabled();
  if (moe && d.num_redundant_experts > 0 && !d.enable_eplb)
    vllm_refuses("num_redundant_experts", "needs --enable-eplb (vLLM: redundant experts are EPLB's)");
  if (moe && d.enable_eplb && r.expert_parallel_size <= 1)
    vllm_refuses("enable_eplb",
                 "needs expert parallelism over 2 or more GPUs (--enable-expert-parallel on a MoE model)");
  // EPLB places the E + R physical experts evenly: vLLM's rearrange_expert_weights_inplace and SGLang's
  // expert_location assert num_physical_experts % ep_size == 0.
  if (moe && d.enable_eplb && (m.moe.num_experts + d.num_redundant_experts) % r.expert_parallel_size != 0) {
    const i64 ep = r.expert_parallel_size, up = (ep - (m.moe.num_experts + d.num_redundant_experts) % ep) % ep;
    vllm_refuses("num_redundant_experts",
                 "with EPLB the " + str(m.moe.num_experts) + " experts + " + str(d.num_redundant_experts) +
                     " redundant ones must split evenly over EP " + str(ep) + " (e.g. num_redundant_experts " +
                     str(d.num_redundant_experts + up) + ")");
  }
  // vLLM runs its all-to-all kernels only with expert parallelism across data-parallel replicas
  // (FusedMoEParallelConfig.use_all2all_kernels: dp_size > 1 and use_ep); one replica's ranks share its tokens.
  if (moe && d.all2all_backend != Deployment::All2All::allgather_reducescatter &&
      (r.expert_parallel_size <= 1 || r.replicas <= 1))
    throw SpecError("all2all_backend",
                    "applies to expert parallelism across data-parallel replicas (--enable-expert-parallel on a MoE "
                    "model with --data-parallel-size >= 2); vLLM uses no all-to-all kernel otherwise");
}
}  // namespace

bool uses_deepep(const ResolvedDeployment& d) {
  using A = Deployment::All2All;
  const A b = d.d.all2all_backend;
  return (b == A::deepep_high_throughput || b == A::deepep_low_latency) && d.expert_parallel_size > 1 && d.replicas > 1;
}

namespace {
// Linear-attention states (has_linear_layers): vLLM's tensor-parallel checks, the mamba_cache_mode it runs, the
// block that holds a state page, and the padded state page.
void resolve_linear_states(const ModelSpec& m, const Deployment& d, ResolvedDeployment& r) {
  const i64 tp = d.tensor_parallel_size;
  const auto& a = m.linear;
  using K = LinearAttentionSpec::Kind;
  if (a.kind == K::gated_delta_net && (a.num_key_heads % tp != 0 || a.num_value_heads % tp != 0))
    vllm_refuses("tensor_parallel_size", "must divide linear_num_key_heads (" + str(a.num_key_heads) +
                                             ") and linear_num_value_heads (" + str(a.num_value_heads) + ")");
  if (a.kind == K::mamba2 && a.num_value_heads % tp != 0)
    vllm_refuses("tensor_parallel_size", "must divide mamba_n_heads (" + str(a.num_value_heads) + ")");
  // vllm/model_executor/layers/mamba/mamba_mixer2.py: assert n_groups % tp_size == 0 or n_groups == 1.
  if (a.kind == K::mamba2 && a.n_groups != 1 && a.n_groups % tp != 0)
    vllm_refuses("tensor_parallel_size",
                 "must divide the Mamba-2 groups (mamba_n_groups " + str(a.n_groups) + ") unless there is one");
  if (a.kind == K::mamba1 && a.intermediate_size % tp != 0)
    vllm_refuses("tensor_parallel_size", "must divide the Mamba intermediate size (" + str(a.intermediate_size) + ")");
  // The cache mode (vllm/model_executor/models/config.py MambaModelConfig.verify_and_update_config): with
  // prefix caching a model whose class supports Mamba prefix caching runs "all", any other "align"; "all"
  // asked of one that does not falls back to "align" ("falling back to 'align' mode").
  using MC = Deployment::MambaCache;
  r.mamba_mode = d.mamba_cache_mode;
  if (r.mamba_mode == MC::auto_)
    r.mamba_mode = mamba_prefix_caching_off(d.vllm_version) ? MC::none
                   : a.supports_cache_mode_all()            ? MC::all
                                                            : MC::align;
  if (r.mamba_mode == MC::all && !a.supports_cache_mode_all()) {
    r.mamba_mode = MC::align;
    r.mamba_mode_note = "vLLM falls back to align: Gated DeltaNet models have no mamba_cache_mode all";
  }
  // The block (vllm/platforms/interface.py Platform._align_hybrid_block_size; vllm/model_executor/models/config.py
  // HybridAttentionMambaModelConfig before vllm#37467): the attention page must hold one linear layer's state.
  // none / align: the smallest multiple of the kernel alignment (16 tokens; 64 for MLA) that does; all: a
  // multiple of lcm(SSD chunk, alignment) (mamba_chunk_size; 2048 without one), and the states are checkpointed
  // every such block (mamba_block_size). The state page is then padded to the attention page.
  r.linear_state_bytes = linear_state_bytes_per_rank(m, tp, r.dtype, d.mamba_ssm_cache_dtype);
  const u64 attn_1_token = attention_page_bytes(m, r.kv_dtype, tp, 1, static_cast<unsigned>(d.kv_quant_group_size));
  const u64 align = m.attention == AttentionType::mla ? 64 : 16;
  // kernel_block_alignment_size = max(the backend's smallest kernel block, cache_config.block_size) since vllm#37467
  // (merged 2026-03-30, after 0.18.0); before it the alignment was 16 (64 for MLA) whatever --block-size.
  const u64 kernel = vllm_minor(d.vllm_version) >= 19 ? std::max<u64>(align, static_cast<u64>(r.block_size)) : align;
  u64 need = kernel * ceil_div(r.linear_state_bytes, kernel * attn_1_token);
  if (r.mamba_mode == MC::all) {
    const u64 chunk = std::lcm(static_cast<u64>(a.chunk_size > 0 ? a.chunk_size : 2048), kernel);
    need = mul(chunk, ceil_div(ceil_div(r.linear_state_bytes, attn_1_token), chunk), "mamba block size");
    r.mamba_block_size = static_cast<i64>(need);
  }
  if (static_cast<u64>(r.block_size) < need) {
    r.block_size_note = "raised from " + str(r.block_size) + " for the linear-attention state" +
                        (r.mamba_mode == MC::all ? ", a multiple of the Mamba chunk" : "");
    r.block_size = static_cast<i64>(need);
  }
  r.linear_state_page_bytes = mul(static_cast<u64>(r.block_size), attn_1_token, "linear-attention state page");
}

}  // namespace

DType serving_dtype(const ModelSpec& m, DType requested) {
  if (requested != DType::auto_) return requested;
  // --dtype auto serves float32 checkpoints in the platform's preferred half type: bf16 on CUDA GPUs of
  // compute capability >= 8.0 (vllm/config/model.py _resolve_auto_dtype; Gemma 2/3 float32 checkpoints).
  return m.dtype == DType::fp32 ? DType::bf16 : m.dtype;
}

DType auto_kv_dtype(const ModelSpec& m, const Deployment& d) {
  // A ModelOpt checkpoint's kv_cache_quant_algo: vllm#29980 (merged December 2025, after 0.12) resolves auto to it.
  if (m.kv_cache_dtype != DType::auto_ && vllm_minor(d.vllm_version) >= 13) return m.kv_cache_dtype;
  return serving_dtype(m, d.dtype);
}

ResolvedDeployment resolve(const ModelSpec& m, const GpuSpec& g, const Deployment& in) {
  ResolvedDeployment r{in, DType::bf16, DType::bf16, DType::bf16, 1, 0, 0, 0};
  Deployment& d = r.d;
  const i64 tp = d.tensor_parallel_size, pp = d.pipeline_parallel_size;
  if (tp < 1) throw SpecError("tensor_parallel_size", "must be >= 1 (got " + str(tp) + ")");
  if (pp < 1) throw SpecError("pipeline_parallel_size", "must be >= 1 (got " + str(pp) + ")");
  if (m.num_heads % tp != 0)
    vllm_refuses("tensor_parallel_size", "num_attention_heads (" + str(m.num_heads) +
                                             ") must be divisible by tensor_parallel_size (" + str(tp) + ")");
  if (m.attention == AttentionType::gqa) {
    const i64 kv = m.num_kv_heads;
    if (tp <= kv ? kv % tp != 0 : tp % kv != 0)
      vllm_refuses("tensor_parallel_size",
                   "must divide num_key_value_heads (" + str(kv) + ") or be a multiple of it (got " + str(tp) + ")");
  }
  if (pp > m.num_layers)
    vllm_refuses("pipeline_parallel_size", "cannot exceed num_layers (" + str(m.num_layers) + "; got " + str(pp) + ")");
  const i64 per_replica = mul(tp, pp, "GPUs per replica");
  if (d.num_gpus == 0) d.num_gpus = per_replica;
  if (d.num_gpus < 0) throw SpecError("num_gpus", "must be >= 1 (got " + str(d.num_gpus) + ")");
  if (d.num_gpus % per_replica != 0)
    throw SpecError("num_gpus", "must be a multiple of tensor_parallel_size x pipeline_parallel_size = " +
                                    str(per_replica) + " (got " + str(d.num_gpus) + ")");
  r.replicas = d.num_gpus / per_replica;
  if (!(d.gpu_memory_utilization > 0 && d.gpu_memory_utilization <= 1))
    throw SpecError("gpu_memory_utilization",
                    "must be in (0, 1] (got " + std::to_string(d.gpu_memory_utilization) + ")");
  if (d.free_gpu_memory_fraction && !(*d.free_gpu_memory_fraction > 0 && *d.free_gpu_memory_fraction <= 1))
    throw SpecError("free_gpu_memory_fraction",
                    "must be in (0, 1] (got " + std::to_string(*d.free_gpu_memory_fraction) + ")");
  if (d.free_gpu_memory_fraction && d.num_gpu_blocks_override)
    throw SpecError("num_gpu_blocks_override",
                    "is vLLM's (its pool replaces the blocks vLLM measured): not with TensorRT-LLM's budget "
                    "(free_gpu_memory_fraction, implied by --engine trtllm)");
  // vLLM's --block-size choices (vllm/config/cache.py, BlockSize = Literal[1, 8, 16, 32, 64, 128]).
  constexpr i64 kVllmBlockSizes[] = {1, 8, 16, 32, 64, 128};
  if (std::find(std::begin(kVllmBlockSizes), std::end(kVllmBlockSizes), d.block_size) == std::end(kVllmBlockSizes))
    throw SpecError("block_size",
                    "must be one of vLLM's block sizes 1, 8, 16, 32, 64 or 128 tokens (got " + str(d.block_size) + ")");

  r.dtype = serving_dtype(m, d.dtype);
  if (!info(r.dtype).activation_ok)
    throw SpecError("dtype", "must be auto, bf16, fp16 or fp32 (got " + std::string(name(r.dtype)) +
                                 "); weight formats go in quantization");
  const DType q = d.quantization == DType::auto_ ? m.quantization : d.quantization;
  r.weight_dtype = q == DType::auto_ ? r.dtype : q;
  if (!info(r.weight_dtype).weights_ok)
    throw SpecError("quantization", std::string(name(r.weight_dtype)) + " is not a weight format; expected one of " +
                                        dtype_names([](const DTypeInfo& i) { return i.weights_ok; }));
  // --kv-cache-dtype auto is the model dtype, even when the weights are quantised (vllm/config/cache.py), unless the
  // checkpoint names a KV format (auto_kv_dtype).
  r.kv_dtype = d.kv_cache_dtype == DType::auto_ ? auto_kv_dtype(m, d) : d.kv_cache_dtype;
  // vLLM's nvfp4 KV cache runs on Blackwell's fp4 attention kernels only (FlashInfer TRTLLM-gen, SM100).
  if (r.kv_dtype == DType::nvfp4 && !(g.fp4_dense_flops > 0))
    vllm_refuses("kv_cache_dtype", "nvfp4 KV needs a GPU with fp4 tensor cores (Blackwell); " + g.name + " has none");
  if (info(r.kv_dtype).kv_head_scale_bits > 0 && m.attention == AttentionType::mla)
    vllm_refuses("kv_cache_dtype",
                 std::string(name(r.kv_dtype)) +
                     " keeps a scale per KV head; an MLA model caches one latent per token (use fp8)");
  if (!info(r.kv_dtype).kv_ok)
    throw SpecError("kv_cache_dtype", std::string(name(r.kv_dtype)) + " is not a KV-cache format; expected one of " +
                                          dtype_names([](const DTypeInfo& i) { return i.kv_ok; }));
  check_what_if_options(m, d, r);

  r.max_model_len =
      d.max_model_len.value_or(m.default_max_model_len > 0 ? m.default_max_model_len : m.max_position_embeddings);
  if (r.max_model_len < 1) throw SpecError("max_model_len", "must be >= 1 (got " + str(r.max_model_len) + ")");
  const bool large = large_gpu(g);
  r.max_num_batched_tokens = d.max_num_batched_tokens.value_or(large ? 8192 : 2048);
  if (r.max_num_batched_tokens < 1)
    throw SpecError("max_num_batched_tokens", "must be >= 1 (got " + str(r.max_num_batched_tokens) + ")");
  r.max_num_seqs = d.max_num_seqs.value_or(large ? 1024 : 256);
  if (r.max_num_seqs < 1) throw SpecError("max_num_seqs", "must be >= 1 (got " + str(r.max_num_seqs) + ")");
  // vLLM caps its default max_num_seqs at max_num_batched_tokens (vllm/engine/arg_utils.py _set_default_args: "if
  // orig_max_num_seqs is None: self.max_num_seqs = min(self.max_num_seqs, self.max_num_batched_tokens)"); a value the
  // user gives above it is refused (vllm/config/scheduler.py: "max_num_batched_tokens (...) must be greater than or
  // equal to max_num_seqs (...)").
  if (d.max_num_seqs && r.max_num_seqs > r.max_num_batched_tokens)
    vllm_refuses("max_num_batched_tokens", "must be greater than or equal to max_num_seqs " + str(r.max_num_seqs) +
                                               " (got " + str(r.max_num_batched_tokens) + ")");
  r.max_num_seqs = std::min(r.max_num_seqs, r.max_num_batched_tokens);
  if (d.shared_prefix_tokens < 0)
    throw SpecError("shared_prefix_tokens", "must be >= 0 (got " + str(d.shared_prefix_tokens) + ")");
  if (!d.kv_cache_memory_bytes.empty() && d.kv_cache_memory_bytes.size() != 1 &&
      static_cast<i64>(d.kv_cache_memory_bytes.size()) != pp)
    throw SpecError("kv_cache_memory", "give one value, or one per pipeline stage (" + str(pp) + ")");
  if (d.mamba_ssm_cache_dtype != DType::auto_ && !info(d.mamba_ssm_cache_dtype).activation_ok)
    throw SpecError("mamba_ssm_cache_dtype",
                    "must be auto, fp32, bf16 or fp16 (got " + std::string(name(d.mamba_ssm_cache_dtype)) + ")");
  r.block_size = d.block_size;
  force_mla_block_size(m, g, r);
  // Decode context parallelism (vllm/config/parallel.py, docs/serving/context_parallel_deployment.md): the DCP group
  // lies inside the TP group, over ranks whose KV heads are replicas (every rank for MLA's one latent).
  const i64 dcp = d.decode_context_parallel_size;
  if (dcp < 1) throw SpecError("decode_context_parallel_size", "must be >= 1 (got " + str(dcp) + ")");
  if (dcp > 1) {
    if (tp % dcp != 0)
      vllm_refuses("decode_context_parallel_size",
                   "must divide tensor_parallel_size (" + str(dcp) + " does not divide " + str(tp) + ")");
    const i64 replicas = m.attention == AttentionType::mla ? tp : std::max<i64>(1, tp / m.num_kv_heads);
    if (dcp > replicas)
      vllm_refuses("decode_context_parallel_size", "cannot exceed the ranks that hold the same KV heads: TP " +
                                                       str(tp) + " / " + str(m.num_kv_heads) +
                                                       " KV heads = " + str(replicas) + " (got " + str(dcp) + ")");
    if (has_linear_layers(m))
      throw SpecError("decode_context_parallel_size",
                      "is not modelled for models with linear-attention (Mamba) layers");
  }
  // vLLM EP: the expert-parallel group is the data-parallel x tensor-parallel ranks of a stage.
  if (d.enable_expert_parallel && m.moe.enabled()) r.expert_parallel_size = mul(tp, r.replicas, "expert-parallel size");
  // More than a million copies is no layout; bounded before num_experts + R is formed (2^63 - 1 overflowed).
  if (d.num_redundant_experts < 0 || d.num_redundant_experts > (i64{1} << 20))
    throw SpecError("num_redundant_experts",
                    "expected 0 to 1048576 redundant experts (got " + str(d.num_redundant_experts) + ")");
  check_expert_parallel(m, d, r);
  if (has_linear_layers(m)) resolve_linear_states(m, d, r);
  resolve_skip_layers(m, d, r);
  d.max_model_len = r.max_model_len;
  d.max_num_batched_tokens = r.max_num_batched_tokens;
  d.max_num_seqs = r.max_num_seqs;
  return r;
}

}  // namespace kvcap
