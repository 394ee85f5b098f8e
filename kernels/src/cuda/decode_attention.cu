// Decode attention on the GPU. One thread block = (KV chunk, KV head x query-head tile, sequence): all query heads
// of a GQA group (up to MAXG per block) share each K/V tile loaded into shared memory with 16-byte vector loads, so
// every KV byte is read from HBM once. Tile-wise online softmax in the log2 domain (same algorithm as the CPU twin);
// with split-KV each block writes a normalised partial output and its log2-sum-exp, and a merge kernel combines them.
#include <cfloat>
#include <string>

#include "cuda/dispatch.cuh"
#include "kvcap/kernels/cuda_launchers.h"

namespace kvcap::kernels {

namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kT = kDecodeTileTokens;  // tokens per tile == warp size: one lane per token in the softmax step
static_assert(kT == 32, "the softmax step maps one lane to one token");
constexpr float kLog2e = 1.4426950408889634f;

template <int DQK, int MAXG, KvDtype D>
struct DecodeSmem {
  using T = typename KvTraits<D>::storage;
  static constexpr int kRowBytes = DQK * static_cast<int>(sizeof(T));
  static constexpr int kRowStride = kRowBytes + 16;  // pad: rows start 4 banks apart, conflict-free 16-byte accesses
  static constexpr int kVecPerRow = kRowBytes / 16;
  static constexpr int kElemsPerVec = 16 / static_cast<int>(sizeof(T));
  static constexpr int q_off = 0;                                       // float [MAXG][DQK] scaled query
  static constexpr int kv_off = q_off + MAXG * DQK * 4;                 // raw  [kT][kRowStride] K (then V) tile
  static constexpr int s_off = kv_off + kT * kRowStride;                // float [MAXG][kT] scores, then weights
  static constexpr int stat_off = s_off + MAXG * kT * 4;                // float [3][MAXG] m, l, rescale factor
  static constexpr int bytes = stat_off + 3 * MAXG * 4;
};

// Element j of a 16-byte vector held as four 32-bit words (indices are compile-time after unrolling, so the vector
// stays in registers instead of being spilled to take its address).
template <KvDtype D>
__device__ __forceinline__ float element(const unsigned (&w)[4], int j) {
  using T = typename KvTraits<D>::storage;
  if constexpr (sizeof(T) == 2) {
    return KvTraits<D>::to_float(static_cast<T>((w[j >> 1] >> ((j & 1) * 16)) & 0xffffu));
  } else {
    return KvTraits<D>::to_float(static_cast<T>((w[j >> 2] >> ((j & 3) * 8)) & 0xffu));
  }
}

template <int DQK, int DV, int MAXG, KvDtype D, bool MLA>
__global__ void __launch_bounds__(kThreads)
    decode_kernel(const DecodeParams p, const DecodeSplit split, const int q_tiles, float* __restrict__ part_o,
                  float* __restrict__ part_lse) {
  using L = DecodeSmem<DQK, MAXG, D>;
  using T = typename L::T;
  extern __shared__ __align__(16) unsigned char smem[];
  float* q_s = reinterpret_cast<float*>(smem + L::q_off);
  unsigned char* kv_s = smem + L::kv_off;
  float* s_s = reinterpret_cast<float*>(smem + L::s_off);
  float* m_s = reinterpret_cast<float*>(smem + L::stat_off);
  float* l_s = m_s + MAXG;
  float* f_s = l_s + MAXG;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int chunk = blockIdx.x;
  const int kvh = blockIdx.y / q_tiles;
  const int qt = blockIdx.y % q_tiles;
  const int b = blockIdx.z;
  const int G = p.num_q_heads / p.num_kv_heads;
  const int qh0 = kvh * G + qt * MAXG;         // first query head of this block
  const int gt = min(MAXG, G - qt * MAXG);     // query heads in this block
  const int len = p.seq_lens[b];
  const int begin = split.num_chunks > 1 ? chunk * split.chunk_tokens : 0;
  const int end = split.num_chunks > 1 ? min(len, begin + split.chunk_tokens) : len;

  const float qscale = p.sm_scale * p.k_scale * kLog2e;
  for (int i = tid; i < MAXG * DQK; i += kThreads) {
    const int g = i / DQK, d = i % DQK;
    q_s[i] = g < gt ? p.q[p.q_offset(b, qh0 + g) + d] * qscale : 0.0f;
  }
  if (tid < MAXG) {
    m_s[tid] = -FLT_MAX;  // finite sentinel: exp2(m_old - m_new) stays well defined
    l_s[tid] = 0.0f;
  }

  // Output ownership: thread owns dims d_j = dbase + j * kThreads and heads g_k = grp + k * DGRP.
  constexpr int DGRP = DV >= kThreads ? 1 : kThreads / DV;
  constexpr int DPT = DV >= kThreads ? DV / kThreads : 1;
  constexpr int GPT = MAXG / DGRP;
  static_assert(MAXG % DGRP == 0, "group tile must divide over thread groups");
  const int dbase = DV >= kThreads ? tid : tid % DV;
  const int grp = DV >= kThreads ? 0 : tid / DV;
  float acc[DPT][GPT];
#pragma unroll
  for (int j = 0; j < DPT; ++j)
#pragma unroll
    for (int k = 0; k < GPT; ++k) acc[j][k] = 0.0f;

  const unsigned char* kbase = static_cast<const unsigned char*>(p.k);
  const unsigned char* vbase = static_cast<const unsigned char*>(MLA ? p.k : p.v);
  __syncthreads();

  for (int t0 = begin; t0 < end; t0 += kT) {
    const int n = min(kT, end - t0);
    // 1. K tile -> shared, 16 bytes per access.
    for (int i = tid; i < n * L::kVecPerRow; i += kThreads) {
      const int t = i / L::kVecPerRow, v = i % L::kVecPerRow;
      const uint4* src = reinterpret_cast<const uint4*>(kbase + p.kv_offset(b, t0 + t, kvh) * sizeof(T)) + v;
      *reinterpret_cast<uint4*>(kv_s + t * L::kRowStride + v * 16) = __ldg(src);
    }
    __syncthreads();
    // 2. Scores s[g][t] = q_g . k_t (log2 domain).
    for (int i = tid; i < MAXG * kT; i += kThreads) {
      const int g = i / kT, t = i % kT;
      float s = -FLT_MAX;
      if (g < gt && t < n) {
        const uint4* row = reinterpret_cast<const uint4*>(kv_s + t * L::kRowStride);
        const float* q = q_s + g * DQK;
        s = 0.0f;
#pragma unroll 4
        for (int v = 0; v < L::kVecPerRow; ++v) {
          const uint4 raw = row[v];
          const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
          for (int j = 0; j < L::kElemsPerVec; ++j) s += q[v * L::kElemsPerVec + j] * element<D>(w, j);
        }
      }
      s_s[i] = s;
    }
    __syncthreads();
    // 3. Online softmax: one warp per head, one lane per token.
    for (int g = warp; g < MAXG; g += kWarps) {
      if (g >= gt) {
        if (lane == 0) f_s[g] = 1.0f;
        s_s[g * kT + lane] = 0.0f;
        continue;
      }
      const float s = s_s[g * kT + lane];
      const float m_old = m_s[g];
      const float m_new = fmaxf(m_old, detail::warp_max(lane < n ? s : -FLT_MAX));
      const float w = lane < n ? exp2f(s - m_new) : 0.0f;
      s_s[g * kT + lane] = w;
      const float sum = detail::warp_sum(w);
      if (lane == 0) {
        const float f = exp2f(m_old - m_new);
        f_s[g] = f;
        l_s[g] = l_s[g] * f + sum;
        m_s[g] = m_new;
      }
    }
    // 4. V tile -> shared (MLA: the values are the first DV dims of the K rows already there).
    // No barrier needed before overwriting: the barrier after step 2 ended every read of the K tile.
    if constexpr (!MLA) {
      for (int i = tid; i < n * L::kVecPerRow; i += kThreads) {
        const int t = i / L::kVecPerRow, v = i % L::kVecPerRow;
        const uint4* src = reinterpret_cast<const uint4*>(vbase + p.kv_offset(b, t0 + t, kvh) * sizeof(T)) + v;
        *reinterpret_cast<uint4*>(kv_s + t * L::kRowStride + v * 16) = __ldg(src);
      }
    }
    __syncthreads();
    // 5. acc = acc * rescale + sum_t w[g][t] * v_t.
#pragma unroll
    for (int k = 0; k < GPT; ++k) {
      const float f = f_s[grp + k * DGRP];
#pragma unroll
      for (int j = 0; j < DPT; ++j) acc[j][k] *= f;
    }
    for (int t = 0; t < n; ++t) {
      const T* row = reinterpret_cast<const T*>(kv_s + t * L::kRowStride);
#pragma unroll
      for (int j = 0; j < DPT; ++j) {
        const float v = KvTraits<D>::to_float(row[dbase + j * kThreads]);
#pragma unroll
        for (int k = 0; k < GPT; ++k) acc[j][k] += s_s[(grp + k * DGRP) * kT + t] * v;
      }
    }
    __syncthreads();  // before the next tile overwrites kv_s and s_s
  }

  // Epilogue: normalise; unsplit -> out, split -> partial output + log2-sum-exp.
#pragma unroll
  for (int k = 0; k < GPT; ++k) {
    const int g = grp + k * DGRP;
    if (g >= gt) continue;
    const float l = l_s[g];
    const float inv = l > 0.0f ? p.v_scale / l : 0.0f;
    const int qh = qh0 + g;
    float* dst = split.num_chunks > 1
                     ? part_o + ((static_cast<long long>(b) * p.num_q_heads + qh) * split.num_chunks + chunk) * DV
                     : p.out + p.out_offset(b, qh);
#pragma unroll
    for (int j = 0; j < DPT; ++j) dst[dbase + j * kThreads] = acc[j][k] * inv;
  }
  if (split.num_chunks > 1 && tid < gt) {
    const float l = l_s[tid];
    part_lse[(static_cast<long long>(b) * p.num_q_heads + qh0 + tid) * split.num_chunks + chunk] =
        l > 0.0f ? m_s[tid] + log2f(l) : -INFINITY;
  }
}

// One block per (sequence, query head): out = sum_c 2^(lse_c - max) o_c / sum_c 2^(lse_c - max).
__global__ void __launch_bounds__(kThreads)
    decode_merge_kernel(const DecodeParams p, const DecodeSplit split, const float* __restrict__ part_o,
                        const float* __restrict__ part_lse) {
  const int b = blockIdx.x / p.num_q_heads, qh = blockIdx.x % p.num_q_heads;
  const long long base = (static_cast<long long>(b) * p.num_q_heads + qh) * split.num_chunks;
  float mx = -INFINITY;
  for (int c = 0; c < split.num_chunks; ++c) mx = fmaxf(mx, part_lse[base + c]);
  float wsum = 0.0f;
  for (int c = 0; c < split.num_chunks; ++c) {
    const float lse = part_lse[base + c];
    if (lse != -INFINITY) wsum += exp2f(lse - mx);
  }
  const float inv = wsum > 0.0f ? 1.0f / wsum : 0.0f;
  float* out = p.out + p.out_offset(b, qh);
  for (int d = threadIdx.x; d < p.head_dim_v; d += blockDim.x) {
    float a = 0.0f;
    for (int c = 0; c < split.num_chunks; ++c) {
      const float lse = part_lse[base + c];
      if (lse != -INFINITY) a += exp2f(lse - mx) * part_o[(base + c) * p.head_dim_v + d];
    }
    out[d] = a * inv;
  }
}

template <int DQK, int DV, int MAXG, KvDtype D, bool MLA>
cudaError_t launch_decode(const DecodeParams& p, const DecodeSplit& s, float* ws, cudaStream_t stream) {
  using L = DecodeSmem<DQK, MAXG, D>;
  const int G = p.group_size();
  const int q_tiles = (G + MAXG - 1) / MAXG;
  auto kernel = decode_kernel<DQK, DV, MAXG, D, MLA>;
  static const cudaError_t attr = detail::allow_smem(kernel, L::bytes);  // once per instantiation
  if (attr != cudaSuccess) return attr;
  const dim3 grid(s.num_chunks, p.num_kv_heads * q_tiles, p.batch);
  float* part_o = ws;
  float* part_lse = s.num_chunks > 1 ? ws + static_cast<std::size_t>(p.batch) * p.num_q_heads * s.num_chunks * DV : nullptr;
  kernel<<<grid, kThreads, L::bytes, stream>>>(p, s, q_tiles, part_o, part_lse);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess || s.num_chunks <= 1) return e;
  decode_merge_kernel<<<p.batch * p.num_q_heads, kThreads, 0, stream>>>(p, s, part_o, part_lse);
  return cudaGetLastError();
}

}  // namespace

