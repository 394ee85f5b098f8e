// kvcap calibrate: run the microkernels on the local GPU (or the CPU twins), fit the speed model, and
// write calibration.yaml (docs/calibration-format.md), with the GPU profile's datasheet figures beside.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <thread>

#include "common.hpp"
#include "kvcap/kernels/calibrate.h"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/profiles.hpp"

namespace kvcap::cli {

namespace {
// --threads: 0 (all) or a count, capped by the machine's hardware threads (a larger count only oversubscribes
// the cores, and thread creation fails long before 10^6); the cap is said, not silent.
std::int64_t cpu_threads(const std::string& s) {
  const std::int64_t hw = std::max<std::int64_t>(1, std::thread::hardware_concurrency());
  const std::int64_t n = parse_int(s, "--threads", 0, std::numeric_limits<int>::max());
  if (n > hw) {
    std::cerr << "kvcap calibrate: --threads " << n << " is more than this machine's " << hw
              << " hardware threads; using " << hw << "\n";
    return hw;
  }
  return n;
}
/// kvcap calibrate --help.
const CommandHelp kHelp = {
    "kvcap calibrate [--device cuda:0|cpu] [--quick] --out FILE [--gpu PROFILE]",
    "Measures achieved memory bandwidth (stream, decode attention over a KV cache) and FLOP/s (GEMM,\n"
    "causal prefill attention) and writes a calibration profile that kvcap's speed model can use in place\n"
    "of datasheet figures.",
    "  kvcap calibrate --quick --gpu h100-sxm --out profiles/calibrations/h100-sxm.yaml\n"
    "  kvcap calibrate --device cpu --quick --out host.yaml"};

}  // namespace

int cmd_calibrate(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  // clang-format off
  desc.add_options()
    ("device", po::value<std::string>()->default_value("cuda:0"), "cuda:N or cpu (the CPU twins, multi-threaded)")
    ("quick", "a short sweep (GPU: under 2 minutes)")
    ("out,o", po::value<std::string>(), "write calibration.yaml here (required)")
    ("gpu,g", po::value<std::string>(), "GPU profile to compare with (datasheet ratios in the file)")
    ("threads", po::value<std::string>()->default_value("0"), "CPU threads (cpu device; 0: all; at most this machine's hardware threads)")
    ("help,h", "show this help");
  // clang-format on
  const auto parsed = parse_or_help(args, desc, kHelp);
  if (!parsed) return 0;
  const auto& vm = *parsed;
  if (!vm.count("out")) throw UsageError("--out FILE is required");
  kernels::CalibrationOptions opt;
  opt.device = vm["device"].as<std::string>();
  opt.mode = vm.count("quick") ? kernels::CalibrationMode::quick : kernels::CalibrationMode::full;
  opt.cpu_threads = static_cast<int>(cpu_threads(vm["threads"].as<std::string>()));
  // The GPU profile and the output are checked before minutes of measuring, not after.
  std::optional<kernels::Datasheet> datasheet;
  if (vm.count("gpu")) {
    const GpuSpec g = profiles::resolve_gpu(vm["gpu"].as<std::string>());
    datasheet = kernels::Datasheet{g.name, g.memory_bandwidth_bytes_per_s, g.bf16_dense_flops};
  }
  {
    const std::string out = vm["out"].as<std::string>();
    std::ofstream probe(out, std::ios::app);
    if (!probe) throw UsageError("--out: cannot write '" + out + "'");
  }
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto progress = [tty](const kernels::CalibrationProgress& p) {
    if (!tty) return;
    const int width = 30;
    const int filled = p.total > 0 ? p.done * width / p.total : 0;
    std::fprintf(stderr, "\r[%s%s] %3d/%d %-8s %-40.40s", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - filled), '.').c_str(), p.done, p.total, p.stage.c_str(),
                 p.label.c_str());
    if (p.done == p.total && p.stage == "done") std::fprintf(stderr, "\n");
  };
  const auto r = kernels::run_calibration(opt, progress);
  const std::string out = vm["out"].as<std::string>();
  kernels::write_calibration_yaml_file(out, r,
                                       datasheet ? kernels::datasheet_extras(r, *datasheet) : kernels::YamlExtras{});
  kernels::write_calibration_report(std::cout, r, datasheet ? &*datasheet : nullptr);
  std::cout << "wrote " << out << "\n";
  if (r.selftest.failed > 0) {
    std::cerr << "kvcap calibrate: " << r.selftest.failed << " kernel self-test(s) failed on " << r.device.name
              << " (first: " << r.selftest.first_failure << "); " << out << " records them and kvcap will refuse it\n";
    return 1;
  }
  return 0;
}

}  // namespace kvcap::cli
