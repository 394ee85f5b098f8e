#include "report/plan.hpp"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "common.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/planner/text.hpp"

namespace kvcap::cli {

namespace {
std::string attention_desc(const ModelSpec& m) {
  std::ostringstream o;
  if (m.attention == AttentionType::mla) {
    o << "MLA, latent " << m.mla.kv_lora_rank << " + rope " << m.mla.qk_rope_head_dim << " per token per layer";
  } else {
    const char* kind = m.num_kv_heads == m.num_heads ? "MHA" : m.num_kv_heads == 1 ? "MQA" : "GQA";
    o << kind << " " << m.num_heads << " q / " << m.num_kv_heads << " kv heads x " << m.head_dim;
    if (mla_projections(m)) o << " (MLA projections, latent " << m.mla.kv_lora_rank << ", every head cached)";
  }
  if (m.sliding_window > 0) {
    i64 sliding = 0;
    for (i64 l = 0; l < m.num_layers; ++l) sliding += layer_attention(m, l) == LayerAttention::sliding;
    o << ", sliding window " << m.sliding_window << " on " << sliding << " of " << m.num_layers << " layers";
  }
  return o.str();
}

std::string row(const std::string& label, const std::string& value, int width = 50) {
  std::string l = "  " + label;
  if (static_cast<int>(l.size()) < width) l += std::string(static_cast<std::size_t>(width) - l.size(), ' ');
  return l + value + "\n";
}
// "12.50x", rounded as vLLM's own log line ("%.2fx"); `cut` where vLLM would not start (and logs no such line), so
// that 0.9998 does not read "1.00x". "unbounded" (no "x") when the shared prefix covers the whole request and it
// holds no KV of its own.
std::string times(double v, bool cut = false) {
  return std::isinf(v) ? "unbounded" : (cut ? fixed_down(v, 2) : fixed(v, 2)) + "x";
}
}  // namespace

namespace {

/// One pipeline stage's memory, as the table shows it.
void stage_rows(std::ostream& o, const GpuSpec& g, const MemoryPlan& p, std::size_t i) {
  const auto& d = p.dep;
  const auto& st = p.stages[i];
  std::string title = "Memory per GPU";
  if (p.stages.size() > 1)
    title += ", pipeline stage " + std::to_string(st.stage) + " (layers " + std::to_string(st.first_layer) + "-" +
             std::to_string(st.first_layer + st.num_layers - 1) + ")" + (i == p.binding_stage ? ", binds" : "");
  o << title << std::string(title.size() < 55 ? 55 - title.size() : 1, ' ') << "GiB\n";
  if (st.kv_memory_given) {
    o << row("available for KV cache (--kv-cache-memory)", padl(gib(static_cast<double>(st.available_kv_bytes)), 8));
  } else {
    o << row("device memory as CUDA reports it", padl(gib(static_cast<double>(g.memory_bytes)), 8));
    if (!d.d.free_gpu_memory_fraction)
      o << row("x gpu_memory_utilization " + fixed(d.d.gpu_memory_utilization, 2) + " = requested",
               padl(gib(static_cast<double>(st.requested_bytes)), 8));
    o << row("- weights (" + std::string(name(d.weight_dtype)) + ", 1/" + std::to_string(d.d.tensor_parallel_size) +
                 " of the sharded tensors)",
             padl(gib(static_cast<double>(st.weights_bytes)), 8));
    if (st.vision_weights_bytes > 0)
      o << row("    of which the vision encoder", padl(gib(static_cast<double>(st.vision_weights_bytes)), 8));
    o << row("- activation peak (" + grouped(static_cast<u64>(d.max_num_batched_tokens)) + " tokens, " +
                 std::to_string(std::min(d.max_num_seqs, d.max_num_batched_tokens)) + " seqs)",
             padl(gib(static_cast<double>(st.activation_peak_bytes)), 8));
    o << row(uses_deepep(d) && !d.d.non_torch_bytes ? "- non-torch (CUDA context, NCCL, DeepEP buffers)"
                                                    : "- non-torch (CUDA context, NCCL buffers)",
             padl(gib(static_cast<double>(st.non_torch_bytes)), 8));
    if (const auto f = d.d.free_gpu_memory_fraction) {
      const i64 free_bytes = unreserved_bytes(st);
      o << row("= free after TensorRT-LLM's profiling run", padl(gib(static_cast<double>(free_bytes)), 8));
      if (free_bytes > 0)
        o << row("x free_gpu_memory_fraction " + fixed(*f, 2) + " = for KV cache",
                 padl(gib(static_cast<double>(st.available_kv_bytes)), 8));
    } else {
      o << row("= available for KV cache", padl(gib(static_cast<double>(st.available_kv_bytes)), 8));
    }
  }
  i64 attention_layers = 0;
  for (const auto& grp : st.groups)
    if (grp.attention == LayerAttention::linear)
      o << row("linear-attention state per request",
               human_bytes(static_cast<double>(grp.state_bytes_per_layer) * static_cast<double>(grp.num_layers)) +
                   " (" + grouped(grp.state_bytes_per_layer) + " B x " + std::to_string(grp.num_layers) +
                   " layers, padded to " + grouped(d.linear_state_page_bytes) + " B)");
    else
      attention_layers += grp.num_layers;
  o << row("KV per token on this GPU", human_bytes(static_cast<double>(st.kv_bytes_per_token)) + " (" +
                                           grouped(st.kv_bytes_per_token) + " B, " + std::to_string(attention_layers) +
                                           (attention_layers == st.num_layers ? " layers)" : " attention layers)"));
  o << "\n";
}

/// The KV cache and the concurrency at max_model_len, then the warnings.
void kv_summary(std::ostream& o, const MemoryPlan& p) {
  const auto& d = p.dep;
  if (p.kv_groups.size() > 1) {
    // vLLM's hybrid KV cache manager: one block pool shared by the groups (docs/memory-model.md).
    std::string kinds;
    for (const auto& grp : p.kv_groups)
      if (kinds.find(describe(grp.spec)) == std::string::npos)
        kinds += (kinds.empty() ? "" : ", ") + describe(grp.spec);
    o << "KV cache groups: " << p.kv_groups.size() << " (" << kinds << "; "
      << p.stages[p.binding_stage].layout.group_size << " layers per group) share one pool of " << grouped(p.num_blocks)
      << " blocks\n";
    o << "GPU KV cache size (as vLLM logs it): " << grouped(p.kv_capacity_tokens) << " tokens per replica";
  } else if (p.kv_capacity_tokens != p.num_blocks * static_cast<u64>(p.kv_groups.front().spec.block_size)) {
    // A sliding-window model's one group: vLLM logs int(concurrency x max_model_len), not blocks x block size.
    o << "KV cache: " << grouped(p.num_blocks) << " blocks of " << p.kv_groups.front().spec.block_size << " tokens ("
      << describe(p.kv_groups.front().spec) << ")\n";
    o << "GPU KV cache size (as vLLM logs it): " << grouped(p.kv_capacity_tokens) << " tokens per replica";
  } else {
    o << "KV cache: " << grouped(p.num_blocks) << " blocks x " << p.kv_groups.front().spec.block_size << " = "
      << grouped(p.kv_capacity_tokens) << " tokens per replica";
  }
  if (d.replicas > 1) o << ", " << grouped(p.cluster_kv_capacity_tokens) << " in the cluster";
  if (d.d.num_gpu_blocks_override)
    o << "\n  (--num-gpu-blocks-override: the memory holds " << grouped(p.num_blocks_from_memory) << " blocks)";
  o << "\nMaximum concurrency for " << grouped(static_cast<u64>(d.max_model_len))
    << " tokens per request: " << times(p.max_concurrency, p.startup_concurrency < 1.0);
  if (d.replicas > 1)
    o << " per replica, " << times(p.cluster_max_concurrency, p.startup_concurrency < 1.0) << " in the cluster";
  o << "\n";
  if (d.linear_state_bytes > 0) {
    using MC = Deployment::MambaCache;
    i64 states = 0;
    for (const auto& grp : p.kv_groups) states += grp.spec.kind == KvSpecKind::mamba ? 1 : 0;
    o << "mamba_cache_mode " << mamba_cache_mode_name(d.mamba_mode);
    if (!d.mamba_mode_note.empty()) o << " (" << d.mamba_mode_note << ")";
    if (d.mamba_mode == MC::all)
      o << ": vLLM's startup check and these two figures charge each of the " << states
        << " state groups a checkpoint block per " << grouped(static_cast<u64>(d.mamba_block_size))
        << " tokens; a running request keeps its latest state and the block being written (2 per group), which the "
           "curve below counts\n";
    else
      o << ": " << (d.mamba_mode == MC::align ? 2 : 1) << " state block" << (d.mamba_mode == MC::align ? "s" : "")
        << " per request in each of the " << states << " state groups\n";
  }
  if (d.d.shared_prefix_tokens > 0)
    o << "(a shared prefix of " << grouped(static_cast<u64>(d.d.shared_prefix_tokens)) << " tokens is held once)\n";
  for (const auto& w : p.warnings) o << "warning: " << escape::terminal_text(w) << "\n";
}

}  // namespace

void report_plan_table(std::ostream& o, const ModelSpec& m, const GpuSpec& g, const MemoryPlan& p) {
  const auto& d = p.dep;
  using escape::terminal_text;
  o << terminal_text(m.display_name) << " (" << terminal_text(m.name) << ") on " << d.d.num_gpus << " x "
    << terminal_text(g.display_name) << "\n";
  o << "  TP " << d.d.tensor_parallel_size << " x PP " << d.d.pipeline_parallel_size
    << (d.d.decode_context_parallel_size > 1 ? " (DCP " + std::to_string(d.d.decode_context_parallel_size) +
                                                   ": each request's KV split over that many ranks)"
                                             : "")
    << ", " << d.replicas << (d.replicas == 1 ? " replica" : " replicas")
    << (d.expert_parallel_size > 1
            ? " (data parallel), experts split over EP " + std::to_string(d.expert_parallel_size) + " (" +
                  all2all_backend_name(d.d.all2all_backend) +
                  (d.d.enable_eplb ? ", EPLB, " + std::to_string(d.d.num_redundant_experts) +
                                         (d.d.num_redundant_experts == 1 ? " redundant expert" : " redundant experts")
                                   : "") +
                  ")"
            : "")
    << "; weights " << name(d.weight_dtype) << ", KV " << name(d.kv_dtype) << ", block " << d.block_size << " tokens"
    << (d.block_size_note.empty() ? "" : " (" + d.block_size_note + ")") << ", max_model_len "
    << grouped(static_cast<u64>(d.max_model_len)) << ", max_num_batched_tokens "
    << grouped(static_cast<u64>(d.max_num_batched_tokens)) << "\n";
  if (d.d.kv_layer_sharing.on())
    o << "  what-if: KV layer sharing " << d.d.kv_layer_sharing.describe() << " (" << p.kv_layers.size()
      << " layers hold a KV cache; not a vLLM option, quality not modelled)\n";
  o << "  " << billions(static_cast<double>(p.params.total)) << " parameters";
  std::string about;
  if (p.params.active != p.params.total - p.params.vision)
    about = billions(static_cast<double>(p.params.active)) + " active per token";
  if (p.params.vision > 0)
    about += (about.empty() ? "" : "; ") + billions(static_cast<double>(p.params.vision)) + " vision encoder" +
             (d.d.language_model_only ? ", not loaded with --language-model-only" : "");
  if (!about.empty()) o << " (" << about << ")";
  o << ", " << m.num_layers << " layers, " << attention_desc(m) << "\n\n";

  for (std::size_t i = 0; i < p.stages.size(); ++i) stage_rows(o, g, p, i);
  kv_summary(o, p);
  o << "\nConcurrency vs context length (per replica"
    << (d.replicas > 1 ? "; x" + std::to_string(d.replicas) + " for the cluster" : "") << ")\n";
  o << "  context   KV per request   max concurrent requests\n";
  for (const auto& c : p.curve) {
    o << "  " << padl(human_tokens(c.context_tokens), 7) << "   "
      << padl(human_bytes(static_cast<double>(c.kv_bytes_per_request)), 14) << "   "
      << padl(fixed_down(c.max_concurrency, 2), 12)  // cut, not rounded: whole requests and their fraction
      << (c.context_tokens > d.max_model_len ? "   (beyond max_model_len)" : "") << "\n";
  }
}

namespace {
// What-ifs (no vLLM option; quality not modelled), named so that no program mistakes them for vLLM's figures.
nlohmann::ordered_json what_if_json(const MemoryPlan& p) {
  auto what_if = nlohmann::ordered_json::array();
  if (const auto& s = p.dep.d.kv_layer_sharing; s.on())
    what_if.push_back({{"option", "kv_layer_sharing"},
                       {"value", s.describe()},
                       {"layers_with_kv_cache", p.kv_layers.size()},
                       {"source", layer_sharing_source(s)}});
  if (const auto& e = p.dep.d.kv_eviction; e.on())
    what_if.push_back({{"option", "kv_eviction"}, {"value", e.describe()}, {"source", eviction_source(e)}});
  if (kv_group_size_settable(p.dep.kv_dtype))
    what_if.push_back({{"option", "kv_cache_dtype"},
                       {"value", std::string(name(p.dep.kv_dtype))},
                       {"group_size", kv_quant_group(p.dep)},
                       {"kv_bytes_per_token_per_rank", p.kv_bytes_per_token_per_rank},
                       {"source", kKiviSource}});
  return what_if;
}
nlohmann::ordered_json deployment_json(const ResolvedDeployment& d) {
  return {{"num_gpus", d.d.num_gpus},
          {"tensor_parallel_size", d.d.tensor_parallel_size},
          {"pipeline_parallel_size", d.d.pipeline_parallel_size},
          {"decode_context_parallel_size", d.d.decode_context_parallel_size},
          {"replicas", d.replicas},
          {"gpu_memory_utilization", d.d.gpu_memory_utilization},
          {"dtype", std::string(name(d.dtype))},
          {"weight_dtype", std::string(name(d.weight_dtype))},
          {"kv_cache_dtype", std::string(name(d.kv_dtype))},
          {"block_size", d.block_size},
          {"expert_parallel_size", d.expert_parallel_size},
          {"all2all_backend", all2all_backend_name(d.d.all2all_backend)},
          {"enable_eplb", d.d.enable_eplb},
          {"num_redundant_experts", d.d.num_redundant_experts},
          {"max_model_len", d.max_model_len},
          {"max_num_batched_tokens", d.max_num_batched_tokens},
          {"max_num_seqs", d.max_num_seqs},
          {"shared_prefix_tokens", d.d.shared_prefix_tokens},
          {"language_model_only", d.d.language_model_only}};
}
}  // namespace

nlohmann::ordered_json plan_json(const ModelSpec& m, const GpuSpec& g, const MemoryPlan& p,
                                 const std::vector<Finding>& findings) {
  using J = nlohmann::ordered_json;
  const auto& d = p.dep;
  const auto& bind = p.stages[p.binding_stage];
  J j;
  j["model"] = {{"name", m.name},
                {"display_name", m.display_name},
                {"params_total", p.params.total},
                {"params_active", p.params.active},
                {"params_vision", p.params.vision},
                {"num_layers", m.num_layers}};
  j["gpu"] = {{"name", g.name}, {"display_name", g.display_name}, {"memory_bytes", g.memory_bytes}};
  j["deployment"] = deployment_json(d);
  if (d.linear_state_bytes > 0) {
    using MC = Deployment::MambaCache;
    j["deployment"]["mamba_cache_mode"] = mamba_cache_mode_name(d.mamba_mode);
    if (d.mamba_mode == MC::all) j["deployment"]["mamba_block_size"] = d.mamba_block_size;
  }
  if (d.d.num_gpu_blocks_override) j["deployment"]["num_gpu_blocks_override"] = *d.d.num_gpu_blocks_override;
  if (d.d.free_gpu_memory_fraction) j["deployment"]["free_gpu_memory_fraction"] = *d.d.free_gpu_memory_fraction;
  j["what_if"] = what_if_json(p);
  j["kv_bytes_per_token_per_rank"] = p.kv_bytes_per_token_per_rank;
  j["memory"] = {{"total_bytes", g.memory_bytes},           {"requested_bytes", bind.requested_bytes},
                 {"weights_bytes", bind.weights_bytes},     {"activation_peak_bytes", bind.activation_peak_bytes},
                 {"non_torch_bytes", bind.non_torch_bytes}, {"available_kv_bytes", bind.available_kv_bytes},
                 {"kv_memory_given", bind.kv_memory_given}};
  J stages = J::array();
  for (const auto& st : p.stages)
    stages.push_back({{"stage", st.stage},
                      {"first_layer", st.first_layer},
                      {"num_layers", st.num_layers},
                      {"weights_bytes", st.weights_bytes},
                      {"vision_weights_bytes", st.vision_weights_bytes},
                      {"available_kv_bytes", st.available_kv_bytes},
                      {"kv_bytes_per_token", st.kv_bytes_per_token},
                      {"num_blocks", st.num_blocks}});
  if (d.d.num_gpu_blocks_override)
    for (std::size_t i = 0; i < p.stages.size(); ++i)
      stages[i]["num_blocks_from_memory"] = p.stages[i].num_blocks_from_memory;
  j["stages"] = stages;
  j["binding_stage"] = p.binding_stage;
  j["num_blocks"] = p.num_blocks;
  j["kv_capacity_tokens"] = p.kv_capacity_tokens;
  j["max_concurrency"] = p.max_concurrency;
  j["max_model_len_that_fits"] = p.max_model_len_that_fits;
  // Where TensorRT-LLM's budget lowered max_model_len (KVCAP-W208): the length asked for; else null.
  j["max_model_len_asked"] = p.max_model_len_asked > 0 ? J(p.max_model_len_asked) : J(nullptr);
  j["cluster"] = {{"replicas", d.replicas},
                  {"kv_capacity_tokens", p.cluster_kv_capacity_tokens},
                  {"max_concurrency", p.cluster_max_concurrency}};
  J curve = J::array();
  for (const auto& c : p.curve)
    curve.push_back({{"context_tokens", c.context_tokens},
                     {"max_concurrency", c.max_concurrency},
                     {"kv_bytes_per_request", c.kv_bytes_per_request},
                     {"beyond_max_model_len", c.context_tokens > p.dep.max_model_len}});
  j["concurrency_curve"] = curve;
  j["warnings"] = p.warnings;
  add_findings_json(j, findings);
  return j;
}

void report_plan_csv(std::ostream& o, const MemoryPlan& p) {
  // beyond_max_model_len: a request of this context is one the engine rejects (the table's "beyond max_model_len").
  o << "context_tokens,max_concurrency,kv_bytes_per_request,beyond_max_model_len\n";
  for (const auto& c : p.curve) {
    o << c.context_tokens << "," << csv_number(c.max_concurrency) << "," << c.kv_bytes_per_request << ","
      << (c.context_tokens > p.dep.max_model_len ? "true" : "false") << "\n";
  }
}

namespace {
std::string ms(double s) {
  return fixed(s * 1e3, s < 0.01 ? 2 : 1) + " ms";
}

nlohmann::ordered_json breakdown_json(const StepBreakdown& b) {
  return {{"tokens", b.tokens},
          {"weight_bytes", b.weight_bytes},
          {"kv_bytes", b.kv_bytes},
          {"gemm_flops", b.gemm_flops},
          {"attention_flops", b.attention_flops},
          {"weights_read_s", b.weights_read_s},
          {"kv_read_s", b.kv_read_s},
          {"gemm_s", b.gemm_s},
          {"attention_s", b.attention_s},
          {"routed_experts_s", b.experts_s},
          {"communication_s", b.communication_s},
          {"overhead_s", b.overhead_s},
          {"total_s", b.total_s},
          {"bound", std::string(to_string(b.bound))}};
}

void breakdown_rows(std::ostream& o, const StepBreakdown& b) {
  o << "    weights read " << ms(b.weights_read_s) << ", KV read " << ms(b.kv_read_s) << ", GEMM " << ms(b.gemm_s)
    << ", attention " << ms(b.attention_s)
    << (b.experts_s > 0 ? ", routed experts " + ms(b.experts_s) + " (read, then computed)" : std::string())
    << ", communication " << ms(b.communication_s) << ", overhead " << ms(b.overhead_s) << "\n";
}
}  // namespace

void report_speed_table(std::ostream& o, const RequestEstimate& r, const EngineProfile& engine,
                        const std::optional<OperatingPoint>& steady, bool lockstep) {
  o << "\nSpeed (roofline, engine profile " << engine.name << "; rates: memory " << r.first_step.source.memory
    << ", compute " << r.first_step.source.compute
    << (r.first_step.source.attention != r.first_step.source.compute ? ", attention " + r.first_step.source.attention
                                                                     : "")
    << ")\n";
  o << "  batch " << r.batch << ", prompt " << grouped(static_cast<u64>(r.prompt_tokens)) << " tokens, output "
    << grouped(static_cast<u64>(r.output_tokens)) << " tokens\n";
  o << "  TTFT (prefill of one prompt)        " << ms(r.ttft_s) << "  [" << to_string(r.prefill.bound) << "-bound]\n";
  breakdown_rows(o, r.prefill.total);
  if (engine.speed.request_overhead_s > 0)
    o << "    + the serving front end's cost per request " << ms(engine.speed.request_overhead_s)
      << " (engine profile)\n";
  o << "  TPOT (mean over the output)         " << ms(r.mean_tpot_s) << "  [" << to_string(r.first_step.bound)
    << "-bound at the first step]\n";
  breakdown_rows(o, r.first_step.stage);
  if (engine.speed.sequence_overhead_s > 0)
    o << "    (overhead includes the host's cost per sequence of the step, "
      << fixed(engine.speed.sequence_overhead_s * 1e6, 0) << " us x " << r.batch
      << (r.first_step.pipeline_stages > 1
              ? " / " + std::to_string(r.first_step.pipeline_stages) + " on each pipeline stage"
              : std::string())
      << ", engine profile)\n";
  o << "  tokens/s per user " << fixed(r.tokens_per_s_per_user, 1) << ", per replica " << fixed(r.tokens_per_s, 1)
    << "; end-to-end " << fixed(r.e2e_s, 2) << " s\n";
  if (steady) {
    // Why the serving figures differ from the static ones above: the clients' next prompts are prefilled between
    // the decode steps (TPOT / (1 - u)) and wait for each other (TTFT).
    const OperatingPoint& s = *steady;
    o << "  Served to " << r.batch << " clients in a closed loop (the steady state kvcap size uses and simulate "
      << "--max-concurrency " << r.batch << " runs):\n";
    o << "    TTFT mean " << ms(s.ttft_mean_s) << ", TPOT " << ms(s.tpot_s) << ", end-to-end " << fixed(s.e2e_s, 2)
      << " s, " << fixed(s.rate_per_s, 2) << " req/s\n";
    if (lockstep)
      o << "    in lockstep (a prefill-first engine holds every decode back while a prefill is pending): the "
        << r.batch << " prompts are prefilled in one wave, " << fixed(100 * s.prefill_utilization, 1)
        << "% of the cycle, then all decode together; TTFT is a prompt's place in the wave, TPOT counts the rest of "
           "the wave\n";
    else {
      o << "    the clients' prompts take " << fixed(100 * s.prefill_utilization, 1)
        << "% of the GPU between decode steps: TPOT = decode step / (1 - that share); TTFT adds waiting for other "
           "prefills and the front end\n";
      // A benchmark's mean holds its first wave too (sim::benchmark_mean, docs/simulator.md).
      o << "    a benchmark that starts its " << r.batch
        << " clients together (AIPerf, vllm bench serve) also times their first wave, prompts queued at once "
           "(simulate prints that benchmark's mean)\n";
    }
  }
  const bool calibrated = r.first_step.source.memory == "calibrated" || r.first_step.source.compute == "calibrated";
  if (const auto b = error_band(engine); !b.empty() && !calibrated) o << "  expected error: " << b << "\n";
}

nlohmann::ordered_json speed_json(const RequestEstimate& r, const std::optional<OperatingPoint>& steady) {
  nlohmann::ordered_json j;
  j["batch"] = r.batch;
  j["prompt_tokens"] = r.prompt_tokens;
  j["output_tokens"] = r.output_tokens;
  j["decode"] = {{"tpot_s", r.mean_tpot_s},
                 {"tokens_per_s_per_user", r.tokens_per_s_per_user},
                 {"tokens_per_s_total", r.tokens_per_s},
                 {"bound", std::string(to_string(r.first_step.bound))},
                 {"rates",
                  {{"memory", r.first_step.source.memory},
                   {"compute", r.first_step.source.compute},
                   {"attention", r.first_step.source.attention}}},
                 {"breakdown", breakdown_json(r.first_step.stage)}};
  j["prefill"] = {{"ttft_s", r.ttft_s},
                  {"bound", std::string(to_string(r.prefill.bound))},
                  {"breakdown", breakdown_json(r.prefill.total)}};
  j["e2e_s"] = r.e2e_s;
  if (steady)
    j["closed_loop_steady_state"] = {{"clients", steady->batch},
                                     {"ttft_mean_s", steady->ttft_mean_s},
                                     {"tpot_s", steady->tpot_s},
                                     {"e2e_s", steady->e2e_s},
                                     {"requests_per_s", steady->rate_per_s},
                                     {"prefill_utilization", steady->prefill_utilization}};
  return j;
}

}  // namespace kvcap::cli

namespace kvcap::cli {

nlohmann::ordered_json fit_advice_json(const FitAdvice& a) {
  nlohmann::ordered_json j;
  j["reason"] = a.reason == FitAdvice::Reason::no_kv_memory ? "no_kv_memory" : "request_does_not_fit";
  j["why"] = a.why;
  auto fixes = nlohmann::ordered_json::array();
  for (const auto& f : a.fixes) {
    nlohmann::ordered_json x;
    x["text"] = f.text;
    x["flag"] = f.flag;
    x["num_gpus"] = f.num_gpus;
    x["tensor_parallel_size"] = f.deployment.tensor_parallel_size;
    x["pipeline_parallel_size"] = f.deployment.pipeline_parallel_size;
    x["quantization"] = std::string(name(f.deployment.quantization));
    x["kv_cache_dtype"] = std::string(name(f.deployment.kv_cache_dtype));
    if (f.deployment.max_model_len) x["max_model_len"] = *f.deployment.max_model_len;
    fixes.push_back(std::move(x));
  }
  j["fixes"] = std::move(fixes);
  return j;
}

}  // namespace kvcap::cli