int decode_max_group_per_block(const DecodeParams& p) { return p.v_in_k ? 16 : 8; }

int decode_work_items(const DecodeParams& p) {
  const int maxg = decode_max_group_per_block(p);
  return p.batch * p.num_kv_heads * ((p.group_size() + maxg - 1) / maxg);
}

cudaError_t decode_attention_gpu(const DecodeParams& p, const DecodeSplit& split, float* workspace, cudaStream_t stream) {
  try {
    validate_decode_params(p);
  } catch (const std::exception& e) {
    KVCAP_FAIL_LAUNCH(e.what());
  }
  const DecodeSplit s = split.num_chunks > 1 ? split : DecodeSplit{};
  if (s.num_chunks > 1 && (workspace == nullptr || s.chunk_tokens <= 0)) {
    KVCAP_FAIL_LAUNCH("decode attention: split-KV needs a workspace and chunk_tokens > 0");
  }
  if (p.batch > 65535) KVCAP_FAIL_LAUNCH("decode attention: batch > 65535");
  if (p.v_in_k) {
    KVCAP_DISPATCH_KV_DTYPE(p.kv_dtype, D, { return launch_decode<576, 512, 16, D, true>(p, s, workspace, stream); })
  } else {
    KVCAP_DISPATCH_KV_DTYPE(p.kv_dtype, D, {
      KVCAP_DISPATCH_HEAD_DIM(p.head_dim_qk, HD, { return launch_decode<HD, HD, 8, D, false>(p, s, workspace, stream); })
    })
  }
  return cudaSuccess;
}

}  // namespace kvcap::kernels
