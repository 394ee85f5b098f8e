// A CPU emulation of the CUDA decode team kernel (kernels/src/cuda/decode_attention.cu, decode_team_kernel) that
// keeps its structure: the same grid of blocks, 4 warps of 32 lanes per block, teams of lanes per token, the
// warp-uniform step loop with masked tokens, loads of E elements per lane, the transposing butterfly over each
// team's lanes, the owner lanes' online softmax, the warp-wide "any lane rescales" skip, the merges of a warp's
// teams (xor butterfly) and of the block's warps (shared memory), and the split-KV merge. Lanes advance in lockstep;
// a shuffle is emulated by reading the partner lane's value as it was before the step. The arithmetic is the
// kernel's own (decode_team.h), so a CPU test of this emulation tests the algorithm the GPU runs.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "decode_team.h"
#include "kvcap/kernels/decode_attention.h"

namespace kvcap::kernels {

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kLanes = 32;

template <int DQK, int G, KvDtype D>
class BlockEmulation {
  using S = team::Shape<DQK, G, D>;
  using T = typename KvTraits<D>::storage;
  static constexpr int E = S::E, TEAM = S::TEAM, U = S::U, TPW = S::TPW, NT = S::NT;

  struct Lane {
    float q[G][E];
    float acc[G][E];
    float m_own = -FLT_MAX, l_own = 0.0f;  // the owner state of this lane's head
    float m[G], l[G];                      // every head's state, after the loop
  };

 public:
  BlockEmulation(const DecodeParams& p, const DecodeSplit& split, int q_tiles, float* part_o, float* part_lse)
      : p_(p), split_(split), q_tiles_(q_tiles), part_o_(part_o), part_lse_(part_lse) {}

  void run(int chunk, int by, int b) {
    const int kvh = by / q_tiles_, qt = by % q_tiles_;
    const int qh0 = kvh * p_.group_size() + qt * G;
    const int gt = std::min(G, p_.group_size() - qt * G);
    const int len = p_.seq_lens[b];
    const int begin = split_.num_chunks > 1 ? chunk * split_.chunk_tokens : 0;
    const int end = split_.num_chunks > 1 ? std::min(len, begin + split_.chunk_tokens) : len;
    const float qscale = p_.sm_scale * p_.k_scale * kLog2e;
    const std::int32_t* pages = p_.layout == KvLayout::paged ? p_.page_indices + p_.page_indptr[b] : nullptr;

    constexpr std::size_t kStates = std::size_t{team::kWarps} * G;
    std::vector<float> o_s(kStates * DQK), m_s(kStates), l_s(kStates);
    for (int warp = 0; warp < team::kWarps; ++warp) {
      Lane lanes[kLanes];
      for (int lane = 0; lane < kLanes; ++lane) {
        const int tl = lane % TEAM;
        for (int g = 0; g < G; ++g) {
          for (int j = 0; j < E; ++j) {
            lanes[lane].q[g][j] = g < gt ? p_.q[p_.q_offset(b, qh0 + g) + std::int64_t{tl} * E + j] * qscale : 0.0f;
            lanes[lane].acc[g][j] = 0.0f;
          }
        }
      }
      for (int w0 = begin + warp * TPW * U; w0 < end; w0 += NT * U) step(lanes, w0, end, b, kvh, pages);
      finish_warp(lanes, warp, o_s, m_s, l_s);
    }
    // The warps' merge, as the kernel's epilogue: one (head, dim) per thread.
    for (int g = 0; g < gt; ++g) {
      for (int d = 0; d < DQK; ++d) {
        float mm = -FLT_MAX;
        for (int w = 0; w < team::kWarps; ++w) mm = std::max(mm, m_s[w * G + g]);
        float ll = 0.0f, oo = 0.0f;
        for (int w = 0; w < team::kWarps; ++w) {
          const float f = team::merge_factor(m_s[w * G + g], mm);
          ll += l_s[w * G + g] * f;
          oo += o_s[(static_cast<std::size_t>(w) * G + g) * DQK + d] * f;
        }
        const float inv = ll > 0.0f ? p_.v_scale / ll : 0.0f;
        const int qh = qh0 + g;
        if (split_.num_chunks > 1) {
          const std::int64_t row = (std::int64_t{b} * p_.num_q_heads + qh) * split_.num_chunks + chunk;
          part_o_[row * DQK + d] = oo * inv;
          if (d == 0) part_lse_[row] = ll > 0.0f ? mm + std::log2(ll) : -INFINITY;
        } else {
          p_.out[p_.out_offset(b, qh) + d] = oo * inv;
        }
      }
    }
  }

