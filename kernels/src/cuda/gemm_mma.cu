// Tensor-core GEMM: C[m, n] = sum_k A[m, k] B[n, k], bf16 in, fp32 accumulate and out.
// 128 x 128 x 32 block tile, 8 warps each computing 64 x 32 with 16 x 16 x 16 WMMA fragments, two-stage cp.async
// pipeline (global -> shared without registers, zero-filled outside the matrix).
#include <cuda_bf16.h>
#include <mma.h>

#include <string>

#include "cuda/dispatch.cuh"
#include "kvcap/kernels/cuda_launchers.h"

namespace kvcap::kernels {

namespace {

namespace wmma = nvcuda::wmma;

constexpr int BM = 128, BN = 128, BK = 32;
constexpr int LDS = BK + 8;  // shared row stride in bf16 elements (80 bytes: staggers banks, multiple of 16 bytes)
constexpr int kThreads = 256;
constexpr int kStageElems = (BM + BN) * LDS;  // A tile then B tile

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool pred) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int n = pred ? 16 : 0;  // src-size 0: fill 16 zero bytes
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(n));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Each thread moves two 16-byte vectors of A and two of B per stage (128 rows x 4 vectors each).
__device__ __forceinline__ void load_stage(const GemmParams& p, __nv_bfloat16* st, int m0, int n0, int k0) {
  const int tid = threadIdx.x;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = tid + r * kThreads;  // 0..511
    const int row = i / 4, c = (i % 4) * 8;
    const int gk = k0 + c;
    const int am = m0 + row, bn = n0 + row;
    const bool ak = gk < p.k;
    cp_async16(st + row * LDS + c, (am < p.m && ak) ? p.a + p.a_offset(am, gk) : p.a, am < p.m && ak);
    cp_async16(st + (BM + row) * LDS + c, (bn < p.n && ak) ? p.b + p.b_offset(bn, gk) : p.b, bn < p.n && ak);
  }
}

__global__ void __launch_bounds__(kThreads) gemm_mma_kernel(const GemmParams p) {
  __shared__ __align__(128) __nv_bfloat16 smem[2 * kStageElems];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = warp / 4;  // 0..1: 64-row half
  const int wn = warp % 4;  // 0..3: 32-column quarter
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int ktiles = (p.k + BK - 1) / BK;
  load_stage(p, smem, m0, n0, 0);
  cp_async_commit();
  for (int kt = 0; kt < ktiles; ++kt) {
    if (kt + 1 < ktiles) load_stage(p, smem + ((kt + 1) % 2) * kStageElems, m0, n0, (kt + 1) * BK);
    cp_async_commit();
    cp_async_wait<1>();  // the current stage has landed; the next may still be in flight
    __syncthreads();
    const __nv_bfloat16* As = smem + (kt % 2) * kStageElems;
    const __nv_bfloat16* Bs = As + BM * LDS;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> af[4];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> bf[2];
#pragma unroll
      for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(af[i], As + (wm * 64 + i * 16) * LDS + kk, LDS);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(bf[j], Bs + (wn * 32 + j * 16) * LDS + kk, LDS);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], af[i], bf[j], acc[i][j]);
    }
    __syncthreads();  // the stage is overwritten by the load issued in the next iteration
  }
  cp_async_wait<0>();
  __syncthreads();

  // Epilogue through a per-warp 16 x 16 float scratch (reusing the pipeline buffers) with bounds checks.
  float* scratch = reinterpret_cast<float*>(smem) + warp * 256;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      const int r0 = m0 + wm * 64 + i * 16, c0 = n0 + wn * 32 + j * 16;
      for (int e = lane; e < 256; e += 32) {
        const int r = r0 + e / 16, c = c0 + e % 16;
        if (r < p.m && c < p.n) p.c[p.c_offset(r, c)] = scratch[e];
      }
      __syncwarp();
    }
  }
}

}  // namespace

cudaError_t gemm_mma_gpu(const GemmParams& p, cudaStream_t stream) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) KVCAP_FAIL_LAUNCH("gemm: m, n, k must be positive");
  if (p.k % 8 != 0) KVCAP_FAIL_LAUNCH("gemm mma: k (" + std::to_string(p.k) + ") must be a multiple of 8");
  if (p.a == nullptr || p.b == nullptr || p.c == nullptr) KVCAP_FAIL_LAUNCH("gemm: null pointer");
  const dim3 grid((p.n + BN - 1) / BN, (p.m + BM - 1) / BM);
  if (grid.y > 65535) KVCAP_FAIL_LAUNCH("gemm mma: m too large");
  gemm_mma_kernel<<<grid, kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace kvcap::kernels
