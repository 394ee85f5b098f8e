// A device that can time the microkernels. The CPU backend times the twins with std::chrono; the CUDA backend times
// the kernels with CUDA events. Every timing is the median of `reps` runs after a warm-up run, on data that is not
// cache-resident (buffers far larger than the last-level cache, or rotated through a pool larger than it).
#pragma once

#include <cstdint>
#include <memory>
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
  // Release large buffers between phases.
  virtual void release() {}
};

std::unique_ptr<Backend> make_cpu_backend(int threads, std::uint64_t seed);
// Throws std::runtime_error when CUDA is not built in or the device does not exist.
std::unique_ptr<Backend> make_cuda_backend(int ordinal, std::uint64_t seed);

// Median of a sample (copied).
double median(std::vector<double> v);

}  // namespace kvcap::kernels::detail
