// Decode attention on the GPU. One thread block = (KV chunk, KV head x query-head tile, sequence): all query heads
// of a GQA group (up to MAXG per block) share each K/V tile loaded into shared memory with 16-byte vector loads, so
// every KV byte is read from HBM once. Tile-wise online softmax in the log2 domain (same algorithm as the CPU twin);
// with split-KV each block writes a normalised partial output and its log2-sum-exp, and a merge kernel combines them.
#include <cfloat>
#include <string>

#include "cuda/dispatch.cuh"
#include "decode_team.h"
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
      // Every lane read m_s[g] above; order those reads before lane 0 overwrites it (compute-sanitizer's racecheck
      // flagged the pair: the shuffles between them converge the warp but are not a memory barrier).
      __syncwarp();
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

// ---- GQA decode on CUDA cores, one token per team of lanes (MHA/GQA, head_dim 64/128) ----
// A team of TEAM = head_dim / E lanes owns one token at a time: lane l of the team holds dims [l*E, l*E + E) of
// the query heads in registers and loads the same dims of the token's K and V rows (E elements: 16, 8 or 4 bytes),
// so a team reads a whole row with one coalesced access and no shared memory. Each team walks U consecutive
// tokens per step (loads of K and V for all U issued before any use), reduces the dot products over its lanes
// with xor-shuffles, and keeps its own online-softmax state (running max m, sum l, unnormalised accumulator) for
// each of the block's G query heads. At the end the teams of a warp are merged by shuffles and the warps through
// shared memory (the flash-decoding merge rule: M = max m_i, L = sum l_i 2^(m_i - M), O = sum o_i 2^(m_i - M)).
template <int N> struct RawVec;
template <> struct RawVec<16> { using type = uint4; static constexpr int words = 4; };
template <> struct RawVec<8> { using type = uint2; static constexpr int words = 2; };
template <> struct RawVec<4> { using type = unsigned; static constexpr int words = 1; };

template <int W>
__device__ __forceinline__ void to_words(const uint4& r, unsigned (&w)[W]) { w[0] = r.x; w[1] = r.y; w[2] = r.z; w[3] = r.w; }
template <int W>
__device__ __forceinline__ void to_words(const uint2& r, unsigned (&w)[W]) { w[0] = r.x; w[1] = r.y; }
template <int W>
__device__ __forceinline__ void to_words(const unsigned& r, unsigned (&w)[W]) { w[0] = r; }

// E elements held as W 32-bit words -> floats, two at a time (numeric.h: hardware conversion on sm_89+ for fp8).
template <KvDtype D, int E, int W>
__device__ __forceinline__ void widen_kv(const unsigned (&w)[W], float (&x)[E]) {
  static_assert(E % 2 == 0, "pairs");
#pragma unroll
  for (int j = 0; j < E; j += 2) {
    if constexpr (D == KvDtype::fp8_e4m3) {
      fp8x2_e4m3_to_float2(static_cast<std::uint16_t>((w[j >> 2] >> ((j & 3) * 8)) & 0xffffu), x[j], x[j + 1]);
    } else if constexpr (D == KvDtype::bf16) {
      bf16x2_to_float2(w[j >> 1], x[j], x[j + 1]);
    } else {
      x[j] = fp16_to_float(static_cast<std::uint16_t>(w[j >> 1] & 0xffffu));
      x[j + 1] = fp16_to_float(static_cast<std::uint16_t>(w[j >> 1] >> 16));
    }
  }
}

