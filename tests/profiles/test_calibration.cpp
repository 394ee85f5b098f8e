// calibration.yaml -> Calibration (profiles/src/calibration.cpp), and its effect on the speed model.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/plausibility.hpp"
#include "kvcap/planner/speed.hpp"
#include "kvcap/profiles/profiles.hpp"
#ifdef KVCAP_HAVE_KERNELS
#include "kvcap/kernels/calibrate.h"
#endif

using namespace kvcap;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
const std::string kExample = std::string(KVCAP_TEST_DATA) + "/calibration-example.yaml";

// The first diagnostic of a bad calibration text.
profiles::Diagnostic first_error(const std::string& text) {
  try {
    profiles::parse_calibration(text, "cal.yaml");
  } catch (const profiles::ProfileError& e) {
    REQUIRE(!e.diagnostics().empty());
    return e.diagnostics().front();
  }
  FAIL("expected a ProfileError for:\n" << text);
  return {};
}
}  // namespace

TEST_CASE("the documented calibration example loads with its fitted figures", "[calibration]") {
  const Calibration c = profiles::load_calibration_file(kExample);
  CHECK(c.device == "NVIDIA H200");
  CHECK(c.decode.t0_s == Approx(5.1e-6));
  CHECK(c.decode.bandwidth_bytes_per_s == Approx(4.1e12));
  CHECK(c.stream.read_bytes_per_s == Approx(4.42e12));
  REQUIRE(c.gemm.size() == 4);
  CHECK(c.gemm[1].m_min == 17);
  CHECK(c.gemm[1].m_max == 256);
  CHECK(c.gemm[3].flops_per_s == Approx(7.0e14));
  CHECK(c.prefill_attention.flops_per_s == Approx(3.5e14));
  CHECK(c.host_to_device.per_copy_s == Approx(3.0e-6));
  CHECK(c.device_to_host.bandwidth_bytes_per_s == Approx(5.5e10));
  CHECK(c.source.find("cuda") != std::string::npos);
  CHECK(gemm_flops_for(c, 100) == Approx(2.9e14));
  CHECK(c.selftests_passed);
}

TEST_CASE("the calibrations measured on real GPUs load and plan as their GPU", "[calibration]") {
  // scripts/gpu-check.sh's output on a real H100 80GB HBM3 (2026-11-25) and a real H200 (2026-11-26; the full sweep
  // of 2026-11-27).
  struct Measured {
    const char* file;
    const char* device;
    const char* gpu;
    const char* other_gpu;       // a different product: the memory check must refuse it
    double stream_vs_datasheet;  // as the report printed it
  };
  const Measured runs[] = {{"h100-sxm-2026-11-25.yaml", "NVIDIA H100 80GB HBM3", "h100-sxm", "h200", 0.918},
                           {"h200-2026-11-26.yaml", "NVIDIA H200", "h200", "h100-sxm", 0.933},
                           {"h200-2026-11-27-full.yaml", "NVIDIA H200", "h200", "h100-sxm", 0.899}};
  for (const auto& run : runs) {
    INFO(run.file);
    const Calibration c =
        profiles::load_calibration_file(std::string(KVCAP_SOURCE_DIR) + "/profiles/calibrations/" + run.file);
    CHECK(c.device == run.device);
    CHECK(c.selftests_passed);
    CHECK(c.prefill_attention.tensor_cores);
    const GpuSpec gpu = profiles::resolve_gpu(run.gpu);
    CHECK(check_calibration(c, gpu, false).empty());  // same product, same memory: no finding
    CHECK(has_errors(check_calibration(c, profiles::resolve_gpu(run.other_gpu), false)));
    // Measured figures within what the datasheet allows; decode below stream read.
    CHECK(c.stream.read_bytes_per_s / gpu.memory_bandwidth_bytes_per_s ==
          Approx(run.stream_vs_datasheet).margin(0.001));
    CHECK(c.decode.bandwidth_bytes_per_s < c.stream.read_bytes_per_s);
    CHECK(gemm_flops_for(c, 8192) < gpu.bf16_dense_flops);
    const ModelSpec m = profiles::resolve_model("llama-3.1-8b");
    const auto step = decode_step(make_speed_context(m, gpu, plan_memory(m, gpu, Deployment{}), {}, c), 32, 4096);
    CHECK(step.source.memory == "calibrated");
    CHECK(step.source.compute == "calibrated");
    CHECK(step.source.attention == "datasheet");
  }
  // The H200 run measured the host link too (PCIe Gen 5 x16: 64 GB/s per direction on paper); the H100 file predates
  // it.
  const Calibration h200 =
      profiles::load_calibration_file(std::string(KVCAP_SOURCE_DIR) + "/profiles/calibrations/h200-2026-11-26.yaml");
  CHECK(h200.host_to_device.bandwidth_bytes_per_s > 40e9);
  CHECK(h200.host_to_device.bandwidth_bytes_per_s < 64e9);
  CHECK(h200.device_to_host.per_copy_s > 0);
}

