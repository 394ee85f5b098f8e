// CUDA backend: device identity, CUDA-event timing, the rotation pool (regions cycled so no run finds its data in
// L2), cuBLAS as the GEMM reference. cudaError_t becomes an exception here, once, with the call that failed.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend.h"
#include "cuda/cuda_check.h"
#include "kvcap/kernels/cuda_launchers.h"

namespace kvcap::kernels {

bool built_with_cuda() { return true; }

namespace detail {

namespace {

constexpr std::uint64_t kMiB = 1024ull * 1024ull;

std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) { resize(count); }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void resize(std::size_t count) {
    reset();
    if (count > 0) cuda_check(cudaMalloc(reinterpret_cast<void**>(&ptr_), count * sizeof(T)), "cudaMalloc");
    count_ = count;
  }
  void reset() {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = nullptr;
    count_ = 0;
  }
  void upload(const std::vector<T>& host) {
    if (host.size() != count_) resize(host.size());
    if (!host.empty()) cuda_check(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  T* get() const { return ptr_; }
  std::size_t size() const { return count_; }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

// Page-locked host memory (cudaHostAlloc): what a DMA copy needs to run at the link's speed, and what vLLM's CPU
// offloading allocates for its KV blocks (vllm/v1/kv_offload/, pin_memory=True).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void resize(std::size_t bytes) {
    reset();
    if (bytes > 0)
      cuda_check(cudaHostAlloc(reinterpret_cast<void**>(&ptr_), bytes, cudaHostAllocDefault), "cudaHostAlloc");
    bytes_ = bytes;
  }
  void reset() {
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  std::uint8_t* get() const { return ptr_; }
  std::size_t size() const { return bytes_; }

 private:
  std::uint8_t* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(int ordinal, std::uint64_t seed) : ordinal_(ordinal), rng_(seed), seed_(seed) {
    int count = 0;
    // No driver or no GPU (cudaErrorInsufficientDriver, cudaErrorNoDevice): say so and how to measure the CPU.
    if (const cudaError_t e = cudaGetDeviceCount(&count); e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
      throw std::runtime_error("cuda:" + std::to_string(ordinal) + ": no usable CUDA GPU on this machine (" +
                               cudaGetErrorString(e) + "); --device cpu calibrates the CPU");
    } else {
      cuda_check(e, "cudaGetDeviceCount");
    }
    if (ordinal < 0 || ordinal >= count) {
      throw std::runtime_error("cuda:" + std::to_string(ordinal) + ": no such device (" + std::to_string(count) +
                               " CUDA device(s) visible)");
    }
    cuda_check(cudaSetDevice(ordinal), "cudaSetDevice");
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
    info_.kind = "cuda";
    info_.ordinal = ordinal;
    info_.name = prop.name;
    info_.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
    info_.memory_bytes = prop.totalGlobalMem;
    info_.multiprocessors = prop.multiProcessorCount;
    info_.memory_bus_width_bits = prop.memoryBusWidth;
    info_.l2_bytes = static_cast<std::uint64_t>(prop.l2CacheSize);
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, ordinal) == cudaSuccess) info_.sm_clock_mhz = khz / 1000;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, ordinal) == cudaSuccess) info_.memory_clock_mhz = khz / 1000;
    int v = 0;
    if (cudaDriverGetVersion(&v) == cudaSuccess) info_.driver_version = version_string(v);
    if (cudaRuntimeGetVersion(&v) == cudaSuccess) info_.runtime_version = version_string(v);
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_check(cudaEventCreate(&ev0_), "cudaEventCreate");
    cuda_check(cudaEventCreate(&ev1_), "cudaEventCreate");
    pool_min_bytes_ = std::max<std::uint64_t>(256 * kMiB, 4 * info_.l2_bytes);
  }

  ~CudaBackend() override {
    release();
    if (cublas_ != nullptr) cublasDestroy(cublas_);
    cudaEventDestroy(ev0_);
    cudaEventDestroy(ev1_);
    cudaStreamDestroy(stream_);
  }

  const DeviceInfo& info() const override { return info_; }

  std::uint64_t point_budget_bytes() const override {
    std::size_t free_b = 0, total_b = 0;
    cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    return static_cast<std::uint64_t>(free_b) * 4 / 10;  // a point and its rotation pool must fit together
  }

  std::uint64_t stream_bytes(bool quick) const override {
    const std::uint64_t want = quick ? 2048 * kMiB : 4096 * kMiB;
    return std::min<std::uint64_t>(want, info_.memory_bytes / 8) / 4096 * 4096;
  }

  double time_stream_read(std::uint64_t bytes, int reps) override {
    ensure_stream(bytes);
    return time_reps(reps, [&](int) {
      cuda_check(stream_read_gpu(src_.get(), bytes, checksum_.get(), 0, stream_), "stream_read_gpu");
    });
  }

  double time_stream_copy(std::uint64_t bytes, int reps) override {
    ensure_stream(bytes);
    return time_reps(reps, [&](int) { cuda_check(stream_copy_gpu(dst_.get(), src_.get(), bytes, 0, stream_), "stream_copy_gpu"); });
  }

  double time_decode(const DecodeShape& sh, int reps) override {
    DecodeInputs in = make_decode_inputs(sh, rng_);
    const std::uint64_t k_bytes = in.k_bytes, region = in.region;
    DeviceBuffer<std::int32_t> d_lens, d_indptr, d_indices;
    DeviceBuffer<float> d_q, d_out(static_cast<std::size_t>(sh.batch) * sh.num_q_heads * sh.head_dim_v), d_ws;
    d_lens.upload(in.seq_lens);
    d_indptr.upload(in.indptr);
    d_indices.upload(in.indices);
    d_q.upload(in.q);

    DecodeParams p;
    p.q = d_q.get();
    p.out = d_out.get();
    p.seq_lens = d_lens.get();
    p.page_indptr = d_indptr.get();
    p.page_indices = d_indices.get();
    set_decode_shape(p, sh);
    // Enough blocks for four waves of resident blocks, so that the last, partial wave costs little.
    const int resident = std::max(decode_resident_blocks(p), 2 * info_.multiprocessors);
    const DecodeSplit split = plan_decode_split(decode_work_items(p), sh.kv_len, 4 * resident);
    d_ws.resize(decode_workspace_floats(p, split));
    pool_for(region);
    return time_reps(reps, [&](int r) {
      std::uint8_t* base = region_ptr(region, r);
      p.k = base;
      p.v = sh.mla ? base : base + k_bytes;
      cuda_check(decode_attention_gpu(p, split, d_ws.get(), stream_), "decode_attention_gpu");
    });
  }

  std::vector<std::string> gemm_impls() const override { return {"cublas", "mma"}; }

  double time_gemm(const std::string& impl, int m, int n, int k, int reps) override {
    if (impl != "cublas" && impl != "mma") throw std::invalid_argument("cuda backend: unknown GEMM impl '" + impl + "'");
    const std::uint64_t b_bytes = round_up(static_cast<std::uint64_t>(n) * k * 2, 4096);
    const std::uint64_t a_bytes = round_up(static_cast<std::uint64_t>(m) * k * 2, 4096);
    const std::uint64_t region = a_bytes + b_bytes;  // [B | A] per rotation region: weights never L2-resident
    DeviceBuffer<float> c(static_cast<std::size_t>(m) * n);
    pool_for(region);
    GemmParams p;
    p.c = c.get();
    p.m = m;
    p.n = n;
    p.k = k;
    if (impl == "cublas") ensure_cublas();
    return time_reps(reps, [&](int r) {
      std::uint8_t* base = region_ptr(region, r);
      p.b = reinterpret_cast<const std::uint16_t*>(base);
      p.a = reinterpret_cast<const std::uint16_t*>(base + b_bytes);
      if (impl == "mma") {
        cuda_check(gemm_mma_gpu(p, stream_), "gemm_mma_gpu");
      } else {
        cublas_gemm(p);
      }
    });
  }

  double time_prefill(const PrefillShape& sh, int reps) override {
    const std::uint64_t q_bytes = round_up(static_cast<std::uint64_t>(sh.seq_len) * sh.num_q_heads * sh.head_dim * 2, 4096);
    const std::uint64_t kv_bytes = round_up(static_cast<std::uint64_t>(sh.seq_len) * sh.num_kv_heads * sh.head_dim * 2, 4096);
    DeviceBuffer<float> out(static_cast<std::size_t>(sh.seq_len) * sh.num_q_heads * sh.head_dim);
    const std::uint64_t region = q_bytes + 2 * kv_bytes;
    pool_for(region);
    PrefillParams p;
    p.out = out.get();
    p.seq_len = sh.seq_len;
    p.num_q_heads = sh.num_q_heads;
    p.num_kv_heads = sh.num_kv_heads;
    p.head_dim = sh.head_dim;
    p.sm_scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
    return time_reps(reps, [&](int r) {
      std::uint8_t* base = region_ptr(region, r);
      p.q = reinterpret_cast<const std::uint16_t*>(base);
      p.k = reinterpret_cast<const std::uint16_t*>(base + q_bytes);
      p.v = reinterpret_cast<const std::uint16_t*>(base + q_bytes + kv_bytes);
      cuda_check(prefill_attention_gpu(p, stream_), "prefill_attention_gpu");
    });
  }

  // One cudaMemcpyAsync per chunk on one stream, issued back to back: the copy engine's rate and the per-copy cost
  // (issue and DMA set-up) together, as an offloading engine sees them.
  double time_host_copy(bool to_device, std::uint64_t chunk_bytes, std::uint64_t total_bytes, int reps) override {
    if (chunk_bytes == 0 || total_bytes < chunk_bytes) throw std::invalid_argument("time_host_copy: bad chunk");
    if (host_.size() < total_bytes) {
      host_.resize(total_bytes);
      std::memset(host_.get(), 0x3c, total_bytes);  // touch every page once
    }
    if (link_dev_.size() < total_bytes) link_dev_.resize(total_bytes);
    const std::uint64_t copies = total_bytes / chunk_bytes;
    const auto kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    return time_reps(reps, [&](int) {
      for (std::uint64_t i = 0; i < copies; ++i) {
        std::uint8_t* h = host_.get() + i * chunk_bytes;
        std::uint8_t* d = link_dev_.get() + i * chunk_bytes;
        cuda_check(cudaMemcpyAsync(to_device ? d : h, to_device ? h : d, chunk_bytes, kind, stream_),
                   "cudaMemcpyAsync");
      }
    });
  }

  void release() override {
    cudaStreamSynchronize(stream_);
    src_.reset();
    dst_.reset();
    pool_.reset();
    host_.reset();
    link_dev_.reset();
  }

 private:
  static std::uint64_t round_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

  // Warm-up once, then time each repetition with CUDA events; median.
  template <class F>
  double time_reps(int reps, F&& launch) {
    launch(0);
    cuda_check(cudaStreamSynchronize(stream_), "warm-up");
    std::vector<double> t;
    for (int r = 1; r <= reps; ++r) {
      cuda_check(cudaEventRecord(ev0_, stream_), "cudaEventRecord");
      launch(r);
      cuda_check(cudaEventRecord(ev1_, stream_), "cudaEventRecord");
      cuda_check(cudaEventSynchronize(ev1_), "cudaEventSynchronize");
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, ev0_, ev1_), "cudaEventElapsedTime");
      t.push_back(ms * 1e-3);
    }
    return median(t);
  }

  void ensure_stream(std::uint64_t bytes) {
    if (src_.size() != bytes) {
      src_.resize(bytes);
      dst_.resize(bytes);
      checksum_.resize(1);
      cuda_check(fill_valid_bytes_gpu(src_.get(), bytes, seed_, stream_), "fill");
      cuda_check(cudaMemsetAsync(dst_.get(), 0, bytes, stream_), "cudaMemset");
      cuda_check(cudaMemsetAsync(checksum_.get(), 0, sizeof(std::uint32_t), stream_), "cudaMemset");
    }
  }

  void pool_for(std::uint64_t region_bytes) {
    const std::uint64_t need = std::max(pool_min_bytes_, region_bytes);
    if (pool_.size() < need) {
      pool_.resize(need);
      cuda_check(fill_valid_bytes_gpu(pool_.get(), need, seed_ + 1, stream_), "fill");
    }
  }

  // Regions of the pool in rotation: with the pool >= 4 x L2, a region comes back only after the cache was swept.
  std::uint8_t* region_ptr(std::uint64_t region_bytes, int rep) {
    const std::uint64_t regions = std::max<std::uint64_t>(1, pool_.size() / region_bytes);
    return pool_.get() + (static_cast<std::uint64_t>(rep) % regions) * region_bytes;
  }

  void ensure_cublas() {
    if (cublas_ == nullptr) {
      cublas_check(cublasCreate(&cublas_), "cublasCreate");
      cublas_check(cublasSetStream(cublas_, stream_), "cublasSetStream");
    }
  }

  // Row-major C[m,n] = A[m,k] B[n,k]^T is column-major C^T[n,m] = B^T' (op T on the k x n view of B) x A (k x m).
  void cublas_gemm(const GemmParams& p) {
    const float alpha = 1.0f, beta = 0.0f;
    cublas_check(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, p.n, p.m, p.k, &alpha, p.b, CUDA_R_16BF, p.k, p.a,
                              CUDA_R_16BF, p.k, &beta, p.c, CUDA_R_32F, p.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  }

  int ordinal_;
  std::mt19937_64 rng_;
  std::uint64_t seed_;
  DeviceInfo info_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ev0_ = nullptr, ev1_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::uint64_t pool_min_bytes_ = 0;
  DeviceBuffer<std::uint8_t> src_, dst_, pool_, link_dev_;
  DeviceBuffer<std::uint32_t> checksum_;
  PinnedBuffer host_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int ordinal, std::uint64_t seed) {
  return std::make_unique<CudaBackend>(ordinal, seed);
}

// For the self-tests: a cuBLAS GEMM on device pointers.
void cublas_gemm_for_tests(const GemmParams& p) {
  cublasHandle_t h = nullptr;
  cublas_check(cublasCreate(&h), "cublasCreate");
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t s = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, p.n, p.m, p.k, &alpha, p.b, CUDA_R_16BF, p.k, p.a,
                                        CUDA_R_16BF, p.k, &beta, p.c, CUDA_R_32F, p.n, CUBLAS_COMPUTE_32F,
                                        CUBLAS_GEMM_DEFAULT);
  cublasDestroy(h);
  cublas_check(s, "cublasGemmEx");
}

}  // namespace detail

}  // namespace kvcap::kernels
