// The contract between the kernels library (cuda_loader.cpp) and the CUDA module (cuda/module.cpp): the module's entry
// points and the version of the types they pass (Backend's virtual functions, DecodeShape, SelftestCounts, ...).
// Both come from one build; the version catches a module left over from another (bump it when those types change).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "backend.h"
#include "kvcap/kernels/calibrate.h"

namespace kvcap::kernels::detail {

inline constexpr int kCudaModuleAbi = 1;
inline constexpr const char* kCudaModuleName = "libkvcap_kernels_cuda.so";

using CudaModuleAbiFn = int (*)();
/// A backend for device `ordinal`, or nullptr with the reason in *error.
using CudaMakeBackendFn = Backend* (*)(int ordinal, std::uint64_t seed, std::string* error) noexcept;
/// run_gpu_selftests().
using CudaSelftestsFn = int (*)(std::ostream* log, int ordinal, std::uint64_t seed, SelftestCounts* counts) noexcept;

}  // namespace kvcap::kernels::detail
