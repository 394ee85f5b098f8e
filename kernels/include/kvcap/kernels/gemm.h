// Dense GEMM as a linear layer computes it: C[m, n] = sum_k A[m, k] * B[n, k].
// bf16 inputs, fp32 accumulation and fp32 output. The CPU twin is blocked and multi-threaded; the CUDA side has a
// tensor-core (WMMA) kernel and cuBLAS as the reference ceiling.
#pragma once

#include <cstdint>

#include "kvcap/kernels/numeric.h"

namespace kvcap::kernels {

struct GemmParams {
  const std::uint16_t* a = nullptr;  // [m, k] bf16 row-major (activations, one row per token)
  const std::uint16_t* b = nullptr;  // [n, k] bf16 row-major (weights, as torch.nn.Linear stores them)
  float* c = nullptr;                // [m, n] fp32 row-major
  int m = 0, n = 0, k = 0;

  KVCAP_HD std::int64_t a_offset(int row, int col) const { return std::int64_t{row} * k + col; }
  KVCAP_HD std::int64_t b_offset(int row, int col) const { return std::int64_t{row} * k + col; }
  KVCAP_HD std::int64_t c_offset(int row, int col) const { return std::int64_t{row} * n + col; }
  // Bytes a GEMM must move at least once: A and B in bf16, C in fp32.
  double bytes() const { return 2.0 * m * k + 2.0 * n * k + 4.0 * m * n; }
  double flops() const { return 2.0 * m * n * static_cast<double>(k); }
};

// Blocked CPU GEMM (bf16 widened to fp32, fp32 accumulate). num_threads <= 0: hardware concurrency.
void gemm_cpu(const GemmParams& p, int num_threads = 0);
// Triple loop in double. For tests.
void gemm_reference(const GemmParams& p);

}  // namespace kvcap::kernels
