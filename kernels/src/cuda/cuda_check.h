// cudaError_t / cublasStatus_t -> exception, once, at the edge of the library.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "kvcap/kernels/cuda_launchers.h"

namespace kvcap::kernels::detail {

inline void cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::string msg = std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  if (e == cudaErrorInvalidValue && !last_launch_error().empty()) msg += ": " + last_launch_error();
  throw std::runtime_error(msg);
}

inline void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}

void cublas_gemm_for_tests(const GemmParams& p);

}  // namespace kvcap::kernels::detail