// Sums r[0..N) over the lanes of a team of 2*O lanes so that lane tl ends with, in r[0], the team total of element
// tl / (2*O / N): at each butterfly step a lane keeps half of the elements it still holds (the upper half when its
// bit O is set), sends the other half to its partner and adds what it receives; once one element is left, plain
// butterfly steps finish the sum. N - 1 + log2(2*O / N) shuffles instead of N x log2(2*O).
template <int O, int N, int G>
__device__ __forceinline__ void team_transpose_sum(float (&r)[G], int tl) {
  if constexpr (O >= 1) {
    if constexpr (N > 1) {
      const bool upper = (tl & O) != 0;
#pragma unroll
      for (int i = 0; i < N / 2; ++i) {
        float send, keep;
        team::transpose_pick(r, i, N, upper, send, keep);
        r[i] = keep + __shfl_xor_sync(0xffffffffu, send, O);
      }
      team_transpose_sum<O / 2, N / 2, G>(r, tl);
    } else {
      r[0] += __shfl_xor_sync(0xffffffffu, r[0], O);
      team_transpose_sum<O / 2, 1, G>(r, tl);
    }
  }
}

// team::Shape (decode_team.h) with the CUDA vector type of one lane's load.
template <int DQK, int G, KvDtype D>
struct TeamShape : team::Shape<DQK, G, D> {
  using T = typename KvTraits<D>::storage;
  using Vec = typename RawVec<team::Shape<DQK, G, D>::VB>::type;
  static constexpr int W = RawVec<team::Shape<DQK, G, D>::VB>::words;
};

template <int DQK, int G, KvDtype D>
__global__ void __launch_bounds__(kThreads)
    decode_team_kernel(const DecodeParams p, const DecodeSplit split, const int q_tiles, float* __restrict__ part_o,
                       float* __restrict__ part_lse) {
  using S = TeamShape<DQK, G, D>;
  using T = typename S::T;
  using Vec = typename S::Vec;
  constexpr int E = S::E, TEAM = S::TEAM, U = S::U;
  __shared__ float o_s[kWarps][G][DQK];
  __shared__ float m_s[kWarps][G];
  __shared__ float l_s[kWarps][G];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int team = warp * S::TPW + lane / TEAM;
  const int tl = lane % TEAM;  // this lane's dims: [tl * E, tl * E + E)
  const int chunk = blockIdx.x;
  const int kvh = blockIdx.y / q_tiles;
  const int qt = blockIdx.y % q_tiles;
  const int b = blockIdx.z;
  const int qh0 = kvh * p.group_size() + qt * G;
  const int gt = min(G, p.group_size() - qt * G);
  const int len = p.seq_lens[b];
  const int begin = split.num_chunks > 1 ? chunk * split.chunk_tokens : 0;
  const int end = split.num_chunks > 1 ? min(len, begin + split.chunk_tokens) : len;

  const float qscale = p.sm_scale * p.k_scale * kLog2e;
  float q[G][E], acc[G][E];
  float m_own = -FLT_MAX, l_own = 0.0f;  // running max and sum of this lane's own head (see team_transpose_sum)
#pragma unroll
  for (int g = 0; g < G; ++g) {
#pragma unroll
    for (int j = 0; j < E; ++j) {
      q[g][j] = g < gt ? p.q[p.q_offset(b, qh0 + g) + tl * E + j] * qscale : 0.0f;
      acc[g][j] = 0.0f;
    }
  }
  const T* kbase = static_cast<const T*>(p.k);
  const T* vbase = static_cast<const T*>(p.v);

  // The step loop runs the same number of times on every lane of a warp (the shuffles need all 32 lanes): it
  // advances by warp-steps, and a team whose tokens lie past the end masks them.
  const int team_in_warp = team - warp * S::TPW;
  const bool paged = p.layout == KvLayout::paged;
  const std::int32_t* pages = paged ? p.page_indices + p.page_indptr[b] : nullptr;
  for (int w0 = begin + warp * S::TPW * U; w0 < end; w0 += S::NT * U) {
    const int t0 = w0 + team_in_warp * U;
    // U divides the page size and t0 is a multiple of U, so the step's tokens are consecutive slots of one page.
    const std::int64_t slot0 = t0 < end ? p.slot(b, t0, pages) : 0;
    Vec kr[U], vr[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (t0 + u < end) {
        const std::int64_t off = p.slot_offset(slot0 + u, kvh) + tl * E;
        kr[u] = __ldg(reinterpret_cast<const Vec*>(kbase + off));
        vr[u] = __ldg(reinterpret_cast<const Vec*>(vbase + off));
      } else {
        kr[u] = Vec{};
        vr[u] = Vec{};
      }
    }
    // Scores: each lane's partial dot products for the G heads are summed over the team by a transposing
    // butterfly (team_transpose_sum), after which lane tl holds the score of its own head tl / (TEAM / G).
    float s[U];
    bool valid[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      unsigned w[S::W];
      to_words<S::W>(kr[u], w);
      float k[E];
      widen_kv<D, E, S::W>(w, k);
      float part[G];
#pragma unroll
      for (int g = 0; g < G; ++g) {
        part[g] = 0.0f;
#pragma unroll
        for (int j = 0; j < E; ++j) part[g] = fmaf(q[g][j], k[j], part[g]);
      }
      team_transpose_sum<TEAM / 2, G, G>(part, tl);
      valid[u] = t0 + u < end;
      s[u] = valid[u] ? part[0] : -FLT_MAX;
    }
    // Online softmax of the own head over the step's tokens, then its rescale factor and weights to every lane.
    float pr[U];
    const float f = team::softmax_step<U>(s, valid, m_own, l_own, pr);
    if (__any_sync(0xffffffffu, f != 1.0f)) {  // once the running maxima settle, no head of the warp rescales
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float fg = __shfl_sync(0xffffffffu, f, team::owner_lane(g, TEAM, G), TEAM);
#pragma unroll
        for (int j = 0; j < E; ++j) acc[g][j] *= fg;
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      unsigned w[S::W];
      to_words<S::W>(vr[u], w);
      float v[E];
      widen_kv<D, E, S::W>(w, v);
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float pg = __shfl_sync(0xffffffffu, pr[u], team::owner_lane(g, TEAM, G), TEAM);
#pragma unroll
        for (int j = 0; j < E; ++j) acc[g][j] = fmaf(pg, v[j], acc[g][j]);
      }
    }
  }
  // Every lane takes each head's running max and sum from the head's owner.
  float m[G], l[G];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = __shfl_sync(0xffffffffu, m_own, team::owner_lane(g, TEAM, G), TEAM);
    l[g] = __shfl_sync(0xffffffffu, l_own, team::owner_lane(g, TEAM, G), TEAM);
  }

  // Merge the teams of this warp (lanes tl and tl + k*TEAM hold the same dims).
