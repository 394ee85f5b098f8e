#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/parallel.h"
#include "kvcap/kernels/decode_attention.h"

namespace kvcap::kernels {

namespace {

constexpr float kLog2e = 1.4426950408889634f;

// Dot product over n (a multiple of 8) with eight interleaved partial sums, so the compiler vectorises it without
// -ffast-math; the summation order is fixed, hence results do not depend on layout or threading.
inline float dot8(const float* a, const float* b, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int d = 0; d < n; d += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[d + j] * b[d + j];
  }
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

template <KvDtype D>
inline void widen_row(const void* base, std::int64_t offset, int n, float* out) {
  using T = typename KvTraits<D>::storage;
  const T* src = static_cast<const T*>(base) + offset;
  for (int i = 0; i < n; ++i) out[i] = KvTraits<D>::to_float(src[i]);
}

// One work item: sequence b, kv head h, chunk c. Writes out (no split) or the chunk's normalised partial output and
// its log2-sum-exp (split).
template <KvDtype D>
void decode_item(const DecodeParams& p, const DecodeSplit& s, int b, int h, int c, float* part_o, float* part_lse) {
  const int G = p.group_size();
  const int dqk = p.head_dim_qk;
  const int dv = p.head_dim_v;
  const int len = p.seq_lens[b];
  const int begin = s.num_chunks == 1 ? 0 : c * s.chunk_tokens;
  const int end = s.num_chunks == 1 ? len : std::min(len, begin + s.chunk_tokens);

  std::vector<float> qs(static_cast<std::size_t>(G) * dqk);
  std::vector<float> acc(static_cast<std::size_t>(G) * dv, 0.0f);
  std::vector<float> m(G, -std::numeric_limits<float>::infinity());
  std::vector<float> l(G, 0.0f);
  std::vector<float> sc(static_cast<std::size_t>(G) * kDecodeTileTokens);
  std::vector<float> krow(dqk), vrow(dv);

  const float qscale = p.sm_scale * p.k_scale * kLog2e;  // scores in the log2 domain
  for (int g = 0; g < G; ++g) {
    const float* q = p.q + p.q_offset(b, h * G + g);
    for (int d = 0; d < dqk; ++d) qs[static_cast<std::size_t>(g) * dqk + d] = q[d] * qscale;
  }

  for (int t0 = begin; t0 < end; t0 += kDecodeTileTokens) {
    const int n = std::min(kDecodeTileTokens, end - t0);
    for (int t = 0; t < n; ++t) {
      widen_row<D>(p.k, p.kv_offset(b, t0 + t, h), dqk, krow.data());
      for (int g = 0; g < G; ++g) {
        sc[static_cast<std::size_t>(g) * kDecodeTileTokens + t] = dot8(&qs[static_cast<std::size_t>(g) * dqk], krow.data(), dqk);
      }
    }
    for (int g = 0; g < G; ++g) {
      float* sg = &sc[static_cast<std::size_t>(g) * kDecodeTileTokens];
      float mt = m[g];
      for (int t = 0; t < n; ++t) mt = std::max(mt, sg[t]);
      const float factor = std::exp2(m[g] - mt);  // exp2(-inf) == 0 on the first tile
      float sum = 0.0f;
      for (int t = 0; t < n; ++t) {
        sg[t] = std::exp2(sg[t] - mt);
        sum += sg[t];
      }
      l[g] = l[g] * factor + sum;
      m[g] = mt;
      float* ag = &acc[static_cast<std::size_t>(g) * dv];
      for (int d = 0; d < dv; ++d) ag[d] *= factor;
    }
    for (int t = 0; t < n; ++t) {
      const std::int64_t off = p.kv_offset(b, t0 + t, h);
      widen_row<D>(p.v_in_k ? p.k : p.v, off, dv, vrow.data());
      for (int g = 0; g < G; ++g) {
        const float w = sc[static_cast<std::size_t>(g) * kDecodeTileTokens + t];
        float* ag = &acc[static_cast<std::size_t>(g) * dv];
        for (int d = 0; d < dv; ++d) ag[d] += w * vrow[d];
      }
    }
  }

  for (int g = 0; g < G; ++g) {
    const int qh = h * G + g;
    const float inv = l[g] > 0.0f ? p.v_scale / l[g] : 0.0f;
    float* dst = s.num_chunks == 1 ? p.out + p.out_offset(b, qh)
                                   : part_o + ((static_cast<std::int64_t>(b) * p.num_q_heads + qh) * s.num_chunks + c) * dv;
    for (int d = 0; d < dv; ++d) dst[d] = acc[static_cast<std::size_t>(g) * dv + d] * inv;
    if (s.num_chunks > 1) {
      part_lse[(static_cast<std::int64_t>(b) * p.num_q_heads + qh) * s.num_chunks + c] =
          l[g] > 0.0f ? m[g] + std::log2(l[g]) : -std::numeric_limits<float>::infinity();
    }
  }
}

// Merge the split-KV partials of one (sequence, query head): weights 2^(lse_c - max lse).
void merge_item(const DecodeParams& p, const DecodeSplit& s, int b, int qh, const float* part_o, const float* part_lse) {
  const std::int64_t base = (static_cast<std::int64_t>(b) * p.num_q_heads + qh) * s.num_chunks;
  float mx = -std::numeric_limits<float>::infinity();
  for (int c = 0; c < s.num_chunks; ++c) mx = std::max(mx, part_lse[base + c]);
  float* dst = p.out + p.out_offset(b, qh);
  for (int d = 0; d < p.head_dim_v; ++d) dst[d] = 0.0f;
  float wsum = 0.0f;
  for (int c = 0; c < s.num_chunks; ++c) {
    const float lse = part_lse[base + c];
    if (lse == -std::numeric_limits<float>::infinity()) continue;
    const float w = std::exp2(lse - mx);
    wsum += w;
    const float* o = part_o + (base + c) * p.head_dim_v;
    for (int d = 0; d < p.head_dim_v; ++d) dst[d] += w * o[d];
  }
  const float inv = wsum > 0.0f ? 1.0f / wsum : 0.0f;
  for (int d = 0; d < p.head_dim_v; ++d) dst[d] *= inv;
}

}  // namespace

DecodeSplit plan_decode_split(int work_items, int max_kv_len, int target_blocks, int min_chunk_tokens) {
  DecodeSplit s;
  if (work_items <= 0 || max_kv_len <= 0 || work_items >= target_blocks) return s;
  const int tile = kDecodeTileTokens;
  min_chunk_tokens = std::max(tile, (min_chunk_tokens + tile - 1) / tile * tile);
  int chunks = (target_blocks + work_items - 1) / work_items;
  chunks = std::min(chunks, std::max(1, max_kv_len / min_chunk_tokens));
  if (chunks <= 1) return s;
  int chunk_tokens = (max_kv_len + chunks - 1) / chunks;
  chunk_tokens = (chunk_tokens + tile - 1) / tile * tile;
  s.num_chunks = (max_kv_len + chunk_tokens - 1) / chunk_tokens;
  s.chunk_tokens = chunk_tokens;
  if (s.num_chunks <= 1) return DecodeSplit{};
  return s;
}

std::size_t decode_workspace_floats(const DecodeParams& p, const DecodeSplit& s) {
  if (s.num_chunks <= 1) return 0;
  return static_cast<std::size_t>(p.batch) * p.num_q_heads * s.num_chunks * (p.head_dim_v + 1);
}

void validate_decode_params(const DecodeParams& p) {
  const auto fail = [](const std::string& what) { throw std::invalid_argument("decode attention: " + what); };
  if (p.batch <= 0 || p.num_q_heads <= 0 || p.num_kv_heads <= 0) fail("batch and head counts must be positive");
  if (p.num_q_heads % p.num_kv_heads != 0) {
    fail("num_q_heads (" + std::to_string(p.num_q_heads) + ") is not a multiple of num_kv_heads (" +
         std::to_string(p.num_kv_heads) + ")");
  }
  const bool mla = p.v_in_k;
  if (mla) {
    if (p.head_dim_qk != 576 || p.head_dim_v != 512) fail("MLA latent shape must be head_dim_qk 576, head_dim_v 512");
    if (p.v != nullptr && p.v != p.k) fail("MLA (v_in_k) needs v == k or v == nullptr");
  } else {
    if (p.head_dim_qk != 64 && p.head_dim_qk != 128) {
      fail("unsupported head_dim " + std::to_string(p.head_dim_qk) + " (supported: 64, 128, MLA 576/512)");
    }
    if (p.head_dim_v != p.head_dim_qk) fail("head_dim_v must equal head_dim_qk outside MLA");
    if (p.v == nullptr) fail("v is null");
  }
  if (p.q == nullptr || p.out == nullptr || p.k == nullptr || p.seq_lens == nullptr) fail("null pointer");
  if (p.layout == KvLayout::paged) {
    if (p.page_size != 16 && p.page_size != 32 && p.page_size != 64) {
      fail("unsupported page_size " + std::to_string(p.page_size) + " (supported: 16, 32, 64)");
    }
    if (p.page_indptr == nullptr || p.page_indices == nullptr) fail("paged layout needs page_indptr and page_indices");
  } else if (p.max_kv_len <= 0) {
    fail("contiguous layout needs max_kv_len > 0");
  }
}

void decode_attention_cpu(const DecodeParams& p, const DecodeSplit& split, int num_threads) {
  validate_decode_params(p);
  const DecodeSplit s = split.num_chunks > 1 ? split : DecodeSplit{};
  if (s.num_chunks > 1) {
    for (int b = 0; b < p.batch; ++b) {
      if (p.seq_lens[b] > s.num_chunks * s.chunk_tokens) throw std::invalid_argument("decode attention: split too short");
    }
  }
  std::vector<float> part_o, part_lse;
  if (s.num_chunks > 1) {
    part_o.resize(static_cast<std::size_t>(p.batch) * p.num_q_heads * s.num_chunks * p.head_dim_v);
    part_lse.resize(static_cast<std::size_t>(p.batch) * p.num_q_heads * s.num_chunks);
  }
  const std::int64_t items = std::int64_t{p.batch} * p.num_kv_heads * s.num_chunks;
  detail::parallel_for(items, num_threads, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      const int c = static_cast<int>(i % s.num_chunks);
      const int h = static_cast<int>((i / s.num_chunks) % p.num_kv_heads);
      const int b = static_cast<int>(i / (std::int64_t{s.num_chunks} * p.num_kv_heads));
      switch (p.kv_dtype) {
        case KvDtype::bf16: decode_item<KvDtype::bf16>(p, s, b, h, c, part_o.data(), part_lse.data()); break;
        case KvDtype::fp16: decode_item<KvDtype::fp16>(p, s, b, h, c, part_o.data(), part_lse.data()); break;
        case KvDtype::fp8_e4m3: decode_item<KvDtype::fp8_e4m3>(p, s, b, h, c, part_o.data(), part_lse.data()); break;
      }
    }
  });
  if (s.num_chunks > 1) {
    detail::parallel_for(std::int64_t{p.batch} * p.num_q_heads, num_threads, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i) {
        merge_item(p, s, static_cast<int>(i / p.num_q_heads), static_cast<int>(i % p.num_q_heads), part_o.data(),
                   part_lse.data());
      }
    });
  }
}

