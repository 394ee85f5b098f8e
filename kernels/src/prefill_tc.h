// The layout arithmetic of the tensor-core prefill kernel (kernels/src/cuda/prefill_attention.cu), shared with its
// CPU emulation (kernels/src/cpu/prefill_tc_emulation.cpp): the tile sizes and shared-memory strides, the
// shared-memory (row, column) each lane hands to ldmatrix for the Q, K and V fragments, where an mma accumulator
// element lives in its 16 x 8 tile, which tiles need the causal mask, and the mask itself. The emulation applies
// ldmatrix's and mma.sync's documented fragment semantics (PTX ISA, "Matrix fragments for mma.m16n8k16" and
// "ldmatrix") to these addresses, so a wrong address or fragment index fails a CPU test, not only a GPU one.
#pragma once

#include "kvcap/kernels/numeric.h"

namespace kvcap::kernels::prefill_tc {

inline constexpr int kThreads = 128;  // 4 warps
inline constexpr int kBM = 64;        // query rows per block (16 per warp)
inline constexpr int kBN = 64;        // keys per tile

// Shared memory rows are padded by 16 bytes so that the 8 rows an ldmatrix reads fall in different bank groups.
template <int D>
struct Smem {
  static constexpr int kStride = D + 8;  // bf16 elements per row
  static constexpr int q_off = 0;
  static constexpr int k_off = q_off + kBM * kStride;
  static constexpr int v_off = k_off + 2 * kBN * kStride;
  static constexpr int elements = v_off + 2 * kBN * kStride;
  static constexpr int bytes = elements * 2;
};

// ldmatrix.x4 of Q's A fragment for k-step kk: lane -> (row of the block's Q tile, first column) it points at.
// Matrices: rows 0-7 | 8-15 of the warp's 16, columns kk*16 + 0-7 | + 8-15 -> a0, a1, a2, a3.
KVCAP_HD void q_a_address(int lane, int warp, int kk, int& row, int& col) {
  row = warp * 16 + (lane & 15);
  col = kk * 16 + (lane >> 4) * 8;
}
// ldmatrix.x4 of K's B fragments for n-tiles n, n + 1 and k-step kk: lane -> (key row of the tile, first column).
// Matrices: keys n*8 + 0-7 with dims kk*16 + 0-7 | + 8-15, then keys n*8 + 8-15 likewise -> b0, b1 of n, b0, b1 of n+1.
KVCAP_HD void k_b_address(int lane, int n, int kk, int& key, int& col) {
  key = n * 8 + (lane & 7) + (lane >> 4) * 8;
  col = kk * 16 + ((lane >> 3) & 1) * 8;
}
// ldmatrix.x4.trans of V's B fragments for key step t and dim tiles n, n + 1: lane -> (key row, first column).
// Matrices: keys t*16 + 0-7 | + 8-15 with dims n*8 + 0-7, then the same keys with dims n*8 + 8-15.
KVCAP_HD void v_b_address(int lane, int t, int n, int& key, int& col) {
  key = t * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
  col = n * 8 + (lane >> 4) * 8;
}
// Accumulator element e (0-3) of a lane in an m16n8 tile: row and column within the tile.
KVCAP_HD int c_row(int lane, int e) {
  return (lane >> 2) + (e >> 1) * 8;
}
KVCAP_HD int c_col(int lane, int e) {
  return 2 * (lane & 3) + (e & 1);
}

// Causal attention over a prompt of S tokens: query position q sees key position k.
KVCAP_HD bool visible(int q, int k, int S) {
  return k <= q && k < S;
}
// A key tile starting at k0 needs the mask for a warp whose first row is row0 when it reaches past that row or the
// prompt's end; every other tile is wholly visible.
KVCAP_HD bool tile_needs_mask(int k0, int row0, int S) {
  return k0 + kBN - 1 > row0 || k0 + kBN > S;
}

}  // namespace kvcap::kernels::prefill_tc
