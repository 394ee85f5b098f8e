#pragma once
// Why a deployment does not start, in numbers, and the smallest changes that make it start. vLLM refuses to start
// when the weights, the activation peak and the non-torch memory leave no memory for the KV cache
// (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory, "No available memory for the cache blocks"; kvcap's
// KVCAP-E101), or when one request of max_model_len does not fit in the cache (the same function; KVCAP-E102). Each
// fix is a single vLLM flag changed, tried on the planner's own memory model (plan_memory), so the advice is exactly
// as right as the plan. Pure: no I/O.
#include <optional>
#include <string>
#include <vector>

#include "kvcap/planner/deployment.hpp"
#include "kvcap/planner/gpu.hpp"
#include "kvcap/planner/model.hpp"

namespace kvcap {

struct FitFix {
  std::string change;     ///< "TP >= 8", "--quantization fp8", "--max-model-len 65536"
  std::string text;       ///< change + " fits" and the GPUs: "TP >= 8 fits (8 GPUs)"
  std::string flag;       ///< the vLLM flag changed, e.g. "--tensor-parallel-size"
  Deployment deployment;  ///< the deployment with the fix applied (num_gpus kept at the same number of replicas)
  i64 num_gpus = 0;       ///< GPUs the fixed deployment uses
};

struct FitAdvice {
  enum class Reason { no_kv_memory, request_does_not_fit };
  Reason reason = Reason::no_kv_memory;
  /// The binding stage's numbers: "needs 131.42 GiB of weights per GPU (136.26 GiB with the activation peak and
  /// non-torch memory), has 71.27 GiB (0.90 x 79.19 GiB)" or "one request of max_model_len 131,072 tokens needs
  /// 66.60x the KV cache (1,968 tokens per replica)".
  std::string why;
  std::vector<FitFix> fixes;  ///< the smallest first: tensor parallel, pipeline parallel, formats, max_model_len
  /// why, then "; smallest fix: " and the fixes joined by "; or " (or "; no single flag makes it fit").
  std::string text() const;
};

/// Advice for a deployment that vLLM would not start for lack of memory; nullopt when it starts or when the
/// deployment is invalid for another reason (plan_memory throws SpecError: that error is the user's message). A fix
/// is offered only when kvcap plan's whole policy (check_memory_plan) accepts the fixed deployment.
std::optional<FitAdvice> fit_advice(const ModelSpec& m, const GpuSpec& g, const Deployment& d);

}  // namespace kvcap
