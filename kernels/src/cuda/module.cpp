// The CUDA module's entry points (libkvcap_kernels_cuda.so, loaded by cuda_loader.cpp on first use): C names, so the
// loader finds them with dlsym, and no exception crosses the boundary (an error is a message).
#include <cstdint>
#include <exception>
#include <memory>
#include <ostream>
#include <string>

#include "backend.h"
#include "cuda_module_abi.h"
#include "kvcap/kernels/calibrate.h"

using kvcap::kernels::SelftestCounts;
using kvcap::kernels::detail::Backend;

extern "C" {

__attribute__((visibility("default"))) int kvcap_kernels_cuda_abi() {
  return kvcap::kernels::detail::kCudaModuleAbi;
}

__attribute__((visibility("default"))) Backend* kvcap_kernels_cuda_make_backend(int ordinal, std::uint64_t seed,
                                                                                std::string* error) noexcept {
  try {
    return kvcap::kernels::detail::make_cuda_backend(ordinal, seed).release();
  } catch (const std::exception& e) {
    if (error) *error = e.what();
  } catch (...) {
    if (error) *error = "cuda:" + std::to_string(ordinal) + ": unknown error";
  }
  return nullptr;
}

__attribute__((visibility("default"))) int kvcap_kernels_cuda_selftests(std::ostream* log, int ordinal,
                                                                        std::uint64_t seed,
                                                                        SelftestCounts* counts) noexcept {
  try {
    return kvcap::kernels::run_gpu_selftests(*log, ordinal, seed, counts);
  } catch (const std::exception& e) {
    *log << "GPU tests failed: " << e.what() << "\n";
  } catch (...) {
    *log << "GPU tests failed: unknown error\n";
  }
  return 1;
}

}  // extern "C"
