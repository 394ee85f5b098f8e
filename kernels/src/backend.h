// A device that can time the microkernels. The CPU backend times the twins with std::chrono; the CUDA backend times
// the kernels with CUDA events. Every timing is the median of `reps` runs after a warm-up run, on data that is not
// cache-resident (buffers far larger than the last-level cache, or rotated through a pool larger than it).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kvcap/kernels/calibrate.h"
#include "kvcap/kernels/decode_attention.h"

namespace kvcap::kernels::detail {

struct PrefillShape {
  int seq_len = 1024, num_q_heads = 32, num_kv_heads = 8, head_dim = 128;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const DeviceInfo& info() const = 0;
  // Bytes a single point may occupy (KV cache, GEMM operands).
  virtual std::uint64_t point_budget_bytes() const = 0;
  // Stream buffer size for this mode (far larger than the last-level cache).
  virtual std::uint64_t stream_bytes(bool quick) const = 0;
  virtual double time_stream_read(std::uint64_t bytes, int reps) = 0;
  virtual double time_stream_copy(std::uint64_t bytes, int reps) = 0;  // copies `bytes` (moves 2 x bytes)
  virtual double time_decode(const DecodeShape& shape, int reps) = 0;
  // impl is one of gemm_impls().
  virtual std::vector<std::string> gemm_impls() const = 0;
  virtual double time_gemm(const std::string& impl, int m, int n, int k, int reps) = 0;
  virtual double time_prefill(const PrefillShape& shape, int reps) = 0;
  // Moves `total_bytes` between pinned host memory and the device, one asynchronous copy per `chunk_bytes`
  // (vLLM's CPU KV offloading copies block by block). 0 where there is no host link to measure (the CPU).
  virtual double time_host_copy(bool /*to_device*/, std::uint64_t /*chunk_bytes*/, std::uint64_t /*total_bytes*/,
                                int /*reps*/) {
    return 0;
  }
  // Release large buffers between phases.
  virtual void release() {}
};

std::unique_ptr<Backend> make_cpu_backend(int threads, std::uint64_t seed);
// Throws std::runtime_error when CUDA is not built in or the device does not exist.
std::unique_ptr<Backend> make_cuda_backend(int ordinal, std::uint64_t seed);

// Median of a sample (copied).
double median(std::vector<double> v);

// Host-side inputs of one timed decode shape, shared by the CPU and CUDA backends: the KV region size,
// per-sequence lengths, a shuffled page table ([batch + 1] indptr, [batch x pages] indices) and random queries.
struct DecodeInputs {
  std::uint64_t k_bytes = 0;  // K (or the MLA latent) bytes; V follows K unless MLA
  std::uint64_t region = 0;   // K + V, rounded up to 4 KiB
  std::vector<std::int32_t> seq_lens, indptr, indices;
  std::vector<float> q;       // [batch x q_heads x head_dim_qk]
};

inline DecodeInputs make_decode_inputs(const DecodeShape& sh, std::mt19937_64& rng) {
  DecodeInputs in;
  const std::uint64_t row_bytes = static_cast<std::uint64_t>(sh.num_kv_heads) * sh.head_dim_qk * kv_dtype_bytes(sh.kv_dtype);
  const int pages_per_seq = (sh.kv_len + sh.page_size - 1) / sh.page_size;
  const std::uint64_t slots = sh.layout == KvLayout::paged
                                  ? static_cast<std::uint64_t>(sh.batch) * pages_per_seq * sh.page_size
                                  : static_cast<std::uint64_t>(sh.batch) * sh.kv_len;
  in.k_bytes = slots * row_bytes;
  in.region = (in.k_bytes * (sh.mla ? 1 : 2) + 4095) / 4096 * 4096;
  in.seq_lens.assign(static_cast<std::size_t>(sh.batch), sh.kv_len);
  in.indptr.resize(static_cast<std::size_t>(sh.batch) + 1);
  for (int b = 0; b <= sh.batch; ++b) in.indptr[static_cast<std::size_t>(b)] = b * pages_per_seq;
  in.indices.resize(static_cast<std::size_t>(sh.batch) * pages_per_seq);
  std::iota(in.indices.begin(), in.indices.end(), 0);
  std::shuffle(in.indices.begin(), in.indices.end(), rng);
  in.q.resize(static_cast<std::size_t>(sh.batch) * sh.num_q_heads * sh.head_dim_qk);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  for (auto& x : in.q) x = uni(rng);
  return in;
}

// The shape fields of DecodeParams for `sh` (the caller sets the data pointers).
inline void set_decode_shape(DecodeParams& p, const DecodeShape& sh) {
  p.batch = sh.batch;
  p.num_q_heads = sh.num_q_heads;
  p.num_kv_heads = sh.num_kv_heads;
  p.head_dim_qk = sh.head_dim_qk;
  p.head_dim_v = sh.head_dim_v;
  p.max_kv_len = sh.kv_len;
  p.page_size = sh.page_size;
  p.layout = sh.layout;
  p.kv_dtype = sh.kv_dtype;
  p.v_in_k = sh.mla;
  p.sm_scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim_qk));
}

}  // namespace kvcap::kernels::detail
