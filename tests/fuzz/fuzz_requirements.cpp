// libFuzzer: the requirements parser, and the evaluation of promises whose deployments are inline or named
// in the file with built-in models and GPUs (file references are skipped: they would read the fuzzer's
// files). parse: a Requirements or a ProfileError; check_requirements (cli/promises.hpp): never throws (errors are
// results).
#include <cstddef>
#include <cstdint>
#include <string>

#include "kvcap/profiles/requirements.hpp"
#include "promises.hpp"

namespace {
bool builtin_refs_only(const kvcap::profiles::DeploymentProfile& d) {
  return d.model.find('/') == std::string::npos && d.gpu.find('/') == std::string::npos &&
         !d.model.ends_with(".yaml") && !d.model.ends_with(".json") && !d.gpu.ends_with(".yaml");
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto r = kvcap::profiles::parse_requirements(text, "fuzz.yaml");
    std::erase_if(r.promises, [&](const kvcap::profiles::Promise& p) {
      if (p.inline_deployment) return !builtin_refs_only(*p.inline_deployment);
      for (const auto& d : r.deployments)
        if (d.name == p.deployment_ref) return !builtin_refs_only(d);
      return p.deployment_ref.find('/') != std::string::npos || p.deployment_ref.ends_with(".yaml") ||
             p.deployment_ref.ends_with(".yml") || p.deployment_ref.ends_with(".json");
    });
    (void)kvcap::cli::check_requirements(r);
  } catch (const kvcap::profiles::ProfileError&) {
  }
  return 0;
}