#pragma unroll
  for (int o = TEAM; o < 32; o <<= 1) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const float mo = __shfl_xor_sync(0xffffffffu, m[g], o);
      const float mm = fmaxf(m[g], mo);
      const float f = team::merge_factor(m[g], mm);
      l[g] *= f;
#pragma unroll
      for (int j = 0; j < E; ++j) acc[g][j] *= f;
      m[g] = mm;
      l[g] += __shfl_xor_sync(0xffffffffu, l[g], o);
#pragma unroll
      for (int j = 0; j < E; ++j) acc[g][j] += __shfl_xor_sync(0xffffffffu, acc[g][j], o);
    }
  }
  if (lane < TEAM) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
#pragma unroll
      for (int j = 0; j < E; ++j) o_s[warp][g][tl * E + j] = acc[g][j];
      if (tl == 0) {
        m_s[warp][g] = m[g];
        l_s[warp][g] = l[g];
      }
    }
  }
  __syncthreads();
  // Merge the warps; normalise; unsplit -> out, split -> partial output + log2-sum-exp.
  for (int i = tid; i < gt * DQK; i += kThreads) {
    const int g = i / DQK, d = i % DQK;
    float mm = -FLT_MAX;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mm = fmaxf(mm, m_s[w][g]);
    float ll = 0.0f, oo = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float f = team::merge_factor(m_s[w][g], mm);
      ll += l_s[w][g] * f;
      oo += o_s[w][g][d] * f;
    }
    const float inv = ll > 0.0f ? p.v_scale / ll : 0.0f;
    const int qh = qh0 + g;
    if (split.num_chunks > 1) {
      const long long row = (static_cast<long long>(b) * p.num_q_heads + qh) * split.num_chunks + chunk;
      part_o[row * DQK + d] = oo * inv;
      if (d == 0) part_lse[row] = ll > 0.0f ? mm + log2f(ll) : -INFINITY;
    } else {
      p.out[p.out_offset(b, qh) + d] = oo * inv;
    }
  }
}

