// The kernels' CPU twins against their naive references (docs/kernels.md, "Kernels": shapes and tolerances). The
// checks are the library's own self-test (kernels/src/selftest_cpu.cpp, also run by `kvcap-kernels test-cpu`), one
// family per test case here, on seeds of its own. No GPU needed.
#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>
#include <stdexcept>

#include "kvcap/kernels/calibrate.h"

namespace kernels = kvcap::kernels;

namespace {
// Runs one self-test family on a few seeds; each failed check is printed with its shape and error.
void check_family(const std::string& family) {
  for (std::uint64_t seed : {1u, 2u}) {
    std::ostringstream log;
    const kernels::SelftestCounts n = kernels::run_cpu_selftest(family, log, seed);
    INFO(family << ", seed " << seed << ":\n" << log.str());
    CHECK(n.failed == 0);
    CHECK(n.passed > 0);
  }
}
}  // namespace

TEST_CASE("bf16, fp16 and fp8-e4m3 round-trip every finite value and quantise within tolerance", "[kernels][numeric]") {
  check_family("numeric");
}

TEST_CASE("decode attention twin: vs the double-precision reference, paged == contiguous, split + merge",
          "[kernels][decode]") {
  check_family("decode");
}

TEST_CASE("the CUDA decode team kernel emulated lane by lane: vs the reference on awkward shapes",
          "[kernels][decode][emulation]") {
  check_family("decode_emulation");
}

TEST_CASE("the CUDA prefill kernel emulated with its ldmatrix and mma fragments: vs the reference",
          "[kernels][prefill][emulation]") {
  check_family("prefill_emulation");
}

TEST_CASE("GEMM twin: vs the double triple loop within 1e-6 k + 1e-6", "[kernels][gemm]") {
  check_family("gemm");
}

TEST_CASE("causal prefill attention twin: vs the naive softmax", "[kernels][prefill]") {
  check_family("prefill");
}

TEST_CASE("stream read and copy twins: checksum and bytes exact", "[kernels][stream]") {
  check_family("stream");
}

TEST_CASE("the decode fit recovers t0 and bandwidth from noisy points", "[kernels][fit]") {
  check_family("fit");
}

TEST_CASE("every self-test family has a test case above", "[kernels]") {
  CHECK(kernels::cpu_selftest_families() == std::vector<std::string>{"numeric", "decode", "decode_emulation", "gemm",
                                                                     "prefill_emulation", "prefill", "stream", "fit"});
  std::ostringstream log;
  CHECK_THROWS_AS(kernels::run_cpu_selftest("decod", log), std::invalid_argument);
}

TEST_CASE("the host-link fit recovers the per-copy cost and the bandwidth", "[kernels][fit]") {
  // Points as the sweep records them: `bytes` moved in total in copies of `chunk_bytes`, the whole time.
  const double per_copy_s = 4e-6, bw = 55e9, total = 512.0 * (1 << 20);
  std::vector<kernels::CalibrationPoint> pts;
  for (const char* kernel : {"host_to_device", "device_to_host"}) {
    for (std::uint64_t chunk : {32ull << 10, 256ull << 10, 2ull << 20, 16ull << 20, 64ull << 20}) {
      kernels::CalibrationPoint p;
      p.kernel = kernel;
      p.chunk_bytes = chunk;
      p.bytes = total;
      const double copies = total / static_cast<double>(chunk);
      const double slower = std::string(kernel) == "device_to_host" ? 2.0 : 1.0;  // D2H: twice the per-copy cost
      p.time_s = copies * (slower * per_copy_s + static_cast<double>(chunk) / bw);
      pts.push_back(p);
    }
  }
  const kernels::HostLinkFit h2d = kernels::fit_host_link(pts, "host_to_device");
  CHECK(h2d.points == 5);
  CHECK(h2d.per_copy_s == Approx(per_copy_s).epsilon(1e-6));
  CHECK(h2d.bandwidth_bytes_per_s == Approx(bw).epsilon(1e-6));
  CHECK(h2d.fit_rms_relative_error < 1e-9);
  const kernels::HostLinkFit d2h = kernels::fit_host_link(pts, "device_to_host");
  CHECK(d2h.per_copy_s == Approx(2 * per_copy_s).epsilon(1e-6));
  // A CPU calibration has no host link: nothing to fit, and the result says so (points 0), not a zero bandwidth used.
  pts.erase(std::remove_if(pts.begin(), pts.end(), [](const auto& p) { return p.kernel == "host_to_device"; }),
            pts.end());
  CHECK(kernels::fit_host_link(pts, "host_to_device").points == 0);
}
