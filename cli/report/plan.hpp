#pragma once
// Reporters for a memory plan: one computation, three formats chosen by --format.
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>

#include "kvcap/planner/engine.hpp"
#include "kvcap/planner/fit.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/plausibility.hpp"
#include "kvcap/planner/sizing.hpp"
#include "kvcap/planner/speed.hpp"
#include "report/format.hpp"

namespace kvcap::cli {

void report_plan_table(std::ostream& o, const ModelSpec& m, const GpuSpec& g, const MemoryPlan& p);
/// `findings` (the plausibility policy's) go into "findings" and, as "CODE: message", into "warnings".
nlohmann::ordered_json plan_json(const ModelSpec& m, const GpuSpec& g, const MemoryPlan& p,
                                 const std::vector<Finding>& findings = {});
void report_plan_csv(std::ostream& o, const MemoryPlan& p);
/// Why a deployment does not start and the fixes (planner/fit.hpp): {reason, why, fixes: [{text, flag, num_gpus,
/// tensor_parallel_size, pipeline_parallel_size, quantization, kv_cache_dtype[, max_model_len]}]}: the fixed
/// deployment's values, so a program need not parse the text.
nlohmann::ordered_json fit_advice_json(const FitAdvice& a);

/// The speed section of `kvcap plan --batch/--prompt-tokens/--output-tokens`.
/// The static batch's speed and, when given, the same batch as a serving steady state (N clients in a closed loop).
/// `lockstep`: the steady state is a prefill-first engine's lockstep (SpeedOptions::prefill_first).
void report_speed_table(std::ostream& o, const RequestEstimate& r, const EngineProfile& engine,
                        const std::optional<OperatingPoint>& steady, bool lockstep);
nlohmann::ordered_json speed_json(const RequestEstimate& r, const std::optional<OperatingPoint>& steady);

}  // namespace kvcap::cli
