#pragma once
// Sizing verified by simulation (issue 17): the analytic search (planner/sizing.hpp) proposes, the discrete-event
// simulator disposes. For each of the best-ranked candidates, the smallest replica count whose simulated TTFT at the
// target percentile and mean TPOT meet the targets on the workload (a trace replayed, open-loop arrivals, or
// closed-loop users), searched over replica counts from the analytic answer. Candidates run in parallel on a pool of
// threads; each simulation is deterministic (seeded), so the result does not depend on the thread count.
// docs/sizing.md, "Verified by simulation".
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "kvcap/planner/plausibility.hpp"
#include "kvcap/planner/sizing.hpp"
#include "kvcap/simulator/request.hpp"
#include "kvcap/simulator/workload.hpp"

namespace kvcap::sim {

struct VerifyOptions {
  /// The feasible candidates to verify: indices into SizingResult::candidates (rank - 1).
  std::vector<std::size_t> candidates;
  /// What arrives: a trace's requests, replayed as recorded (cut at `limits`), or else `workload` drawn with `seed`.
  std::optional<std::vector<RequestSpec>> trace;
  WorkloadSpec workload;
  SourceLimits limits;  ///< requests per simulation
  std::uint64_t seed = 1;
  unsigned threads = 1;  ///< >= 1
  /// Called after each candidate is settled with (settled, total), one call at a time (from the thread that
  /// settled it); may be empty.
  std::function<void(std::size_t, std::size_t)> progress;
};

struct VerifiedCandidate {
  std::size_t index = 0;      ///< into SizingResult::candidates (rank - 1)
  i64 analytic_replicas = 0;  ///< what the queueing model asked for
  i64 replicas = 0;           ///< the smallest count meeting the targets in simulation; 0: none up to max_replicas
  /// Disaggregated (xPyD) candidates: `replicas` counts decode workers, and the prefill workers scale with them in the
  /// analytic ratio, prefill_workers(y) = ceil(x x y / y_analytic). Their count at `replicas` (0 for aggregated).
  i64 prefill_replicas = 0;
  i64 gpus = 0;          ///< both pools' GPUs at `replicas` (0: none met)
  i64 max_replicas = 0;  ///< the most the search could try (the search space's max_gpus)
  double ttft_s = 0;     ///< simulated TTFT at the target percentile, at `replicas` (else at the most tried)
  double tpot_s = 0;     ///< simulated mean TPOT there
  /// The same at the analytic replica count: the simulation beside the queueing model's figures.
  double ttft_at_analytic_s = 0;
  double tpot_at_analytic_s = 0;
  /// The simulation's findings there (KVCAP-W202: the offered load exceeds what that many replicas serve).
  std::vector<Finding> findings_at_analytic;
  std::uint64_t completed = 0;
  /// Requests longer than max_model_len (vLLM rejects them): each counts as missing the TTFT target, so a count meets
  /// only when the completed requests alone reach the target percentile of all requests sent.
  std::uint64_t rejected = 0;
  bool too_many_rejected = false;  ///< more rejected than the TTFT percentile allows: no count meets (none searched)
  int simulations = 0;
  double wall_s = 0;  ///< wall-clock seconds of this candidate's simulations
};

/// The sizer's workload of a trace: mean prompt and output tokens, the arrival rate over its span (requests - 1 over
/// the first to last arrival) and the gaps' squared coefficient of variation, the prompts' SCV, and max_context_tokens
/// = its longest request (so a deployment sized on it rejects none). SpecError("trace") for fewer than 2 requests or
/// a zero span.
SizingWorkload sizing_workload_of_trace(const std::vector<RequestSpec>& trace);

/// Verifies `o.candidates` of `r` (the result of size_cluster(q)), in that order. SpecError for an index that is not
/// a feasible candidate, and from the simulator's checks.
std::vector<VerifiedCandidate> verify_sizing(const SizingRequest& q, const SizingResult& r, const VerifyOptions& o);

}  // namespace kvcap::sim
