// A small hand-written YAML emitter for calibration.yaml (block mappings, flow-style point lines).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>

#include "kvcap/kernels/calibrate.h"

namespace kvcap::kernels {

namespace {

// Integral doubles exactly; others with 9 significant digits; always readable as a float by YAML 1.1 and 1.2 parsers ("1e+10" -> "1.0e+10").
std::string num(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {  // integral (byte and FLOP counts): exact
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  const auto e = s.find('e');
  if (e != std::string::npos && s.find('.') == std::string::npos) s.insert(e, ".0");
  return s;
}

std::string quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          o += b;
        } else {
          o += c;
        }
    }
  }
  return o + "\"";
}

std::string scalar(const YamlScalar& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return num(*d);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return quote(std::get<std::string>(v));
}

std::string point_line(const CalibrationPoint& p) {
  std::string s = "{kernel: " + p.kernel;
  const auto kv = [&](const char* k, const std::string& v) { s += std::string(", ") + k + ": " + v; };
  const auto ki = [&](const char* k, std::int64_t v) { kv(k, std::to_string(v)); };
  if (p.kernel == "decode_attention") {
    kv("layout", p.layout);
    kv("kv_dtype", p.kv_dtype);
    ki("batch", p.batch);
    ki("kv_len", p.kv_len);
    ki("kv_heads", p.kv_heads);
    ki("q_heads", p.q_heads);
    ki("head_dim", p.head_dim);
    if (p.mla) {
      ki("head_dim_v", p.head_dim_v);
      kv("mla", "true");
    }
    if (p.block_size > 0) ki("block_size", p.block_size);
  } else if (p.kernel == "gemm") {
    kv("impl", p.impl);
    ki("m", p.m);
    ki("n", p.n);
    ki("k", p.k);
  } else if (p.kernel == "host_to_device" || p.kernel == "device_to_host") {
    ki("chunk_bytes", static_cast<std::int64_t>(p.chunk_bytes));
  } else if (p.kernel == "prefill_attention") {
    ki("seq_len", p.seq_len);
    ki("q_heads", p.q_heads);
    ki("kv_heads", p.kv_heads);
    ki("head_dim", p.head_dim);
  }
  kv("bytes", num(p.bytes));
  if (p.kernel == "decode_attention" || p.kernel == "gemm" || p.kernel == "prefill_attention")
    kv("flops", num(p.flops));
  kv("time_s", num(p.time_s));
  if (p.kernel == "decode_attention") kv("holdout", p.holdout ? "true" : "false");
  return s + "}";
}

}  // namespace

