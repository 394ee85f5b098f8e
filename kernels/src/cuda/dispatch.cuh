// Runtime -> compile-time dispatch. Unsupported values return cudaErrorInvalidValue from the enclosing launcher
// after recording a message (last_launch_error()).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "kvcap/kernels/numeric.h"

namespace kvcap::kernels::detail {
void set_launch_error(const std::string& msg);
}

#define KVCAP_FAIL_LAUNCH(msg)                         \
  do {                                                 \
    ::kvcap::kernels::detail::set_launch_error(msg);   \
    return cudaErrorInvalidValue;                      \
  } while (0)

#define KVCAP_DISPATCH_KV_DTYPE(dtype, D, ...)                                      \
  switch (dtype) {                                                                  \
    case ::kvcap::kernels::KvDtype::bf16: {                                         \
      constexpr ::kvcap::kernels::KvDtype D = ::kvcap::kernels::KvDtype::bf16;     \
      __VA_ARGS__                                                                   \
    } break;                                                                        \
    case ::kvcap::kernels::KvDtype::fp16: {                                         \
      constexpr ::kvcap::kernels::KvDtype D = ::kvcap::kernels::KvDtype::fp16;     \
      __VA_ARGS__                                                                   \
    } break;                                                                        \
    case ::kvcap::kernels::KvDtype::fp8_e4m3: {                                     \
      constexpr ::kvcap::kernels::KvDtype D = ::kvcap::kernels::KvDtype::fp8_e4m3; \
      __VA_ARGS__                                                                   \
    } break;                                                                        \
    default: KVCAP_FAIL_LAUNCH("unsupported kv dtype");                             \
  }

#define KVCAP_DISPATCH_HEAD_DIM(head_dim, HD, ...)                                  \
  switch (head_dim) {                                                               \
    case 64: {                                                                      \
      constexpr int HD = 64;                                                        \
      __VA_ARGS__                                                                   \
    } break;                                                                        \
    case 128: {                                                                     \
      constexpr int HD = 128;                                                       \
      __VA_ARGS__                                                                   \
    } break;                                                                        \
    default: KVCAP_FAIL_LAUNCH("unsupported head_dim " + std::to_string(head_dim) + " (supported: 64, 128)"); \
  }

namespace kvcap::kernels::detail {

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Opt a kernel into more than 48 KiB of dynamic shared memory (once per kernel and size).
template <class Kernel>
cudaError_t allow_smem(Kernel k, int bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

}  // namespace kvcap::kernels::detail
