// libFuzzer: the YAML profile loaders (model, GPU, deployment, workload) and kvcap validate's dispatch on
// kind. Any input must end in a value or a ProfileError (the documented exception); anything else (a
// crash, a sanitizer report, another exception, a hang) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kvcap/profiles/deployment.hpp"
#include "kvcap/profiles/profiles.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)kvcap::profiles::parse_model(text, "fuzz.yaml");
  } catch (const kvcap::profiles::ProfileError&) {
  }
  try {
    (void)kvcap::profiles::parse_gpu(text, "fuzz.yaml");
  } catch (const kvcap::profiles::ProfileError&) {
  }
  try {
    (void)kvcap::profiles::parse_workload(text, "fuzz.yaml");
  } catch (const kvcap::profiles::ProfileError&) {
  }
  try {
    const auto d = kvcap::profiles::parse_deployment(text, "fuzz.yaml");
    // Built-in references only (paths would read the fuzzer's files); planner checks become ProfileError.
    if (d.model.find('/') == std::string::npos && d.gpu.find('/') == std::string::npos)
      (void)kvcap::profiles::resolve_deployment(d, nullptr);
  } catch (const kvcap::profiles::ProfileError&) {
  }
  return 0;
}