 private:
  // One warp-step: every team of the warp takes its U tokens.
  void step(Lane (&lanes)[kLanes], int w0, int end, int b, int kvh, const std::int32_t* pages) const {
    const T* kbase = static_cast<const T*>(p_.k);
    const T* vbase = static_cast<const T*>(p_.v);
    float s[kLanes][U], pr[kLanes][U], f[kLanes], v[kLanes][U][E];
    bool valid[kLanes][U];
    for (int u = 0; u < U; ++u) {
      float part[kLanes][G];
      for (int lane = 0; lane < kLanes; ++lane) {
        const int t0 = w0 + (lane / TEAM) * U, tl = lane % TEAM;
        valid[lane][u] = t0 + u < end;
        float k[E];
        if (valid[lane][u]) {
          const std::int64_t off = p_.slot_offset(p_.slot(b, t0, pages) + u, kvh) + std::int64_t{tl} * E;
          for (int j = 0; j < E; ++j) {
            k[j] = KvTraits<D>::to_float(kbase[off + j]);
            v[lane][u][j] = KvTraits<D>::to_float(vbase[off + j]);
          }
        } else {
          for (int j = 0; j < E; ++j) k[j] = v[lane][u][j] = 0.0f;
        }
        for (int g = 0; g < G; ++g) {
          part[lane][g] = 0.0f;
          for (int j = 0; j < E; ++j) part[lane][g] = std::fmaf(lanes[lane].q[g][j], k[j], part[lane][g]);
        }
      }
      transpose_sum(part);
      for (int lane = 0; lane < kLanes; ++lane) s[lane][u] = valid[lane][u] ? part[lane][0] : -FLT_MAX;
    }
    bool any = false;
    for (int lane = 0; lane < kLanes; ++lane) {
      f[lane] = team::softmax_step<U>(s[lane], valid[lane], lanes[lane].m_own, lanes[lane].l_own, pr[lane]);
      any = any || f[lane] != 1.0f;
    }
    for (int lane = 0; lane < kLanes; ++lane) {
      const int base = lane / TEAM * TEAM;
      if (any) {  // __any_sync over the warp
        for (int g = 0; g < G; ++g) {
          const float fg = f[base + team::owner_lane(g, TEAM, G)];
          for (int j = 0; j < E; ++j) lanes[lane].acc[g][j] *= fg;
        }
      }
      for (int u = 0; u < U; ++u) {
        for (int g = 0; g < G; ++g) {
          const float pg = pr[base + team::owner_lane(g, TEAM, G)][u];
          for (int j = 0; j < E; ++j) lanes[lane].acc[g][j] = std::fmaf(pg, v[lane][u][j], lanes[lane].acc[g][j]);
        }
      }
    }
  }

  // The transposing butterfly (team_transpose_sum in the kernel) over every team of the warp at once.
  static void transpose_sum(float (&r)[kLanes][G]) {
    int n = G;
    for (int o = TEAM / 2; o >= 1; o /= 2) {
      float sent[kLanes][G];
      float kept[kLanes][G];
      for (int lane = 0; lane < kLanes; ++lane) {
        if (n > 1) {
          for (int i = 0; i < n / 2; ++i)
            team::transpose_pick(r[lane], i, n, (lane % TEAM & o) != 0, sent[lane][i], kept[lane][i]);
        } else {
          sent[lane][0] = kept[lane][0] = r[lane][0];
        }
      }
      for (int lane = 0; lane < kLanes; ++lane) {
        const int partner = lane ^ o;  // o < TEAM: inside the team
        for (int i = 0; i < std::max(1, n / 2); ++i) r[lane][i] = kept[lane][i] + sent[partner][i];
      }
      n = std::max(1, n / 2);
    }
  }

  // Every lane takes each head's state from its owner, the warp's teams merge (xor butterfly), and the first team
  // writes the warp's partial state to "shared memory".
  static void finish_warp(Lane (&lanes)[kLanes], int warp, std::vector<float>& o_s, std::vector<float>& m_s,
                          std::vector<float>& l_s) {
    for (int lane = 0; lane < kLanes; ++lane) {
      const int base = lane / TEAM * TEAM;
      for (int g = 0; g < G; ++g) {
        lanes[lane].m[g] = lanes[base + team::owner_lane(g, TEAM, G)].m_own;
        lanes[lane].l[g] = lanes[base + team::owner_lane(g, TEAM, G)].l_own;
      }
    }
    for (int o = TEAM; o < kLanes; o <<= 1) {
      for (int g = 0; g < G; ++g) {
        float m_before[kLanes];
        for (int lane = 0; lane < kLanes; ++lane) m_before[lane] = lanes[lane].m[g];
        for (int lane = 0; lane < kLanes; ++lane) {  // rescale to the pair's max
          Lane& x = lanes[lane];
          const float mm = std::max(m_before[lane], m_before[lane ^ o]);
          const float f = team::merge_factor(m_before[lane], mm);
          x.l[g] *= f;
          for (int j = 0; j < E; ++j) x.acc[g][j] *= f;
          x.m[g] = mm;
        }
        float l_scaled[kLanes], acc_scaled[kLanes][E];
        for (int lane = 0; lane < kLanes; ++lane) {
          l_scaled[lane] = lanes[lane].l[g];
          for (int j = 0; j < E; ++j) acc_scaled[lane][j] = lanes[lane].acc[g][j];
        }
        for (int lane = 0; lane < kLanes; ++lane) {  // add the partner's
          lanes[lane].l[g] += l_scaled[lane ^ o];
          for (int j = 0; j < E; ++j) lanes[lane].acc[g][j] += acc_scaled[lane ^ o][j];
        }
      }
    }
    for (int lane = 0; lane < TEAM; ++lane) {
      for (int g = 0; g < G; ++g) {
        for (int j = 0; j < E; ++j)
          o_s[(static_cast<std::size_t>(warp) * G + g) * DQK + static_cast<std::size_t>(lane) * E + j] =
              lanes[lane].acc[g][j];
        if (lane == 0) {
          m_s[warp * G + g] = lanes[lane].m[g];
          l_s[warp * G + g] = lanes[lane].l[g];
        }
      }
    }
  }

