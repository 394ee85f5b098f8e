// Causal prefill attention on tensor cores, FlashAttention-2's structure (Dao, "FlashAttention-2", 2023, sections
// 3.1-3.3): a block of 4 warps owns 64 query rows of one head (16 per warp) and streams 64-key K/V tiles up to the
// causal diagonal through shared memory (cp.async, two stages). Each warp computes S = Q K^T and O += P V with
// mma.sync m16n8k16 (bf16 inputs, fp32 accumulators); Q stays in registers as A fragments, K is read with ldmatrix,
// V with ldmatrix.trans, and P goes from the S accumulators straight into A fragments (rounded to bf16, as
// FlashAttention does). The online softmax keeps each row's running max in the log2 domain; the row sums are
// per-lane partials reduced over the lane quad at the end.
#include <cfloat>
#include <cstdint>
#include <string>

#include "cuda/dispatch.cuh"
#include "kvcap/kernels/cuda_launchers.h"
#include "prefill_tc.h"

namespace kvcap::kernels {

namespace {

using prefill_tc::kBM;
using prefill_tc::kBN;
using prefill_tc::kThreads;
template <int D>
using PrefillSmem = prefill_tc::Smem<D>;
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, asynchronously; rows past the prompt are zero-filled (src-size 0).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// c += a (16 x 16, row) x b (16 x 8, col), bf16 in, fp32 accumulate.
__device__ __forceinline__ void mma_bf16(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 2^x by the SFU (ex2.approx.ftz: relative error ~2^-22, far under the bf16 rounding of P); 2^-huge = 0.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Two floats -> packed bf16x2 (round to nearest even), low half first.
__device__ __forceinline__ std::uint32_t pack_bf16(float lo, float hi) {
  std::uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// One 64 x D tile of bf16 rows (row t at base + offset(t)) -> shared memory rows of stride kStride; 16 bytes per
// cp.async, every thread D / 8 x 64 / 128 of them.
template <int D, class RowPtr>
__device__ __forceinline__ void load_tile(std::uint16_t* dst, RowPtr row, int first, int limit) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int i = threadIdx.x; i < 64 * kChunks; i += kThreads) {
    const int r = i / kChunks, ch = i % kChunks;
    const bool ok = first + r < limit;
    cp_async16(dst + r * PrefillSmem<D>::kStride + ch * 8, row(ok ? first + r : first) + ch * 8, ok);
  }
}

template <int D>
__global__ void __launch_bounds__(kThreads) prefill_tc_kernel(const PrefillParams p) {
  using L = PrefillSmem<D>;
  constexpr int kS = L::kStride;
  extern __shared__ __align__(16) std::uint16_t sm[];
  std::uint16_t* q_s = sm + L::q_off;
  std::uint16_t* k_s = sm + L::k_off;
  std::uint16_t* v_s = sm + L::v_off;

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int h = blockIdx.y;
  const int kvh = h / p.group_size();
  const int q0 = (gridDim.x - 1 - blockIdx.x) * kBM;  // the longest (last) query tiles first
  const int S = p.seq_len;
  const float scale = p.sm_scale * kLog2e;

  const auto q_row = [&](int t) { return p.q + p.q_offset(t, h); };
  const auto k_row = [&](int t) { return p.k + p.kv_offset(t, kvh); };
  const auto v_row = [&](int t) { return p.v + p.kv_offset(t, kvh); };

  const int q_last = min(q0 + kBM, S) - 1;
  const int tiles = q_last / kBN + 1;  // key tiles up to the diagonal
  load_tile<D>(q_s, q_row, q0, S);
  load_tile<D>(k_s, k_row, 0, S);
  load_tile<D>(v_s, v_row, 0, S);
  cp_async_commit();

  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m_run[2] = {-FLT_MAX, -FLT_MAX}, l_run[2] = {0.0f, 0.0f};  // rows g and g + 8 of this warp's 16
  std::uint32_t qa[D / 16][4];
  const int row0 = q0 + warp * 16;  // this warp's first query row

  for (int it = 0; it < tiles; ++it) {
    const int buf = it & 1;
    if (it + 1 < tiles) {  // prefetch the next tile into the other stage
      const int kn = (it + 1) * kBN;
      load_tile<D>(k_s + (buf ^ 1) * kBN * kS, k_row, kn, S);
      load_tile<D>(v_s + (buf ^ 1) * kBN * kS, v_row, kn, S);
    }
    cp_async_commit();
    cp_async_wait<1>();  // this tile (and Q) landed; the prefetch may still fly
    __syncthreads();
    if (it == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        // A fragment of rows row0..+15, dims kk*16..+15: matrices (rows 0-7 | 8-15) x (dims 0-7 | 8-15).
        int r, col;
        prefill_tc::q_a_address(lane, warp, kk, r, col);
        ldmatrix_x4(qa[kk], q_s + r * kS + col);
      }
    }
    const std::uint16_t* kt = k_s + buf * kBN * kS;
    const std::uint16_t* vt = v_s + buf * kBN * kS;
    const int k0 = it * kBN;

    // S = Q K^T for 16 rows x 64 keys: 8 n-tiles of 8 keys.
    float s[kBN / 8][4];
#pragma unroll
    for (int n = 0; n < kBN / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int n = 0; n < kBN / 8; n += 2) {
        // B fragments of two n-tiles: matrices (keys n*8+0-7 | n*8+8-15) x (dims kk*16+0-7 | +8-15).
        std::uint32_t b[4];
        int key, col;
        prefill_tc::k_b_address(lane, n, kk, key, col);
        ldmatrix_x4(b, kt + key * kS + col);
        mma_bf16(s[n], qa[kk], b[0], b[1]);
        mma_bf16(s[n + 1], qa[kk], b[2], b[3]);
      }
    }
    // Scale to the log2 domain, mask (causal and past the prompt: only tiles that reach the warp's first row or
    // the prompt's end need it), and the online softmax of rows g and g + 8.
    float mx[2] = {-FLT_MAX, -FLT_MAX};
    if (prefill_tc::tile_needs_mask(k0, row0, S)) {
#pragma unroll
      for (int n = 0; n < kBN / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int qpos = row0 + prefill_tc::c_row(lane, e), kpos = k0 + n * 8 + prefill_tc::c_col(lane, e);
          const bool ok = prefill_tc::visible(qpos, kpos, S);
          s[n][e] = ok ? s[n][e] * scale : -FLT_MAX;
          mx[e >> 1] = fmaxf(mx[e >> 1], s[n][e]);
        }
      }
    } else {
#pragma unroll
      for (int n = 0; n < kBN / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[n][e] *= scale;
          mx[e >> 1] = fmaxf(mx[e >> 1], s[n][e]);
        }
      }
    }
    float f[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      const float m_new = fmaxf(m_run[r], mx[r]);
      f[r] = fast_exp2(m_run[r] - m_new);
      m_run[r] = m_new;
      l_run[r] *= f[r];
    }
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      o[n][0] *= f[0];
      o[n][1] *= f[0];
      o[n][2] *= f[1];
      o[n][3] *= f[1];
    }
    // P = exp2(S - m) (0 where masked: a row with nothing visible yet keeps m = -FLT_MAX and P = 0).
