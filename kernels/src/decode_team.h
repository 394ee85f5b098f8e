// The arithmetic of the GQA decode "team" kernel (kernels/src/cuda/decode_attention.cu), shared with its CPU
// emulation (kernels/src/cpu/decode_team_emulation.cpp) so that the CPU tests exercise the code the GPU runs:
// the team shape, which lane owns which query head after the transposing butterfly, what a lane sends and keeps at
// each butterfly step, the online-softmax step of an owner lane, and the flash-decoding merge factor. The parts
// that cannot be shared (shuffles, shared memory, the grid) are emulated lane by lane in the kernel's order.
#pragma once

#include <cfloat>
#include <cmath>

#include "kvcap/kernels/numeric.h"

namespace kvcap::kernels::team {

inline constexpr int kThreads = 128;  // 4 warps per block
inline constexpr int kWarps = kThreads / 32;

// A team of TEAM = DQK / E lanes owns one token at a time; lane tl holds dims [tl * E, tl * E + E). Registers per
// lane: G x E query, G x E accumulator and 2U loads of E elements, kept at or under 128 so that four blocks fit on
// an SM (scripts/kernel-static-check.sh holds the kernel there). Measured on an H100, 8 query heads per block:
// U = 4 ran 1.94 TB/s where U = 2 ran 1.54 (2026-11-25, docs/kernels.md).
template <int DQK, int G, KvDtype D>
struct Shape {
  static constexpr int E = G >= 8 ? 4 : 8;  // elements per lane
  static constexpr int TEAM = DQK / E;      // lanes per token
  static constexpr int TPW = 32 / TEAM;     // teams per warp
  static constexpr int NT = kWarps * TPW;   // teams per block
  static constexpr int U = 4;               // tokens per team step (loads in flight per lane: 2U); divides a page
  static constexpr int VB = E * static_cast<int>(kv_dtype_bytes(D));  // bytes per lane load
  static_assert(TEAM >= 1 && TEAM <= 32 && 32 % TEAM == 0, "a team must divide a warp");
  static_assert(G <= TEAM, "each head needs an owner lane in the team");
};

// After the transposing butterfly over a team of `team` lanes, lane tl holds the full score of head
// tl / (team / g); the first lane holding head h is h x (team / g).
KVCAP_HD constexpr int owner_head(int tl, int team, int g) {
  return tl / (team / g);
}
KVCAP_HD constexpr int owner_lane(int head, int team, int g) {
  return head * (team / g);
}

// One transposing butterfly step at partner distance O for a lane still holding n values r[0..n): for slot
// i < n / 2 the lane keeps the upper half (r[i + n/2]) when its bit O is set, else the lower half (r[i]), and sends
// the other; afterwards r[i] = keep + what the partner sent. With n == 1 the step is a plain butterfly sum.
KVCAP_HD void transpose_pick(const float* r, int i, int n, bool upper, float& send, float& keep) {
  send = upper ? r[i] : r[i + n / 2];
  keep = upper ? r[i + n / 2] : r[i];
}

KVCAP_HD float exp2_(float x) {
#if defined(__CUDA_ARCH__)
  return exp2f(x);
#else
  return std::exp2(x);
#endif
}

// The online softmax of an owner lane over one step's U scores (log2 domain; masked tokens are invalid): raises the
// running max m to the step's, scales the running sum l by the returned factor 2^(m_old - m_new), writes the
// weights p (0 for masked tokens) and adds them to l.
template <int U>
KVCAP_HD float softmax_step(const float (&s)[U], const bool (&valid)[U], float& m, float& l, float (&p)[U]) {
  float mx = s[0];
  for (int u = 1; u < U; ++u) mx = fmaxf(mx, s[u]);
  const float m_new = fmaxf(m, mx);
  const float f = exp2_(m - m_new);
  m = m_new;
  float sum = 0.0f;
  for (int u = 0; u < U; ++u) {
    p[u] = valid[u] ? exp2_(s[u] - m_new) : 0.0f;
    sum += p[u];
  }
  l = l * f + sum;
  return f;
}

// The flash-decoding merge of partial states: a state with running max m counts 2^(m - mm) in the combined max mm.
// (-FLT_MAX is the empty state's max: it counts 0 beside any real one, and 1 beside another empty one, whose l
// and accumulator are 0.)
KVCAP_HD float merge_factor(float m, float mm) {
  return exp2_(m - mm);
}

}  // namespace kvcap::kernels::team
