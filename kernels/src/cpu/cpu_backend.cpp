// CPU backend: times the multi-threaded CPU twins with std::chrono.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend.h"
#include "cpu/parallel.h"
#include "fixtures.h"
#include "kvcap/kernels/gemm.h"
#include "kvcap/kernels/prefill_attention.h"
#include "kvcap/kernels/stream.h"

namespace kvcap::kernels::detail {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

namespace {

constexpr std::uint64_t kMiB = 1024ull * 1024ull;

std::uint64_t sysconf_u64(int name) {
  const long v = ::sysconf(name);
  return v > 0 ? static_cast<std::uint64_t>(v) : 0;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto s = line.substr(colon + 1);
        s.erase(0, s.find_first_not_of(" \t"));
        return s;
      }
    }
  }
  return "unknown CPU";
}

inline std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Bytes whose every reading is a finite, moderate number: 0x30..0x3f with a random sign bit. As bf16 high byte,
// fp16 high byte or fp8 byte that is an exponent well inside the range, so softmax and GEMM stay finite.
void fill_valid_bytes(std::uint8_t* p, std::size_t n, std::uint64_t seed, int threads) {
  parallel_for(static_cast<std::int64_t>((n + 7) / 8), threads, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      std::uint64_t h = splitmix(seed ^ static_cast<std::uint64_t>(i));
      std::uint64_t word = (h & 0x8f8f8f8f8f8f8f8full) | 0x3030303030303030ull;
      const std::size_t off = static_cast<std::size_t>(i) * 8;
      std::memcpy(p + off, &word, std::min<std::size_t>(8, n - off));
    }
  });
}

template <class F>
double time_once(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(t1 - t0).count();
}

class CpuBackend final : public Backend {
 public:
  CpuBackend(int threads, std::uint64_t seed) : threads_(resolve_threads(threads)), rng_(seed), seed_(seed) {
    info_.kind = "cpu";
    info_.name = cpu_model();
    info_.memory_bytes = sysconf_u64(_SC_PHYS_PAGES) * sysconf_u64(_SC_PAGESIZE);
    info_.multiprocessors = threads_;
    info_.l2_bytes = sysconf_u64(_SC_LEVEL2_CACHE_SIZE);
    llc_bytes_ = sysconf_u64(_SC_LEVEL3_CACHE_SIZE);
    if (llc_bytes_ == 0) llc_bytes_ = info_.l2_bytes;
    if (llc_bytes_ == 0) llc_bytes_ = 32 * kMiB;
    // Rotation pool: twice the last-level cache (clamped), so a rotated region is cold when it comes back.
    pool_min_bytes_ = std::max<std::uint64_t>(64 * kMiB, 2 * std::min<std::uint64_t>(llc_bytes_, 256 * kMiB));
  }

  const DeviceInfo& info() const override { return info_; }

  std::uint64_t point_budget_bytes() const override {
    return std::min<std::uint64_t>(info_.memory_bytes / 8, 1024 * kMiB);
  }

  std::uint64_t stream_bytes(bool quick) const override {
    const std::uint64_t want = std::max<std::uint64_t>(4 * llc_bytes_, quick ? 256 * kMiB : 512 * kMiB);
    return std::min<std::uint64_t>({want, quick ? 512 * kMiB : 1024 * kMiB, info_.memory_bytes / 8}) / 4096 * 4096;
  }

  double time_stream_read(std::uint64_t bytes, int reps) override {
    ensure_stream(bytes);
    std::uint32_t sink = 0;
    std::vector<double> t;
    for (int r = 0; r <= reps; ++r) {
      const double s = time_once([&] { sink ^= stream_read_cpu(src_.data(), bytes, threads_); });
      if (r > 0) t.push_back(s);
    }
    sink_ ^= sink;
    return median(t);
  }

  double time_stream_copy(std::uint64_t bytes, int reps) override {
    ensure_stream(bytes);
    std::vector<double> t;
    for (int r = 0; r <= reps; ++r) {
      const double s = time_once([&] { stream_copy_cpu(dst_.data(), src_.data(), bytes, threads_); });
      if (r > 0) t.push_back(s);
    }
    return median(t);
  }

