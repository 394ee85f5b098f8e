// kvcap-kernels: self-tests, calibration and a benchmark table for the kvcap microkernels (std + CUDA only).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "kvcap/kernels/calibrate.h"

namespace {

using namespace kvcap::kernels;

void usage(std::ostream& o) {
  o << "usage: kvcap-kernels <command> [options]\n"
       "  test                 CPU twins vs references, then GPU kernels vs CPU twins (GPU part skipped without a device)\n"
       "  test-cpu             CPU twins vs naive references only\n"
       "  test-gpu             GPU kernels vs CPU twins; exit code 77 when no CUDA device (or no CUDA build)\n"
       "  calibrate --out FILE [--device cpu|cuda:N] [--quick|--full] [--threads N] [--reps N]\n"
       "  bench [--device cpu|cuda:N] [--full] [--threads N]   GB/s and FLOP/s beside the stream ceiling and cuBLAS\n"
       "options:\n"
       "  --device D   cpu (default) or cuda:N\n"
       "  --quick      short sweep (default); --full  longer sweep\n"
       "  --seed N     random seed for tests\n";
}

struct Args {
  std::string command;
  CalibrationOptions cal;
  std::string out;
  std::uint64_t seed = 1;
};

Args parse(int argc, char** argv) {
  Args a;
  if (argc < 2) throw std::invalid_argument("missing command");
  a.command = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string s = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(s + " needs a value");
      return argv[++i];
    };
    if (s == "--device") a.cal.device = value();
    else if (s == "--quick") a.cal.mode = CalibrationMode::quick;
    else if (s == "--full") a.cal.mode = CalibrationMode::full;
    else if (s == "--out") a.out = value();
    else if (s == "--threads") a.cal.cpu_threads = std::stoi(value());
    else if (s == "--reps") a.cal.repetitions = std::stoi(value());
    else if (s == "--seed") a.seed = std::stoull(value());
    else if (s == "-h" || s == "--help") a.command = "help";
    else throw std::invalid_argument("unknown option '" + s + "'");
  }
  return a;
}

ProgressCallback progress_printer() {
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  return [tty](const CalibrationProgress& p) {
    if (tty) {
      const int width = 30;
      const int filled = p.total > 0 ? p.done * width / p.total : width;
      std::fprintf(stderr, "\r[%.*s%*s] %3d/%d %-48.48s", filled, "==============================", width - filled, "",
                   p.done, p.total, p.label.c_str());
      if (p.stage == "done") std::fprintf(stderr, "\n");
    } else if (p.stage != "done") {
      std::fprintf(stderr, "[%d/%d] %s\n", p.done, p.total, p.label.c_str());
    }
    std::fflush(stderr);
  };
}

int cmd_bench(const Args& a) {
  const CalibrationResult r = run_calibration(a.cal, progress_printer());
  const double stream = r.stream_read_bytes_per_s;
  std::printf("device: %s (%s), %s mode, %.1f s\n", r.device.name.c_str(), r.device.kind.c_str(), r.mode.c_str(), r.wall_s);
  std::printf("stream read  %10.2f GB/s   (ceiling)\n", stream / 1e9);
  std::printf("stream copy  %10.2f GB/s   %.3f x read\n", r.stream_copy_bytes_per_s / 1e9, r.stream_copy_bytes_per_s / stream);
  std::printf("decode fit   %10.2f GB/s   %.3f x read   t0 %.3g s   fit rms %.3f   holdout max %.3f (%d points)\n",
              r.decode.bandwidth_bytes_per_s / 1e9, r.decode.bandwidth_bytes_per_s / stream, r.decode.t0_s,
              r.decode.fit_rms_relative_error, r.decode.holdout_max_relative_error, r.decode.holdout_points);
  for (const auto& v : r.decode_by_variant) {
    std::printf("  decode %-10s %-4s d%-3d%s %10.2f GB/s   %.3f x read\n", v.layout.c_str(), v.kv_dtype.c_str(), v.head_dim,
                v.mla ? " mla" : "    ", v.bandwidth_bytes_per_s / 1e9, v.bandwidth_bytes_per_s / stream);
  }
  // GEMM: each impl at each M beside the reference impl (cuBLAS on CUDA) measured at the same shape.
  for (const auto& p : r.points) {
    if (p.kernel != "gemm") continue;
    double ref = 0;
    for (const auto& q : r.points) {
      if (q.kernel == "gemm" && q.impl == "cublas" && q.m == p.m && q.n == p.n && q.k == p.k) ref = q.flops / q.time_s;
    }
    const double rate = p.flops / p.time_s;
    std::printf("gemm %-6s m=%-6lld n=%-6lld k=%-6lld %10.3f TFLOP/s", p.impl.c_str(), static_cast<long long>(p.m),
                static_cast<long long>(p.n), static_cast<long long>(p.k), rate / 1e12);
    if (ref > 0 && p.impl != "cublas") std::printf("   %.3f x cublas", rate / ref);
    std::printf("\n");
  }
  for (const auto& p : r.points) {
    if (p.kernel == "prefill_attention") {
      std::printf("prefill S=%-6d H=%d d=%d %10.3f TFLOP/s\n", p.seq_len, p.q_heads, p.head_dim, p.flops / p.time_s / 1e12);
    }
  }
  for (const auto& [k, v] : r.ratios) std::printf("ratio %-28s %.3f\n", k.c_str(), v);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    if (a.command == "help") {
      usage(std::cout);
      return 0;
    }
    if (a.command == "test-cpu") return run_cpu_selftests(std::cout, a.seed);
    if (a.command == "test-gpu") return run_gpu_selftests(std::cout, 0, a.seed);
    if (a.command == "test") {
      const int cpu = run_cpu_selftests(std::cout, a.seed);
      const int gpu = run_gpu_selftests(std::cout, 0, a.seed);
      if (gpu == 77) std::cout << "GPU tests skipped (no CUDA device)\n";
      return (cpu != 0 || (gpu != 0 && gpu != 77)) ? 1 : 0;
    }
    if (a.command == "calibrate") {
      if (a.out.empty()) throw std::invalid_argument("calibrate needs --out FILE");
      const CalibrationResult r = run_calibration(a.cal, progress_printer());
      write_calibration_yaml_file(a.out, r);
      std::fprintf(stderr, "wrote %s (%zu points, %.1f s)\n", a.out.c_str(), r.points.size(), r.wall_s);
      return 0;
    }
    if (a.command == "bench") return cmd_bench(a);
    std::cerr << "kvcap-kernels: unknown command '" << a.command << "'\n";
    usage(std::cerr);
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "kvcap-kernels: " << e.what() << "\n";
    usage(std::cerr);
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvcap-kernels: error: " << e.what() << "\n";
    return 1;
  }
}
