#include "kvcap/planner/fit.hpp"

#include <algorithm>

#include "kvcap/planner/error.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/plausibility.hpp"
#include "kvcap/planner/text.hpp"

namespace kvcap {

namespace {

// Tensor- and pipeline-parallel sizes tried: the doublings vLLM deployments use, up to a large NVL domain.
constexpr i64 kMaxTensorParallel = 64;
constexpr i64 kMaxPipelineParallel = 16;

// The plan of `d`, or nullopt when vLLM would refuse the deployment for another reason (heads not divisible, ...).
std::optional<MemoryPlan> try_plan(const ModelSpec& m, const GpuSpec& g, const Deployment& d) {
  try {
    return plan_memory(m, g, d, {});
  } catch (const SpecError&) {
    return std::nullopt;
  } catch (const OverflowError&) {
    return std::nullopt;
  }
}

// Whether vLLM starts it, by the same policy as kvcap plan (no KVCAP-E10x error: KV memory, a request of
// max_model_len, a shared prefix that no request can carry or the cache cannot hold). KVCAP-E110 (max_num_seqs above
// the blocks of a model with states) is left aside: its own message names the --max-num-seqs that starts.
bool starts(const GpuSpec& g, const MemoryPlan& p) {
  if (p.max_model_len_asked > 0) return false;  // TensorRT-LLM starts, but below the max_model_len asked for
  const auto f = check_memory_plan(g, p);
  return std::none_of(f.begin(), f.end(),
                      [](const Finding& x) { return x.level == Finding::Level::error && x.code != "KVCAP-E110"; });
}

// The same number of data-parallel replicas at another TP x PP.
Deployment with_parallelism(const MemoryPlan& p, i64 tp, i64 pp) {
  Deployment d = p.dep.d;
  d.tensor_parallel_size = tp;
  d.pipeline_parallel_size = pp;
  d.num_gpus = p.dep.replicas * tp * pp;
  return d;
}

void add_fix(std::vector<FitFix>& fixes, const std::string& change, const std::string& where, std::string flag,
             const Deployment& d) {
  fixes.push_back({change, change + " fits (" + where + ")", std::move(flag), d, d.num_gpus});
}

std::string gpus(const Deployment& d) {
  return grouped(static_cast<u64>(d.num_gpus)) + (d.num_gpus == 1 ? " GPU" : " GPUs");
}

// The smallest tensor-parallel size (then pipeline-parallel size) at which the deployment starts.
void parallel_fixes(const ModelSpec& m, const GpuSpec& g, const MemoryPlan& p, std::vector<FitFix>& fixes) {
  const i64 tp = p.dep.d.tensor_parallel_size, pp = p.dep.d.pipeline_parallel_size;
  for (i64 t = tp * 2; t <= kMaxTensorParallel; t *= 2) {
    const Deployment d = with_parallelism(p, t, pp);
    if (const auto q = try_plan(m, g, d); q && starts(g, *q)) {
      add_fix(fixes, "TP >= " + std::to_string(t), gpus(d), "--tensor-parallel-size", d);
      break;
    }
  }
  for (i64 s = pp * 2; s <= std::min<i64>(kMaxPipelineParallel, m.num_layers); s *= 2) {
    const Deployment d = with_parallelism(p, tp, s);
    if (const auto q = try_plan(m, g, d); q && starts(g, *q)) {
      add_fix(fixes, "PP >= " + std::to_string(s), gpus(d), "--pipeline-parallel-size", d);
      break;
    }
  }
}

// An 8-bit format for 16-bit weights or a 16-bit KV cache, on the same GPUs.
void format_fixes(const ModelSpec& m, const GpuSpec& g, const MemoryPlan& p, std::vector<FitFix>& fixes) {
  if (info(p.dep.weight_dtype).payload_bits >= 16) {
    Deployment d = p.dep.d;
    d.quantization = DType::fp8;
    if (const auto q = try_plan(m, g, d); q && starts(g, *q))
      add_fix(fixes, "--quantization fp8", "the same " + gpus(d), "--quantization", d);
  }
  if (info(p.dep.kv_dtype).payload_bits >= 16) {
    Deployment d = p.dep.d;
    d.kv_cache_dtype = DType::fp8;
    if (const auto q = try_plan(m, g, d); q && starts(g, *q))
      add_fix(fixes, "--kv-cache-dtype fp8", "the same " + gpus(d), "--kv-cache-dtype", d);
  }
}

std::string why_no_kv_memory(const MemoryPlan& p) {
  const StagePlan& s = *std::min_element(p.stages.begin(), p.stages.end(), [](const StagePlan& a, const StagePlan& b) {
    return a.available_kv_bytes < b.available_kv_bytes;
  });
  const double held = static_cast<double>(s.weights_bytes) + static_cast<double>(s.activation_peak_bytes) +
                      static_cast<double>(s.non_torch_bytes);
  std::string where = p.stages.size() > 1 ? " on stage " + std::to_string(s.stage) : "";
  return "needs " + gib_text(static_cast<double>(s.weights_bytes)) + " of weights per GPU" + where + " (" +
         gib_text(held) + " with the activation peak and non-torch memory), has " + budget_text(p, s);
}

std::string why_request_does_not_fit(const MemoryPlan& p) {
  std::string head = "one request of max_model_len " + grouped(static_cast<u64>(p.dep.max_model_len)) + " tokens ";
  // No room at all (memory.cpp concurrency_from): the shared prefix, or --kv-eviction's prefill reserve, takes the
  // whole pool before a request's own blocks, so no ratio of one request to the pool says it.
  if (p.startup_concurrency <= 0 && p.num_blocks_from_memory == 0)
    head += "finds no room: its memory holds not one whole block of ";
  else if (p.startup_concurrency <= 0)
    head += "finds no room: the shared prefix (and any eviction reserve) fills ";
  else {
    // Within 1% of the cache, four decimals: "needs 1.00x" read as if it fitted.
    const double need = 1.0 / p.startup_concurrency;
    head += "needs " + fixed(need, need < 1.01 ? 4 : 2) + "x ";
  }
  // vLLM's start-up check judges the memory, before --num-gpu-blocks-override replaces the pool.
  if (p.dep.d.num_gpu_blocks_override)
    return head + "the KV memory (" + grouped(p.num_blocks_from_memory) + " blocks, before --num-gpu-blocks-override)";
  return head + "the KV cache (" + grouped(p.kv_capacity_tokens) + " tokens per replica)";
}

}  // namespace

std::string FitAdvice::text() const {
  std::string t = why;
  if (fixes.empty()) return t + "; no single flag makes it fit";
  t += "; smallest fix: ";
  for (std::size_t i = 0; i < fixes.size(); ++i) t += (i ? "; or " : "") + fixes[i].text;
  return t;
}

std::optional<FitAdvice> fit_advice(const ModelSpec& m, const GpuSpec& g, const Deployment& d) {
  const auto p = try_plan(m, g, d);
  if (!p) return std::nullopt;
  // Only a lack of memory (E101, E102) is advised on; the policy's other errors say what to change themselves.
  const bool no_kv =
      std::any_of(p->stages.begin(), p->stages.end(), [](const StagePlan& s) { return s.available_kv_bytes <= 0; });
  if (!no_kv && p->fits()) return std::nullopt;
  // A --num-gpu-blocks-override pool too small: memory is not what is short, and E102 names the fix.
  if (!no_kv && p->override_pool_too_small()) return std::nullopt;
  FitAdvice a;
  a.reason = no_kv ? FitAdvice::Reason::no_kv_memory : FitAdvice::Reason::request_does_not_fit;
  a.why = no_kv ? why_no_kv_memory(*p) : why_request_does_not_fit(*p);
  parallel_fixes(m, g, *p, a.fixes);
  format_fixes(m, g, *p, a.fixes);
  // vLLM's own advice for a request that does not fit (kv_cache_utils.py: "Based on the available memory, the
  // estimated maximum model length is N"): the longest context one request can hold.
  if (!no_kv && p->max_model_len_that_fits > 0) {
    Deployment shorter = p->dep.d;
    shorter.max_model_len = p->max_model_len_that_fits;
    if (const auto q = try_plan(m, g, shorter); q && starts(g, *q))
      add_fix(a.fixes, "--max-model-len " + std::to_string(p->max_model_len_that_fits), "the same " + gpus(shorter),
              "--max-model-len", shorter);
  }
  return a;
}

}  // namespace kvcap