  const DecodeParams& p_;
  const DecodeSplit& split_;
  int q_tiles_;
  float* part_o_;
  float* part_lse_;
};

template <int DQK, int G, KvDtype D>
void emulate(const DecodeParams& p, const DecodeSplit& s, float* part_o, float* part_lse) {
  const int q_tiles = (p.group_size() + G - 1) / G;
  BlockEmulation<DQK, G, D> block(p, s, q_tiles, part_o, part_lse);
  for (int b = 0; b < p.batch; ++b) {
    for (int by = 0; by < p.num_kv_heads * q_tiles; ++by) {
      for (int chunk = 0; chunk < s.num_chunks; ++chunk) block.run(chunk, by, b);
    }
  }
}

template <int DQK, KvDtype D>
void emulate_group(const DecodeParams& p, const DecodeSplit& s, float* part_o, float* part_lse) {
  const int g = p.group_size();  // as decode_attention_gpu: the group rounded up to a power of two, at most 8
  if (g <= 1)
    emulate<DQK, 1, D>(p, s, part_o, part_lse);
  else if (g <= 2)
    emulate<DQK, 2, D>(p, s, part_o, part_lse);
  else if (g <= 4)
    emulate<DQK, 4, D>(p, s, part_o, part_lse);
  else
    emulate<DQK, 8, D>(p, s, part_o, part_lse);
}

template <KvDtype D>
void emulate_dim(const DecodeParams& p, const DecodeSplit& s, float* part_o, float* part_lse) {
  if (p.head_dim_qk == 64)
    emulate_group<64, D>(p, s, part_o, part_lse);
  else
    emulate_group<128, D>(p, s, part_o, part_lse);
}

}  // namespace

void decode_attention_gpu_emulation(const DecodeParams& p, const DecodeSplit& split) {
  validate_decode_params(p);
  if (p.v_in_k) throw std::invalid_argument("decode emulation: MLA runs on the tile kernel, which is not emulated");
  const DecodeSplit s = split.num_chunks > 1 ? split : DecodeSplit{};
  std::vector<float> part_o, part_lse;
  if (s.num_chunks > 1) {
    part_o.resize(static_cast<std::size_t>(p.batch) * p.num_q_heads * s.num_chunks * p.head_dim_v);
    part_lse.resize(static_cast<std::size_t>(p.batch) * p.num_q_heads * s.num_chunks);
  }
  switch (p.kv_dtype) {
    case KvDtype::bf16:
      emulate_dim<KvDtype::bf16>(p, s, part_o.data(), part_lse.data());
      break;
    case KvDtype::fp16:
      emulate_dim<KvDtype::fp16>(p, s, part_o.data(), part_lse.data());
      break;
    case KvDtype::fp8_e4m3:
      emulate_dim<KvDtype::fp8_e4m3>(p, s, part_o.data(), part_lse.data());
      break;
  }
  if (s.num_chunks <= 1) return;
  // decode_merge_kernel: out = sum_c 2^(lse_c - max) o_c / sum_c 2^(lse_c - max).
  for (int b = 0; b < p.batch; ++b) {
    for (int qh = 0; qh < p.num_q_heads; ++qh) {
      const std::int64_t base = (std::int64_t{b} * p.num_q_heads + qh) * s.num_chunks;
      float mx = -INFINITY, wsum = 0.0f;
      for (int c = 0; c < s.num_chunks; ++c) mx = std::max(mx, part_lse[base + c]);
      for (int c = 0; c < s.num_chunks; ++c) {
        if (part_lse[base + c] != -INFINITY) wsum += team::exp2_(part_lse[base + c] - mx);
      }
      const float inv = wsum > 0.0f ? 1.0f / wsum : 0.0f;
      float* out = p.out + p.out_offset(b, qh);
      for (int d = 0; d < p.head_dim_v; ++d) {
        float a = 0.0f;
        for (int c = 0; c < s.num_chunks; ++c) {
          const float lse = part_lse[base + c];
          if (lse != -INFINITY) a += team::exp2_(lse - mx) * part_o[(base + c) * p.head_dim_v + d];
        }
        out[d] = a * inv;
      }
    }
  }
}

}  // namespace kvcap::kernels
