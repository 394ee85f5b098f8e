// libFuzzer: the Hugging Face config.json importer (YAML first, nlohmann::json fallback). Any input must end
// in a ModelSpec or a ProfileError; a spec it accepts must also plan (SpecError / OverflowError are the
// planner's documented errors for impossible or too-large deployments).
#include <cstddef>
#include <cstdint>
#include <string>

#include "kvcap/planner/error.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/profiles/profiles.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const kvcap::GpuSpec gpu = kvcap::profiles::resolve_gpu("h100-sxm");
  try {
    const kvcap::ModelSpec m = kvcap::profiles::import_hf(text, "config.json");
    try {
      kvcap::Deployment d;
      d.max_model_len = 4096;  // the model's own max_position_embeddings may be up to 2^40
      (void)kvcap::plan_memory(m, gpu, d, {1024, 4096});
    } catch (const kvcap::SpecError&) {
    } catch (const kvcap::OverflowError&) {
    }
  } catch (const kvcap::profiles::ProfileError&) {
  }
  return 0;
}
