#pragma once
// `kvcap size`'s flags mapped to a sizing request (planner/sizing.hpp) and its report options: the one place that
// knows what each size flag means.
#include <optional>

#include "common.hpp"
#include "kvcap/planner/sizing.hpp"
#include "kvcap/simulator/verify.hpp"
#include "report/format.hpp"
#include "report/size.hpp"

namespace kvcap::cli {

struct SizeCommand {
  SizingRequest request;
  SizingReportOptions report;
  Format format = Format::table;
  /// --verify / --trace: the best candidates simulated on the workload (the smallest replica count meeting the
  /// targets); nullopt: the analytic answer only.
  std::optional<sim::VerifyOptions> verify{};
  std::size_t verify_top = 5;  ///< --verify N: the N best-ranked, and the best of each GPU type
  bool progress = false;       ///< a progress line on stderr (a terminal, no --no-progress)
  bool mpi = false;            ///< --mpi: the verification's candidates split over MPI ranks (cli/distributed.hpp)
};

/// The flags of `kvcap size` (workload, targets, search space, deployment, speed, output).
po::options_description size_options();
/// UsageError naming the flag for what does not parse or contradicts; ProfileError for a bad file.
SizeCommand size_command_from(const po::variables_map& vm);

}  // namespace kvcap::cli
