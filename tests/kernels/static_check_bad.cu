// Deliberately bad kernels for the test that proves scripts/kernel-static-check.sh fails when a kernel spills to
// local memory or loses its 128-bit loads (tests/CMakeLists.txt: kernels.static_check_catches_bad). Never launched.
#include <cstdint>

// A per-thread array indexed at run time cannot live in registers: ptxas puts it in local memory (stack frame).
__global__ void bad_spill_kernel(const float* src, const int* idx, float* out) {
  float a[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) a[i] = src[i * blockDim.x + threadIdx.x];
  int j = idx[threadIdx.x];
  for (int k = 0; k < 8; ++k) {  // stores at run-time indices
    a[j & 63] += 1.0f;
    j = j * 7 + 3;
  }
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 64; ++i) s += a[i];
  out[threadIdx.x] = s;
}

// A stream read with 4-byte loads: correct, but it moves a quarter of the bytes per load instruction.
__global__ void bad_scalar_load_kernel(const std::uint32_t* __restrict__ src, std::size_t n, std::uint32_t* sum) {
  std::uint32_t x = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x ^= src[i];
  atomicXor(sum, x);
}
