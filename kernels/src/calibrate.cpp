// The calibration sweep: which shapes are measured on which device, the fits, and the ratios.
#include "kvcap/kernels/calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>

#include "backend.h"

namespace kvcap::kernels {

namespace {

using detail::Backend;
using detail::PrefillShape;

struct StreamTask {
  bool copy = false;
  std::uint64_t bytes = 0;
};
struct GemmTask {
  std::string impl;
  int m = 0, n = 0, k = 0;
};
struct HostCopyTask {
  bool to_device = true;
  std::uint64_t chunk_bytes = 0, total_bytes = 0;
};
struct Task {
  enum class Kind { stream, decode, gemm, prefill, host_link } kind;
  StreamTask stream;
  DecodeShape decode;
  GemmTask gemm;
  PrefillShape prefill;
  bool holdout = false;
  HostCopyTask host{};
};

const char* stage_name(Task::Kind k) {
  switch (k) {
    case Task::Kind::stream: return "stream";
    case Task::Kind::decode: return "decode";
    case Task::Kind::gemm: return "gemm";
    case Task::Kind::prefill: return "prefill";
    case Task::Kind::host_link:
      return "host_link";
  }
  return "?";
}

std::string label(const Task& t) {
  switch (t.kind) {
    case Task::Kind::stream: return std::string(t.stream.copy ? "stream copy " : "stream read ") +
                                    std::to_string(t.stream.bytes >> 20) + " MiB";
    case Task::Kind::decode: {
      const auto& d = t.decode;
      return std::string("decode ") + to_string(d.layout) + " " + std::string(to_string(d.kv_dtype)) + " d" +
             std::to_string(d.head_dim_qk) + " batch " + std::to_string(d.batch) + " kv_len " + std::to_string(d.kv_len);
    }
    case Task::Kind::gemm:
      return "gemm " + t.gemm.impl + " " + std::to_string(t.gemm.m) + "x" + std::to_string(t.gemm.n) + "x" +
             std::to_string(t.gemm.k);
    case Task::Kind::prefill: return "prefill S=" + std::to_string(t.prefill.seq_len);
    case Task::Kind::host_link:
      return std::string(t.host.to_device ? "host to device " : "device to host ") +
             std::to_string(t.host.chunk_bytes >> 10) + " KiB copies";
  }
  return {};
}

DecodeShape decode_shape(KvLayout layout, KvDtype dtype, int batch, int kv_len, int kv_heads, int q_heads, int head_dim,
                         int page_size) {
  DecodeShape s;
  s.layout = layout;
  s.kv_dtype = dtype;
  s.batch = batch;
  s.kv_len = kv_len;
  s.num_kv_heads = kv_heads;
  s.num_q_heads = q_heads;
  s.head_dim_qk = s.head_dim_v = head_dim;
  s.page_size = page_size;
  return s;
}

DecodeShape mla_shape(KvDtype dtype, int batch, int kv_len, int q_heads) {
  DecodeShape s = decode_shape(KvLayout::paged, dtype, batch, kv_len, 1, q_heads, 576, 64);
  s.head_dim_v = 512;
  s.mla = true;
  return s;
}

// The sweep. CUDA: Llama-like GQA (8 KV heads, 32 query heads, d=128), DeepSeek MLA (1 latent head, 16 query heads
// per rank), GEMM at model-like N x K. CPU: the same kinds of shapes, scaled down so quick mode stays well under a
// minute on two cores.
std::vector<Task> plan_sweep(const Backend& be, bool quick) {
  std::vector<Task> tasks;
  const bool cuda = be.info().kind == "cuda";
  const std::uint64_t budget = be.point_budget_bytes();
  const std::uint64_t sbytes = be.stream_bytes(quick);
  for (bool copy : {false, true}) {
    Task t{Task::Kind::stream, {}, {}, {}, {}};
    t.stream = StreamTask{copy, sbytes};
    tasks.push_back(t);
  }

  std::vector<DecodeShape> fit_shapes, other_shapes;
  const auto add_grid = [&](std::vector<DecodeShape>& dst, KvLayout layout, KvDtype dtype, const std::vector<int>& lens,
                            const std::vector<int>& batches, int kvh, int qh, int hd, int page) {
    for (int len : lens) {
      for (int b : batches) {
        const DecodeShape s = decode_shape(layout, dtype, b, len, kvh, qh, hd, page);
        if (s.bytes() <= budget) dst.push_back(s);
      }
    }
  };
  if (cuda) {
    const std::vector<int> lens = quick ? std::vector<int>{1024, 4096, 16384, 65536}
                                        : std::vector<int>{1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072};
    const std::vector<int> batches = quick ? std::vector<int>{1, 8, 32, 128} : std::vector<int>{1, 2, 8, 32, 64, 128, 256};
    add_grid(fit_shapes, KvLayout::paged, KvDtype::bf16, lens, batches, 8, 32, 128, 16);
    add_grid(other_shapes, KvLayout::contiguous, KvDtype::bf16, lens, batches, 8, 32, 128, 16);
    add_grid(fit_shapes, KvLayout::paged, KvDtype::fp16, {4096, 16384}, {8, 32}, 8, 32, 128, 16);
    add_grid(other_shapes, KvLayout::paged, KvDtype::bf16, {4096, 16384}, {8, 32}, 8, 64, 64, 32);
    add_grid(other_shapes, KvLayout::paged, KvDtype::fp8_e4m3, {4096, 16384, 65536}, {8, 32, 128}, 8, 32, 128, 16);
    add_grid(other_shapes, KvLayout::paged, KvDtype::bf16, {16384}, {32}, 8, 32, 128, 32);
    add_grid(other_shapes, KvLayout::paged, KvDtype::bf16, {16384}, {32}, 8, 32, 128, 64);
    for (int len : {4096, 16384, 65536}) {
      for (int b : {8, 32}) {
        other_shapes.push_back(mla_shape(KvDtype::bf16, b, len, 16));
        other_shapes.push_back(mla_shape(KvDtype::fp8_e4m3, b, len, 16));
      }
    }
  } else {
    // 2 KV heads x 8 query heads x d128: 1 KiB of bf16 KV per token.
    const std::vector<int> lens = quick ? std::vector<int>{1024, 4096, 16384} : std::vector<int>{1024, 4096, 16384, 65536};
    const std::vector<int> batches = quick ? std::vector<int>{1, 4, 16} : std::vector<int>{1, 4, 16, 64};
    add_grid(fit_shapes, KvLayout::paged, KvDtype::bf16, lens, batches, 2, 8, 128, 16);
    add_grid(other_shapes, KvLayout::contiguous, KvDtype::bf16, lens, batches, 2, 8, 128, 16);
    add_grid(fit_shapes, KvLayout::paged, KvDtype::fp16, {4096, 16384}, {4}, 2, 8, 128, 16);
    add_grid(other_shapes, KvLayout::paged, KvDtype::bf16, {4096, 16384}, {4}, 2, 16, 64, 32);
    add_grid(other_shapes, KvLayout::paged, KvDtype::fp8_e4m3, {4096, 16384}, {4, 16}, 2, 8, 128, 16);
    other_shapes.push_back(mla_shape(KvDtype::bf16, 4, 4096, 16));
    if (!quick) other_shapes.push_back(mla_shape(KvDtype::bf16, 4, 16384, 16));
  }
  // The fit covers the reference grid: paged 16-bit KV (the layout vLLM serves from), d = 128, GQA group 4. Every
  // fourth of its points, in sweep order, is held out to score the fit. The other variants (contiguous, fp8, d = 64
  // with group 8, MLA) run kernels of other arithmetic intensity, some of them compute-bound on CUDA cores, so
  // they are not mixed into one bandwidth: each is reported on its own (by_variant) and in the ratios.
  int i = 0;
  for (const auto& s : fit_shapes) {
    Task t{Task::Kind::decode, {}, s, {}, {}};
    t.holdout = (i++ % 4) == 3;
    tasks.push_back(t);
  }
  for (const auto& s : other_shapes) {
    if (s.bytes() > budget) continue;
    Task t{Task::Kind::decode, {}, s, {}, {}};
    tasks.push_back(t);
  }

  std::vector<std::pair<int, int>> nk;
  std::vector<int> ms;
  if (cuda) {
    nk = quick ? std::vector<std::pair<int, int>>{{4096, 4096}, {14336, 4096}}
               : std::vector<std::pair<int, int>>{{4096, 4096}, {14336, 4096}, {4096, 14336}, {6144, 4096}};
    ms = quick ? std::vector<int>{1, 16, 64, 256, 1024, 2048, 4096, 16384}
               : std::vector<int>{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
  } else {
    nk = quick ? std::vector<std::pair<int, int>>{{1024, 1024}} : std::vector<std::pair<int, int>>{{1024, 1024}, {2048, 2048}};
    ms = quick ? std::vector<int>{1, 16, 64, 256, 1024, 4096} : std::vector<int>{1, 4, 16, 64, 256, 1024, 2048, 4096};
  }
  for (const auto& impl : be.gemm_impls()) {
    for (auto [n, k] : nk) {
      for (int m : ms) {
        if (!cuda && n > 1024 && (m < 16 || m > 2048)) continue;  // keep the CPU full sweep bounded
        Task t{Task::Kind::gemm, {}, {}, GemmTask{impl, m, n, k}, {}};
        tasks.push_back(t);
      }
    }
  }

  const std::vector<int> seqs = cuda ? (quick ? std::vector<int>{1024, 4096} : std::vector<int>{1024, 4096, 16384})
                                     : (quick ? std::vector<int>{512, 1024} : std::vector<int>{512, 1024, 2048});
  for (int s : seqs) {
    Task t{Task::Kind::prefill, {}, {}, {}, {}};
    t.prefill = cuda ? PrefillShape{s, 32, 8, 128} : PrefillShape{s, 8, 2, 128};
    tasks.push_back(t);
  }

  // The host link (GPUs only): copies of one KV block of one layer (32 KiB: 16 tokens x 8 KV heads x 128 x bf16, as
  // vLLM's CPU offloading moves them) up to 64 MiB, through pinned host memory.
  if (cuda) {
    const std::uint64_t total = (quick ? 512 : 2048) * (1ull << 20);
    for (bool to_device : {true, false}) {
      for (std::uint64_t chunk_kib : {32, 256, 2048, 16384, 65536}) {
        Task t{Task::Kind::host_link, {}, {}, {}, {}};
        t.host = HostCopyTask{to_device, chunk_kib << 10, total};
        tasks.push_back(t);
      }
    }
  }
  return tasks;
}

std::string utc_now_iso() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_description(const DeviceInfo& d) {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
  std::string h = name[0] ? name : "unknown-host";
  if (d.kind == "cpu") h += " (" + d.name + ")";
  return h;
}

std::unique_ptr<Backend> open_backend(const CalibrationOptions& o) {
  const std::string& dev = o.device;
  if (dev == "cpu") return detail::make_cpu_backend(o.cpu_threads, o.seed);
  if (dev.rfind("cuda", 0) == 0) {
    int ordinal = 0;
    if (dev.size() > 4) {
      if (dev[4] != ':' || dev.size() == 5 || dev.find_first_not_of("0123456789", 5) != std::string::npos) {
        throw std::runtime_error("unknown device '" + dev + "' (expected cpu or cuda:N)");
      }
      ordinal = std::stoi(dev.substr(5));
    }
    if (!built_with_cuda()) throw std::runtime_error(dev + ": kvcap-kernels was built without CUDA");
    return detail::make_cuda_backend(ordinal, o.seed);
  }
  throw std::runtime_error("unknown device '" + dev + "' (expected cpu or cuda:N)");
}

// Achieved FLOP/s summed over the points of one GEMM impl whose M falls in [lo, hi].
double class_rate(const std::vector<CalibrationPoint>& pts, const std::string& impl, std::int64_t lo, std::int64_t hi) {
  double f = 0, t = 0;
  for (const auto& p : pts) {
    if (p.kernel == "gemm" && p.impl == impl && p.m >= lo && p.m <= hi) {
      f += p.flops;
      t += p.time_s;
    }
  }
  return t > 0 ? f / t : 0.0;
}

// Geometric mean of time(a) / time(b) over decode points with the same shape apart from what `key_a`/`key_b` select.
template <class SelA, class SelB, class Key>
double matched_ratio(const std::vector<CalibrationPoint>& pts, SelA sel_a, SelB sel_b, Key key) {
  std::map<decltype(key(pts.front())), double> a;
  for (const auto& p : pts) {
    if (p.kernel == "decode_attention" && sel_a(p)) a[key(p)] = p.time_s;
  }
  double log_sum = 0;
  int n = 0;
  for (const auto& p : pts) {
    if (p.kernel != "decode_attention" || !sel_b(p)) continue;
    const auto it = a.find(key(p));
    if (it == a.end() || p.time_s <= 0) continue;
    log_sum += std::log(it->second / p.time_s);
    ++n;
  }
  return n ? std::exp(log_sum / n) : 0.0;
}

}  // namespace

namespace {
// Fits t = t0 + bytes / bandwidth over the points of one kernel (holdout == false), scores the held-out ones.
DecodeFit fit_affine_time(const std::vector<CalibrationPoint>& points, const std::string& kernel) {
  // Minimise sum ((t0 + x * b - t) / t)^2 with x = 1 / bandwidth: weighted least squares, weights 1 / t^2.
  double s00 = 0, s01 = 0, s11 = 0, r0 = 0, r1 = 0;
  int n = 0;
  for (const auto& p : points) {
    if (p.kernel != kernel || p.holdout || p.time_s <= 0) continue;
    const double w = 1.0 / (p.time_s * p.time_s);
    s00 += w;
    s01 += w * p.bytes;
    s11 += w * p.bytes * p.bytes;
    r0 += w * p.time_s;
    r1 += w * p.bytes * p.time_s;
    ++n;
  }
  if (n < 2) throw std::runtime_error(kernel + " fit: need at least two points");
  const double det = s00 * s11 - s01 * s01;
  double t0 = 0, x = 0;
  if (det > 0) {
    t0 = (r0 * s11 - r1 * s01) / det;
    x = (s00 * r1 - s01 * r0) / det;
  }
  if (!(det > 0) || t0 < 0 || x <= 0) {  // degenerate or unphysical: fall back to a pure-bandwidth fit (t0 = 0)
    t0 = 0;
    x = r1 / s11;
  }
  DecodeFit f;
  f.t0_s = t0;
  f.bandwidth_bytes_per_s = x > 0 ? 1.0 / x : 0.0;
  double sq = 0;
  for (const auto& p : points) {
    if (p.kernel != kernel || p.time_s <= 0) continue;
    const double rel = (t0 + x * p.bytes - p.time_s) / p.time_s;
    if (p.holdout) {
      f.holdout_max_relative_error = std::max(f.holdout_max_relative_error, std::fabs(rel));
      ++f.holdout_points;
    } else {
      sq += rel * rel;
      ++f.fit_points;
    }
  }
  f.fit_rms_relative_error = std::sqrt(sq / f.fit_points);
  return f;
}
}  // namespace

DecodeFit fit_decode_model(const std::vector<CalibrationPoint>& points) {
  return fit_affine_time(points, "decode_attention");
}

HostLinkFit fit_host_link(const std::vector<CalibrationPoint>& points, const std::string& kernel) {
  std::vector<CalibrationPoint> per_copy;  // one copy of chunk_bytes: the point's time over its number of copies
  for (const auto& p : points) {
    if (p.kernel != kernel || p.chunk_bytes == 0 || p.time_s <= 0) continue;
    CalibrationPoint c;
    c.kernel = kernel;
    c.bytes = static_cast<double>(p.chunk_bytes);
    c.time_s = p.time_s * static_cast<double>(p.chunk_bytes) / p.bytes;
    per_copy.push_back(c);
  }
  if (per_copy.empty()) return {};
  const DecodeFit f = fit_affine_time(per_copy, kernel);
  return HostLinkFit{f.t0_s, f.bandwidth_bytes_per_s, f.fit_rms_relative_error, f.fit_points};
}

namespace {
// The self-tests of the kernels a calibration times: the CPU twins always, the CUDA kernels on a CUDA device.
SelftestCounts device_selftests(bool cuda, int ordinal) {
  std::ostringstream log;
  SelftestCounts counts;
  run_cpu_selftests(log, 1, &counts);
  if (cuda) {
    SelftestCounts gpu;
    if (run_gpu_selftests(log, ordinal, 1, &gpu) == 77) {
      gpu.failed += 1;
      gpu.first_failure = "gpu: the CUDA self-tests found no device";
    }
    counts.passed += gpu.passed;
    counts.failed += gpu.failed;
    if (counts.first_failure.empty()) counts.first_failure = gpu.first_failure;
  }
  return counts;
}
}  // namespace

KernelBuildInfo kernel_build_info() {
  KernelBuildInfo b;
#ifdef KVCAP_KERNELS_COMMIT
  b.commit = KVCAP_KERNELS_COMMIT;
#else
  b.commit = "unknown";
#endif
#ifdef KVCAP_KERNELS_CXX_COMPILER
  b.cxx_compiler = KVCAP_KERNELS_CXX_COMPILER;
#endif
#ifdef KVCAP_KERNELS_CUDA_COMPILER
  b.cuda_compiler = KVCAP_KERNELS_CUDA_COMPILER;
  b.cuda_architectures = KVCAP_KERNELS_CUDA_ARCHS;
#endif
  return b;
}

double time_decode_shape(const CalibrationOptions& options, const DecodeShape& shape) {
  auto be = open_backend(options);
  const int reps = options.repetitions > 0 ? options.repetitions : (be->info().kind == "cuda" ? 5 : 3);
  return be->time_decode(shape, reps);
}

namespace {
// The ratios measured in one run: decode vs stream, paged vs contiguous, fp8 vs bf16 KV, WMMA vs cuBLAS.
void add_ratios(CalibrationResult& res, bool cuda) {
  if (res.stream_read_bytes_per_s > 0) {
    res.ratios.emplace_back("decode_vs_stream", res.decode.bandwidth_bytes_per_s / res.stream_read_bytes_per_s);
  }
  using P = CalibrationPoint;
  const auto shape_key = [](const P& p) {
    return std::make_tuple(p.batch, p.kv_len, p.kv_heads, p.q_heads, p.head_dim);
  };
  const double paged_vs_contig = matched_ratio(
      res.points, [](const P& p) { return p.layout == "contiguous" && p.kv_dtype == "bf16"; },
      [](const P& p) { return p.layout == "paged" && p.kv_dtype == "bf16" && p.block_size == 16; }, shape_key);
  if (paged_vs_contig > 0) res.ratios.emplace_back("paged_vs_contiguous", paged_vs_contig);  // t_contig / t_paged
  const double fp8_speedup = matched_ratio(
      res.points,
      [](const P& p) { return p.layout == "paged" && p.kv_dtype == "bf16" && !p.mla && p.block_size == 16; },
      [](const P& p) { return p.layout == "paged" && p.kv_dtype == "fp8" && !p.mla; }, shape_key);
  if (fp8_speedup > 0) res.ratios.emplace_back("fp8_vs_bf16_decode_speedup", fp8_speedup);  // t_bf16 / t_fp8
  if (cuda) {
    // mma vs cuBLAS: geometric mean over the shapes with M >= 1024 where both ran (prefill-sized GEMMs).
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, double> cublas_rate;
    for (const auto& p : res.points) {
      if (p.kernel == "gemm" && p.impl == "cublas") cublas_rate[{p.m, p.n, p.k}] = p.flops / p.time_s;
    }
    double log_sum = 0;
    int pairs = 0;
    for (const auto& p : res.points) {
      if (p.kernel != "gemm" || p.impl != "mma" || p.m < 1024) continue;
      const auto it = cublas_rate.find({p.m, p.n, p.k});
      if (it == cublas_rate.end() || it->second <= 0) continue;
      log_sum += std::log(p.flops / p.time_s / it->second);
      ++pairs;
    }
    if (pairs > 0) res.ratios.emplace_back("mma_gemm_vs_cublas", std::exp(log_sum / pairs));
  }
}
}  // namespace

CalibrationResult run_calibration(const CalibrationOptions& options, const ProgressCallback& progress) {
  const auto start = std::chrono::steady_clock::now();
  auto be = open_backend(options);
  const bool quick = options.mode == CalibrationMode::quick;
  const bool cuda = be->info().kind == "cuda";
  const int reps = options.repetitions > 0 ? options.repetitions : (cuda ? 5 : 3);
  const auto tasks = plan_sweep(*be, quick);

  CalibrationResult res;
  res.device = be->info();
  res.build = kernel_build_info();
  res.prefill_tensor_cores = cuda;  // the CUDA prefill kernel runs on tensor cores (mma.sync), the CPU twin does not
  // The self-tests first: a calibration records whether the kernels it timed compute what they should on this device.
  if (progress) progress(CalibrationProgress{0, static_cast<int>(tasks.size()), "selftest", "self-tests"});
  res.selftest = device_selftests(cuda, res.device.ordinal);
  res.mode = quick ? "quick" : "full";
  res.date_utc = utc_now_iso();
  res.host = host_description(res.device);

  const int total = static_cast<int>(tasks.size());
  const auto report = [&](int done, const std::string& stage, const std::string& what) {
    if (progress) progress(CalibrationProgress{done, total, stage, what});
  };
  Task::Kind last = Task::Kind::stream;
  for (int i = 0; i < total; ++i) {
    const Task& t = tasks[static_cast<std::size_t>(i)];
    if (t.kind != last) be->release();  // free the previous phase's buffers
    last = t.kind;
    report(i, stage_name(t.kind), label(t));
    CalibrationPoint p;
    switch (t.kind) {
      case Task::Kind::stream:
        p.kernel = t.stream.copy ? "stream_copy" : "stream_read";
        p.bytes = static_cast<double>(t.stream.bytes) * (t.stream.copy ? 2.0 : 1.0);
        p.time_s = t.stream.copy ? be->time_stream_copy(t.stream.bytes, reps) : be->time_stream_read(t.stream.bytes, reps);
        res.stream_buffer_bytes = t.stream.bytes;
        (t.stream.copy ? res.stream_copy_bytes_per_s : res.stream_read_bytes_per_s) = p.bytes / p.time_s;
        break;
      case Task::Kind::decode: {
        const DecodeShape& d = t.decode;
        p.kernel = "decode_attention";
        p.layout = to_string(d.layout);
        p.kv_dtype = std::string(to_string(d.kv_dtype));
        p.batch = d.batch;
        p.kv_len = d.kv_len;
        p.kv_heads = d.num_kv_heads;
        p.q_heads = d.num_q_heads;
        p.head_dim = d.head_dim_qk;
        p.head_dim_v = d.head_dim_v;
        p.mla = d.mla;
        p.block_size = d.layout == KvLayout::paged ? d.page_size : 0;
        p.bytes = static_cast<double>(d.bytes());
        p.flops = d.flops();
        p.holdout = t.holdout;
        p.time_s = be->time_decode(d, reps);
        break;
      }
      case Task::Kind::gemm: {
        const GemmTask& g = t.gemm;
        p.kernel = "gemm";
        p.impl = g.impl;
        p.m = g.m;
        p.n = g.n;
        p.k = g.k;
        p.bytes = 2.0 * g.m * g.k + 2.0 * static_cast<double>(g.n) * g.k + 4.0 * g.m * static_cast<double>(g.n);
        p.flops = 2.0 * g.m * static_cast<double>(g.n) * g.k;
        p.time_s = be->time_gemm(g.impl, g.m, g.n, g.k, reps);
        break;
      }
      case Task::Kind::prefill: {
        const PrefillShape& s = t.prefill;
        p.kernel = "prefill_attention";
        p.seq_len = s.seq_len;
        p.q_heads = s.num_q_heads;
        p.kv_heads = s.num_kv_heads;
        p.head_dim = s.head_dim;
        p.flops = 4.0 * s.seq_len * static_cast<double>(s.seq_len) * s.num_q_heads * s.head_dim / 2.0;
        p.bytes = 2.0 * s.seq_len * s.head_dim * (s.num_q_heads + 2.0 * s.num_kv_heads) +
                  4.0 * s.seq_len * static_cast<double>(s.num_q_heads) * s.head_dim;
        p.time_s = be->time_prefill(s, reps);
        res.prefill_flops_per_s = p.flops / p.time_s;  // the last (largest) prompt wins
        break;
      }
      case Task::Kind::host_link:
        p.kernel = t.host.to_device ? "host_to_device" : "device_to_host";
        p.chunk_bytes = t.host.chunk_bytes;
        p.bytes = static_cast<double>(t.host.total_bytes - t.host.total_bytes % t.host.chunk_bytes);  // whole copies
        p.time_s = be->time_host_copy(t.host.to_device, t.host.chunk_bytes, t.host.total_bytes, reps);
        break;
    }
    res.points.push_back(std::move(p));
  }
  be->release();
  report(total, "fit", "fitting");

  // Decode fit over the reference grid (plan_sweep): paged 16-bit KV, d = 128, group 4, pages of 16.
  std::vector<CalibrationPoint> fit_pts;
  for (const auto& p : res.points) {
    if (p.kernel == "decode_attention" && !p.mla && p.layout == "paged" &&
        (p.kv_dtype == "bf16" || p.kv_dtype == "fp16") && p.head_dim == 128 && p.q_heads == 4 * p.kv_heads &&
        p.block_size == 16) {
      fit_pts.push_back(p);
    }
  }
  res.decode = fit_decode_model(fit_pts);
  res.host_to_device = fit_host_link(res.points, "host_to_device");
  res.device_to_host = fit_host_link(res.points, "device_to_host");

  // Per variant: the bandwidth of its largest point.
  std::map<std::tuple<std::string, std::string, int, bool>, const CalibrationPoint*> largest;
  for (const auto& p : res.points) {
    if (p.kernel != "decode_attention") continue;
    auto& slot = largest[{p.layout, p.kv_dtype, p.head_dim, p.mla}];
    if (slot == nullptr || p.bytes > slot->bytes) slot = &p;
  }
  for (const auto& [key, p] : largest) {
    res.decode_by_variant.push_back(DecodeVariantBandwidth{std::get<0>(key), std::get<1>(key), std::get<2>(key),
                                                           std::get<3>(key), p->bytes / p->time_s});
  }

  const std::string ref_impl = cuda ? "cublas" : "cpu";
  const std::int64_t bounds[4][2] = {{1, 16}, {17, 256}, {257, 2048}, {2049, 1000000000}};
  for (const auto& b : bounds) {
    const double r = class_rate(res.points, ref_impl, b[0], b[1]);
    if (r > 0) res.gemm_classes.push_back(GemmClass{b[0], b[1], r, ref_impl});
  }

  add_ratios(res, cuda);
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report(total, "done", "done");
  return res;
}

}  // namespace kvcap::kernels
