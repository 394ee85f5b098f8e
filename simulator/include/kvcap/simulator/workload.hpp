#pragma once
// Request generators: arrivals x lengths composed (as vidur's request_generator/), drawn lazily so that
// memory does not grow with the number of requests. Deterministic for a seed: arrivals, prompt lengths,
// output lengths and prefix groups each draw from their own stream (random.hpp), so changing one
// distribution does not move the others.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvcap/planner/workload.hpp"
#include "kvcap/simulator/random.hpp"
#include "kvcap/simulator/request.hpp"

namespace kvcap::sim {

/// When a source stops: after `num_requests`, or at the first arrival at or after `duration_s`.
struct SourceLimits {
  std::optional<std::uint64_t> num_requests;
  std::optional<double> duration_s;
};

class RequestSource {
 public:
  virtual ~RequestSource() = default;
  /// The next request, arrivals non-decreasing in time; nullopt when the source is exhausted.
  virtual std::optional<RequestSpec> next() = 0;
  /// How many requests the source will produce, when known (progress indicators).
  virtual std::optional<std::uint64_t> size_hint() const = 0;
  /// Conversations started by arrivals (ConversationSpec::users == 0): the turn after `done`, the last turn sent of
  /// its conversation, with its new message's and answer's lengths and its think time drawn; nullopt when the
  /// conversation has had all its turns or the source's request limit is reached. Its arrival time is the event
  /// loop's to set: the previous answer's end plus the think time. Single-turn sources have none.
  virtual std::optional<RequestSpec> next_turn(const RequestSpec& done) {
    (void)done;
    return std::nullopt;
  }
};

/// A sample of `d` (integer tokens >= 1): see LengthDistribution for each kind's definition.
class LengthSampler {
 public:
  explicit LengthSampler(const LengthDistribution& d);
  i64 sample(Rng& rng) const;

 private:
  LengthDistribution d_;
  double mu_ = 0;                  ///< lognormal: ln(mean) - sigma^2 / 2
  std::vector<double> cumulative_; ///< empirical: cumulative weights
};

/// Gaps between arrivals (ArrivalProcess): exponential, gamma (shape 1/cv^2, mean 1/rate), or constant.
class ArrivalSampler {
 public:
  explicit ArrivalSampler(const ArrivalProcess& a);
  double gap_s(Rng& rng) const;

 private:
  ArrivalProcess a_;
  double shape_ = 1, scale_ = 1;
};

/// Requests drawn from a WorkloadSpec; the first arrives at t = 0. Needs at least one limit.
std::unique_ptr<RequestSource> synthetic_source(const WorkloadSpec& w, std::uint64_t seed, const SourceLimits& limits);
/// Requests replayed from a list (a CSV trace), cut at the limits.
std::unique_ptr<RequestSource> list_source(std::vector<RequestSpec> requests, const SourceLimits& limits);

}  // namespace kvcap::sim