void decode_attention_reference(const DecodeParams& p) {
  validate_decode_params(p);
  const int G = p.group_size();
  const void* vbuf = p.v_in_k ? p.k : p.v;
  for (int b = 0; b < p.batch; ++b) {
    const int len = p.seq_lens[b];
    for (int qh = 0; qh < p.num_q_heads; ++qh) {
      const int h = qh / G;
      const float* q = p.q + p.q_offset(b, qh);
      std::vector<double> s(static_cast<std::size_t>(len));
      double mx = -std::numeric_limits<double>::infinity();
      for (int t = 0; t < len; ++t) {
        const std::int64_t off = p.kv_offset(b, t, h);
        double dot = 0;
        for (int d = 0; d < p.head_dim_qk; ++d) {
          dot += double{q[d]} * kv_element(p.kv_dtype, p.k, static_cast<std::size_t>(off + d));
        }
        s[t] = dot * p.k_scale * p.sm_scale;
        mx = std::max(mx, s[t]);
      }
      double sum = 0;
      for (int t = 0; t < len; ++t) sum += (s[t] = std::exp(s[t] - mx));
      float* o = p.out + p.out_offset(b, qh);
      for (int d = 0; d < p.head_dim_v; ++d) {
        double a = 0;
        for (int t = 0; t < len; ++t) {
          a += s[t] * kv_element(p.kv_dtype, vbuf, static_cast<std::size_t>(p.kv_offset(b, t, h) + d));
        }
        o[d] = static_cast<float>(a / sum * p.v_scale);
      }
    }
  }
}

std::uint64_t DecodeShape::kv_bytes_per_token() const {
  const std::uint64_t dims = mla ? static_cast<std::uint64_t>(head_dim_qk)
                                 : static_cast<std::uint64_t>(head_dim_qk) + static_cast<std::uint64_t>(head_dim_v);
  return dims * static_cast<std::uint64_t>(num_kv_heads) * kv_dtype_bytes(kv_dtype);
}

std::uint64_t DecodeShape::bytes() const {
  const auto B = static_cast<std::uint64_t>(batch);
  std::uint64_t total = B * static_cast<std::uint64_t>(kv_len) * kv_bytes_per_token();
  total += B * static_cast<std::uint64_t>(num_q_heads) * (head_dim_qk + head_dim_v) * 4;  // q in, out (fp32)
  total += B * 4;                                                                         // seq_lens
  if (layout == KvLayout::paged) {
    total += (B + 1) * 4 + B * ((static_cast<std::uint64_t>(kv_len) + page_size - 1) / page_size) * 4;
  }
  return total;
}

double DecodeShape::flops() const {
  return 2.0 * batch * num_q_heads * static_cast<double>(kv_len) * (head_dim_qk + head_dim_v);
}

}  // namespace kvcap::kernels