#pragma unroll
    for (int n = 0; n < kBN / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float pe = s[n][e] > -FLT_MAX ? fast_exp2(s[n][e] - m_run[e >> 1]) : 0.0f;
        s[n][e] = pe;
        l_run[e >> 1] += pe;
      }
    }
    // O += P V: 4 k-steps of 16 keys; P's A fragment is the S accumulators of n-tiles 2t and 2t + 1.
#pragma unroll
    for (int t = 0; t < kBN / 16; ++t) {
      const std::uint32_t pa[4] = {pack_bf16(s[2 * t][0], s[2 * t][1]), pack_bf16(s[2 * t][2], s[2 * t][3]),
                                   pack_bf16(s[2 * t + 1][0], s[2 * t + 1][1]),
                                   pack_bf16(s[2 * t + 1][2], s[2 * t + 1][3])};
#pragma unroll
      for (int n = 0; n < D / 8; n += 2) {
        // B fragments of dims n*8.. and n*8+8..: V^T via ldmatrix.trans of (keys t*16+0-7 | +8-15) x dims.
        std::uint32_t b[4];
        int key, col;
        prefill_tc::v_b_address(lane, t, n, key, col);
        ldmatrix_x4_trans(b, vt + key * kS + col);
        mma_bf16(o[n], pa, b[0], b[1]);
        mma_bf16(o[n + 1], pa, b[2], b[3]);
      }
    }
    __syncthreads();  // every warp is done with this stage before the next prefetch overwrites it
  }
  cp_async_wait<0>();

  // Row sums over the quad, normalise, store fp32 (two adjacent dims per lane and n-tile).
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 1);
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 2);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int qpos = row0 + prefill_tc::c_row(lane, 2 * r);
    if (qpos >= S) continue;
    const float inv = l_run[r] > 0.0f ? 1.0f / l_run[r] : 0.0f;
    float* out = p.out + p.q_offset(qpos, h);
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      *reinterpret_cast<float2*>(out + n * 8 + prefill_tc::c_col(lane, 0)) = make_float2(o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
    }
  }
}

template <int D>
cudaError_t launch_prefill(const PrefillParams& p, cudaStream_t stream) {
  constexpr int smem = PrefillSmem<D>::bytes;
  static const cudaError_t attr = detail::allow_smem(prefill_tc_kernel<D>, smem);
  if (attr != cudaSuccess) return attr;
  const dim3 grid((p.seq_len + kBM - 1) / kBM, p.num_q_heads);
  prefill_tc_kernel<D><<<grid, kThreads, smem, stream>>>(p);
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
