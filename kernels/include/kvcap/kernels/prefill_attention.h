// Causal self-attention forward for one prompt (prefill), flash-attention style: query tiles stream over key/value
// tiles up to the causal diagonal with an online softmax, never materialising the S x S score matrix.
// FLOPs are counted as 4 x S x S x H x d / 2 (QK^T and PV, halved by the causal mask).
#pragma once

#include <cstdint>

#include "kvcap/kernels/numeric.h"

namespace kvcap::kernels {

struct PrefillParams {
  const std::uint16_t* q = nullptr;  // [seq_len, num_q_heads, head_dim] bf16
  const std::uint16_t* k = nullptr;  // [seq_len, num_kv_heads, head_dim] bf16
  const std::uint16_t* v = nullptr;  // [seq_len, num_kv_heads, head_dim] bf16
  float* out = nullptr;              // [seq_len, num_q_heads, head_dim] fp32
  int seq_len = 0;
  int num_q_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;  // 64 or 128
  float sm_scale = 1.0f;

  KVCAP_HD int group_size() const { return num_q_heads / num_kv_heads; }
  KVCAP_HD std::int64_t q_offset(int t, int h) const { return (std::int64_t{t} * num_q_heads + h) * head_dim; }
  KVCAP_HD std::int64_t kv_offset(int t, int h) const { return (std::int64_t{t} * num_kv_heads + h) * head_dim; }
  double flops() const {
    return 4.0 * seq_len * static_cast<double>(seq_len) * num_q_heads * head_dim / 2.0;
  }
  double bytes() const {
    return 2.0 * seq_len * head_dim * (num_q_heads + 2.0 * num_kv_heads) + 4.0 * seq_len * num_q_heads * head_dim;
  }
};

// Tokens per tile (query and key) of the tiled CPU twin (the CUDA kernel's tiles are 64 x 64, on tensor cores).
inline constexpr int kPrefillTile = 32;

// Throws std::invalid_argument on unsupported shapes.
void validate_prefill_params(const PrefillParams& p);
// Tiled online-softmax CPU twin, multi-threaded over (query tile, head).
void prefill_attention_cpu(const PrefillParams& p, int num_threads = 0);
// The CUDA tensor-core kernel emulated on the CPU with its tiles, ldmatrix / mma.sync fragments and addresses
// (kernels/src/prefill_tc.h), P rounded to bf16 as on the GPU: tests the GPU's algorithm without a GPU.
void prefill_attention_gpu_emulation(const PrefillParams& p);
// Naive softmax attention in double with the causal mask. For tests.
void prefill_attention_reference(const PrefillParams& p);

}  // namespace kvcap::kernels
