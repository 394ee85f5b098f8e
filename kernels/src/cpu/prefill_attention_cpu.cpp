#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/parallel.h"
#include "kvcap/kernels/prefill_attention.h"

namespace kvcap::kernels {

namespace {
constexpr float kLog2e = 1.4426950408889634f;

inline float dot8(const float* a, const float* b, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int d = 0; d < n; d += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[d + j] * b[d + j];
  }
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}
}  // namespace

void validate_prefill_params(const PrefillParams& p) {
  const auto fail = [](const std::string& what) { throw std::invalid_argument("prefill attention: " + what); };
  if (p.seq_len <= 0 || p.num_q_heads <= 0 || p.num_kv_heads <= 0) fail("sizes must be positive");
  if (p.num_q_heads % p.num_kv_heads != 0) fail("num_q_heads is not a multiple of num_kv_heads");
  if (p.head_dim != 64 && p.head_dim != 128) {
    fail("unsupported head_dim " + std::to_string(p.head_dim) + " (supported: 64, 128)");
  }
  if (p.q == nullptr || p.k == nullptr || p.v == nullptr || p.out == nullptr) fail("null pointer");
}

void prefill_attention_cpu(const PrefillParams& p, int num_threads) {
  validate_prefill_params(p);
  const int S = p.seq_len, D = p.head_dim, G = p.group_size();
  const int tiles = (S + kPrefillTile - 1) / kPrefillTile;
  const std::int64_t items = std::int64_t{tiles} * p.num_q_heads;
  detail::parallel_for(items, num_threads, [&](std::int64_t lo, std::int64_t hi) {
    constexpr int T = kPrefillTile;
    std::vector<float> qs(static_cast<std::size_t>(T) * D), kf(static_cast<std::size_t>(T) * D),
        vf(static_cast<std::size_t>(T) * D), acc(static_cast<std::size_t>(T) * D);
    float m[T], l[T], s[T];
    for (std::int64_t item = lo; item < hi; ++item) {
      // Zig-zag over query tiles (first, last, second, second last, ...) so contiguous ranges of items carry
      // similar causal work.
      const int h = static_cast<int>(item % p.num_q_heads);
      const int j = static_cast<int>(item / p.num_q_heads);
      const int qt = j % 2 == 0 ? j / 2 : tiles - 1 - j / 2;
      const int kvh = h / G;
      const int q0 = qt * T, nq = std::min(T, S - q0);
      for (int r = 0; r < nq; ++r) {
        const std::uint16_t* q = p.q + p.q_offset(q0 + r, h);
        for (int d = 0; d < D; ++d) qs[static_cast<std::size_t>(r) * D + d] = bf16_to_float(q[d]) * p.sm_scale * kLog2e;
        m[r] = -std::numeric_limits<float>::infinity();
        l[r] = 0.0f;
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      const int q_last = q0 + nq - 1;
      for (int k0 = 0; k0 <= q_last; k0 += T) {
        const int nk = std::min(T, S - k0);
        for (int t = 0; t < nk; ++t) {
          const std::uint16_t* kr = p.k + p.kv_offset(k0 + t, kvh);
          const std::uint16_t* vr = p.v + p.kv_offset(k0 + t, kvh);
          for (int d = 0; d < D; ++d) {
            kf[static_cast<std::size_t>(t) * D + d] = bf16_to_float(kr[d]);
            vf[static_cast<std::size_t>(t) * D + d] = bf16_to_float(vr[d]);
          }
        }
        for (int r = 0; r < nq; ++r) {
          const int visible = std::min(nk, q0 + r - k0 + 1);  // causal: keys <= query position
          if (visible <= 0) continue;
          float mt = m[r];
          for (int t = 0; t < visible; ++t) {
            s[t] = dot8(&qs[static_cast<std::size_t>(r) * D], &kf[static_cast<std::size_t>(t) * D], D);
            mt = std::max(mt, s[t]);
          }
          const float factor = std::exp2(m[r] - mt);
          float sum = 0.0f;
          for (int t = 0; t < visible; ++t) sum += (s[t] = std::exp2(s[t] - mt));
          l[r] = l[r] * factor + sum;
          m[r] = mt;
          float* a = &acc[static_cast<std::size_t>(r) * D];
          for (int d = 0; d < D; ++d) a[d] *= factor;
          for (int t = 0; t < visible; ++t) {
            const float* v = &vf[static_cast<std::size_t>(t) * D];
            for (int d = 0; d < D; ++d) a[d] += s[t] * v[d];
          }
        }
      }
      for (int r = 0; r < nq; ++r) {
        float* o = p.out + p.q_offset(q0 + r, h);
        const float inv = 1.0f / l[r];
        for (int d = 0; d < D; ++d) o[d] = acc[static_cast<std::size_t>(r) * D + d] * inv;
      }
    }
  });
}

void prefill_attention_reference(const PrefillParams& p) {
  validate_prefill_params(p);
  const int S = p.seq_len, D = p.head_dim, G = p.group_size();
  std::vector<double> s(static_cast<std::size_t>(S));
  for (int h = 0; h < p.num_q_heads; ++h) {
    for (int i = 0; i < S; ++i) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int j = 0; j <= i; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d) {
          dot += double{bf16_to_float(p.q[p.q_offset(i, h) + d])} * bf16_to_float(p.k[p.kv_offset(j, h / G) + d]);
        }
        s[j] = dot * p.sm_scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int j = 0; j <= i; ++j) sum += (s[j] = std::exp(s[j] - mx));
      for (int d = 0; d < D; ++d) {
        double a = 0;
        for (int j = 0; j <= i; ++j) a += s[j] * bf16_to_float(p.v[p.kv_offset(j, h / G) + d]);
        p.out[p.q_offset(i, h) + d] = static_cast<float>(a / sum);
      }
    }
  }
}

}  // namespace kvcap::kernels