void write_calibration_yaml(std::ostream& o, const CalibrationResult& r, const YamlExtras& extras) {
  const DeviceInfo& d = r.device;
  const bool cuda = d.kind == "cuda";
  o << "kvcap_calibration: 1\n";
  o << "device:\n";
  o << "  kind: " << d.kind << "\n";
  o << "  name: " << quote(d.name) << "\n";
  if (cuda) o << "  compute_capability: " << quote(d.compute_capability) << "\n";
  o << "  memory_bytes: " << d.memory_bytes << "\n";
  o << "  multiprocessors: " << d.multiprocessors << "\n";
  if (d.sm_clock_mhz > 0) o << "  sm_clock_mhz: " << d.sm_clock_mhz << "\n";
  if (d.memory_clock_mhz > 0) o << "  memory_clock_mhz: " << d.memory_clock_mhz << "\n";
  if (d.memory_bus_width_bits > 0) o << "  memory_bus_width_bits: " << d.memory_bus_width_bits << "\n";
  if (d.l2_bytes > 0) o << "  l2_bytes: " << d.l2_bytes << "\n";
  if (!d.driver_version.empty()) o << "  driver_version: " << quote(d.driver_version) << "\n";
  if (!d.runtime_version.empty()) o << "  runtime_version: " << quote(d.runtime_version) << "\n";
  o << "build:\n";
  o << "  commit: " << quote(r.build.commit) << "\n";
  o << "  cxx_compiler: " << quote(r.build.cxx_compiler) << "\n";
  if (!r.build.cuda_compiler.empty()) o << "  cuda_compiler: " << quote(r.build.cuda_compiler) << "\n";
  if (!r.build.cuda_architectures.empty()) o << "  cuda_architectures: " << quote(r.build.cuda_architectures) << "\n";
  o << "selftest:\n";
  o << "  passed: " << r.selftest.passed << "\n";
  o << "  failed: " << r.selftest.failed << "\n";
  if (!r.selftest.first_failure.empty()) o << "  first_failure: " << quote(r.selftest.first_failure) << "\n";
  o << "date: " << quote(r.date_utc) << "\n";
  o << "mode: " << r.mode << "\n";
  o << "host: " << quote(r.host) << "\n";
  o << "stream:\n";
  o << "  read_bytes_per_s: " << num(r.stream_read_bytes_per_s) << "\n";
  o << "  copy_bytes_per_s: " << num(r.stream_copy_bytes_per_s) << "\n";
  o << "  buffer_bytes: " << r.stream_buffer_bytes << "\n";
  o << "decode:\n";
  o << "  t0_s: " << num(r.decode.t0_s) << "\n";
  o << "  bandwidth_bytes_per_s: " << num(r.decode.bandwidth_bytes_per_s) << "\n";
  o << "  fit_rms_relative_error: " << num(r.decode.fit_rms_relative_error) << "\n";
  o << "  holdout_max_relative_error: " << num(r.decode.holdout_max_relative_error) << "\n";
  o << "  holdout_points: " << r.decode.holdout_points << "\n";
  if (!r.decode_by_variant.empty()) {
    o << "  by_variant:\n";
    for (const auto& v : r.decode_by_variant) {
      o << "    - {layout: " << v.layout << ", kv_dtype: " << v.kv_dtype << ", head_dim: " << v.head_dim
        << (v.mla ? ", mla: true" : "") << ", bandwidth_bytes_per_s: " << num(v.bandwidth_bytes_per_s) << "}\n";
    }
  }
  o << "gemm:\n";
  o << "  classes:\n";
  for (const auto& c : r.gemm_classes) {
    o << "    - {m_min: " << c.m_min << ", m_max: " << c.m_max << ", flops_per_s: " << num(c.flops_per_s)
      << ", impl: " << c.impl << "}\n";
  }
  o << "prefill_attention:\n";
  o << "  flops_per_s: " << num(r.prefill_flops_per_s) << "\n";
  o << "  tensor_cores: " << (r.prefill_tensor_cores ? "true" : "false") << "\n";
  if (r.host_to_device.points > 0 || r.device_to_host.points > 0) {
    o << "host_link:\n";
    o << "  pinned: true\n";
    const std::pair<const char*, const HostLinkFit*> links[] = {{"host_to_device", &r.host_to_device},
                                                                {"device_to_host", &r.device_to_host}};
    for (const auto& [key, f] : links) {
      if (f->points == 0) continue;
      o << "  " << key << ": {per_copy_s: " << num(f->per_copy_s)
        << ", bandwidth_bytes_per_s: " << num(f->bandwidth_bytes_per_s)
        << ", fit_rms_relative_error: " << num(f->fit_rms_relative_error) << ", points: " << f->points << "}\n";
    }
  }
  o << "points:\n";
  for (const auto& p : r.points) o << "  - " << point_line(p) << "\n";
  o << "ratios:\n";
  for (const auto& [k, v] : r.ratios) o << "  " << k << ": " << num(v) << "\n";
  for (const auto& [k, v] : extras.ratios) o << "  " << k << ": " << num(v) << "\n";
  for (const auto& b : extras.blocks) {
    o << b.key << ":\n";
    for (const auto& [k, v] : b.values) o << "  " << k << ": " << scalar(v) << "\n";
  }
}

void write_calibration_yaml_file(const std::string& path, const CalibrationResult& r, const YamlExtras& extras) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot open '" + path + "' for writing");
  write_calibration_yaml(f, r, extras);
  f.flush();
  if (!f) throw std::runtime_error("failed writing '" + path + "'");
}

}  // namespace kvcap::kernels
