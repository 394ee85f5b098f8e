// calibration.yaml (docs/calibration-format.md, written by kernels/src/yaml_writer.cpp) -> the planner's
// Calibration. Only the fitted blocks feed the speed model; device identity, raw points and ratios are
// checked for shape (so a corrupt file is caught) but otherwise kept for people.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "kvcap/planner/error.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "reader.hpp"

namespace kvcap::profiles {
using namespace detail;

namespace {
constexpr std::int64_t kFormatVersion = 1;
// Generous physical bounds: no device reads more than 1 PB/s or computes more than 1e18 FLOP/s.
constexpr double kMaxBandwidth = 1e15;
constexpr double kMaxFlops = 1e18;
// Nor does a device that kvcap times read below 0.1 GB/s or compute below 1 GFLOP/s (a CPU core does more): such a
// figure is a corrupt file, and it would make every step last for hours. 0 is "not measured".
constexpr double kMinBandwidth = 1e8;
constexpr double kMinFlops = 1e9;

/// A measured rate: 0 (not measured) or within [lo, hi].
std::optional<double> rate(Ctx& c, const YAML::Node& map, const std::string& path, const char* key, bool required,
                           double lo, double hi) {
  auto v = get_number(c, map, path, key, required, 0, hi);
  if (v && *v > 0 && *v < lo) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "expected 0 (not measured) or at least %g, got %g", lo, *v);
    c.error(map[key], join(path, key), buf);
    return std::nullopt;
  }
  return v;
}

const std::vector<std::string> kTop = {
    "kvcap_calibration", "device",    "build",  "selftest", "date",     "mode", "host", "stream", "decode", "gemm",
    "prefill_attention", "host_link", "points", "ratios",   "datasheet"};
const std::vector<std::string> kDevice = {"kind", "name", "compute_capability", "memory_bytes", "multiprocessors",
                                          "sm_clock_mhz", "memory_clock_mhz", "memory_bus_width_bits", "l2_bytes",
                                          "driver_version", "runtime_version"};

// points: raw measurements (docs/calibration-format.md "points"): a kernel kvcap knows, a positive finite
// time, non-negative sizes, and only the keys of that kernel. A corrupt list is an error, not ignored.
const std::vector<std::string> kPointKernels = {"stream_read",       "stream_copy",    "decode_attention", "gemm",
                                                "prefill_attention", "host_to_device", "device_to_host"};
const std::vector<std::string> kPointKeys = {"kernel", "bytes",      "flops",      "time_s",  "layout",   "kv_dtype",
                                             "batch",  "kv_len",     "kv_heads",   "q_heads", "head_dim", "head_dim_v",
                                             "mla",    "block_size", "holdout",    "impl",    "m",        "n",
                                             "k",      "seq_len",    "chunk_bytes"};
const std::vector<const char*> kPointCounts = {"batch",    "kv_len",     "kv_heads",   "q_heads",
                                               "head_dim", "head_dim_v", "block_size", "m",
                                               "n",        "k",          "seq_len",    "chunk_bytes"};

void check_points(Ctx& c, const YAML::Node& root) {
  const YAML::Node pts = root["points"];
  if (!pts) return;
  if (!pts.IsSequence()) {
    c.error(pts, "points", "expected a list of measurements");
    return;
  }
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const std::string path = "points[" + std::to_string(i) + "]";
    const YAML::Node p = pts[i];
    if (!p.IsMap()) {
      c.error(p, path, "expected a mapping {kernel, bytes, time_s, ...}");
      continue;
    }
    check_keys(c, p, path, kPointKeys);
    if (auto k = get_string(c, p, path, "kernel", true);
        k && std::find(kPointKernels.begin(), kPointKernels.end(), *k) == kPointKernels.end())
      c.error(p["kernel"], path + ".kernel",
              "unknown kernel '" + *k +
                  "'; expected stream_read, stream_copy, decode_attention, gemm, prefill_attention, host_to_device "
                  "or device_to_host");
    get_number(c, p, path, "time_s", true, 1e-12, 1e6);
    get_number(c, p, path, "bytes", false, 0, 1e18);
    get_number(c, p, path, "flops", false, 0, 1e21);
    for (const char* key : kPointCounts) get_int(c, p, path, key, false, 0, std::int64_t{1} << 40);
    get_bool(c, p, path, "mla", false);
    get_bool(c, p, path, "holdout", false);
  }
}

