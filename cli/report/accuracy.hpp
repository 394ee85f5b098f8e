#pragma once
// Reporters of `kvcap accuracy` (scorecard.hpp): the scorecard table and the fitted engine profiles.
#include <ostream>
#include <vector>

#include "scorecard.hpp"

namespace kvcap::cli {

/// Predicted / measured TPOT, TTFT and throughput per point, then the MAPE per engine.
void report_scorecard(std::ostream& out, const std::vector<Point>& pts, const std::vector<Outcome>& outs,
                      const Scores& s);
/// Each engine's fitted constants, MAPE before and after, leave-one-out errors.
void report_fits(std::ostream& out, const std::vector<EngineFit>& fits);

}  // namespace kvcap::cli
