// A CPU emulation of the tensor-core prefill kernel (kernels/src/cuda/prefill_attention.cu) that keeps its
// structure: blocks of 64 query rows x head, 4 warps of 16 rows, 64-key tiles in a shared-memory image with the
// kernel's strides, Q / K / V fragments fetched by emulated ldmatrix (x4, and x4.trans for V) from the addresses
// the kernel computes (prefill_tc.h), mma.sync m16n8k16 emulated from the PTX fragment layout, the masked tiles,
// the online softmax on accumulator fragments with quad reductions, P rounded to bf16 into A fragments, and the
// epilogue. Lanes advance in lockstep; a shuffle reads the partner's value as it was before the step.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kvcap/kernels/prefill_attention.h"
#include "prefill_tc.h"

namespace kvcap::kernels {

namespace {

using namespace prefill_tc;
constexpr int kLanes = 32;
constexpr float kLog2e = 1.4426950408889634f;

using Regs4 = std::uint32_t[kLanes][4];

// ldmatrix.x4 (trans = false) / .x4.trans: lane l supplies the address of row l % 8 of matrix l / 8; lane t
// receives in register m the pair (row t/4, columns 2(t%4), 2(t%4)+1) of matrix m, or with .trans the pair
// (rows 2(t%4), 2(t%4)+1, column t/4). `address(lane, row, col)` gives each lane's (row, col) in `smem` (stride).
template <class Address>
void ldmatrix_x4(const std::uint16_t* smem, int stride, bool trans, Address&& address, Regs4& out) {
  int row[kLanes], col[kLanes];
  for (int l = 0; l < kLanes; ++l) address(l, row[l], col[l]);
  const auto elem = [&](int m, int r, int c) {  // element (r, c) of matrix m
    const int l = m * 8 + r;
    return std::uint32_t{smem[row[l] * stride + col[l] + c]};
  };
  for (int t = 0; t < kLanes; ++t) {
    for (int m = 0; m < 4; ++m) {
      const int i = t / 4, j = 2 * (t % 4);
      out[t][m] = trans ? elem(m, j, i) | (elem(m, j + 1, i) << 16) : elem(m, i, j) | (elem(m, i, j + 1) << 16);
    }
  }
}

float lo(std::uint32_t x) {
  return bf16_to_float(static_cast<std::uint16_t>(x & 0xffffu));
}
float hi(std::uint32_t x) {
  return bf16_to_float(static_cast<std::uint16_t>(x >> 16));
}

// mma.sync.m16n8k16.row.col f32.bf16: lane (g = lane/4, c = lane%4) holds A at a0 (g, 2c..2c+1), a1 (g+8, 2c..),
// a2 (g, 2c+8..), a3 (g+8, 2c+8..); B at b0 (k 2c..2c+1, n g), b1 (k 2c+8.., n g); C at c_row / c_col.
void mma(float (&c)[kLanes][4], const std::uint32_t (&a)[kLanes][4], const std::uint32_t (&b)[kLanes][2]) {
  float A[16][16], B[16][8], C[16][8];
  for (int l = 0; l < kLanes; ++l) {
    const int g = l / 4, q = 2 * (l % 4);
    A[g][q] = lo(a[l][0]), A[g][q + 1] = hi(a[l][0]);
    A[g + 8][q] = lo(a[l][1]), A[g + 8][q + 1] = hi(a[l][1]);
    A[g][q + 8] = lo(a[l][2]), A[g][q + 9] = hi(a[l][2]);
    A[g + 8][q + 8] = lo(a[l][3]), A[g + 8][q + 9] = hi(a[l][3]);
    B[q][g] = lo(b[l][0]), B[q + 1][g] = hi(b[l][0]);
    B[q + 8][g] = lo(b[l][1]), B[q + 9][g] = hi(b[l][1]);
    for (int e = 0; e < 4; ++e) C[c_row(l, e)][c_col(l, e)] = c[l][e];
  }
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 8; ++j) {
      float acc = C[i][j];
      for (int k = 0; k < 16; ++k) acc = std::fmaf(A[i][k], B[k][j], acc);
      C[i][j] = acc;
    }
  }
  for (int l = 0; l < kLanes; ++l) {
    for (int e = 0; e < 4; ++e) c[l][e] = C[c_row(l, e)][c_col(l, e)];
  }
}

