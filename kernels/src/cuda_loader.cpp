// The CUDA kernels, behind a module loaded on first use (kernels/CMakeLists.txt): kvcap and kvcap-gui start without
// loading cudart, cuBLAS and cuBLASLt, and load them only for `calibrate --device cuda:N` and the GPU self-tests.
// The module is looked for, in order: $KVCAP_CUDA_MODULE, the path this build wrote it to, beside the program, and in
// ../kernels from it (a build tree moved elsewhere).
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "backend.h"
#include "cuda_module_abi.h"
#include "kvcap/kernels/calibrate.h"

namespace kvcap::kernels {

namespace {

struct Module {
  detail::CudaMakeBackendFn make = nullptr;
  detail::CudaSelftestsFn selftests = nullptr;
  std::string error;  ///< why it could not be loaded (make is null then)
};

std::vector<std::string> candidates() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("KVCAP_CUDA_MODULE"); env && *env) paths.emplace_back(env);
#ifdef KVCAP_CUDA_MODULE_PATH
  paths.emplace_back(KVCAP_CUDA_MODULE_PATH);
#endif
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    paths.push_back((exe.parent_path() / detail::kCudaModuleName).string());
    // A build tree moved elsewhere (kvcap in build/cli, the module in build/kernels).
    paths.push_back((exe.parent_path().parent_path() / "kernels" / detail::kCudaModuleName).string());
  }
  std::vector<std::string> unique;
  for (auto& p : paths)
    if (std::find(unique.begin(), unique.end(), p) == unique.end()) unique.push_back(std::move(p));
  return unique;
}

Module load() {
  Module m;
  std::string tried;
  for (const auto& path : candidates()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      tried += (tried.empty() ? "" : ", ") + path + " (absent)";
      continue;
    }
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* why = dlerror();
      tried += (tried.empty() ? "" : ", ") + path + " (" + (why ? why : "dlopen failed") + ")";
      continue;
    }
    // dlsym returns object pointers; POSIX guarantees they convert to function pointers.
    const auto abi = reinterpret_cast<detail::CudaModuleAbiFn>(dlsym(h, "kvcap_kernels_cuda_abi"));
    const auto make = reinterpret_cast<detail::CudaMakeBackendFn>(dlsym(h, "kvcap_kernels_cuda_make_backend"));
    const auto tests = reinterpret_cast<detail::CudaSelftestsFn>(dlsym(h, "kvcap_kernels_cuda_selftests"));
    if (!abi || !make || !tests || abi() != detail::kCudaModuleAbi) {
      tried += (tried.empty() ? "" : ", ") + path + " (not this build's CUDA module)";
      dlclose(h);
      continue;
    }
    m.make = make;  // the module stays loaded for the life of the process (backends hold its code)
    m.selftests = tests;
    return m;
  }
  m.error = "the CUDA kernels module could not be loaded: " + (tried.empty() ? std::string("no path to try") : tried) +
            "; set KVCAP_CUDA_MODULE to its path";
  return m;
}

const Module& module() {
  static const Module m = load();  // once; thread-safe initialisation
  return m;
}

}  // namespace

bool built_with_cuda() {
  return true;
}

int run_gpu_selftests(std::ostream& log, int device_ordinal, std::uint64_t seed, SelftestCounts* counts) {
  const Module& m = module();
  if (!m.selftests) {
    log << "GPU tests skipped: " << m.error << "\n";
    return 77;
  }
  return m.selftests(&log, device_ordinal, seed, counts);
}

namespace detail {
std::unique_ptr<Backend> make_cuda_backend(int ordinal, std::uint64_t seed) {
  const Module& m = module();
  if (!m.make) throw std::runtime_error("cuda:" + std::to_string(ordinal) + ": " + m.error);
  std::string error;
  Backend* b = m.make(ordinal, seed, &error);
  if (!b) throw std::runtime_error(error.empty() ? "cuda:" + std::to_string(ordinal) + ": no backend" : error);
  return std::unique_ptr<Backend>(b);
}
}  // namespace detail

}  // namespace kvcap::kernels
