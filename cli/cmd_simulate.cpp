// kvcap simulate: the serving simulator over a deployment (memory plan -> KV blocks per replica, speed model ->
// step times) driven by a workload file, a CSV trace, or flags. Flags -> request (simulate_request.cpp) ->
// sim::run_simulation -> a reporter (report/simulate.cpp). docs/simulator.md.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "common.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/simulator/timeline.hpp"
#include "kvcap/simulator/trace.hpp"
#include "report/format.hpp"
#include "simulate_request.hpp"

namespace kvcap::cli {

namespace {

std::ofstream open_out(const std::string& path, const char* flag) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw UsageError(std::string(flag) + ": cannot write '" + path + "'");
  return f;
}

/// kvcap simulate --help.
const CommandHelp kHelp = {
    "kvcap simulate --model M --gpu G [deployment flags] (--workload F | --trace F.csv | --rate R --prompt-tokens P "
    "--output-tokens O) (--duration S | --num-requests N)",
    "Discrete-event simulation of a vLLM-V1-like serving cluster: continuous batching with a token budget,\n"
    "chunked prefill, decode-first scheduling, paged KV blocks (count from the memory model) with preemption\n"
    "by recompute, and step times from the speed model. Reports TTFT, TPOT, end-to-end latency percentiles,\n"
    "throughput, goodput, preemptions and KV utilisation; --timeline writes the KV utilisation over time.",
    "  kvcap simulate --model llama-3.1-8b --gpu h100-sxm --trace "
    "../shared/fixtures/traces/AzureLLMInferenceTrace_conv.csv\n"
    "  kvcap simulate --model llama-3.1-70b --gpu h100-sxm --tensor-parallel-size 4 --num-gpus 16 --router lor \\\n"
    "                 --rate 20 --prompt-tokens lognormal:mean=1K,sigma=0.9,max=8K --output-tokens uniform:32-512 "
    "--duration 10min\n"
    "  kvcap simulate --model llama-3.1-8b --gpu a100-80gb --workload profiles/examples/workload-chat.yaml "
    "--num-requests 5000 \\\n"
    "                 --timeline kv.csv --format json\n"
    "  kvcap simulate --model llama-3.1-8b --gpu h100-sxm --max-model-len 8K --allocator contiguous --rate 10 \\\n"
    "                 --prompt-tokens 1K --output-tokens 256 --num-requests 2000   # the pre-paging design\n"
    "  kvcap simulate --model llama-3.1-8b --gpu h100-sxm --max-model-len 8K --allocator compare --rate 10 \\\n"
    "                 --prompt-tokens 1K --output-tokens 256 --num-requests 2000   # paged vs contiguous"};

/// Whether `path` leads to a regular file (not a device or a pipe such as /dev/null).
bool regular_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::status(path, ec).type() == std::filesystem::file_type::regular;
}

/// Removes `path` when it is a regular file itself (never a device, nor a link or what it points to); whether it did.
bool remove_regular_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::symlink_status(path, ec).type() == std::filesystem::file_type::regular &&
         std::filesystem::remove(path, ec);
}

/// --timeline and --requests-out: the files beside the report, written as the run goes.
class Outputs {
 public:
  explicit Outputs(SimulateCommand& c) {
    if (c.requests_path) {
      requests_file_ = open_out(*c.requests_path, "--requests-out");
      requests_ = std::make_unique<RequestCsv>(*requests_file_);
    }
    if (c.timeline_path) {
      timeline_file_ = open_out(*c.timeline_path, "--timeline");
      // Only a file on disk can run away (/dev/null, a pipe or a terminal cannot): the limit is a regular file's.
      const bool bounded = !c.force && regular_file(*c.timeline_path);
      timeline_ =
          std::make_unique<sim::TimelineCsvWriter>(*timeline_file_, requests_.get(), bounded ? kMaxTimelineRows : 0);
    }
    c.request.observer = timeline_ ? timeline_.get() : requests_.get();
  }
  /// The run passed the timeline's row limit: its partial files (the timeline, --requests-out) are removed, and the
  /// error says what to change.
  [[noreturn]] void refuse_timeline(const SimulateCommand& c, const sim::TimelineRowLimit& e) {
    timeline_file_->close();
    std::string removed = "'" + *c.timeline_path + "'";
    remove_regular_file(*c.timeline_path);
    if (requests_file_ && c.requests_path) {
      requests_file_->close();
      if (remove_regular_file(*c.requests_path)) removed += " and the partial '" + *c.requests_path + "'";
    }
    throw UsageError("--timeline: " + grouped(e.rows) +
                     " rows, the limit, were written by simulated t = " + fixed(e.time_s, 1) +
                     " s with the run still going (it outlasts its arrivals: a closed loop, conversations, or a "
                     "queue that drains after the last arrival, so the estimate before the run could not bound it); "
                     "the run stopped, " +
                     removed + " removed: use a longer --timeline-interval than " +
                     fixed(c.request.timeline_interval_s, 6) + " s, or --force");
  }
  void flush() {
    if (timeline_file_) timeline_file_->flush();
    if (requests_file_) requests_file_->flush();
    if ((timeline_file_ && !*timeline_file_) || (requests_file_ && !*requests_file_))
      throw std::runtime_error("writing an output CSV failed (disk full?)");
  }

