// The kernels' CPU twins against their naive references (docs/kernels.md, "Kernels": shapes and tolerances). The
// checks are the library's own self-test (kernels/src/selftest_cpu.cpp, also run by `kvcap-kernels test-cpu`), one
// family per test case here, on seeds of its own. No GPU needed.
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
