// Judging a calibration: the datasheet block for calibration.yaml, the performance targets of docs/kernels.md, and
// the human report that `kvcap calibrate`, `kvcap-kernels calibrate` and scripts/gpu-check.sh print.
#include <cstdio>
#include <ostream>
#include <string>
#include <utility>

#include "kvcap/kernels/calibrate.h"

namespace kvcap::kernels {

namespace {

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

double ratio(const CalibrationResult& r, const std::string& key) {
  for (const auto& [k, v] : r.ratios) {
    if (k == key) return v;
  }
  return 0;
}

// Bandwidth of the reference decode variant (paged bf16, d = 128) at its largest point.
double reference_decode(const CalibrationResult& r) {
  for (const auto& v : r.decode_by_variant) {
    if (v.layout == "paged" && v.kv_dtype == "bf16" && v.head_dim == 128 && !v.mla) return v.bandwidth_bytes_per_s;
  }
  return 0;
}

// A ratio target: met when value >= target; not measured when the run has no value (0).
TargetVerdict judge(std::string name, double value, double target, std::string measured) {
  TargetVerdict t{std::move(name), value > 0 ? std::move(measured) : "not measured in this run",
                  TargetVerdict::Status::not_measured};
  if (value > 0) t.status = value >= target ? TargetVerdict::Status::met : TargetVerdict::Status::missed;
  return t;
}

}  // namespace

YamlExtras datasheet_extras(const CalibrationResult& r, const Datasheet& d) {
  YamlExtras e;
  e.blocks.push_back({"datasheet",
                      {{"gpu", d.gpu},
                       {"memory_bandwidth_bytes_per_s", d.memory_bandwidth_bytes_per_s},
                       {"bf16_dense_flops", d.bf16_dense_flops}}});
  if (d.memory_bandwidth_bytes_per_s > 0) {
    e.ratios.push_back({"stream_vs_datasheet", r.stream_read_bytes_per_s / d.memory_bandwidth_bytes_per_s});
    e.ratios.push_back({"decode_vs_datasheet", r.decode.bandwidth_bytes_per_s / d.memory_bandwidth_bytes_per_s});
  }
  if (d.bf16_dense_flops > 0 && !r.gemm_classes.empty())
    e.ratios.push_back({"gemm_vs_datasheet_bf16", r.gemm_classes.back().flops_per_s / d.bf16_dense_flops});
  return e;
}

std::vector<TargetVerdict> evaluate_targets(const CalibrationResult& r, const Datasheet* ds) {
  using S = TargetVerdict::Status;
  std::vector<TargetVerdict> v;
  const bool cuda = r.device.kind == "cuda";
  {
    TargetVerdict t{"self-tests: every kernel matches its reference",
                    std::to_string(r.selftest.passed) + " passed, " + std::to_string(r.selftest.failed) + " failed" +
                        (r.selftest.first_failure.empty() ? "" : " (first: " + r.selftest.first_failure + ")"),
                    r.selftest.failed == 0 && r.selftest.passed > 0 ? S::met : S::missed};
    v.push_back(t);
  }
  const auto gpu_only = [&](TargetVerdict t) {
    if (!cuda) {
      t.status = S::not_measured;
      t.measured = "GPU target (this is a " + r.device.kind + " calibration)";
    }
    v.push_back(std::move(t));
  };
  const double bw = ds ? ds->memory_bandwidth_bytes_per_s : 0;
  gpu_only(bw > 0 ? judge("stream read >= 90% of datasheet bandwidth", r.stream_read_bytes_per_s / bw, 0.90,
                          fmt("%.1f%% (%.3f of %.3f TB/s)", 100 * r.stream_read_bytes_per_s / bw,
                              r.stream_read_bytes_per_s / 1e12, bw / 1e12))
                  : TargetVerdict{"stream read >= 90% of datasheet bandwidth", "no datasheet (give the GPU profile)",
                                  S::not_measured});
  const double dec = reference_decode(r);
  gpu_only(judge("decode (paged bf16, d 128, largest point) >= 90% of stream read",
                 r.stream_read_bytes_per_s > 0 ? dec / r.stream_read_bytes_per_s : 0, 0.90,
                 r.stream_read_bytes_per_s > 0
                     ? fmt("%.1f%% (%.3f TB/s)", 100 * dec / r.stream_read_bytes_per_s, dec / 1e12)
                     : ""));
  const double pvc = ratio(r, "paged_vs_contiguous");
  gpu_only(judge("paged >= 90% of contiguous decode speed", pvc, 0.90, fmt("%.1f%%", 100 * pvc)));
  const double f8 = ratio(r, "fp8_vs_bf16_decode_speedup");
  gpu_only(judge("fp8 KV decode >= 1.5x bf16 speed", f8, 1.5, fmt("%.2fx", f8)));
  const double mma = ratio(r, "mma_gemm_vs_cublas");
  gpu_only(judge("WMMA GEMM >= 60% of cuBLAS (M >= 1024)", mma, 0.60, fmt("%.1f%%", 100 * mma)));
  const double peak = ds ? ds->bf16_dense_flops : 0;
  const double big = r.gemm_classes.empty() ? 0 : r.gemm_classes.back().flops_per_s;
  gpu_only(peak > 0 ? judge("cuBLAS >= 75% of dense bf16 peak (M >= 2049)", big / peak, 0.75,
                            fmt("%.1f%% (%.0f of %.0f TFLOP/s)", 100 * big / peak, big / 1e12, peak / 1e12))
                    : TargetVerdict{"cuBLAS >= 75% of dense bf16 peak (M >= 2049)",
                                    "no datasheet (give the GPU profile)", S::not_measured});
  {
    TargetVerdict t{"decode fit: held-out points within 10%",
                    fmt("%.1f%% max over %.0f points (fit rms %.1f%%)", 100 * r.decode.holdout_max_relative_error,
                        r.decode.holdout_points, 100 * r.decode.fit_rms_relative_error),
                    S::not_measured};
    if (r.decode.holdout_points > 0) t.status = r.decode.holdout_max_relative_error <= 0.10 ? S::met : S::missed;
    gpu_only(t);
  }
  return v;
}

void write_calibration_report(std::ostream& o, const CalibrationResult& r, const Datasheet* ds) {
  o << "device: " << r.device.name << " (" << r.device.kind;
  if (!r.device.compute_capability.empty()) o << ", compute capability " << r.device.compute_capability;
  o << "), " << r.mode << " sweep, " << fmt("%.1f s", r.wall_s) << ", " << r.date_utc << "\n";
  o << "build: commit " << r.build.commit << ", " << r.build.cxx_compiler;
  if (!r.build.cuda_compiler.empty()) o << ", " << r.build.cuda_compiler << " for sm_" << r.build.cuda_architectures;
  o << "\n";
  const double stream = r.stream_read_bytes_per_s;
  const double bw = ds ? ds->memory_bandwidth_bytes_per_s : 0;
  o << fmt("stream read   %9.1f GB/s", stream / 1e9)
    << (bw > 0 ? fmt("   %.1f%% of datasheet %.0f GB/s", 100 * stream / bw, bw / 1e9) : "") << "\n";
  o << fmt("stream copy   %9.1f GB/s   %.3f x read (read + write bytes)\n", r.stream_copy_bytes_per_s / 1e9,
           stream > 0 ? r.stream_copy_bytes_per_s / stream : 0);
  o << fmt("decode fit    %9.1f GB/s   t0 %.1f us", r.decode.bandwidth_bytes_per_s / 1e9, r.decode.t0_s * 1e6)
    << fmt("   fit rms %.1f%%, held-out max %.1f%%\n", 100 * r.decode.fit_rms_relative_error,
           100 * r.decode.holdout_max_relative_error);
  for (const auto& v : r.decode_by_variant) {
    char line[200];
    std::snprintf(line, sizeof line, "  decode %-10s %-4s d%-3d%s %9.1f GB/s   %.1f%% of stream read\n",
                  v.layout.c_str(), v.kv_dtype.c_str(), v.head_dim, v.mla ? " mla" : "    ",
                  v.bandwidth_bytes_per_s / 1e9, stream > 0 ? 100 * v.bandwidth_bytes_per_s / stream : 0);
    o << line;
  }
  const double peak = ds ? ds->bf16_dense_flops : 0;
  for (const auto& c : r.gemm_classes) {
    char line[200];
    const std::string range = c.m_max >= 1000000000 ? ">= " + std::to_string(c.m_min)
                                                    : std::to_string(c.m_min) + "-" + std::to_string(c.m_max);
    std::snprintf(line, sizeof line, "gemm %-6s M %-10s %9.3f TFLOP/s", c.impl.c_str(), range.c_str(),
                  c.flops_per_s / 1e12);
    o << line << (peak > 0 ? fmt("   %.1f%% of dense bf16 %.0f", 100 * c.flops_per_s / peak, peak / 1e12) : "") << "\n";
  }
  o << fmt("prefill attention %.3f TFLOP/s", r.prefill_flops_per_s / 1e12)
    << (r.prefill_tensor_cores ? " (tensor cores" : " (CPU twin") << ", causal, largest prompt)\n";
  const std::pair<const char*, const HostLinkFit*> links[] = {{"host to device", &r.host_to_device},
                                                              {"device to host", &r.device_to_host}};
  for (const auto& [name, f] : links) {
    if (f->points == 0) continue;
    char line[200];
    std::snprintf(line, sizeof line, "%s %8.1f GB/s + %.1f us per copy (pinned, %d chunk sizes, fit rms %.1f%%)\n",
                  name, f->bandwidth_bytes_per_s / 1e9, f->per_copy_s * 1e6, f->points,
                  100 * f->fit_rms_relative_error);
    o << line;
  }
  for (const auto& [k, v] : r.ratios) {
    char line[160];
    std::snprintf(line, sizeof line, "ratio %-28s %.3f\n", k.c_str(), v);
    o << line;
  }
  const auto verdicts = evaluate_targets(r, ds);
  int met = 0, judged = 0;
  o << "targets (docs/kernels.md):\n";
  for (const auto& t : verdicts) {
    const char* tag = t.status == TargetVerdict::Status::met      ? "MET   "
                      : t.status == TargetVerdict::Status::missed ? "MISSED"
                                                                  : "n/a   ";
    o << "  " << tag << " " << t.name << ": " << t.measured << "\n";
    if (t.status != TargetVerdict::Status::not_measured) ++judged;
    if (t.status == TargetVerdict::Status::met) ++met;
  }
  o << "verdict: " << met << " of " << judged << " measurable targets met"
    << (r.selftest.failed > 0 ? "; SELF-TESTS FAILED: this calibration must not be used" : "") << "\n";
}

}  // namespace kvcap::kernels
