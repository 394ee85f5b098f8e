// GPU self-tests: each CUDA kernel against its CPU twin over randomised shapes. Exit code 77 without a device.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "backend.h"
#include "check.h"
#include "cuda/cuda_check.h"
#include "fixtures.h"
#include "kvcap/kernels/calibrate.h"
#include "kvcap/kernels/cuda_launchers.h"
#include "kvcap/kernels/stream.h"

namespace kvcap::kernels {

namespace {

using detail::Checks;
using detail::cuda_check;
using detail::fmt_err;

// Minimal owning device copy of a host vector.
template <class T>
struct Dev {
  T* p = nullptr;
  std::size_t n = 0;
  explicit Dev(std::size_t count) : n(count) {
    cuda_check(cudaMalloc(reinterpret_cast<void**>(&p), std::max<std::size_t>(1, n) * sizeof(T)), "cudaMalloc");
  }
  explicit Dev(const std::vector<T>& h) : Dev(h.size()) {
    if (n) cuda_check(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  std::vector<T> get() const {
    std::vector<T> h(n);
    if (n) cuda_check(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    return h;
  }
};

void test_stream(Checks& c, std::mt19937_64& rng) {
  const std::size_t bytes = (std::size_t{64} << 20) + std::size_t{4096} * 3 + 16;
  std::vector<std::uint8_t> h(bytes);
  for (auto& x : h) x = static_cast<std::uint8_t>(rng());
  Dev<std::uint8_t> src(h), dst(bytes);
  Dev<std::uint32_t> sum(std::vector<std::uint32_t>{0});
  cuda_check(stream_read_gpu(src.p, bytes, sum.p, 0, nullptr), "stream_read_gpu");
  cuda_check(stream_copy_gpu(dst.p, src.p, bytes, 0, nullptr), "stream_copy_gpu");
  cuda_check(cudaDeviceSynchronize(), "sync");
  c.check(sum.get()[0] == stream_checksum_reference(h.data(), bytes), "gpu.stream_read_checksum");
  c.check(dst.get() == h, "gpu.stream_copy_exact");
}

void test_decode(Checks& c, std::mt19937_64& rng) {
  constexpr double kTol = 1e-4;  // float vs float, different summation order; outputs are O(1)
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int i = 0; i < 36; ++i) {
    detail::DecodeFixtureShape s;
    s.batch = pick(1, 5);
    s.mla = i % 6 == 5;
    if (s.mla) {
      s.num_kv_heads = 1;
      s.num_q_heads = pick(1, 40);  // > 16 exercises query-head tiles
      s.head_dim_qk = 576;
      s.head_dim_v = 512;
    } else {
      s.num_kv_heads = pick(1, 4);
      s.num_q_heads = s.num_kv_heads * pick(1, 12);  // > 8 exercises query-head tiles
      s.head_dim_qk = s.head_dim_v = i % 2 ? 64 : 128;
    }
    const int pages[3] = {16, 32, 64};
    s.page_size = pages[pick(0, 2)];
    s.kv_dtype = static_cast<KvDtype>(i % 3);
    if (s.kv_dtype == KvDtype::fp8_e4m3) {
      s.k_scale = 0.05f * static_cast<float>(pick(1, 40));
      s.v_scale = 0.05f * static_cast<float>(pick(1, 40));
    }
    for (int b = 0; b < s.batch; ++b) s.seq_lens.push_back(pick(1, i % 4 == 0 ? 6000 : 400));
    const auto f = detail::make_decode_fixture(s, rng);
    const KvLayout layout = i % 2 ? KvLayout::paged : KvLayout::contiguous;
    std::vector<float> ref(f.out_floats());
    decode_attention_cpu(f.params(layout, ref.data()), DecodeSplit{});

    Dev<float> q(f.q), out(f.out_floats());
    Dev<std::uint8_t> k(layout == KvLayout::paged ? f.k_paged : f.k_contig);
    Dev<std::uint8_t> v(s.mla ? std::vector<std::uint8_t>{} : (layout == KvLayout::paged ? f.v_paged : f.v_contig));
    Dev<std::int32_t> lens(f.seq_lens), indptr(f.page_indptr), indices(f.page_indices);
    DecodeParams p = f.params(layout, out.p);
    p.q = q.p;
    p.k = k.p;
    p.v = s.mla ? k.p : v.p;
    p.seq_lens = lens.p;
    p.page_indptr = indptr.p;
    p.page_indices = indices.p;
    // 0: no split; 1: split-KV with merge; 2: one tile per chunk, so the long sequences' merges take more chunks
    // (up to 188) than the merge kernel has threads and a count that is no multiple of its loads in flight.
    for (int mode = 0; mode < 3; ++mode) {
      DecodeSplit split;
      if (mode > 0) {
        split.chunk_tokens = mode == 1 ? 64 * pick(1, 4) : kDecodeTileTokens;
        split.num_chunks = (f.max_len + split.chunk_tokens - 1) / split.chunk_tokens;
      }
      Dev<float> ws(decode_workspace_floats(p, split));
      cuda_check(decode_attention_gpu(p, split, ws.p, nullptr), "decode_attention_gpu");
      cuda_check(cudaDeviceSynchronize(), "sync");
      const auto got = out.get();
      const double e = c.max_abs_diff(got.data(), ref.data(), got.size());
      const std::string shape = std::string(to_string(layout)) + " " + std::string(to_string(s.kv_dtype)) +
                                " dqk=" + std::to_string(s.head_dim_qk) + " q_heads=" + std::to_string(s.num_q_heads) +
                                " kv_heads=" + std::to_string(s.num_kv_heads) +
                                " chunks=" + std::to_string(split.num_chunks);
      c.check(e <= kTol, mode > 0 ? "gpu.decode_split_vs_cpu" : "gpu.decode_vs_cpu", shape + " " + fmt_err(e, kTol));
      if (!s.mla) {
        // Against the lane-by-lane emulation of the same kernel: same operations in the same order, so only
        // the last bits of exp2 may differ.
        constexpr double kEmuTol = 1e-5;
        std::vector<float> emu(f.out_floats());
        decode_attention_gpu_emulation(f.params(layout, emu.data()), split);
        const double ee = c.max_abs_diff(got.data(), emu.data(), got.size());
        c.check(ee <= kEmuTol, "gpu.decode_vs_emulation", shape + " " + fmt_err(ee, kEmuTol));
      }
    }
  }
}

void test_gemm(Checks& c, std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int i = 0; i < 10; ++i) {
    GemmParams hp;
    hp.m = i == 0 ? 1 : pick(1, 300);
    hp.n = pick(1, 300);
    hp.k = 8 * pick(1, 96);
    const auto a = detail::random_bf16(static_cast<std::size_t>(hp.m) * hp.k, rng);
    const auto b = detail::random_bf16(static_cast<std::size_t>(hp.n) * hp.k, rng);
    std::vector<float> ref(static_cast<std::size_t>(hp.m) * hp.n);
    hp.a = a.data();
    hp.b = b.data();
    hp.c = ref.data();
    gemm_cpu(hp);
    Dev<std::uint16_t> da(a), db(b);
    Dev<float> dc(ref.size());
    GemmParams p = hp;
    p.a = da.p;
    p.b = db.p;
    p.c = dc.p;
    const double tol = 1e-6 * p.k + 1e-6;
    const std::string shape = "m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k);
    cuda_check(gemm_mma_gpu(p, nullptr), "gemm_mma_gpu");
    cuda_check(cudaDeviceSynchronize(), "sync");
    auto got = dc.get();
    double e = c.max_abs_diff(got.data(), ref.data(), got.size());
    c.check(e <= tol, "gpu.gemm_mma_vs_cpu", shape + " " + fmt_err(e, tol));
    detail::cublas_gemm_for_tests(p);
    cuda_check(cudaDeviceSynchronize(), "sync");
    got = dc.get();
    e = c.max_abs_diff(got.data(), ref.data(), got.size());
    c.check(e <= tol, "gpu.gemm_cublas_vs_cpu", shape + " " + fmt_err(e, tol));
  }
}

void test_prefill(Checks& c, std::mt19937_64& rng) {
  for (int i = 0; i < 8; ++i) {
    auto [hp, q, k, v] = detail::random_prefill_case(rng, 300, 3, 4, i % 2 ? 64 : 128);
    std::vector<float> ref(q.size());
    hp.q = q.data();
    hp.k = k.data();
    hp.v = v.data();
    hp.out = ref.data();
    prefill_attention_cpu(hp);
    Dev<std::uint16_t> dq(q), dk(k), dv(v);
    Dev<float> dout(ref.size());
    PrefillParams p = hp;
    p.q = dq.p;
    p.k = dk.p;
    p.v = dv.p;
    p.out = dout.p;
    cuda_check(prefill_attention_gpu(p, nullptr), "prefill_attention_gpu");
    cuda_check(cudaDeviceSynchronize(), "sync");
    const auto got = dout.get();
    // The kernel multiplies P by V on tensor cores with P rounded to bf16 (as FlashAttention does): each weight is
    // off by at most 2^-9 relative, so an output by at most 2^-9 x max |v|; twice that is the bound.
    double vmax = 0;
    for (const auto x : v) vmax = std::max(vmax, std::fabs(static_cast<double>(bf16_to_float(x))));
    const double kTol = vmax / 256.0 + 1e-5;
    // The emulation of this kernel (same tiles, fragments and bf16 rounding of P): only the order of the sums inside
    // an mma may differ, and with it a rounding of P now and then; the same bound holds.
    std::vector<float> emu(ref.size());
    hp.out = emu.data();
    prefill_attention_gpu_emulation(hp);
    const double ee = c.max_abs_diff(got.data(), emu.data(), got.size());
    c.check(ee <= kTol, "gpu.prefill_vs_emulation",
            "S=" + std::to_string(p.seq_len) + " H=" + std::to_string(p.num_q_heads) +
                " d=" + std::to_string(p.head_dim) + " " + fmt_err(ee, kTol));
    const double e = c.max_abs_diff(got.data(), ref.data(), got.size());
    c.check(e <= kTol, "gpu.prefill_vs_cpu",
            "S=" + std::to_string(p.seq_len) + " H=" + std::to_string(p.num_q_heads) + " d=" + std::to_string(p.head_dim) +
                " " + fmt_err(e, kTol));
  }
}

void test_rejects(Checks& c) {
  DecodeParams p;  // empty: must be rejected with a message, not launched
  const cudaError_t e = decode_attention_gpu(p, DecodeSplit{}, nullptr, nullptr);
  c.check(e == cudaErrorInvalidValue && !last_launch_error().empty(), "gpu.decode_rejects_bad_params", last_launch_error());
}

}  // namespace

int run_gpu_selftests(std::ostream& log, int device_ordinal, std::uint64_t seed, SelftestCounts* counts) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count <= device_ordinal) {
    log << "GPU tests skipped: no CUDA device " << device_ordinal << " ("
        << (e != cudaSuccess ? cudaGetErrorString(e) : (std::to_string(count) + " device(s) visible").c_str()) << ")\n";
    return 77;
  }
  Checks c(log);
  try {
    cuda_check(cudaSetDevice(device_ordinal), "cudaSetDevice");
    std::mt19937_64 rng(seed);
    test_stream(c, rng);
    test_decode(c, rng);
    test_gemm(c, rng);
    test_prefill(c, rng);
    test_rejects(c);
  } catch (const std::exception& ex) {
    c.check(false, "gpu.exception", ex.what());
  }
  if (counts) *counts = {c.passed(), c.failed(), c.first_failure()};
  return c.finish("gpu");
}

}  // namespace kvcap::kernels
