#pragma once
// Calibration: achieved (measured) rates of one device, as `kvcap calibrate` fits them from the
// microkernels (kernels/). A plain value type: reading and writing calibration.yaml is the job of
// profiles/ (see docs/calibration-format.md); the speed model (speed.hpp) only consumes it.
// Units are SI: seconds, bytes per second, FLOP per second.
#include <string>
#include <vector>

#include "kvcap/planner/checked.hpp"

namespace kvcap {

/// Decode-attention (KV read) fit over KV sizes: t = t0_s + bytes / bandwidth_bytes_per_s per kernel call.
struct CalibrationDecode {
  double t0_s = 0;                   ///< fixed time of one decode-attention kernel call
  double bandwidth_bytes_per_s = 0;  ///< achieved bandwidth reading the KV cache
};

/// A streaming read over buffers much larger than L2 (what reading the weights once achieves).
struct CalibrationStream {
  double read_bytes_per_s = 0;
};

/// Achieved dense GEMM rate for M (tokens in the step) in [m_min, m_max], in the weight dtype's tensor-core path.
struct CalibrationGemmClass {
  i64 m_min = 0;
  i64 m_max = 0;
  double flops_per_s = 0;
};

/// Achieved causal (prefill) attention rate.
struct CalibrationPrefillAttention {
  double flops_per_s = 0;
  /// prefill_attention.tensor_cores: the measured kernel ran on tensor cores (kvcap's CUDA kernel does; the CPU twin
  /// does not). Informative: a GPU calibration's attention rate is kvcap's kernel, not the engine's, and the speed
  /// model does not use it (speed.cpp, rates()).
  bool tensor_cores = false;
};

/// Copies between pinned host memory and the GPU, one per chunk (kernels/src/calibrate.cpp, host_link): a copy of c
/// bytes takes per_copy_s + c / bandwidth_bytes_per_s. Zero: not measured (CPU calibrations, older files).
struct CalibrationHostLink {
  double per_copy_s = 0;
  double bandwidth_bytes_per_s = 0;
};

struct Calibration {
  std::string source;  ///< what produced it, e.g. "kvcap calibrate 0.1 on host x, 2026-03-14, CUDA 12.4"
  std::string device;  ///< device name as the driver reports it, e.g. "NVIDIA H100 80GB HBM3"
  std::string device_kind;     ///< "cuda" or "cpu" (device.kind)
  u64 device_memory_bytes = 0;  ///< device.memory_bytes (0: not given)
  /// The file records the kernels' self-tests (selftest:), all passed; files with failures are refused on load.
  bool selftests_passed = false;
  CalibrationDecode decode;
  CalibrationStream stream;
  std::vector<CalibrationGemmClass> gemm;  ///< non-overlapping classes, any order
  CalibrationPrefillAttention prefill_attention;
  CalibrationHostLink host_to_device, device_to_host;  ///< host_link (GPU calibrations from 2026-11-26 on)
};

/// Throws SpecError naming the field (calibration.decode.t0_s, ...) when a figure is negative, not
/// finite, or a GEMM class is empty or inverted. Zero means "not measured": the speed model falls back
/// to datasheet x default efficiency for that term. Defined in speed.cpp.
void validate(const Calibration& c);

/// The GEMM class for M tokens: the class containing M, else the nearest class by M; null when there are none.
const CalibrationGemmClass* gemm_class_for(const Calibration& c, i64 m_tokens);
/// The achieved GEMM FLOP/s for M tokens: gemm_class_for's rate; 0 when there are no classes.
double gemm_flops_for(const Calibration& c, i64 m_tokens);

}  // namespace kvcap