TEST_CASE("bad calibration files are rejected with line and key", "[calibration][errors]") {
  const std::string good = slurp(kExample);
  SECTION("a future format version") {
    std::string t = good;
    t.replace(t.find("kvcap_calibration: 1"), 20, "kvcap_calibration: 2");
    const auto d = first_error(t);
    CHECK(d.key_path == "kvcap_calibration");
    CHECK(d.message.find("not supported") != std::string::npos);
  }
  SECTION("a negative bandwidth names its line") {
    std::string t = good;
    const auto at = t.find("bandwidth_bytes_per_s: 4.1e12");
    t.replace(at, 29, "bandwidth_bytes_per_s: -4.1e12");
    const int line = 1 + static_cast<int>(std::count(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    const auto d = first_error(t);
    CHECK(d.key_path == "decode.bandwidth_bytes_per_s");
    CHECK(d.line == line);
  }
  SECTION("a rate too small for any device, a key given twice, a key the block does not have") {
    std::string t = good;
    t.replace(t.find("bandwidth_bytes_per_s: 4.1e12"), 29, "bandwidth_bytes_per_s: 1e-300");
    CHECK(first_error(t).key_path == "decode.bandwidth_bytes_per_s");
    CHECK(first_error(t).message.find("expected 0 (not measured) or at least 1e+08") != std::string::npos);
    t = good;
    const auto at = t.find("t0_s:");
    t.insert(at, "t0_s: 1.0\n  ");
    CHECK(first_error(t).key_path == "decode.t0_s");
    CHECK(first_error(t).message.find("duplicate key") != std::string::npos);
    t = good;
    t.insert(t.find("t0_s:"), "bandwith_bytes_per_s: 1e12\n  ");
    CHECK(first_error(t).key_path == "decode.bandwith_bytes_per_s");
  }
  SECTION("an inverted GEMM class") {
    std::string t = good;
    t.replace(t.find("{m_min: 17, m_max: 256"), 22, "{m_min: 17, m_max: 16 ");
    CHECK(first_error(t).key_path == "gemm.classes[1].m_max");
  }
  SECTION("a misspelt key gets a suggestion") {
    std::string t = good;
    t.replace(t.find("decode:"), 7, "decod:");
    bool suggested = false;
    try {
      profiles::parse_calibration(t, "cal.yaml");
    } catch (const profiles::ProfileError& e) {
      for (const auto& x : e.diagnostics()) suggested |= x.message.find("did you mean 'decode'") != std::string::npos;
    }
    CHECK(suggested);
  }
  SECTION("a calibration whose kernels failed their self-tests is refused, naming the first failure") {
    std::string t = good;
    const auto at = t.find("  failed: 0");
    t.replace(at, 11, "  failed: 3\n  first_failure: \"gpu.decode_vs_cpu: paged bf16 d=128 max error 0.3\"");
    const int line = 1 + static_cast<int>(std::count(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    const auto d = first_error(t);
    CHECK(d.key_path == "selftest.failed");
    CHECK(d.line == line);
    CHECK(d.message.find("3 kernel self-test(s) failed") != std::string::npos);
    CHECK(d.message.find("gpu.decode_vs_cpu: paged bf16") != std::string::npos);
  }
  SECTION("a file without a self-test record loads, marked unchecked") {
    std::string t = good;
    const auto a = t.find("selftest:");
    const auto b = t.find("date:");
    t.erase(a, b - a);
    CHECK_FALSE(profiles::parse_calibration(t, "old.yaml").selftests_passed);
  }
  SECTION("a self-test count that is not a count") {
    std::string t = good;
    t.replace(t.find("  passed: 225"), 13, "  passed: many");
    CHECK(first_error(t).key_path == "selftest.passed");
  }
  SECTION("a model profile is not a calibration") {
    CHECK(!first_error(profiles::builtin_text("models/llama-3.1-8b.yaml")).message.empty());
  }
  SECTION("empty and binary input") {
    CHECK(first_error("").message.find("empty") != std::string::npos);
    CHECK(first_error(std::string("a\0b", 3)).message.find("NUL") != std::string::npos);
  }
}

TEST_CASE("a calibration replaces datasheet rates in the speed model", "[calibration][speed]") {
  const ModelSpec m = profiles::resolve_model("llama-3.1-8b");
  const GpuSpec g = profiles::resolve_gpu("h200");
  const MemoryPlan plan = plan_memory(m, g, Deployment{});
  Calibration c = profiles::load_calibration_file(kExample);
  c.decode.t0_s = 0;  // the fixed per-call cost does not scale with bandwidth
  const auto datasheet = decode_step(make_speed_context(m, g, plan), 1, 4096);
  const auto calibrated = decode_step(make_speed_context(m, g, plan, {}, c), 1, 4096);
  CHECK(datasheet.source.memory == "datasheet");
  CHECK(calibrated.source.memory == "calibrated");
  // Halving the calibrated bandwidths doubles the memory-bound time.
  Calibration half = c;
  half.decode.bandwidth_bytes_per_s /= 2;
  half.stream.read_bytes_per_s /= 2;
  const auto slower = decode_step(make_speed_context(m, g, plan, {}, half), 1, 4096);
  CHECK(slower.stage.memory_s == Approx(2 * calibrated.stage.memory_s).epsilon(1e-6));

  // Prefill attention: a GPU calibration's rate (kvcap's kernel, not the engine's) is recorded but not used, on
  // tensor cores or not; a CPU calibration's own rate replaces datasheet x efficiency.
  const auto attention_s = [&](const Calibration& k) {
    return prefill(make_speed_context(m, g, plan, {}, k), 16384).total.attention_s;
  };
  const double datasheet_attention = prefill(make_speed_context(m, g, plan), 16384).total.attention_s;
  CHECK(c.prefill_attention.tensor_cores);  // the example, as a CUDA calibration writes it
  CHECK(prefill(make_speed_context(m, g, plan, {}, c), 16384).source.attention == "datasheet");
  CHECK(attention_s(c) == Approx(datasheet_attention));
  Calibration cuda_cores = c;
  cuda_cores.prefill_attention.tensor_cores = false;
  CHECK(attention_s(cuda_cores) == Approx(datasheet_attention));
  Calibration cpu = c;
  cpu.device_kind = "cpu";
  cpu.prefill_attention.flops_per_s = 1e11;
  CHECK(prefill(make_speed_context(m, g, plan, {}, cpu), 16384).source.attention == "calibrated");
  Calibration cpu_half = cpu;
  cpu_half.prefill_attention.flops_per_s = 5e10;
  CHECK(attention_s(cpu_half) == Approx(2 * attention_s(cpu)).epsilon(1e-6));
}

#ifdef KVCAP_HAVE_KERNELS
TEST_CASE("what kvcap calibrate writes, the profiles reader reads back", "[calibration][kernels]") {
  kernels::CalibrationResult r;
  r.device.kind = "cpu";
  r.device.name = "Test CPU";
  r.device.memory_bytes = 1ull << 34;
  r.mode = "quick";
  r.date_utc = "2026-11-21T00:00:00Z";
  r.host = "host (Test CPU)";
  r.stream_read_bytes_per_s = 1.25e10;
  r.stream_copy_bytes_per_s = 1.0e10;
  r.stream_buffer_bytes = 1ull << 30;
  r.decode.t0_s = 2.5e-6;
  r.decode.bandwidth_bytes_per_s = 1.1e10;
  r.gemm_classes = {{1, 16, 1.0e10, "cpu"}, {17, 4096, 9.0e10, "cpu"}};
  r.prefill_flops_per_s = 5.0e10;
  kernels::CalibrationPoint p;
  p.kernel = "stream_read";
  p.bytes = 1 << 30;
  p.time_s = 0.1;
  r.points = {p};
  r.ratios = {{"decode_vs_stream", 0.88}};
  r.build = {"0123456789ab+dirty", "GNU 12.2.0", "", ""};
  r.selftest = {122, 0, ""};
  const kernels::Datasheet ds{"test-gpu", 1.0e11, 1.0e12};
  std::ostringstream out;
  kernels::write_calibration_yaml(out, r, kernels::datasheet_extras(r, ds));
  const Calibration c = profiles::parse_calibration(out.str(), "written.yaml");
  CHECK(c.selftests_passed);
  CHECK(out.str().find("commit: \"0123456789ab+dirty\"") != std::string::npos);
  CHECK(out.str().find("stream_vs_datasheet: 0.125") != std::string::npos);
  CHECK(c.device == "Test CPU");
  CHECK(c.decode.t0_s == Approx(2.5e-6));
  CHECK(c.decode.bandwidth_bytes_per_s == Approx(1.1e10));
  CHECK(c.stream.read_bytes_per_s == Approx(1.25e10));
  REQUIRE(c.gemm.size() == 2);
  CHECK(c.gemm[1].m_max == 4096);
  CHECK(c.prefill_attention.flops_per_s == Approx(5.0e10));
  CHECK(c.host_to_device.bandwidth_bytes_per_s == 0);  // a CPU run has no host link: no block written
  CHECK(out.str().find("host_link") == std::string::npos);

  // A GPU run's host link: the fits and the copy points are written and read back.
  r.host_to_device = {3.5e-6, 5.5e10, 0.02, 5};
  r.device_to_host = {6.0e-6, 5.4e10, 0.03, 5};
  kernels::CalibrationPoint copy;
  copy.kernel = "device_to_host";
  copy.chunk_bytes = 32768;
  copy.bytes = 512.0 * (1 << 20);
  copy.time_s = 0.08;
  r.points.push_back(copy);
  std::ostringstream linked;
  kernels::write_calibration_yaml(linked, r);
  CHECK(linked.str().find("{kernel: device_to_host, chunk_bytes: 32768, bytes: 536870912, time_s: 0.08}") !=
        std::string::npos);
  const Calibration l = profiles::parse_calibration(linked.str(), "linked.yaml");
  CHECK(l.host_to_device.per_copy_s == Approx(3.5e-6));
  CHECK(l.host_to_device.bandwidth_bytes_per_s == Approx(5.5e10));
  CHECK(l.device_to_host.per_copy_s == Approx(6.0e-6));
  CHECK(l.device_to_host.bandwidth_bytes_per_s == Approx(5.4e10));
  // A negative bandwidth in it is an error at its key.
  std::string t = linked.str();
  const std::string d2h_bw = "bandwidth_bytes_per_s: 54000000000";
  REQUIRE(t.find(d2h_bw) != std::string::npos);
  t.replace(t.find(d2h_bw), d2h_bw.size(), "bandwidth_bytes_per_s: -54000000000");
  try {
    profiles::parse_calibration(t, "linked.yaml");
    FAIL("a negative host-link bandwidth was accepted");
  } catch (const profiles::ProfileError& e) {
    CHECK(e.diagnostics().front().key_path == "host_link.device_to_host.bandwidth_bytes_per_s");
  }
  r.host_to_device = r.device_to_host = {};
  r.points.pop_back();

  // A run whose self-tests failed is written as evidence, with its first failure, and the reader refuses it.
  r.selftest = {120, 2,
                "gpu.decode_vs_cpu: paged fp8 d=128 q_heads=8 kv_heads=1 chunks=4 max error 0.5 (tolerance 0.0001)"};
  std::ostringstream bad;
  kernels::write_calibration_yaml(bad, r);
  CHECK(bad.str().find("first_failure: \"gpu.decode_vs_cpu: paged fp8") != std::string::npos);
  CHECK_THROWS_AS(profiles::parse_calibration(bad.str(), "bad.yaml"), profiles::ProfileError);
}

TEST_CASE("a calibration is judged against the kernel targets", "[calibration][kernels]") {
  using S = kernels::TargetVerdict::Status;
  kernels::CalibrationResult r;
  r.device.kind = "cuda";
  r.device.name = "Test GPU";
  r.selftest = {225, 0, ""};
  r.stream_read_bytes_per_s = 3.05e12;
  r.decode_by_variant = {{"paged", "bf16", 128, false, 2.85e12}};
  r.ratios = {{"paged_vs_contiguous", 0.95}, {"fp8_vs_bf16_decode_speedup", 1.3}, {"mma_gemm_vs_cublas", 0.61}};
  r.gemm_classes = {{2049, 1000000000, 7.0e14, "cublas"}};
  r.decode.holdout_points = 4;
  r.decode.holdout_max_relative_error = 0.11;
  const kernels::Datasheet ds{"test-gpu", 3.35e12, 1.0e15};
  const auto v = kernels::evaluate_targets(r, &ds);
  const auto status = [&](const std::string& start) {
    for (const auto& t : v) {
      if (t.name.rfind(start, 0) == 0) return t.status;
    }
    FAIL("no target " << start);
    return S::not_measured;
  };
  CHECK(status("self-tests") == S::met);
  CHECK(status("stream read") == S::met);    // 3.05 / 3.35 = 91%
  CHECK(status("decode (paged") == S::met);  // 2.85 / 3.05 = 93%
  CHECK(status("paged >=") == S::met);
  CHECK(status("fp8 KV") == S::missed);      // 1.3x < 1.5x
  CHECK(status("WMMA") == S::met);           // 61% >= 60%
  CHECK(status("cuBLAS") == S::missed);      // 70% < 75%
  CHECK(status("decode fit") == S::missed);  // 11% > 10%
  r.stream_read_bytes_per_s = 3.0e12;        // 89.6% of the datasheet
  CHECK(kernels::evaluate_targets(r, &ds)[1].status == S::missed);
  // Without a datasheet the datasheet targets are not judged; on a CPU no GPU target is.
  const auto nods = kernels::evaluate_targets(r, nullptr);
  CHECK(nods[1].status == S::not_measured);
  r.device.kind = "cpu";
  for (const auto& t : kernels::evaluate_targets(r, &ds)) {
    if (t.name.rfind("self-tests", 0) != 0) CHECK(t.status == S::not_measured);
  }
  r.selftest = {224, 1, "gpu.stream_read_checksum"};
  std::ostringstream report;
  kernels::write_calibration_report(report, r, &ds);
  CHECK(report.str().find("MISSED self-tests") != std::string::npos);
  CHECK(report.str().find("must not be used") != std::string::npos);
}
#endif
