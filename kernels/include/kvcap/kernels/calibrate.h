// Calibration: run the microkernels over a sweep of shapes on one device, time them, fit the speed model and write
// calibration.yaml (docs/calibration-format.md). Standard library only in this header, so any C++ caller can use it.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "kvcap/kernels/decode_attention.h"

namespace kvcap::kernels {

enum class CalibrationMode { quick, full };

struct CalibrationOptions {
  std::string device = "cpu";  // "cpu" or "cuda:N"
  CalibrationMode mode = CalibrationMode::quick;
  int cpu_threads = 0;  // cpu only; <= 0: std::thread::hardware_concurrency()
  int repetitions = 0;  // timed repetitions per point (median taken); <= 0: 5 on cuda, 3 on cpu
  std::uint64_t seed = 0x6b7663617021ull;
};

// Reported before each measured point and once at the end (done == total).
struct CalibrationProgress {
  int done = 0;        // points finished
  int total = 0;       // points planned
  std::string stage;   // "stream" | "decode" | "gemm" | "prefill" | "fit" | "done"
  std::string label;   // the point being measured, for humans
};
using ProgressCallback = std::function<void(const CalibrationProgress&)>;

// Identity of the measured device. Fields that do not apply are 0 / empty and are not written.
struct DeviceInfo {
  std::string kind;  // "cuda" | "cpu"
  int ordinal = 0;
  std::string name;
  std::string compute_capability;  // "9.0" (cuda)
  std::uint64_t memory_bytes = 0;
  int multiprocessors = 0;  // cuda: SMs; cpu: hardware threads used
  int sm_clock_mhz = 0;
  int memory_clock_mhz = 0;
  int memory_bus_width_bits = 0;
  std::uint64_t l2_bytes = 0;  // cpu: last-level cache as sysconf reports it
  std::string driver_version;
  std::string runtime_version;
};

// One raw measurement. Shape fields that do not apply to the kernel are 0 / empty and are not written.
struct CalibrationPoint {
  std::string kernel;  // stream_read | stream_copy | decode_attention | gemm | prefill_attention | host_to_device |
                       // device_to_host
  std::string impl;    // gemm: cublas | mma | cpu
  std::string layout;  // decode: contiguous | paged
  std::string kv_dtype;  // decode: bf16 | fp16 | fp8
  int batch = 0, kv_len = 0, kv_heads = 0, q_heads = 0, head_dim = 0, head_dim_v = 0, block_size = 0;
  bool mla = false;
  std::int64_t m = 0, n = 0, k = 0;  // gemm
  int seq_len = 0;                   // prefill
  std::uint64_t chunk_bytes = 0;     // host_to_device / device_to_host: bytes per copy call (bytes = all of them)
  double bytes = 0;
  double flops = 0;
  double time_s = 0;  // median over repetitions
  bool holdout = false;  // decode: excluded from the fit, used to test it
};

struct GemmClass {
  std::int64_t m_min = 0, m_max = 0;
  double flops_per_s = 0;
  std::string impl;
};

struct DecodeVariantBandwidth {
  std::string layout, kv_dtype;
  int head_dim = 0;
  bool mla = false;
  double bandwidth_bytes_per_s = 0;
};

// Fit of t = t0 + bytes / bandwidth by weighted least squares (minimising relative residuals).
struct DecodeFit {
  double t0_s = 0;
  double bandwidth_bytes_per_s = 0;
  double fit_rms_relative_error = 0;
  double holdout_max_relative_error = 0;
  int fit_points = 0;
  int holdout_points = 0;
};

// Copies between pinned host memory and the device, one cudaMemcpyAsync per chunk, as vLLM's CPU KV offloading moves
// blocks: t(one copy of c bytes) = per_copy_s + c / bandwidth, fitted over the chunk sizes like the decode model.
struct HostLinkFit {
  double per_copy_s = 0;
  double bandwidth_bytes_per_s = 0;
  double fit_rms_relative_error = 0;
  int points = 0;  // 0: not measured (the CPU has no host link)
};

// What a calibration's numbers rest on: the self-tests of the measured device's kernels against their references,
// run before the sweep (CPU twins always; the CUDA kernels too on cuda:N).
struct SelftestCounts {
  int passed = 0;
  int failed = 0;
  std::string first_failure;  // "check name: detail" of the first failed check; empty when none failed
};

// The identity of the kernel build that measured (compile definitions set by kernels/CMakeLists.txt at configure time).
struct KernelBuildInfo {
  std::string commit;              // git commit of the source tree ("+dirty" with local changes), "unknown" outside git
  std::string cxx_compiler;        // e.g. "GNU 12.2.0"
  std::string cuda_compiler;       // e.g. "NVIDIA 13.0.88"; empty in CPU-only builds
  std::string cuda_architectures;  // CMAKE_CUDA_ARCHITECTURES, e.g. "90"; empty in CPU-only builds
};
KernelBuildInfo kernel_build_info();

struct CalibrationResult {
  DeviceInfo device;
  KernelBuildInfo build;
  SelftestCounts selftest;
  std::string mode;  // quick | full
  std::string date_utc;  // ISO-8601, e.g. 2026-11-21T06:30:00Z
  std::string host;
  double stream_read_bytes_per_s = 0;
  double stream_copy_bytes_per_s = 0;  // counts read + write bytes
  std::uint64_t stream_buffer_bytes = 0;
  DecodeFit decode;
  std::vector<DecodeVariantBandwidth> decode_by_variant;
  std::vector<GemmClass> gemm_classes;
  double prefill_flops_per_s = 0;
  bool prefill_tensor_cores = false;  // the prefill kernel ran on tensor cores (kvcap's runs on CUDA cores / the CPU)
  HostLinkFit host_to_device, device_to_host;  // cuda only
  std::vector<CalibrationPoint> points;
  std::vector<std::pair<std::string, double>> ratios;  // decode_vs_stream, mma_gemm_vs_cublas, ...
  double wall_s = 0;  // how long the calibration took
};

// Runs the sweep and the fits. Throws std::runtime_error with a message on failure, e.g. "cuda:0: kvcap-kernels was
// built without CUDA", an unknown device string, or a CUDA error (with the call that failed).
CalibrationResult run_calibration(const CalibrationOptions& options, const ProgressCallback& progress = {});

// Extra content for the YAML writer (the CLI adds the GPU profile's datasheet figures and *_vs_datasheet ratios).
using YamlScalar = std::variant<std::int64_t, double, std::string, bool>;
struct YamlBlock {
  std::string key;  // top-level key, e.g. "datasheet"
  std::vector<std::pair<std::string, YamlScalar>> values;
};
struct YamlExtras {
  std::vector<YamlBlock> blocks;                        // written after `ratios`
  std::vector<std::pair<std::string, double>> ratios;  // appended to the `ratios` mapping
};

// The GPU's datasheet figures (kvcap's GPU profile), to judge the measurements against.
struct Datasheet {
  std::string gpu;                          // profile name, e.g. "h100-sxm"
  double memory_bandwidth_bytes_per_s = 0;  // datasheet memory bandwidth
  double bf16_dense_flops = 0;              // dense bf16 tensor FLOP/s
};
// The datasheet block and the *_vs_datasheet ratios for write_calibration_yaml.
YamlExtras datasheet_extras(const CalibrationResult& r, const Datasheet& d);

// One performance target of docs/kernels.md judged on a calibration: met, missed, or not measurable here.
struct TargetVerdict {
  std::string name;      // e.g. "stream read >= 90% of datasheet"
  std::string measured;  // e.g. "92.0% (3.081 TB/s of 3.350)"
  enum class Status { met, missed, not_measured } status = Status::not_measured;
};
// The targets: self-tests all pass; stream read >= 90% of datasheet; reference decode >= 90% of stream read;
// paged >= 90% of contiguous; fp8 KV >= 1.5x bf16 decode speed; WMMA GEMM >= 60% of cuBLAS; cuBLAS >= 75% of
// dense bf16 at M >= 2049; decode fit held-out error <= 10%. GPU targets are not_measured on a CPU calibration.
std::vector<TargetVerdict> evaluate_targets(const CalibrationResult& r, const Datasheet* datasheet);
// A human report: device, build, self-tests, achieved vs datasheet figures, per-kernel efficiency and the verdicts.
void write_calibration_report(std::ostream& out, const CalibrationResult& r, const Datasheet* datasheet);

// Writes calibration.yaml (format version 1). Numbers use %.9g; integers are exact.
void write_calibration_yaml(std::ostream& out, const CalibrationResult& result, const YamlExtras& extras = {});
// Same, to a file; throws std::runtime_error if the file cannot be written.
void write_calibration_yaml_file(const std::string& path, const CalibrationResult& result,
                                 const YamlExtras& extras = {});

// Times one decode shape on options.device (median of options.repetitions runs after a warm-up, data rotated out
// of the cache as in the sweep): for exploring a kernel at a shape the sweep does not hold, and for profilers.
double time_decode_shape(const CalibrationOptions& options, const DecodeShape& shape);

// Fits t = t0 + bytes / bandwidth over the decode points with holdout == false and scores the holdout ones.
// Exposed for tests. Needs at least two fit points with distinct byte counts.
DecodeFit fit_decode_model(const std::vector<CalibrationPoint>& points);
// Fits t(copy) = per_copy_s + chunk_bytes / bandwidth over the points of one direction ("host_to_device" or
// "device_to_host"), each point's time divided by its number of copies. Exposed for tests; needs two chunk sizes.
HostLinkFit fit_host_link(const std::vector<CalibrationPoint>& points, const std::string& kernel);

// True when this build contains the CUDA kernels.
bool built_with_cuda();

// Self-tests: CPU twins vs naive references (run_cpu_selftests) and CUDA kernels vs CPU twins (run_gpu_selftests),
// over randomised shapes. They print one line per check and "N passed, N failed". Return 0 on success, 1 on failure;
// run_gpu_selftests returns 77 when no CUDA device (or no CUDA build) is available.
// With `counts`, the tallies and the first failure are stored there too.
int run_cpu_selftests(std::ostream& log, std::uint64_t seed = 1, SelftestCounts* counts = nullptr);
int run_gpu_selftests(std::ostream& log, int device_ordinal = 0, std::uint64_t seed = 1,
                      SelftestCounts* counts = nullptr);

// The CPU self-tests one family at a time, for test frameworks (tests/kernels): the same checks run_cpu_selftests
// makes, with a random stream of the family's own from `seed`. Failures are logged to `log`, one line each.
// In run order: "numeric", "decode", "decode_emulation", "gemm", "prefill_emulation", "prefill", "stream", "fit".
const std::vector<std::string>& cpu_selftest_families();
// Throws std::invalid_argument for a name not in cpu_selftest_families().
SelftestCounts run_cpu_selftest(const std::string& family, std::ostream& log, std::uint64_t seed = 1);

}  // namespace kvcap::kernels
