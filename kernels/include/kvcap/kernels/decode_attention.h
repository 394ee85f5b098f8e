// Decode attention: one query token per sequence attends over that sequence's KV cache.
// GQA: the `group_size()` query heads that share a KV head are handled together, so each KV byte is read once.
// Split-KV (flash-decoding): a sequence's tokens are cut into `num_chunks` chunks processed independently, each
// producing an unnormalised partial output and its log-sum-exp; a merge combines them. Online softmax throughout.
// The same DecodeParams indexes the CPU twin and the CUDA kernel (accessors are __host__ __device__).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kvcap/kernels/numeric.h"

namespace kvcap::kernels {

enum class KvLayout : int { contiguous = 0, paged = 1 };

constexpr const char* to_string(KvLayout l) { return l == KvLayout::paged ? "paged" : "contiguous"; }

// Tokens per softmax tile; the CPU twin and the CUDA kernel both rescale once per tile.
inline constexpr int kDecodeTileTokens = 32;

struct DecodeParams {
  const float* q = nullptr;  // [batch, num_q_heads, head_dim_qk] float32 query (one token per sequence)
  float* out = nullptr;      // [batch, num_q_heads, head_dim_v] float32 attention output
  // contiguous: [batch, max_kv_len, num_kv_heads, head_dim_qk] elements of kv_dtype
  // paged:      [num_pages, page_size, num_kv_heads, head_dim_qk] elements of kv_dtype
  const void* k = nullptr;
  // Same layout as k. With v_in_k (MLA latent cache) v must equal k and the values are the first head_dim_v dims
  // of each K row (DeepSeek: head_dim_qk = 576 = 512 latent + 64 rope, head_dim_v = 512).
  const void* v = nullptr;
  const std::int32_t* seq_lens = nullptr;      // [batch] tokens held by each sequence (>= 1)
  const std::int32_t* page_indptr = nullptr;   // [batch + 1] page indptr (paged only)
  const std::int32_t* page_indices = nullptr;  // [page_indptr[batch]] page ids (paged only)
  std::int32_t batch = 0;
  std::int32_t num_q_heads = 0;
  std::int32_t num_kv_heads = 0;
  std::int32_t head_dim_qk = 0;  // 64, 128 or 576 (MLA)
  std::int32_t head_dim_v = 0;   // = head_dim_qk, or 512 for MLA
  std::int32_t max_kv_len = 0;   // contiguous only: token capacity per sequence (sequence stride)
  std::int32_t page_size = 0;    // paged only: 16, 32 or 64 tokens per page
  KvLayout layout = KvLayout::contiguous;
  KvDtype kv_dtype = KvDtype::bf16;
  bool v_in_k = false;   // MLA: values are a prefix of the K rows
  float sm_scale = 1.0f;  // softmax scale, usually 1 / sqrt(head_dim_qk)
  float k_scale = 1.0f;   // dequantisation scales (fp8); 1 for bf16/fp16
  float v_scale = 1.0f;

  KVCAP_HD int group_size() const { return num_q_heads / num_kv_heads; }
  // Elements per token across all KV heads.
  KVCAP_HD std::int64_t token_stride() const { return std::int64_t{num_kv_heads} * head_dim_qk; }
  // Cache slot of (sequence b, token pos): the sequence's row (contiguous) or page (paged) and the position in it.
  // `pages` = page_indices + page_indptr[b], hoisted by callers that walk one sequence.
  KVCAP_HD std::int64_t slot(int b, int pos, const std::int32_t* pages) const {
    if (layout == KvLayout::contiguous) return std::int64_t{b} * max_kv_len + pos;
    return std::int64_t{pages[pos / page_size]} * page_size + pos % page_size;
  }
  // Element offset of (slot, kv head h, dim 0) in k (and v).
  KVCAP_HD std::int64_t slot_offset(std::int64_t s, int h) const {
    return s * token_stride() + std::int64_t{h} * head_dim_qk;
  }
  // Element offset of (sequence b, token pos, kv head h, dim 0) in k (and v).
  KVCAP_HD std::int64_t kv_offset(int b, int pos, int h) const {
    const std::int32_t* pages = layout == KvLayout::paged ? page_indices + page_indptr[b] : nullptr;
    return slot_offset(slot(b, pos, pages), h);
  }
  KVCAP_HD std::int64_t q_offset(int b, int qh) const {
    return (std::int64_t{b} * num_q_heads + qh) * head_dim_qk;
  }
  KVCAP_HD std::int64_t out_offset(int b, int qh) const {
    return (std::int64_t{b} * num_q_heads + qh) * head_dim_v;
  }
};

// How a decode batch is split along the KV axis (flash-decoding). num_chunks == 1: no split, no merge.
struct DecodeSplit {
  int num_chunks = 1;
  int chunk_tokens = 0;  // tokens per chunk, a multiple of kDecodeTileTokens (0 when num_chunks == 1)
};

// Split so that about `target_blocks` work items exist (e.g. 2 x SMs, or 4 x threads on CPU), with chunks of at
// least `min_chunk_tokens` tokens. `work_items` = batch x kv heads x query-head tiles.
DecodeSplit plan_decode_split(int work_items, int max_kv_len, int target_blocks, int min_chunk_tokens = 256);

// Floats needed for the split-KV partial outputs and log-sum-exps: batch x q_heads x chunks x (head_dim_v + 1).
std::size_t decode_workspace_floats(const DecodeParams& p, const DecodeSplit& s);

// Throws std::invalid_argument with a message on unsupported shapes (head dims, page sizes, group sizes, pointers).
void validate_decode_params(const DecodeParams& p);

// CPU twin: multi-threaded (num_threads <= 0: hardware concurrency), tile-wise online softmax with the same split and
// merge as the GPU kernel. All pointers are host pointers.
void decode_attention_cpu(const DecodeParams& p, const DecodeSplit& split, int num_threads = 0);

// The CUDA team kernel (MHA/GQA, head_dim 64/128) emulated on the CPU lane by lane in the kernel's order, with the
// kernel's own arithmetic (kernels/src/decode_team.h): so the GPU's algorithm is tested without a GPU.
// Single-threaded; host pointers; throws std::invalid_argument for MLA (the tile kernel) and unsupported shapes.
void decode_attention_gpu_emulation(const DecodeParams& p, const DecodeSplit& split);

// Naive reference in double precision: full softmax per head, no tiling, no split. For tests.
void decode_attention_reference(const DecodeParams& p);

// A uniform decode shape, as the calibration sweep uses it (every sequence holds kv_len tokens).
struct DecodeShape {
  KvLayout layout = KvLayout::paged;
  KvDtype kv_dtype = KvDtype::bf16;
  int batch = 1;
  int kv_len = 1024;
  int num_kv_heads = 8;
  int num_q_heads = 32;
  int head_dim_qk = 128;
  int head_dim_v = 128;
  int page_size = 16;
  bool mla = false;  // latent cache: v_in_k, head_dims 576 / 512

  // KV bytes per token across heads (K plus V, or the latent row once for MLA).
  std::uint64_t kv_bytes_per_token() const;
  // Bytes the kernel must move: the KV cache once, plus query, output and page table.
  std::uint64_t bytes() const;
  // FLOPs: 2 x q_heads x kv_len x (head_dim_qk + head_dim_v) per sequence.
  double flops() const;
};

}  // namespace kvcap::kernels