// One block per (sequence, query head): out = sum_c 2^(lse_c - max) o_c / sum_c 2^(lse_c - max).
// The chunks are spread over the block's threads for the maximum and the weights (kept in shared memory,
// kMaxMergeChunks at most), then each thread sums its output dims over the chunks with kMergeLoads loads in flight.
// (A first version looped over the chunks in every thread, one dependent L2 round trip per chunk: about 0.4 us per
// chunk on an H200, 100 us of a 195 us decode of one 64K-token sequence; measured 2026-11-27.)
constexpr int kMaxMergeChunks = 8192;
constexpr int kMergeLoads = 8;
__host__ __device__ constexpr int merge_weights(int chunks) {
  return (chunks + kMergeLoads - 1) / kMergeLoads * kMergeLoads;
}

__device__ float block_reduce(float v, bool is_max) {
  __shared__ float warp_part[kWarps];
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  __syncthreads();  // warp_part may still be read by a previous call
  if ((threadIdx.x & 31) == 0) warp_part[threadIdx.x >> 5] = v;
  __syncthreads();
  v = warp_part[0];
  for (int w = 1; w < kWarps; ++w) v = is_max ? fmaxf(v, warp_part[w]) : v + warp_part[w];
  return v;
}

__global__ void __launch_bounds__(kThreads)
    decode_merge_kernel(const DecodeParams p, const DecodeSplit split, const float* __restrict__ part_o,
                        const float* __restrict__ part_lse) {
  // [num_chunks rounded up to kMergeLoads]: 2^(lse_c - max), 0 for a chunk with no tokens and for the padding. The
  // padding is there because ptxas may merge the tail loop's reads into wider ones (compute-sanitizer saw a 12-byte
  // read at the first weight of a two-chunk merge on an H200, 2026-11-27).
  extern __shared__ float weight_s[];
  const int b = blockIdx.x / p.num_q_heads, qh = blockIdx.x % p.num_q_heads;
  const int n = split.num_chunks;
  const long long base = (static_cast<long long>(b) * p.num_q_heads + qh) * n;
  float mx = -INFINITY;
  for (int c = threadIdx.x; c < n; c += blockDim.x) mx = fmaxf(mx, part_lse[base + c]);
  mx = block_reduce(mx, true);
  float wsum = 0.0f;
  for (int c = threadIdx.x; c < merge_weights(n); c += blockDim.x) {
    const float lse = c < n ? part_lse[base + c] : -INFINITY;
    const float w = lse != -INFINITY ? exp2f(lse - mx) : 0.0f;
    weight_s[c] = w;
    wsum += w;
  }
  wsum = block_reduce(wsum, false);  // its barriers also publish weight_s
  const float inv = wsum > 0.0f ? 1.0f / wsum : 0.0f;
  float* out = p.out + p.out_offset(b, qh);
  const float* po = part_o + base * p.head_dim_v;
  for (int d = threadIdx.x; d < p.head_dim_v; d += blockDim.x) {
    float a = 0.0f;
    int c = 0;
    for (; c + kMergeLoads <= n; c += kMergeLoads) {
      float v[kMergeLoads];
#pragma unroll
      for (int i = 0; i < kMergeLoads; ++i) v[i] = po[static_cast<long long>(c + i) * p.head_dim_v + d];
#pragma unroll
      for (int i = 0; i < kMergeLoads; ++i) {
        if (weight_s[c + i] != 0.0f) a += weight_s[c + i] * v[i];
      }
    }
    for (; c < n; ++c) {
      if (weight_s[c] != 0.0f) a += weight_s[c] * po[static_cast<long long>(c) * p.head_dim_v + d];
    }
    out[d] = a * inv;
  }
}

}  // namespace