// host_link: the pinned copy fits per direction (kernels/src/yaml_writer.cpp).
void read_host_link(Ctx& c, const YAML::Node& root, Calibration& cal) {
  const YAML::Node h = get_map(c, root, "", "host_link", false);
  if (!h) return;
  check_keys(c, h, "host_link", {"pinned", "host_to_device", "device_to_host"});
  get_bool(c, h, "host_link", "pinned", false);
  for (auto [key, dst] :
       {std::pair{"host_to_device", &cal.host_to_device}, std::pair{"device_to_host", &cal.device_to_host}}) {
    const std::string path = std::string("host_link.") + key;
    const YAML::Node d = get_map(c, h, "host_link", key, false);
    if (!d) continue;
    check_keys(c, d, path, {"per_copy_s", "bandwidth_bytes_per_s", "fit_rms_relative_error", "points"});
    if (auto v = get_number(c, d, path, "per_copy_s", true, 0, 1.0)) dst->per_copy_s = *v;
    if (auto v = get_number(c, d, path, "bandwidth_bytes_per_s", true, 0, kMaxBandwidth))
      dst->bandwidth_bytes_per_s = *v;
    get_number(c, d, path, "fit_rms_relative_error", false, 0, 1e6);
    get_int(c, d, path, "points", false, 0, std::int64_t{1} << 40);
  }
}

