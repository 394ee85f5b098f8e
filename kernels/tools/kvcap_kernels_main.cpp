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
       "  test                 CPU twins vs references, then GPU kernels vs CPU twins (GPU part skipped without a "
       "device)\n"
       "  test-cpu             CPU twins vs naive references only\n"
       "  test-gpu             GPU kernels vs CPU twins; exit code 77 when no CUDA device (or no CUDA build)\n"
       "  calibrate --out FILE [--device cpu|cuda:N] [--quick|--full] [--threads N] [--reps N]\n"
       "            [--datasheet-gpu NAME --datasheet-bandwidth B/s --datasheet-bf16-flops F]\n"
       "                       self-tests, sweep, fits; writes FILE and prints the report with the targets' verdicts\n"
       "  bench [--device cpu|cuda:N] [--full] [--threads N]   GB/s and FLOP/s beside the stream ceiling and cuBLAS\n"
       "  time-decode [--device D] [--layout paged|contiguous] [--dtype bf16|fp16|fp8] [--batch N] [--kv-len N]\n"
       "              [--kv-heads N] [--q-heads N] [--head-dim 64|128] [--page 16|32|64] [--mla] [--reps N]\n"
       "                       one decode shape: median time and GB/s\n"
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
  DecodeShape decode;
  Datasheet datasheet;
};

double real_value(const std::string& flag, const std::string& v) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || !(x > 0) || x > 1e21)
    throw std::invalid_argument(flag + " expects a positive number (got '" + v + "')");
  return x;
}

int int_value(const std::string& flag, const std::string& v) {
  std::size_t used = 0;
  int x = 0;
  try {
    x = std::stoi(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || x <= 0) throw std::invalid_argument(flag + " expects a positive integer (got '" + v + "')");
  return x;
}

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
    else if (s == "--datasheet-gpu")
      a.datasheet.gpu = value();
    else if (s == "--datasheet-bandwidth")
      a.datasheet.memory_bandwidth_bytes_per_s = real_value(s, value());
    else if (s == "--datasheet-bf16-flops")
      a.datasheet.bf16_dense_flops = real_value(s, value());
    else if (s == "--layout") {
      const std::string v = value();
      if (v != "paged" && v != "contiguous") throw std::invalid_argument("--layout expects paged or contiguous");
      a.decode.layout = v == "paged" ? KvLayout::paged : KvLayout::contiguous;
    } else if (s == "--dtype") {
      const std::string v = value();
      if (v == "bf16")
        a.decode.kv_dtype = KvDtype::bf16;
      else if (v == "fp16")
        a.decode.kv_dtype = KvDtype::fp16;
      else if (v == "fp8")
        a.decode.kv_dtype = KvDtype::fp8_e4m3;
      else
        throw std::invalid_argument("--dtype expects bf16, fp16 or fp8 (got '" + v + "')");
    } else if (s == "--batch")
      a.decode.batch = int_value(s, value());
    else if (s == "--kv-len")
      a.decode.kv_len = int_value(s, value());
    else if (s == "--kv-heads")
      a.decode.num_kv_heads = int_value(s, value());
    else if (s == "--q-heads")
      a.decode.num_q_heads = int_value(s, value());
    else if (s == "--head-dim")
      a.decode.head_dim_qk = a.decode.head_dim_v = int_value(s, value());
    else if (s == "--page")
      a.decode.page_size = int_value(s, value());
    else if (s == "--mla") {
      a.decode.mla = true;
      a.decode.head_dim_qk = 576;
      a.decode.head_dim_v = 512;
      a.decode.num_kv_heads = 1;
    } else if (s == "-h" || s == "--help")
      a.command = "help";
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

// bench: the calibration sweep without a file, its report on stdout (kernel GB/s and FLOP/s beside the ceilings).
int cmd_bench(const Args& a) {
  const CalibrationResult r = run_calibration(a.cal, progress_printer());
  write_calibration_report(std::cout, r, a.datasheet.memory_bandwidth_bytes_per_s > 0 ? &a.datasheet : nullptr);
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
  return r.selftest.failed == 0 ? 0 : 1;
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
      const bool ds = a.datasheet.memory_bandwidth_bytes_per_s > 0 || a.datasheet.bf16_dense_flops > 0;
      write_calibration_yaml_file(a.out, r, ds ? datasheet_extras(r, a.datasheet) : YamlExtras{});
      write_calibration_report(std::cout, r, ds ? &a.datasheet : nullptr);
      std::fprintf(stderr, "wrote %s (%zu points, %.1f s)\n", a.out.c_str(), r.points.size(), r.wall_s);
      // A calibration whose self-tests failed is written (it is evidence) but the run fails: kvcap refuses it.
      return r.selftest.failed == 0 ? 0 : 1;
    }
    if (a.command == "bench") return cmd_bench(a);
    if (a.command == "time-decode") {
      const double t = time_decode_shape(a.cal, a.decode);
      const double bytes = static_cast<double>(a.decode.bytes());
      std::printf("decode %s %s batch=%d kv_len=%d kv_heads=%d q_heads=%d d=%d page=%d%s: %.3f us, %.1f GB/s\n",
                  to_string(a.decode.layout), std::string(to_string(a.decode.kv_dtype)).c_str(), a.decode.batch,
                  a.decode.kv_len, a.decode.num_kv_heads, a.decode.num_q_heads, a.decode.head_dim_qk,
                  a.decode.page_size, a.decode.mla ? " mla" : "", t * 1e6, bytes / t / 1e9);
      return 0;
    }
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