  double time_decode(const DecodeShape& sh, int reps) override {
    DecodeInputs in = make_decode_inputs(sh, rng_);
    const std::uint64_t k_bytes = in.k_bytes, region = in.region;
    std::vector<float> out(static_cast<std::size_t>(sh.batch) * sh.num_q_heads * sh.head_dim_v);

    DecodeParams p;
    p.q = in.q.data();
    p.out = out.data();
    p.seq_lens = in.seq_lens.data();
    p.page_indptr = in.indptr.data();
    p.page_indices = in.indices.data();
    set_decode_shape(p, sh);
    const DecodeSplit split = plan_decode_split(sh.batch * sh.num_kv_heads, sh.kv_len, 4 * threads_);

    std::vector<double> t;
    for (int r = 0; r <= reps; ++r) {
      std::uint8_t* base = region_for(region, r);
      p.k = base;
      p.v = sh.mla ? base : base + k_bytes;
      const double s = time_once([&] { decode_attention_cpu(p, split, threads_); });
      if (r > 0) t.push_back(s);
    }
    return median(t);
  }

  std::vector<std::string> gemm_impls() const override { return {"cpu"}; }

  double time_gemm(const std::string& impl, int m, int n, int k, int reps) override {
    if (impl != "cpu") throw std::invalid_argument("cpu backend: unknown GEMM impl '" + impl + "'");
    const auto a = random_bf16(static_cast<std::size_t>(m) * k, rng_);
    std::vector<float> c(static_cast<std::size_t>(m) * n);
    const std::uint64_t region = round_up(static_cast<std::uint64_t>(n) * k * 2, 4096);
    GemmParams p;
    p.a = a.data();
    p.c = c.data();
    p.m = m;
    p.n = n;
    p.k = k;
    std::vector<double> t;
    for (int r = 0; r <= reps; ++r) {
      p.b = reinterpret_cast<const std::uint16_t*>(region_for(region, r));  // weights rotate through the pool
      const double s = time_once([&] { gemm_cpu(p, threads_); });
      if (r > 0) t.push_back(s);
    }
    return median(t);
  }

  double time_prefill(const PrefillShape& sh, int reps) override {
    const auto q = random_bf16(static_cast<std::size_t>(sh.seq_len) * sh.num_q_heads * sh.head_dim, rng_, 2.0f);
    const auto k = random_bf16(static_cast<std::size_t>(sh.seq_len) * sh.num_kv_heads * sh.head_dim, rng_, 2.0f);
    const auto v = random_bf16(k.size(), rng_);
    std::vector<float> out(q.size());
    PrefillParams p;
    p.q = q.data();
    p.k = k.data();
    p.v = v.data();
    p.out = out.data();
    p.seq_len = sh.seq_len;
    p.num_q_heads = sh.num_q_heads;
    p.num_kv_heads = sh.num_kv_heads;
    p.head_dim = sh.head_dim;
    p.sm_scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
    std::vector<double> t;
    for (int r = 0; r <= reps; ++r) {
      const double s = time_once([&] { prefill_attention_cpu(p, threads_); });
      if (r > 0) t.push_back(s);
    }
    return median(t);
  }

  void release() override {
    std::vector<std::uint8_t>().swap(src_);
    std::vector<std::uint8_t>().swap(dst_);
    std::vector<std::uint8_t>().swap(pool_);
  }

 private:
  static std::uint64_t round_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

  void ensure_stream(std::uint64_t bytes) {
    if (src_.size() != bytes) {
      src_.assign(bytes, 0);  // assign touches every page, so first-touch faults are not timed
      dst_.assign(bytes, 0);
      fill_valid_bytes(src_.data(), bytes, seed_, threads_);
    }
  }

  // Region `rep` of the rotation pool, each `bytes` long; the pool is at least twice the last-level cache.
  std::uint8_t* region_for(std::uint64_t bytes, int rep) {
    const std::uint64_t need = std::max(pool_min_bytes_, bytes);
    if (pool_.size() < need) {
      pool_.assign(need, 0);
      fill_valid_bytes(pool_.data(), need, seed_ + 1, threads_);
    }
    const std::uint64_t regions = std::max<std::uint64_t>(1, pool_.size() / bytes);
    return pool_.data() + (static_cast<std::uint64_t>(rep) % regions) * bytes;
  }

  int threads_;
  std::mt19937_64 rng_;
  std::uint64_t seed_;
  DeviceInfo info_;
  std::uint64_t llc_bytes_ = 0;
  std::uint64_t pool_min_bytes_ = 0;
  std::vector<std::uint8_t> src_, dst_, pool_;
  std::uint32_t sink_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads, std::uint64_t seed) {
  return std::make_unique<CpuBackend>(threads, seed);
}

}  // namespace kvcap::kernels::detail
