#include "kvcap/planner/workload.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kvcap/planner/error.hpp"

namespace kvcap {

namespace {
// Lengths beyond this are not a workload (10^9 tokens per request); keeps sums of lengths far from 2^63.
constexpr i64 kMaxLengthTokens = 1'000'000'000;

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

void finite_positive(double v, const std::string& field, const char* what) {
  if (!(std::isfinite(v) && v > 0)) throw SpecError(field, std::string("must be a finite number > 0 (") + what + ")");
}
void length_in_range(i64 v, const std::string& field) {
  if (v < 1 || v > kMaxLengthTokens)
    throw SpecError(field, "must be between 1 and " + std::to_string(kMaxLengthTokens) + " tokens (got " +
                               std::to_string(v) + ")");
}
}  // namespace

std::string_view to_string(LengthDistribution::Kind k) {
  switch (k) {
    case LengthDistribution::Kind::fixed: return "fixed";
    case LengthDistribution::Kind::uniform: return "uniform";
    case LengthDistribution::Kind::lognormal: return "lognormal";
    case LengthDistribution::Kind::empirical: return "empirical";
  }
  return "?";
}

std::string_view to_string(ArrivalProcess::Kind k) {
  switch (k) {
    case ArrivalProcess::Kind::poisson: return "poisson";
    case ArrivalProcess::Kind::gamma: return "gamma";
    case ArrivalProcess::Kind::fixed_rate: return "fixed_rate";
    case ArrivalProcess::Kind::closed: return "closed";
  }
  return "?";
}

std::string_view to_string(ConversationSpec::History h) {
  return h == ConversationSpec::History::repeat ? "repeat" : "accumulate";
}

LengthDistribution LengthDistribution::fixed_tokens(i64 n) {
  LengthDistribution d;
  d.kind = Kind::fixed;
  d.tokens = n;
  return d;
}
LengthDistribution LengthDistribution::uniform_tokens(i64 lo, i64 hi) {
  LengthDistribution d;
  d.kind = Kind::uniform;
  d.min_tokens = lo;
  d.max_tokens = hi;
  return d;
}
LengthDistribution LengthDistribution::lognormal_tokens(double mean, double sigma, i64 lo, i64 hi) {
  LengthDistribution d;
  d.kind = Kind::lognormal;
  d.lognormal_mean_tokens = mean;
  d.sigma = sigma;
  d.min_tokens = lo;
  d.max_tokens = hi;
  return d;
}
LengthDistribution LengthDistribution::empirical_tokens(std::vector<i64> values, std::vector<double> weights) {
  LengthDistribution d;
  d.kind = Kind::empirical;
  d.values = std::move(values);
  d.weights = std::move(weights);
  return d;
}

bool LengthDistribution::is_constant() const {
  switch (kind) {
    case Kind::fixed:
      return true;
    case Kind::uniform:
      return min_tokens == max_tokens;
    case Kind::empirical:
      for (std::size_t i = 0; i < values.size(); ++i)
        if (values[i] != values.front() && (weights.empty() || weights[i] > 0)) return false;
      return true;
    case Kind::lognormal:
      return sigma == 0 || (max_tokens > 0 && min_tokens == max_tokens);
  }
  return false;
}

double LengthDistribution::mean_tokens() const {
  switch (kind) {
    case Kind::fixed: return static_cast<double>(tokens);
    case Kind::uniform: return 0.5 * (static_cast<double>(min_tokens) + static_cast<double>(max_tokens));
    case Kind::empirical: {
      if (values.empty()) return 0;
      double sum_w = 0, sum = 0;
      for (std::size_t i = 0; i < values.size(); ++i) {
        const double w = weights.empty() ? 1.0 : weights[i];
        sum_w += w;
        sum += w * static_cast<double>(values[i]);
      }
      return sum_w > 0 ? sum / sum_w : 0;
    }
    case Kind::lognormal: {
      // X = exp(Y), Y ~ N(mu, s^2), mu = ln(m) - s^2/2 so that E[X] = m. For the clamp to [a, b]:
      // E[clamp(X)] = a P(X < a) + E[X; a <= X <= b] + b P(X > b), with
      // E[X; a <= X <= b] = m (Phi((ln b - mu - s^2)/s) - Phi((ln a - mu - s^2)/s)).
      const double m = lognormal_mean_tokens;
      const double s = sigma;
      const double a = static_cast<double>(std::max<i64>(1, min_tokens));
      const double b = max_tokens > 0 ? static_cast<double>(max_tokens) : std::numeric_limits<double>::infinity();
      if (s <= 0) return std::clamp(m, a, b);
      const double mu = std::log(m) - 0.5 * s * s;
      const double la = std::log(a);
      const double p_below = normal_cdf((la - mu) / s);
      const double inner_lo = normal_cdf((la - mu - s * s) / s);
      double p_above = 0, inner_hi = 1;
      if (std::isfinite(b)) {
        const double lb = std::log(b);
        p_above = 1.0 - normal_cdf((lb - mu) / s);
        inner_hi = normal_cdf((lb - mu - s * s) / s);
      }
      const double mid = m * (inner_hi - inner_lo);
      return a * p_below + mid + (std::isfinite(b) ? b * p_above : 0.0);
    }
  }
  return 0;
}

i64 LengthDistribution::max_possible_tokens() const {
  switch (kind) {
    case Kind::fixed: return tokens;
    case Kind::uniform:
    case Kind::lognormal:
      return max_tokens;  // lognormal: 0 = unbounded
    case Kind::empirical: return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
  }
  return 0;
}

void validate(const LengthDistribution& d, const std::string& field) {
  switch (d.kind) {
    case LengthDistribution::Kind::fixed: length_in_range(d.tokens, field + ".tokens"); break;
    case LengthDistribution::Kind::uniform:
      length_in_range(d.min_tokens, field + ".min");
      length_in_range(d.max_tokens, field + ".max");
      if (d.max_tokens < d.min_tokens)
        throw SpecError(field + ".max", "must be >= min (" + std::to_string(d.max_tokens) + " < " +
                                            std::to_string(d.min_tokens) + ")");
      break;
    case LengthDistribution::Kind::lognormal:
      finite_positive(d.lognormal_mean_tokens, field + ".mean", "mean length in tokens");
      if (d.lognormal_mean_tokens > static_cast<double>(kMaxLengthTokens))
        throw SpecError(field + ".mean", "must be at most " + std::to_string(kMaxLengthTokens) + " tokens");
      if (!(std::isfinite(d.sigma) && d.sigma >= 0 && d.sigma <= 10))
        throw SpecError(field + ".sigma", "must be between 0 and 10 (standard deviation of ln(length))");
      length_in_range(d.min_tokens, field + ".min");
      if (d.max_tokens != 0) {
        length_in_range(d.max_tokens, field + ".max");
        if (d.max_tokens < d.min_tokens)
          throw SpecError(field + ".max", "must be >= min (" + std::to_string(d.max_tokens) + " < " +
                                              std::to_string(d.min_tokens) + ")");
      }
      break;
    case LengthDistribution::Kind::empirical: {
      if (d.values.empty()) throw SpecError(field + ".values", "must list at least one length");
      for (std::size_t i = 0; i < d.values.size(); ++i)
        length_in_range(d.values[i], field + ".values[" + std::to_string(i) + "]");
      if (!d.weights.empty()) {
        if (d.weights.size() != d.values.size())
          throw SpecError(field + ".weights", "must have one weight per value (" + std::to_string(d.weights.size()) +
                                                  " weights, " + std::to_string(d.values.size()) + " values)");
        double sum = 0;
        for (std::size_t i = 0; i < d.weights.size(); ++i) {
          if (!(std::isfinite(d.weights[i]) && d.weights[i] >= 0))
            throw SpecError(field + ".weights[" + std::to_string(i) + "]", "must be a finite number >= 0");
          sum += d.weights[i];
        }
        if (!(sum > 0)) throw SpecError(field + ".weights", "must not all be zero");
        // Weights are relative; their sum must stay finite (two of 1e308 added to inf, the mean read -nan).
        if (!std::isfinite(sum))
          throw SpecError(field + ".weights", "must add up to a finite number (they are relative: scale them down)");
      }
      break;
    }
  }
}

namespace {
void validate_arrival(const ArrivalProcess& a) {
  if (a.kind == ArrivalProcess::Kind::closed) {
    if (a.concurrency < 1 || a.concurrency > 10'000'000)
      throw SpecError("arrival.concurrency", "must be a number of clients between 1 and 10,000,000");
    if (!(std::isfinite(a.think_time_s) && a.think_time_s >= 0))
      throw SpecError("arrival.think_time_s", "must be a finite number of seconds >= 0");
    if (!a.phases.empty()) throw SpecError("arrival.phases", "apply to open-loop processes (poisson, gamma, fixed_rate), not to closed");
  } else {
    bool any_arrivals = false;
    for (std::size_t i = 0; i < a.phases.size(); ++i) {
      const std::string f = "arrival.phases[" + std::to_string(i) + "]";
      const double r = a.phases[i].rate_per_s;
      // A rate of 0 is an idle gap; others as every rate (a finer one loses the times' precision).
      if (!(r == 0 || (r >= 1e-9 && r <= 1e9)))
        throw SpecError(f + ".rate_per_s", "must be 0 (an idle gap) or between 1e-9 and 1e9 arrivals per second");
      any_arrivals = any_arrivals || r > 0;
      finite_positive(a.phases[i].duration_s, f + ".duration_s", "seconds");
    }
    if (!a.phases.empty() && !any_arrivals)
      throw SpecError("arrival.phases", "every phase has rate 0: no request would arrive");
    finite_positive(a.rate_per_s, "arrival.rate_per_s", "mean arrivals per second");
  }
  if (a.kind == ArrivalProcess::Kind::gamma && !(std::isfinite(a.cv) && a.cv > 0 && a.cv <= 100))
    throw SpecError("arrival.cv", "must be a number in (0, 100] (coefficient of variation of the gaps)");
}

/// `prompt_ok`: the prompt lengths are valid, so the longest prompt bounds the prefix.
void validate_shared_prefix(const WorkloadSpec& w, bool prompt_ok) {
  const auto& sp = w.shared_prefix;
  if (sp.num_groups < 0) throw SpecError("shared_prefix.groups", "must be >= 0");
  if (sp.num_groups > 1'000'000) throw SpecError("shared_prefix.groups", "must be at most 1,000,000");
  if (sp.num_groups > 0) length_in_range(sp.tokens, "shared_prefix.tokens");
  // The prefix counts inside the prompt: one longer than every prompt would be clipped without a word.
  const i64 longest_prompt = prompt_ok ? w.prompt.max_possible_tokens() : 0;
  if (sp.enabled() && longest_prompt > 0 && sp.tokens > longest_prompt)
    throw SpecError("shared_prefix.tokens", "is " + std::to_string(sp.tokens) + " tokens, longer than the longest prompt (" +
                                                std::to_string(longest_prompt) +
                                                " tokens); the shared prefix counts inside the prompt length");
  if (!(std::isfinite(sp.fraction) && sp.fraction >= 0 && sp.fraction <= 1))
    throw SpecError("shared_prefix.fraction", "must be between 0 and 1");
}

void validate_conversation(const WorkloadSpec& w) {
  const auto& cv = w.conversation;
  const auto& sp = w.shared_prefix;
  validate(cv.turns, "conversation.turns");
  if (cv.users < 0 || cv.users > 10'000'000) throw SpecError("conversation.users", "must be between 0 and 10,000,000");
  if (cv.users > 0 && (cv.turns.kind != LengthDistribution::Kind::fixed || cv.turns.tokens != 1))
    throw SpecError("conversation.turns",
                    "does not apply with users (a user's conversation lasts as long as the arrivals)");
  if (cv.enabled() && w.arrival.kind == ArrivalProcess::Kind::closed)
    throw SpecError("conversation", "needs an open-loop arrival process (poisson, gamma, fixed_rate), not closed");
  if (cv.users > 0 && sp.enabled() && sp.fraction < 1)
    throw SpecError("shared_prefix.fraction", "must be 1 with conversation.users (user u keeps group u mod groups)");
  if (!(std::isfinite(cv.think_time_s) && cv.think_time_s >= 0))
    throw SpecError("conversation.think_time_s", "must be a finite number of seconds >= 0");
}
}  // namespace

std::vector<SpecError> workload_problems(const WorkloadSpec& w) {
  // Each section is checked on its own, so a file with several mistakes has them all named at once; within a
  // section the first is named (a later check there may assume the earlier one).
  std::vector<SpecError> r;
  const auto section = [&r](const auto& check) {
    try {
      check();
      return true;
    } catch (const SpecError& e) {
      r.push_back(e);
      return false;
    }
  };
  section([&] { validate_arrival(w.arrival); });
  const bool prompt_ok = section([&] { validate(w.prompt, "prompt_tokens"); });
  section([&] { validate(w.output, "output_tokens"); });
  section([&] { validate_shared_prefix(w, prompt_ok); });
  section([&] { validate_conversation(w); });
  section([&] {
    if (w.slo.ttft_s) finite_positive(*w.slo.ttft_s, "slo.ttft_s", "seconds");
  });
  section([&] {
    if (w.slo.tpot_s) finite_positive(*w.slo.tpot_s, "slo.tpot_s", "seconds");
  });
  return r;
}

void validate(const WorkloadSpec& w) {
  const auto problems = workload_problems(w);
  if (!problems.empty()) throw problems.front();
}

}  // namespace kvcap
