// libFuzzer: the calibration.yaml reader (profiles/src/calibration.cpp, docs/calibration-format.md) and the
// plausibility check of a calibration against a GPU. parse: a Calibration or a ProfileError, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kvcap/planner/plausibility.hpp"
#include "kvcap/profiles/profiles.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto cal = kvcap::profiles::parse_calibration(text, "fuzz.yaml");
    static const auto gpu = kvcap::profiles::resolve_gpu("h100-sxm");
    (void)kvcap::check_calibration(cal, gpu, false);
    (void)kvcap::gemm_flops_for(cal, 1 + static_cast<kvcap::i64>(size));
  } catch (const kvcap::profiles::ProfileError&) {
  }
  return 0;
}