// The lanes of a quad (xor 1, then xor 2), as the kernel's two shuffles.
template <class Op>
void quad_reduce(float (&v)[kLanes][2], Op op) {
  for (int o : {1, 2}) {
    float before[kLanes][2];
    std::memcpy(before, v, sizeof before);
    for (int l = 0; l < kLanes; ++l) {
      for (int r = 0; r < 2; ++r) v[l][r] = op(before[l][r], before[l ^ o][r]);
    }
  }
}

std::uint32_t pack_bf16(float a, float b) {
  return std::uint32_t{float_to_bf16(a)} | (std::uint32_t{float_to_bf16(b)} << 16);
}

template <int D>
struct Warp {
  std::uint32_t qa[D / 16][kLanes][4];
  float o[D / 8][kLanes][4];
  float m[kLanes][2], l[kLanes][2];
};

template <int D>
void emulate_block(const PrefillParams& p, int q0, int h, std::vector<std::uint16_t>& sm) {
  using L = Smem<D>;
  constexpr int kS = L::kStride;
  const int S = p.seq_len, kvh = h / p.group_size();
  const float scale = p.sm_scale * kLog2e;
  const auto load_tile = [&](int off, const std::uint16_t* base, int first, int heads, int head) {
    for (int r = 0; r < 64; ++r) {
      for (int d = 0; d < D; ++d) {
        const bool ok = first + r < S;
        sm[static_cast<std::size_t>(off) + static_cast<std::size_t>(r) * kS + static_cast<std::size_t>(d)] =
            ok ? base[(std::int64_t{first + r} * heads + head) * D + d] : std::uint16_t{0};
      }
    }
  };
  load_tile(L::q_off, p.q, q0, p.num_q_heads, h);
  const int q_last = std::min(q0 + kBM, S) - 1, tiles = q_last / kBN + 1;
  std::vector<Warp<D>> warps(4);
  for (int w = 0; w < 4; ++w) {
    for (int kk = 0; kk < D / 16; ++kk)
      ldmatrix_x4(
          sm.data() + L::q_off, kS, false, [&](int lane, int& r, int& c) { q_a_address(lane, w, kk, r, c); },
          warps[static_cast<std::size_t>(w)].qa[kk]);
    for (auto& n : warps[static_cast<std::size_t>(w)].o)
      for (auto& lane : n) lane[0] = lane[1] = lane[2] = lane[3] = 0.0f;
    for (int l = 0; l < kLanes; ++l) {
      warps[static_cast<std::size_t>(w)].m[l][0] = warps[static_cast<std::size_t>(w)].m[l][1] = -FLT_MAX;
      warps[static_cast<std::size_t>(w)].l[l][0] = warps[static_cast<std::size_t>(w)].l[l][1] = 0.0f;
    }
  }
  for (int it = 0; it < tiles; ++it) {
    const int k0 = it * kBN;
    load_tile(L::k_off, p.k, k0, p.num_kv_heads, kvh);
    load_tile(L::v_off, p.v, k0, p.num_kv_heads, kvh);
    for (int w = 0; w < 4; ++w) {
      Warp<D>& W = warps[static_cast<std::size_t>(w)];
      const int row0 = q0 + w * 16;
      float s[kBN / 8][kLanes][4] = {};
      for (int kk = 0; kk < D / 16; ++kk) {
        for (int n = 0; n < kBN / 8; n += 2) {
          Regs4 b;
          ldmatrix_x4(
              sm.data() + L::k_off, kS, false, [&](int lane, int& r, int& c) { k_b_address(lane, n, kk, r, c); }, b);
          std::uint32_t b01[kLanes][2], b23[kLanes][2];
          for (int l = 0; l < kLanes; ++l)
            b01[l][0] = b[l][0], b01[l][1] = b[l][1], b23[l][0] = b[l][2], b23[l][1] = b[l][3];
          mma(s[n], W.qa[kk], b01);
          mma(s[n + 1], W.qa[kk], b23);
        }
      }
      float mx[kLanes][2];
      const bool mask = tile_needs_mask(k0, row0, S);
      for (int l = 0; l < kLanes; ++l) {
        mx[l][0] = mx[l][1] = -FLT_MAX;
        for (int n = 0; n < kBN / 8; ++n) {
          for (int e = 0; e < 4; ++e) {
            const bool ok = !mask || visible(row0 + c_row(l, e), k0 + n * 8 + c_col(l, e), S);
            s[n][l][e] = ok ? s[n][l][e] * scale : -FLT_MAX;
            mx[l][e >> 1] = std::max(mx[l][e >> 1], s[n][l][e]);
          }
        }
      }
      quad_reduce(mx, [](float a, float b) { return std::max(a, b); });
      float f[kLanes][2];
      for (int l = 0; l < kLanes; ++l) {
        for (int r = 0; r < 2; ++r) {
          const float m_new = std::max(W.m[l][r], mx[l][r]);
          f[l][r] = std::exp2(W.m[l][r] - m_new);
          W.m[l][r] = m_new;
          W.l[l][r] *= f[l][r];
        }
        for (auto& n : W.o) n[l][0] *= f[l][0], n[l][1] *= f[l][0], n[l][2] *= f[l][1], n[l][3] *= f[l][1];
        for (int n = 0; n < kBN / 8; ++n) {
          for (int e = 0; e < 4; ++e) {
            const float pe = s[n][l][e] > -FLT_MAX ? std::exp2(s[n][l][e] - W.m[l][e >> 1]) : 0.0f;
            s[n][l][e] = pe;
            W.l[l][e >> 1] += pe;
          }
        }
      }
      for (int t = 0; t < kBN / 16; ++t) {
        std::uint32_t pa[kLanes][4];
        const auto& s_lo = s[static_cast<std::size_t>(2 * t)];
        const auto& s_hi = s[static_cast<std::size_t>(2 * t + 1)];
        for (int l = 0; l < kLanes; ++l) {
          pa[l][0] = pack_bf16(s_lo[l][0], s_lo[l][1]);
          pa[l][1] = pack_bf16(s_lo[l][2], s_lo[l][3]);
          pa[l][2] = pack_bf16(s_hi[l][0], s_hi[l][1]);
          pa[l][3] = pack_bf16(s_hi[l][2], s_hi[l][3]);
        }
        for (int n = 0; n < D / 8; n += 2) {
          Regs4 b;
          ldmatrix_x4(
              sm.data() + L::v_off, kS, true, [&](int lane, int& r, int& c) { v_b_address(lane, t, n, r, c); }, b);
          std::uint32_t b01[kLanes][2], b23[kLanes][2];
          for (int l = 0; l < kLanes; ++l)
            b01[l][0] = b[l][0], b01[l][1] = b[l][1], b23[l][0] = b[l][2], b23[l][1] = b[l][3];
          mma(W.o[n], pa, b01);
          mma(W.o[n + 1], pa, b23);
        }
      }
    }
  }
  for (int w = 0; w < 4; ++w) {
    Warp<D>& W = warps[static_cast<std::size_t>(w)];
    quad_reduce(W.l, [](float a, float b) { return a + b; });
    for (int l = 0; l < kLanes; ++l) {
      for (int r = 0; r < 2; ++r) {
        const int qpos = q0 + w * 16 + c_row(l, 2 * r);
        if (qpos >= S) continue;
        const float inv = W.l[l][r] > 0.0f ? 1.0f / W.l[l][r] : 0.0f;
        float* out = p.out + p.q_offset(qpos, h);
        for (int n = 0; n < D / 8; ++n) {
          out[n * 8 + c_col(l, 0)] = W.o[n][l][2 * r] * inv;
          out[n * 8 + c_col(l, 0) + 1] = W.o[n][l][2 * r + 1] * inv;
        }
      }
    }
  }
}

template <int D>
void emulate(const PrefillParams& p) {
  std::vector<std::uint16_t> sm(static_cast<std::size_t>(Smem<D>::elements));
  for (int q0 = 0; q0 < p.seq_len; q0 += kBM) {
    for (int h = 0; h < p.num_q_heads; ++h) emulate_block<D>(p, q0, h, sm);
  }
}

}  // namespace

void prefill_attention_gpu_emulation(const PrefillParams& p) {
  validate_prefill_params(p);
  if (p.head_dim == 64)
    emulate<64>(p);
  else
    emulate<128>(p);
}

}  // namespace kvcap::kernels
