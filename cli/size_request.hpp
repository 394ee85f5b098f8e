#pragma once
// `kvcap size`'s flags mapped to a sizing request (planner/sizing.hpp) and its report options: the one place that
// knows what each size flag means.
#include "common.hpp"
#include "kvcap/planner/sizing.hpp"
#include "report/format.hpp"
#include "report/size.hpp"

namespace kvcap::cli {

struct SizeCommand {
  SizingRequest request;
  SizingReportOptions report;
  Format format = Format::table;
};

/// The flags of `kvcap size` (workload, targets, search space, deployment, speed, output).
po::options_description size_options();
/// UsageError naming the flag for what does not parse or contradicts; ProfileError for a bad file.
SizeCommand size_command_from(const po::variables_map& vm);

}  // namespace kvcap::cli
