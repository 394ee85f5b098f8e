// Causal prefill attention, flash-attention style on CUDA cores: a block owns 32 query rows of one head and streams
// 32-key K/V tiles (fp32 in shared memory) up to the causal diagonal. Each warp owns 4 rows; scores for a row live
// one per lane (lane = key), so the online-softmax reductions are warp shuffles and P.V reads P from the lanes.
#include <cfloat>
#include <string>

#include "cuda/dispatch.cuh"
#include "kvcap/kernels/cuda_launchers.h"

namespace kvcap::kernels {

namespace {

constexpr int kT = kPrefillTile;  // 32 query rows and 32 keys per tile
static_assert(kT == 32, "one lane per key");
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerWarp = kT / kWarps;  // 4
constexpr float kLog2e = 1.4426950408889634f;

template <int D>
constexpr int prefill_smem_bytes() {
  return (kT * D + kT * (D + 1) + kT * D) * 4;  // q [32][D], k [32][D+1] (padded: lanes read different rows), v [32][D]
}

template <int D>
__global__ void __launch_bounds__(kThreads) prefill_kernel(const PrefillParams p) {
  extern __shared__ __align__(16) float sm[];
  float* q_s = sm;
  float* k_s = q_s + kT * D;
  float* v_s = k_s + kT * (D + 1);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int h = blockIdx.y;
  const int kvh = h / p.group_size();
  // Longest (last) query tiles first, so the triangular work drains evenly.
  const int q0 = (gridDim.x - 1 - blockIdx.x) * kT;
  const float qscale = p.sm_scale * kLog2e;

  for (int i = tid; i < kT * D; i += kThreads) {
    const int r = i / D, d = i % D;
    q_s[i] = q0 + r < p.seq_len ? bf16_to_float(p.q[p.q_offset(q0 + r, h) + d]) * qscale : 0.0f;
  }
  constexpr int DPL = D / 32;  // output dims per lane
  float acc[kRowsPerWarp][DPL];
  float m[kRowsPerWarp], l[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -FLT_MAX;
    l[r] = 0.0f;
#pragma unroll
    for (int j = 0; j < DPL; ++j) acc[r][j] = 0.0f;
  }

  const int q_last = min(q0 + kT, p.seq_len) - 1;
  for (int k0 = 0; k0 <= q_last; k0 += kT) {
    __syncthreads();  // previous tile fully consumed (and q_s written on the first pass)
    for (int i = tid; i < kT * D; i += kThreads) {
      const int t = i / D, d = i % D;
      const bool ok = k0 + t < p.seq_len;
      k_s[t * (D + 1) + d] = ok ? bf16_to_float(p.k[p.kv_offset(k0 + t, kvh) + d]) : 0.0f;
      v_s[t * D + d] = ok ? bf16_to_float(p.v[p.kv_offset(k0 + t, kvh) + d]) : 0.0f;
    }
    __syncthreads();
    const int key = k0 + lane;
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr;
      const int qpos = q0 + r;
      float s = 0.0f;
#pragma unroll 8
      for (int d = 0; d < D; ++d) s += q_s[r * D + d] * k_s[lane * (D + 1) + d];
      const bool visible = key <= qpos && key < p.seq_len;
      s = visible ? s : -FLT_MAX;
      const float m_new = fmaxf(m[rr], detail::warp_max(s));
      const float w = visible ? exp2f(s - m_new) : 0.0f;
      const float f = exp2f(m[rr] - m_new);
      l[rr] = l[rr] * f + detail::warp_sum(w);
      m[rr] = m_new;
#pragma unroll
      for (int j = 0; j < DPL; ++j) acc[rr][j] *= f;
#pragma unroll 8  // (a rolled loop made ptxas spill 4 bytes at D = 64)
      for (int t = 0; t < kT; ++t) {
        const float wt = __shfl_sync(0xffffffffu, w, t);
#pragma unroll
        for (int j = 0; j < DPL; ++j) acc[rr][j] += wt * v_s[t * D + lane + j * 32];
      }
    }
  }
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int qpos = q0 + warp * kRowsPerWarp + rr;
    if (qpos >= p.seq_len) continue;
    const float inv = 1.0f / l[rr];
    float* o = p.out + p.q_offset(qpos, h);
#pragma unroll
    for (int j = 0; j < DPL; ++j) o[lane + j * 32] = acc[rr][j] * inv;
  }
}

template <int D>
cudaError_t launch_prefill(const PrefillParams& p, cudaStream_t stream) {
  constexpr int smem = prefill_smem_bytes<D>();
  static const cudaError_t attr = detail::allow_smem(prefill_kernel<D>, smem);
  if (attr != cudaSuccess) return attr;
  const dim3 grid((p.seq_len + kT - 1) / kT, p.num_q_heads);
  prefill_kernel<D><<<grid, kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace

cudaError_t prefill_attention_gpu(const PrefillParams& p, cudaStream_t stream) {
  try {
    validate_prefill_params(p);
  } catch (const std::exception& e) {
    KVCAP_FAIL_LAUNCH(e.what());
  }
  if (p.num_q_heads > 65535) KVCAP_FAIL_LAUNCH("prefill attention: more than 65535 heads");
  KVCAP_DISPATCH_HEAD_DIM(p.head_dim, HD, { return launch_prefill<HD>(p, stream); })
  return cudaSuccess;
}

}  // namespace kvcap::kernels