int decode_max_group_per_block(const DecodeParams& p) { return p.v_in_k ? 16 : 8; }

int decode_work_items(const DecodeParams& p) {
  const int maxg = decode_max_group_per_block(p);
  return p.batch * p.num_kv_heads * ((p.group_size() + maxg - 1) / maxg);
}

namespace {
// Calls f(kernel, block threads, dynamic smem bytes, tag) with the instantiation that serves p: MLA on the shared
// tile kernel, MHA/GQA on the team kernel with query heads per block = the group rounded up to a power of two, at
// most 8 (larger groups take several tiles). Returns cudaErrorInvalidValue for an unsupported dtype or head dim.
template <class F>
cudaError_t with_decode_kernel(const DecodeParams& p, F&& f) {
  if (p.v_in_k) {
    KVCAP_DISPATCH_KV_DTYPE(p.kv_dtype, D, {
      using L = DecodeSmem<576, 16, D>;
      return f(decode_kernel<576, 512, 16, D, true>, L::bytes, 16);
    })
  } else {
    const int g = p.group_size();
    KVCAP_DISPATCH_KV_DTYPE(p.kv_dtype, D, {
      KVCAP_DISPATCH_HEAD_DIM(p.head_dim_qk, HD, {
        if (g <= 1) return f(decode_team_kernel<HD, 1, D>, 0, 1);
        if (g <= 2) return f(decode_team_kernel<HD, 2, D>, 0, 2);
        if (g <= 4) return f(decode_team_kernel<HD, 4, D>, 0, 4);
        return f(decode_team_kernel<HD, 8, D>, 0, 8);
      })
    })
  }
  return cudaSuccess;
}
}  // namespace

int decode_resident_blocks(const DecodeParams& p) {
  int device = 0, sms = 0, per_sm = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 0;
  const cudaError_t e = with_decode_kernel(p, [&](auto kernel, int smem, int) {
    const cudaError_t a = detail::allow_smem(kernel, smem);
    if (a != cudaSuccess) return a;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem);
  });
  return e == cudaSuccess ? per_sm * sms : 0;
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
  if (s.num_chunks > kMaxMergeChunks) KVCAP_FAIL_LAUNCH("decode attention: split-KV merges at most 8192 chunks");
  float* part_o = workspace;
  float* part_lse =
      s.num_chunks > 1 ? workspace + static_cast<std::size_t>(p.batch) * p.num_q_heads * s.num_chunks * p.head_dim_v : nullptr;
  const cudaError_t e = with_decode_kernel(p, [&](auto kernel, int smem, int heads_per_block) {
    const cudaError_t a = detail::allow_smem(kernel, smem);
    if (a != cudaSuccess) return a;
    const int q_tiles = (p.group_size() + heads_per_block - 1) / heads_per_block;
    const dim3 grid(s.num_chunks, p.num_kv_heads * q_tiles, p.batch);
    kernel<<<grid, kThreads, smem, stream>>>(p, s, q_tiles, part_o, part_lse);
    return cudaGetLastError();
  });
  if (e != cudaSuccess || s.num_chunks <= 1) return e;
  const std::size_t weight_bytes = merge_weights(s.num_chunks) * sizeof(float);
  decode_merge_kernel<<<p.batch * p.num_q_heads, kThreads, weight_bytes, stream>>>(p, s, part_o, part_lse);
  return cudaGetLastError();
}

}  // namespace kvcap::kernels
