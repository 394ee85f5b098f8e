#pragma once
// Reporters of `kvcap simulate`: a run's result as a table for people, JSON, or one CSV row; the allocator
// comparison; the per-request CSV; the one-line descriptions of what was simulated. Foreign text goes through
// cli/escape.
#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/workload.hpp"
#include "kvcap/simulator/run.hpp"
#include "kvcap/simulator/trace.hpp"

namespace kvcap::cli {

/// What a report says about a run beside its result: names, the plan, the configuration as run, descriptions.
struct SimulationInfo {
  std::string model, model_display, gpu, gpu_display;
  const MemoryPlan* plan = nullptr;
  sim::SimConfig cfg;
  std::string workload_desc;    ///< one line for people
  std::string workload_source;  ///< "trace" | "workload" | "flags"
  std::string workload_name;
  std::string step_time_source;
  std::string expected_error;  ///< the engine profile's error band ("" when unknown)
  std::optional<double> wall_s;
  /// Disaggregated prefill workers (cfg.prefill.num_replicas > 0): one line for people, their GPU, the KV link.
  std::string prefill_desc, prefill_gpu;
  KvTransferLink kv_link;
  /// A closed loop started staggered: what a benchmark's mean over the run reads, its first wave included.
  std::optional<sim::BenchmarkMean> benchmark;
};

/// "uniform 128-2048 (mean 1088.0)".
std::string describe_length(const LengthDistribution& d);
/// A synthetic workload: "'chat' (file): poisson arrivals at 4 req/s; prompt ...; 1,000 requests; seed 0"
/// (`file` empty for a workload from flags).
std::string describe_workload(const WorkloadSpec& w, const std::string& file, const sim::SourceLimits& limits,
                              std::uint64_t seed, bool closed_loop = false);
/// A trace: "trace NAME (N requests over S s; columns ...)".
std::string describe_trace(const std::string& name, const sim::Trace& t, double speedup,
                           const sim::SourceLimits& limits);
/// The closed loop as run ("; closed loop: at most N in flight, ..."; "" for an open loop).
std::string describe_closed_loop(const sim::SimConfig& cfg, bool staggered_asked, bool one_wave, bool lockstep_engine);

void report_simulation_table(std::ostream& o, const SimulationInfo& in, const sim::SimResult& r);
/// --allocator compare: the same workload on paged blocks and on contiguous max_model_len reservations.
void report_allocator_comparison(std::ostream& o, const SimulationInfo& paged, const sim::SimResult& p,
                                 const SimulationInfo& contiguous, const sim::SimResult& c);
nlohmann::ordered_json simulation_json(const SimulationInfo& in, const sim::SimResult& r);
/// A header line (unless `header` is false) and one summary row.
void report_simulation_csv(std::ostream& o, const SimulationInfo& in, const sim::SimResult& r, bool header = true);

/// Per-request CSV (--requests-out): one row per completed request.
class RequestCsv : public sim::Observer {
 public:
  explicit RequestCsv(std::ostream& o);
  void on_request_done(const sim::RequestRecord& r) override;

 private:
  std::ostream& o_;
};

/// Progress on stderr, only for people watching a terminal: a line rewritten at most every 250 ms, cleared at the end.
class ProgressLine {
 public:
  std::function<void(const sim::Progress&)> callback();
  void clear();

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  bool printed_ = false;
};

}  // namespace kvcap::cli
