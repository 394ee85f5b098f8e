#pragma once
// Serving-engine profiles: the constants that make the roofline step model and the simulator behave like a
// given engine (issue 14, section 2). "datasheet" is the plain roofline model (SpeedOptions defaults, no
// front-end cost); vllm, sglang and trtllm are fitted by `kvcap accuracy --fit` to the published measurements of
// that engine in shared/fixtures/serving_measurements.json, each constant within physical bounds, with the
// fit's residuals and leave-one-out errors recorded in docs/accuracy.md. Calibration (calibration.yaml) still
// replaces the efficiencies where it is given.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvcap/planner/speed.hpp"

namespace kvcap {

struct EngineProfile {
  std::string name;             ///< "datasheet", "vllm", "sglang", "trtllm"
  std::string description;      ///< what it stands for and how it was obtained
  SpeedOptions speed;           ///< efficiencies, per-step / per-layer overheads and the front end's per-request cost
  /// How the engine sizes its KV cache when no budget is given: unset, vLLM's (gpu_memory_utilization x total);
  /// TensorRT-LLM takes free_gpu_memory_fraction (default 0.9, tensorrt_llm/llmapi/llm_args.py KvCacheConfig) of
  /// the memory left free after its profiling run (Deployment::free_gpu_memory_fraction). A fact of the engine,
  /// not fitted.
  std::optional<double> free_gpu_memory_fraction;
  /// The error to expect, as a fraction: the leave-one-out MAPE of the fit on the engine's published points, or the
  /// shipped constants' own MAPE on them where that is higher (for datasheet, the scorecard's MAPE over every
  /// engine, nothing being fitted); 0 when the fixtures hold no such measurement. Printed next to the latencies
  /// ("TPOT 19.6 ms, +-15% on published vLLM measurements").
  double tpot_error = 0, ttft_error = 0, throughput_error = 0;
  /// The error on models the profile was not fitted on: MAPE of TPOT and TTFT on the held-out measurements of other
  /// models (bench/accuracy/aiconfigurator_holdout.json, docs/accuracy.md); 0 when none are held out for the engine.
  double other_models_tpot_error = 0, other_models_ttft_error = 0;
};
/// "TPOT +-11%, TTFT +-21% (MAPE on published vLLM serving measurements of Llama 3.1 8B/70B, leave-one-out or
/// in-sample if higher); other models: TPOT +-28%, TTFT +-24% (MAPE on held-out measurements, docs/accuracy.md)": the
/// bands of `e` that are known; "" when none is.
std::string error_band(const EngineProfile& e);

/// The built-in profiles, "datasheet" first.
const std::vector<EngineProfile>& engine_profiles();
/// A profile by name (case-insensitive; "tensorrt-llm" and "trt-llm" name trtllm); throws SpecError("engine")
/// listing the names.
const EngineProfile& engine_profile(std::string_view name);
/// The profile of an engine as the fixtures name it ("vLLM", "SGLang", "TensorRT-LLM", "NIM (TensorRT-LLM
/// backend)"); "datasheet" when unknown.
const EngineProfile& engine_profile_for(std::string_view engine_label);

/// One constant of a profile that `kvcap accuracy --fit` fits, with its grid within physical bounds: achieved /
/// datasheet HBM bandwidth 0.65-0.90 (decode kernels on A100/H100 reach 65-90% of it; STREAM about 90%), GEMM
/// efficiency 0.45-0.85 (16-bit) and 0.35-0.80 (fp8), overheads in seconds. A constant that settles on a bound says
/// the model misses something there (docs/accuracy.md).
struct EngineKnob {
  const char* name;
  double* (*field)(EngineProfile&);
  std::vector<double> grid;
};
const std::vector<EngineKnob>& engine_knobs();

/// Coordinate descent from `start`: each round sets every knob in turn to the grid value that lowers `objective`
/// most; stops after `rounds` or when a round moves nothing.
EngineProfile fit_engine_profile(EngineProfile start, const std::function<double(const EngineProfile&)>& objective,
                                 int rounds);

}  // namespace kvcap
