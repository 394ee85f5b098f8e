// kvcap sweep: the speed model over a grid (models x GPUs x TP x contexts x batches) as CSV or JSON, for plotting.
#include <algorithm>
#include <iostream>
#include <set>

#include "common.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/planner/sweep.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "report/plan.hpp"
#include "report/sweep.hpp"

namespace kvcap::cli {

namespace {
constexpr double kMaxSweepRows = 1e8;  ///< ~16 GB of CSV at ~160 bytes a row
/// The grid of a command line: the deployment base, the axes, the models and GPUs resolved, the calibration.
struct Grid {
  Deployment base;
  std::vector<i64> contexts, batches, tps;
  std::vector<i64> dps;  ///< --data-parallel-sizes; empty: the base deployment's GPU count
  std::vector<ModelSpec> models;
  std::vector<GpuSpec> gpus;
  std::optional<Calibration> calibration;
};

Grid grid_from(const po::variables_map& vm) {
  Grid g;
  g.base = deployment_from(vm);
  g.contexts = parse_token_list(vm["contexts"].as<std::string>(), "--contexts");
  for (const auto& b : parse_name_list(vm["batches"].as<std::string>(), "--batches")) {
    const i64 n = parse_int(b, "--batches", 1);
    if (std::find(g.batches.begin(), g.batches.end(), n) != g.batches.end())
      throw UsageError("--batches: " + std::to_string(n) + " is listed twice ('" + b + "'); give each batch size once");
    g.batches.push_back(n);
  }
  g.tps = {g.base.tensor_parallel_size};
  if (vm.count("tensor-parallel-sizes")) {
    g.tps.clear();
    for (const auto& t : parse_name_list(vm["tensor-parallel-sizes"].as<std::string>(), "--tensor-parallel-sizes")) {
      const i64 n = parse_int(t, "--tensor-parallel-sizes", 1);
      if (std::find(g.tps.begin(), g.tps.end(), n) != g.tps.end())
        throw UsageError("--tensor-parallel-sizes: " + std::to_string(n) + " is listed twice; give each size once");
      g.tps.push_back(n);
    }
  }
  if (vm.count("data-parallel-sizes")) {
    if (vm.count("num-gpus") || vm.count("data-parallel-size"))
      throw UsageError(
          "--data-parallel-sizes sets the GPU count of each deployment (DP x TP x PP): give it without "
          "--num-gpus and --data-parallel-size");
    for (const auto& t : parse_name_list(vm["data-parallel-sizes"].as<std::string>(), "--data-parallel-sizes")) {
      const i64 n = parse_int(t, "--data-parallel-sizes", 1, 4096);
      if (std::find(g.dps.begin(), g.dps.end(), n) != g.dps.end())
        throw UsageError("--data-parallel-sizes: " + std::to_string(n) + " is listed twice; give each size once");
      g.dps.push_back(n);
    }
  }
  for (const auto& m : parse_name_list(vm["models"].as<std::string>(), "--models"))
    g.models.push_back(profiles::resolve_model(m));
  for (const auto& name : parse_name_list(vm["gpus"].as<std::string>(), "--gpus"))
    g.gpus.push_back(profiles::resolve_gpu(name));
  // A calibration measures one device: it applies only when the grid has exactly one GPU type.
  if (vm.count("calibration") && g.gpus.size() != 1)
    throw UsageError(
        "--calibration: a calibration describes the GPU it was measured on; give exactly one GPU type with --gpus "
        "(got " +
        std::to_string(g.gpus.size()) + ")");
  g.calibration = calibration_from(vm, g.gpus.front());
  // Bounded work: the grid is a product; refuse one whose output no one could read, with the estimate.
  const double rows = static_cast<double>(g.models.size()) * static_cast<double>(g.gpus.size()) *
                      static_cast<double>(g.tps.size()) * static_cast<double>(std::max<std::size_t>(1, g.dps.size())) *
                      static_cast<double>(g.contexts.size()) * static_cast<double>(g.batches.size());
  if (rows > kMaxSweepRows)
    throw UsageError("the grid has " + fixed(rows, 0) +
                     " points (models x GPUs x TP sizes x DP sizes x contexts x batches), about " +
                     fixed(rows * 160 / 1e9, 1) + " GB of output; at most " +
                     grouped(static_cast<std::uint64_t>(kMaxSweepRows)) + ": split it into several runs");

  return g;
}

/// One deployment of the grid through sweep_grid, streamed to `out`; false when it is skipped (said on stderr).
bool run_deployment(const Grid& grid, const SpeedOptions& speed, const ModelSpec& m, const GpuSpec& g,
                    const Deployment& d, std::set<std::string>& warned, SweepWriter& out) {
  std::optional<SpeedContext> c;
  bool speed_meaningful = true;
  try {
    const MemoryPlan plan = plan_memory(m, g, d, grid.contexts);  // the curve: for W203
    // Points that do not fit are the grid's answer (fits = false); KV memory beyond the device (E103) and a
    // shared prefix no request can carry (E106) or the cache cannot hold (E107) are impossible inputs, not
    // points; warnings (W203: contexts not longer than the prefix) go to stderr.
    for (const auto& f : check_memory_plan(g, plan)) {
      if (f.impossible_input) throw FindingError(f);
      if (f.leaves != Finding::Leaves::everything) speed_meaningful = false;
      if (f.level == Finding::Level::warning && warned.insert(f.code + f.message).second)
        print_findings("sweep", {f}, m.name + " on " + g.name);
    }
    // An expert-parallel group beyond one 8-GPU NVLink domain: its all-to-all is still timed at the NVLink rate.
    if (plan.dep.expert_parallel_size > 8 && warned.insert("ep-nodes").second)
      std::cerr << "kvcap sweep: note: expert-parallel groups of more than 8 GPUs span nodes; their all-to-all is "
                   "timed at the GPU profile's NVLink rate, so those rows are optimistic\n";
    c = make_speed_context(m, g, plan, speed, grid.calibration);
  } catch (const SpecError& e) {
    std::cerr << "kvcap sweep: skipped " << escape::terminal_text(m.name) << " on " << escape::terminal_text(g.name)
              << " TP " << d.tensor_parallel_size
              << (grid.dps.empty()
                      ? ""
                      : " DP " + std::to_string(d.num_gpus / (d.tensor_parallel_size * d.pipeline_parallel_size)))
              << ": " << escape::terminal_lines(e.what()) << "\n";
    return false;
  }
  const auto& r = c->plan.dep;
  out.series({m.name, g.name, d.tensor_parallel_size, r.d.pipeline_parallel_size, r.replicas, r.expert_parallel_size,
              std::string(name(r.weight_dtype)), std::string(name(r.kv_dtype)), speed_meaningful});
  sweep_grid(*c, grid.contexts, grid.batches, [&](const SweepPoint& p) { out.point(p); });
  return true;
}

/// Every deployment of the grid through sweep_grid, streamed to `out`: {series written, deployments skipped}.
std::pair<std::size_t, std::size_t> run_grid(const Grid& grid, const SpeedOptions& speed, SweepWriter& out) {
  std::size_t skipped = 0, series = 0;
  std::set<std::string> warned;  // a warning the grid repeats (W203 is the same for every deployment) is printed once
  // Without --data-parallel-sizes, one deployment per TP size with the base flags' GPU count.
  const std::vector<i64> dps = grid.dps.empty() ? std::vector<i64>{0} : grid.dps;
  for (const auto& m : grid.models)
    for (const auto& g : grid.gpus)
      for (i64 tp : grid.tps)
        for (i64 dp : dps) {
          Deployment d = grid.base;
          d.tensor_parallel_size = tp;
          if (dp > 0) d.num_gpus = dp * tp * d.pipeline_parallel_size;
          ++(run_deployment(grid, speed, m, g, d, warned, out) ? series : skipped);
        }
  return {series, skipped};
}

/// kvcap sweep --help.
const CommandHelp kHelp = {
    "kvcap sweep --models A,B --gpus X,Y [--contexts ...] [--batches ...] [options]",
    "The speed and memory models over a grid of models x GPUs x TP sizes x contexts x batches, one row per\n"
    "point: fits (batch <= concurrency at the context, context <= max_model_len), max_concurrency, TPOT of a\n"
    "decode step of `batch` requests at the context, TTFT of a prompt of `context` tokens (batch 1), tokens/s\n"
    "and the binding bound. The memory plan is built once per deployment; output streams (10^6 rows in seconds).",
    "  kvcap sweep --models llama-3.1-8b,llama-3.1-70b --gpus h100-sxm,h200 --tensor-parallel-sizes 1,2,4,8 > "
    "grid.csv\n"
    "  kvcap sweep --models mixtral-8x7b --gpus a100-80gb --tensor-parallel-size 2 --contexts 1K,32K --batches 1,8,64 "
    "--format json\n"
    "  kvcap sweep --models llama-3.1-70b --gpus h100-sxm --tensor-parallel-size 4 --kv-cache-dtype fp8 "
    "--max-model-len 128K"};

}  // namespace

int cmd_sweep(const std::vector<std::string>& args) {
  auto desc = deployment_options(false);
  po::options_description grid("Grid");
  // clang-format off
  grid.add_options()
    ("models", po::value<std::string>(), "models, comma-separated (built-in names, YAML profiles or config.json)")
    ("gpus", po::value<std::string>(), "GPU types, comma-separated (built-in names or YAML profiles)")
    ("tensor-parallel-sizes", po::value<std::string>(), "TP sizes, comma-separated (overrides --tensor-parallel-size)")
    ("data-parallel-sizes", po::value<std::string>(), "data-parallel replicas per deployment, comma-separated (--num-gpus = DP x TP x PP); with --enable-expert-parallel each DP size is an expert-parallel group: its rows are one replica's")
    ("contexts", po::value<std::string>()->default_value("1K,2K,4K,8K,16K,32K,64K,128K"), "context lengths (tokens per request)")
    ("batches", po::value<std::string>()->default_value("1,2,4,8,16,32,64,128,256,512,1024"), "batch sizes (requests decoding together)")
    ("format,f", po::value<std::string>()->default_value("csv"), "csv or json")
    ("help,h", "show this help");
  // clang-format on
  desc.add(grid).add(speed_options());
  const auto parsed = parse_or_help(args, desc, kHelp);
  if (!parsed) return 0;
  const auto& vm = *parsed;
  if (!vm.count("models")) throw UsageError("--models is required (comma-separated, e.g. llama-3.1-8b,mixtral-8x7b)");
  if (!vm.count("gpus")) throw UsageError("--gpus is required (comma-separated, e.g. h100-sxm,a100-80gb)");
  const Format fmt = parse_format(vm["format"].as<std::string>());
  if (fmt == Format::table) throw UsageError("--format: sweep writes csv or json (a table of 10^6 rows helps nobody)");
  const Grid points = grid_from(vm);
  SweepWriter out(std::cout, fmt == Format::json);
  const auto [series, skipped] = run_grid(points, speed_options_from(vm), out);
  out.finish();
  if (series == 0) {
    std::cerr << "kvcap sweep: error: every deployment of the grid was invalid (" << skipped << " skipped)\n";
    return 1;
  }
  return 0;
}

}  // namespace kvcap::cli
