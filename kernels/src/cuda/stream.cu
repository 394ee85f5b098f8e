// Stream read / copy: 16-byte vector loads, grid-stride, four loads in flight per thread.
#include <string>

#include "cuda/dispatch.cuh"
#include "kvcap/kernels/cuda_launchers.h"

namespace kvcap::kernels {

namespace detail {
namespace {
thread_local std::string g_launch_error;
}
void set_launch_error(const std::string& msg) { g_launch_error = msg; }
}  // namespace detail

const std::string& last_launch_error() { return detail::g_launch_error; }

namespace {

constexpr int kStreamThreads = 512;

__global__ void __launch_bounds__(kStreamThreads) stream_read_kernel(const uint4* __restrict__ src, std::size_t n,
                                                                     std::uint32_t* checksum) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  std::uint32_t x = 0;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    x ^= (a.x ^ a.y ^ a.z ^ a.w) ^ (b.x ^ b.y ^ b.z ^ b.w) ^ (c.x ^ c.y ^ c.z ^ c.w) ^ (d.x ^ d.y ^ d.z ^ d.w);
  }
  for (; i < n; i += stride) {
    const uint4 a = src[i];
    x ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  for (int o = 16; o > 0; o >>= 1) x ^= __shfl_xor_sync(0xffffffffu, x, o);
  if ((threadIdx.x & 31) == 0) atomicXor(checksum, x);
}

__global__ void __launch_bounds__(kStreamThreads) stream_copy_kernel(uint4* __restrict__ dst,
                                                                     const uint4* __restrict__ src, std::size_t n) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

__global__ void fill_valid_kernel(unsigned long long* dst, std::size_t n, unsigned long long seed) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    unsigned long long x = seed ^ i;
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    dst[i] = (x & 0x8f8f8f8f8f8f8f8full) | 0x3030303030303030ull;  // see cpu_backend.cpp: finite in every format
  }
}

int auto_blocks(int grid_blocks) {
  if (grid_blocks > 0) return grid_blocks;
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    sms = 132;
  }
  return sms * (2048 / kStreamThreads);
}

}  // namespace

cudaError_t stream_read_gpu(const void* src, std::size_t bytes, std::uint32_t* checksum, int grid_blocks,
                            cudaStream_t stream) {
  if (bytes % 16 != 0) KVCAP_FAIL_LAUNCH("stream read: bytes must be a multiple of 16");
  stream_read_kernel<<<auto_blocks(grid_blocks), kStreamThreads, 0, stream>>>(static_cast<const uint4*>(src), bytes / 16,
                                                                              checksum);
  return cudaGetLastError();
}

cudaError_t stream_copy_gpu(void* dst, const void* src, std::size_t bytes, int grid_blocks, cudaStream_t stream) {
  if (bytes % 16 != 0) KVCAP_FAIL_LAUNCH("stream copy: bytes must be a multiple of 16");
  stream_copy_kernel<<<auto_blocks(grid_blocks), kStreamThreads, 0, stream>>>(static_cast<uint4*>(dst),
                                                                              static_cast<const uint4*>(src), bytes / 16);
  return cudaGetLastError();
}

cudaError_t fill_valid_bytes_gpu(void* dst, std::size_t bytes, std::uint64_t seed, cudaStream_t stream) {
  if (bytes % 8 != 0) KVCAP_FAIL_LAUNCH("fill: bytes must be a multiple of 8");
  fill_valid_kernel<<<auto_blocks(0), 256, 0, stream>>>(static_cast<unsigned long long*>(dst), bytes / 8, seed);
  return cudaGetLastError();
}

}  // namespace kvcap::kernels