Calibration read(Ctx& c, const YAML::Node& root) {
  Calibration cal;
  if (!root.IsMap()) {
    c.error(root, "", "expected a calibration file (a mapping starting with 'kvcap_calibration: 1')");
    return cal;
  }
  check_keys(c, root, "", kTop);
  if (auto v = get_int(c, root, "", "kvcap_calibration", true, 0); v && *v != kFormatVersion)
    c.error(root["kvcap_calibration"], "kvcap_calibration",
            "format version " + std::to_string(*v) + " is not supported; expected " + std::to_string(kFormatVersion));

  const YAML::Node dev = get_map(c, root, "", "device", true);
  std::string kind, name;
  if (dev) {
    check_keys(c, dev, "device", kDevice);
    auto k = get_string(c, dev, "device", "kind", true);
    if (k && *k != "cuda" && *k != "cpu") c.error(dev["kind"], "device.kind", "expected 'cuda' or 'cpu', got '" + *k + "'");
    if (k) kind = *k;
    if (auto n = get_string(c, dev, "device", "name", true)) name = *n;
    if (auto mem = get_int(c, dev, "device", "memory_bytes", false, 1)) cal.device_memory_bytes = static_cast<u64>(*mem);
  }
  cal.device = name;
  cal.device_kind = kind;
  const auto date = get_string(c, root, "", "date", false);
  const auto host = get_string(c, root, "", "host", false);
  const auto mode = get_string(c, root, "", "mode", false);
  cal.source = "kvcap calibrate (" + (kind.empty() ? std::string("?") : kind) + (mode ? ", " + *mode : "") +
               (date ? ", " + *date : "") + (host ? ", " + *host : "") + ")";

  if (const YAML::Node s = get_map(c, root, "", "stream", false)) {
    check_keys(c, s, "stream", {"read_bytes_per_s", "copy_bytes_per_s", "buffer_bytes"});
    if (auto v = rate(c, s, "stream", "read_bytes_per_s", false, kMinBandwidth, kMaxBandwidth))
      cal.stream.read_bytes_per_s = *v;
    rate(c, s, "stream", "copy_bytes_per_s", false, kMinBandwidth, kMaxBandwidth);
  }
  if (const YAML::Node d = get_map(c, root, "", "decode", false)) {
    check_keys(c, d, "decode",
               {"t0_s", "bandwidth_bytes_per_s", "fit_rms_relative_error", "holdout_max_relative_error",
                "holdout_points", "by_variant"});
    if (auto v = get_number(c, d, "decode", "t0_s", true, 0, 1.0)) cal.decode.t0_s = *v;
    if (auto v = rate(c, d, "decode", "bandwidth_bytes_per_s", true, kMinBandwidth, kMaxBandwidth))
      cal.decode.bandwidth_bytes_per_s = *v;
  }
  if (const YAML::Node g = get_map(c, root, "", "gemm", false)) {
    const YAML::Node classes = g["classes"];
    if (classes && !classes.IsSequence()) {
      c.error(classes, "gemm.classes", "expected a list of {m_min, m_max, flops_per_s}");
    } else if (classes) {
      for (std::size_t i = 0; i < classes.size(); ++i) {
        const std::string path = "gemm.classes[" + std::to_string(i) + "]";
        const YAML::Node e = classes[i];
        if (!e.IsMap()) {
          c.error(e, path, "expected a mapping {m_min, m_max, flops_per_s}");
          continue;
        }
        check_keys(c, e, path, {"m_min", "m_max", "flops_per_s", "impl"});
        auto lo = get_int(c, e, path, "m_min", true, 1);
        auto hi = get_int(c, e, path, "m_max", true, 1);
        auto f = rate(c, e, path, "flops_per_s", true, kMinFlops, kMaxFlops);
        if (lo && hi && *hi < *lo)
          c.error(e["m_max"], path + ".m_max", "expected m_max >= m_min (" + std::to_string(*lo) + ")");
        else if (lo && hi && f)
          cal.gemm.push_back({*lo, *hi, *f});
      }
    }
  }
  if (const YAML::Node p = get_map(c, root, "", "prefill_attention", false)) {
    check_keys(c, p, "prefill_attention", {"flops_per_s", "tensor_cores"});
    if (auto v = rate(c, p, "prefill_attention", "flops_per_s", true, kMinFlops, kMaxFlops))
      cal.prefill_attention.flops_per_s = *v;
    if (auto v = get_bool(c, p, "prefill_attention", "tensor_cores", false)) cal.prefill_attention.tensor_cores = *v;
  }
  read_host_link(c, root, cal);
  // The build that measured, and the self-tests it ran on the device before the sweep (kernels/src/calibrate.cpp).
  // A calibration whose kernels failed their self-tests timed kernels that compute something else: refused.
  if (const YAML::Node b = get_map(c, root, "", "build", false)) {
    check_keys(c, b, "build", {"commit", "cxx_compiler", "cuda_compiler", "cuda_architectures"});
    for (const char* k : {"commit", "cxx_compiler", "cuda_compiler", "cuda_architectures"})
      get_string(c, b, "build", k, false);
  }
  if (const YAML::Node st = get_map(c, root, "", "selftest", false)) {
    check_keys(c, st, "selftest", {"passed", "failed", "first_failure"});
    get_int(c, st, "selftest", "passed", true, 0, std::int64_t{1} << 40);
    const auto failed = get_int(c, st, "selftest", "failed", true, 0, std::int64_t{1} << 40);
    const auto first = get_string(c, st, "selftest", "first_failure", false);
    if (failed && *failed > 0)
      c.error(st["failed"], "selftest.failed",
              std::to_string(*failed) + " kernel self-test(s) failed on the measured device" +
                  (first ? " (first: " + *first + ")" : "") +
                  "; its timings measure kernels that compute the wrong thing, so kvcap will not use this calibration. "
                  "Fix the kernels (scripts/gpu-check.sh names the kernel and shape) and calibrate again");
    cal.selftests_passed = failed && *failed == 0;
  }
  check_points(c, root);
  if (cal.decode.bandwidth_bytes_per_s == 0 && cal.stream.read_bytes_per_s == 0 && cal.gemm.empty())
    c.error(root, "", "no fitted figures: expected at least one of stream, decode, gemm");
  return cal;
}
}  // namespace

Calibration parse_calibration(const std::string& text, const std::string& file) {
  Ctx c{file, {}};
  const YAML::Node root = parse_text(c, text);
  c.throw_if_any();
  Calibration cal = read(c, root);
  c.throw_if_any();
  try {
    validate(cal);
  } catch (const SpecError& e) {
    // Fields are named "calibration.decode.t0_s"; the file's keys start below "calibration".
    const std::string prefix = "calibration.";
    const std::string field = e.field().rfind(prefix, 0) == 0 ? e.field().substr(prefix.size()) : e.field();
    error_at_field(c, root, field, e.reason());
    c.throw_if_any();
  }
  return cal;
}

Calibration load_calibration_file(const std::string& path) {
  return load_with(path, parse_calibration);
}

}  // namespace kvcap::profiles
