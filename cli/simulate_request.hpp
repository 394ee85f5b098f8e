#pragma once
#include <cstdint>
// `kvcap simulate`'s flags mapped to a simulation request (simulator/run.hpp) and the labels its reporters print:
// the one place that knows what each simulate flag means.
#include <optional>
#include <string>

#include "common.hpp"
#include "kvcap/simulator/run.hpp"
#include "report/simulate.hpp"

namespace kvcap::cli {

struct SimulateCommand {
  sim::SimulationRequest request;
  SimulationInfo info;              ///< names and descriptions; cfg, plan and wall time are filled after the run
  bool compare_allocators = false;  ///< --allocator compare: paged, then contiguous, on the same requests
  bool staggered_asked = true;      ///< --client-start staggered (or auto with an engine that mixes its steps)
  bool lockstep_engine = false;     ///< --client-start auto chose together: a prefill-first engine
  std::optional<std::string> timeline_path, requests_path;
  double timeline_span_s = 0;  ///< arrivals' span, for the timeline's row estimate
  bool force = false;          ///< --force: no limit on the timeline's rows
};

/// The most rows --timeline writes without --force (~120 MB): refused before the run from the arrivals' span, and
/// stopped during it where the run outlasts that span (closed loops, conversations).
inline constexpr std::uint64_t kMaxTimelineRows = 2'000'000;

/// The flags of `kvcap simulate` (deployment, speed, workload, cluster, output).
po::options_description simulate_options();

/// The request and labels of a command line; UsageError naming the flag for what does not parse or contradicts,
/// sim::TraceError for a bad trace, ProfileError for a bad profile or workload file.
SimulateCommand simulate_command_from(const po::variables_map& vm);

}  // namespace kvcap::cli