 private:
  std::optional<std::ofstream> timeline_file_, requests_file_;
  std::unique_ptr<sim::Observer> requests_;
  std::unique_ptr<sim::TimelineCsvWriter> timeline_;
};

/// One run of the request, its configuration and wall time copied into the report's labels.
sim::SimulationRun run(const SimulateCommand& c, SimulationInfo& info, ProgressLine& progress, bool wall_time) {
  sim::SimulationRun r = sim::run_simulation(c.request);
  progress.clear();
  info.plan = &c.request.speed.plan;
  info.cfg = r.config;
  info.workload_desc = c.info.workload_desc +
                       describe_closed_loop(r.config, c.staggered_asked, sim::one_wave(c.request), c.lockstep_engine);
  if (wall_time) info.wall_s = r.wall_s;
  info.benchmark = sim::benchmark_mean(c.request, r.result);
  return r;
}

int report_comparison(SimulateCommand& c, Format fmt, ProgressLine& progress, bool wall_time) {
  SimulationInfo paged = c.info, contiguous = c.info;
  const sim::SimulationRun p = run(c, paged, progress, wall_time);
  c.request.allocator = sim::Allocator::contiguous;
  const sim::SimulationRun q = run(c, contiguous, progress, wall_time);
  switch (fmt) {
    case Format::table:
      report_allocator_comparison(std::cout, paged, p.result, contiguous, q.result);
      break;
    case Format::json: {
      nlohmann::ordered_json j;
      j["paged"] = simulation_json(paged, p.result);
      j["contiguous"] = simulation_json(contiguous, q.result);
      std::cout << j.dump(2) << "\n";
      break;
    }
    case Format::csv:
      report_simulation_csv(std::cout, paged, p.result);
      report_simulation_csv(std::cout, contiguous, q.result, false);
      break;
  }
  return 0;
}

}  // namespace

int cmd_simulate(const std::vector<std::string>& args) {
  const auto vm = parse_or_help(args, simulate_options(), kHelp);
  if (!vm) return 0;
  const Format fmt = parse_format((*vm)["format"].as<std::string>());
  SimulateCommand c;
  try {
    c = simulate_command_from(*vm);
  } catch (const sim::TraceError& e) {
    std::cerr << escape::terminal_lines(e.what()) << "\n";  // it quotes the trace's bytes
    return 1;
  }
  ProgressLine progress;
  if (!vm->count("no-progress") && isatty(STDERR_FILENO)) c.request.progress = progress.callback();
  const bool wall_time = !vm->count("no-wall-time");
  if (c.compare_allocators) return report_comparison(c, fmt, progress, wall_time);
  Outputs outputs(c);
  SimulationInfo info = c.info;
  sim::SimulationRun r;
  try {
    r = run(c, info, progress, wall_time);
  } catch (const sim::TimelineRowLimit& e) {
    progress.clear();
    outputs.refuse_timeline(c, e);
  }
  outputs.flush();
  switch (fmt) {
    case Format::table:
      report_simulation_table(std::cout, info, r.result);
      break;
    case Format::json: {
      auto j = simulation_json(info, r.result);
      j["findings"] = findings_json(r.findings);
      std::cout << j.dump(2) << "\n";
      break;
    }
    case Format::csv:
      report_simulation_csv(std::cout, info, r.result);
      break;
  }
  print_findings("simulate", r.findings);
  return exit_code(r.findings);
}

}  // namespace kvcap::cli
