// Host-side test and benchmark fixtures: random decode caches built in both layouts from the same logical values,
// GEMM and prefill inputs. Shared by the CPU self-tests, the GPU self-tests and the calibration backends.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "kvcap/kernels/decode_attention.h"
#include "kvcap/kernels/numeric.h"
#include "kvcap/kernels/prefill_attention.h"

namespace kvcap::kernels::detail {

struct DecodeFixtureShape {
  int batch = 1;
  std::vector<int> seq_lens;  // [batch]
  int num_kv_heads = 1, num_q_heads = 1, head_dim_qk = 128, head_dim_v = 128, page_size = 16;
  bool mla = false;
  KvDtype kv_dtype = KvDtype::bf16;
  float k_scale = 1.0f, v_scale = 1.0f;
};

// The same logical cache stored contiguous ([batch, max_len, kv_heads, dqk]) and paged (shuffled pages).
struct DecodeFixture {
  DecodeFixtureShape shape;
  int max_len = 0;
  std::vector<float> q;                   // [batch, q_heads, dqk]
  std::vector<std::uint8_t> k_contig, v_contig, k_paged, v_paged;  // raw kv_dtype bytes
  std::vector<std::int32_t> seq_lens, page_indptr, page_indices;
  int num_pages = 0;

  DecodeParams params(KvLayout layout, float* out) const {
    DecodeParams p;
    p.q = q.data();
    p.out = out;
    p.layout = layout;
    p.k = layout == KvLayout::paged ? k_paged.data() : k_contig.data();
    p.v = shape.mla ? p.k : (layout == KvLayout::paged ? v_paged.data() : v_contig.data());
    p.v_in_k = shape.mla;
    p.seq_lens = seq_lens.data();
    p.page_indptr = page_indptr.data();
    p.page_indices = page_indices.data();
    p.batch = shape.batch;
    p.num_q_heads = shape.num_q_heads;
    p.num_kv_heads = shape.num_kv_heads;
    p.head_dim_qk = shape.head_dim_qk;
    p.head_dim_v = shape.head_dim_v;
    p.max_kv_len = max_len;
    p.page_size = shape.page_size;
    p.kv_dtype = shape.kv_dtype;
    p.sm_scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim_qk));
    p.k_scale = shape.k_scale;
    p.v_scale = shape.v_scale;
    return p;
  }
  std::size_t out_floats() const {
    return static_cast<std::size_t>(shape.batch) * shape.num_q_heads * shape.head_dim_v;
  }
};

inline DecodeFixture make_decode_fixture(const DecodeFixtureShape& s, std::mt19937_64& rng) {
  DecodeFixture f;
  f.shape = s;
  f.max_len = *std::max_element(s.seq_lens.begin(), s.seq_lens.end());
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  const std::size_t es = kv_dtype_bytes(s.kv_dtype);
  const std::int64_t row = std::int64_t{s.num_kv_heads} * s.head_dim_qk;  // elements per token
  f.q.resize(static_cast<std::size_t>(s.batch) * s.num_q_heads * s.head_dim_qk);
  for (auto& x : f.q) x = uni(rng) * 2.0f;
  f.seq_lens.assign(s.seq_lens.begin(), s.seq_lens.end());
  // Page table: each sequence holds ceil(len / page) pages, ids shuffled over the pool.
  f.page_indptr.assign(1, 0);
  for (int b = 0; b < s.batch; ++b) {
    f.page_indptr.push_back(f.page_indptr.back() + (s.seq_lens[b] + s.page_size - 1) / s.page_size);
  }
  f.num_pages = f.page_indptr.back() + 3;  // a few unused pages
  std::vector<std::int32_t> ids(static_cast<std::size_t>(f.num_pages));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  f.page_indices.assign(ids.begin(), ids.begin() + f.page_indptr.back());

  const std::size_t contig_elems = static_cast<std::size_t>(s.batch) * f.max_len * row;
  const std::size_t paged_elems = static_cast<std::size_t>(f.num_pages) * s.page_size * row;
  f.k_contig.assign(contig_elems * es, 0);
  f.k_paged.assign(paged_elems * es, 0);
  if (!s.mla) {
    f.v_contig.assign(contig_elems * es, 0);
    f.v_paged.assign(paged_elems * es, 0);
  }
  DecodeParams pc = f.params(KvLayout::contiguous, nullptr);
  DecodeParams pp = f.params(KvLayout::paged, nullptr);
  std::vector<float> vals(static_cast<std::size_t>(s.head_dim_qk));
  std::vector<std::uint8_t> bytes(vals.size() * es);
  for (int b = 0; b < s.batch; ++b) {
    for (int t = 0; t < s.seq_lens[b]; ++t) {
      for (int h = 0; h < s.num_kv_heads; ++h) {
        for (int kv = 0; kv < (s.mla ? 1 : 2); ++kv) {
          const float scale = kv == 0 ? s.k_scale : s.v_scale;
          for (auto& x : vals) x = uni(rng) * 2.0f * scale;
          quantize_kv(s.kv_dtype, vals.data(), bytes.data(), vals.size(), scale);
          auto& dc = kv == 0 ? f.k_contig : f.v_contig;
          auto& dp = kv == 0 ? f.k_paged : f.v_paged;
          std::copy(bytes.begin(), bytes.end(), dc.begin() + pc.kv_offset(b, t, h) * static_cast<std::int64_t>(es));
          std::copy(bytes.begin(), bytes.end(), dp.begin() + pp.kv_offset(b, t, h) * static_cast<std::int64_t>(es));
        }
      }
    }
  }
  return f;
}

// Random bf16 values in [-amp, amp].
inline std::vector<std::uint16_t> random_bf16(std::size_t n, std::mt19937_64& rng, float amp = 1.0f) {
  std::uniform_real_distribution<float> uni(-amp, amp);
  std::vector<std::uint16_t> v(n);
  for (auto& x : v) x = float_to_bf16(uni(rng));
  return v;
}

// A random causal-prefill problem for the self-tests: shape (seq_len in [1, max_seq], 1..max_kv_heads KV heads,
// 1..max_group query heads per KV head), bf16 inputs q [S x Hq x d], k and v [S x Hkv x d]. The caller points the
// params at its own copies of q/k/v and an output buffer.
struct PrefillCase {
  PrefillParams p;
  std::vector<std::uint16_t> q, k, v;
};
inline PrefillCase random_prefill_case(std::mt19937_64& rng, int max_seq, int max_kv_heads, int max_group, int head_dim) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  PrefillCase c;
  c.p.seq_len = pick(1, max_seq);
  c.p.num_kv_heads = pick(1, max_kv_heads);
  c.p.num_q_heads = c.p.num_kv_heads * pick(1, max_group);
  c.p.head_dim = head_dim;
  c.p.sm_scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  c.q = random_bf16(static_cast<std::size_t>(c.p.seq_len) * c.p.num_q_heads * head_dim, rng, 2.0f);
  c.k = random_bf16(static_cast<std::size_t>(c.p.seq_len) * c.p.num_kv_heads * head_dim, rng, 2.0f);
  c.v = random_bf16(c.k.size(), rng);
  return c;
}

}  // namespace kvcap::kernels::detail
