#pragma once
// Reporters of `kvcap size`: one sizing result as a table for people, JSON or CSV. Foreign text (GPU and model
// names, reasons) goes through cli/escape.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "kvcap/planner/launch.hpp"
#include "kvcap/planner/plausibility.hpp"
#include "kvcap/planner/sizing.hpp"
#include "kvcap/simulator/verify.hpp"

namespace kvcap::cli {

struct SizingReportOptions {
  std::int64_t top = 10;             ///< table rows (0: every feasible candidate)
  bool explain = false;              ///< list the rejected candidates and why
  bool prices_overridden = false;    ///< --price was given
  std::string engine = "datasheet";  ///< the --engine profile the rates come from (planner/engine.hpp)
  /// The plausibility policy's findings about the request (E104, W205), in JSON `warnings` and `findings` as
  /// `plan` reports them; an error among them means no search was run (no candidates).
  std::vector<Finding> findings{};
  /// --emit: the launch command of the recommended deployments (the cheapest and the best per GPU type; in JSON
  /// and CSV every feasible candidate's).
  std::optional<LaunchEngine> emit{};
  /// The sizing assumed prefill chunks in the decode steps (every engine profile but sglang's, or
  /// --enable-mixed-chunk): SGLang's launch commands carry --enable-mixed-chunk so that it runs them so.
  bool mixed_chunk = false;
  /// --verify / --trace: the candidates simulated (empty: not asked), and how (e.g. "2,000 requests per run").
  std::vector<sim::VerifiedCandidate> verified{};
  std::string verified_how{};
};

/// The launch command as one line for a POSIX shell (every word quoted as it must be).
std::string launch_line(const LaunchCommand& c);

void report_sizing_table(std::ostream& out, const SizingRequest& q, const SizingResult& r,
                         const SizingReportOptions& o);
void report_sizing_json(std::ostream& out, const SizingRequest& q, const SizingResult& r, const SizingReportOptions& o);
void report_sizing_csv(std::ostream& out, const SizingRequest& q, const SizingResult& r, const SizingReportOptions& o);

}  // namespace kvcap::cli
