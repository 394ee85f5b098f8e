#include <algorithm>
#include <stdexcept>
#include <vector>

#include "cpu/parallel.h"
#include "kvcap/kernels/gemm.h"

namespace kvcap::kernels {

namespace {
constexpr int kPanel = 64;    // columns of C (rows of B) per task
constexpr int kKBlock = 256;  // k per packed B block: 256 x 64 floats = 64 KiB
constexpr int kRows = 4;      // rows of A per micro-tile
constexpr int kCols = 16;     // columns per micro-tile (4 x 16 accumulators stay in registers)
}  // namespace

void gemm_cpu(const GemmParams& p, int num_threads) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) throw std::invalid_argument("gemm: m, n, k must be positive");
  if (p.a == nullptr || p.b == nullptr || p.c == nullptr) throw std::invalid_argument("gemm: null pointer");
  const int M = p.m, N = p.n, K = p.k;
  // Widen A once (bf16 -> fp32), in parallel over rows.
  std::vector<float> af(static_cast<std::size_t>(M) * K);
  detail::parallel_for(M, num_threads, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo * K; i < hi * K; ++i) af[static_cast<std::size_t>(i)] = bf16_to_float(p.a[i]);
  });
  const int panels = (N + kPanel - 1) / kPanel;
  detail::parallel_for(panels, num_threads, [&](std::int64_t lo, std::int64_t hi) {
    std::vector<float> bt(static_cast<std::size_t>(kKBlock) * kPanel);  // packed [k][64] block of B^T
    for (std::int64_t panel = lo; panel < hi; ++panel) {
      const int n0 = static_cast<int>(panel) * kPanel;
      const int nb = std::min(kPanel, N - n0);
      for (int k0 = 0; k0 < K; k0 += kKBlock) {
        const int kb = std::min(kKBlock, K - k0);
        for (int kk = 0; kk < kb; ++kk) {
          for (int j = 0; j < kPanel; ++j) {
            bt[static_cast<std::size_t>(kk) * kPanel + j] = j < nb ? bf16_to_float(p.b[p.b_offset(n0 + j, k0 + kk)]) : 0.0f;
          }
        }
        for (int m0 = 0; m0 < M; m0 += kRows) {
          const int rows = std::min(kRows, M - m0);
          const float* arow[kRows];
          for (int i = 0; i < kRows; ++i) arow[i] = &af[static_cast<std::size_t>(m0 + std::min(i, rows - 1)) * K + k0];
          for (int c0 = 0; c0 < nb; c0 += kCols) {
            float acc[kRows][kCols] = {};
            for (int kk = 0; kk < kb; ++kk) {
              const float* bv = &bt[static_cast<std::size_t>(kk) * kPanel + c0];
              for (int i = 0; i < kRows; ++i) {
                const float a = arow[i][kk];
                for (int j = 0; j < kCols; ++j) acc[i][j] += a * bv[j];
              }
            }
            const int cols = std::min(kCols, nb - c0);
            for (int i = 0; i < rows; ++i) {
              float* crow = p.c + p.c_offset(m0 + i, n0 + c0);
              if (k0 == 0) {
                for (int j = 0; j < cols; ++j) crow[j] = acc[i][j];
              } else {
                for (int j = 0; j < cols; ++j) crow[j] += acc[i][j];
              }
            }
          }
        }
      }
    }
  });
}

void gemm_reference(const GemmParams& p) {
  for (int i = 0; i < p.m; ++i) {
    for (int j = 0; j < p.n; ++j) {
      double s = 0;
      for (int kk = 0; kk < p.k; ++kk) {
        s += double{bf16_to_float(p.a[p.a_offset(i, kk)])} * bf16_to_float(p.b[p.b_offset(j, kk)]);
      }
      p.c[p.c_offset(i, j)] = static_cast<float>(s);
    }
  }
}

}  // namespace kvcap::kernels
