#include "kvcap/simulator/workload.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kvcap/planner/error.hpp"

namespace kvcap::sim {

LengthSampler::LengthSampler(const LengthDistribution& d) : d_(d) {
  validate(d, "length");
  if (d.kind == LengthDistribution::Kind::lognormal) mu_ = std::log(d.lognormal_mean_tokens) - 0.5 * d.sigma * d.sigma;
  if (d.kind == LengthDistribution::Kind::empirical) {
    double sum = 0;
    for (std::size_t i = 0; i < d.values.size(); ++i) {
      sum += d.weights.empty() ? 1.0 : d.weights[i];
      cumulative_.push_back(sum);
    }
  }
}

i64 LengthSampler::sample(Rng& rng) const {
  switch (d_.kind) {
    case LengthDistribution::Kind::fixed: return d_.tokens;
    case LengthDistribution::Kind::uniform: return rng.uniform_int(d_.min_tokens, d_.max_tokens);
    case LengthDistribution::Kind::lognormal: {
      const double x = std::exp(mu_ + d_.sigma * rng.normal());
      const double hi = d_.max_tokens > 0 ? static_cast<double>(d_.max_tokens) : 1e9;
      return static_cast<i64>(std::llround(std::clamp(x, static_cast<double>(std::max<i64>(1, d_.min_tokens)), hi)));
    }
    case LengthDistribution::Kind::empirical: {
      const double u = rng.uniform01() * cumulative_.back();
      const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
      const auto i = std::min<std::size_t>(static_cast<std::size_t>(it - cumulative_.begin()), cumulative_.size() - 1);
      return d_.values[i];
    }
  }
  return 1;
}

ArrivalSampler::ArrivalSampler(const ArrivalProcess& a) : a_(a) {
  // +inf: every request at once (offline, as `vllm bench throughput` and `vllm bench serve --request-rate inf`).
  if (!(a.rate_per_s > 0)) throw SpecError("arrival.rate_per_s", "must be > 0 (inf: all at once)");
  if (a.kind == ArrivalProcess::Kind::gamma) {
    // Gaps with mean 1/rate and coefficient of variation cv: shape k = 1/cv^2, scale = 1/(rate k).
    shape_ = 1.0 / (a.cv * a.cv);
    scale_ = 1.0 / (a.rate_per_s * shape_);
  }
}

double ArrivalSampler::gap_s(Rng& rng) const {
  if (std::isinf(a_.rate_per_s)) return 0;
  switch (a_.kind) {
    case ArrivalProcess::Kind::poisson: return rng.exponential(a_.rate_per_s);
    case ArrivalProcess::Kind::gamma: return rng.gamma(shape_, scale_);
    case ArrivalProcess::Kind::fixed_rate: return 1.0 / a_.rate_per_s;
    case ArrivalProcess::Kind::closed: return 0;  // all at once; the closed loop throttles them
  }
  return 0;
}

namespace {
enum Stream : std::uint64_t { kArrivals = 0, kPrompt = 1, kOutput = 2, kPrefix = 3, kTurns = 4, kConversation = 5 };

class SyntheticSource final : public RequestSource {
 public:
  SyntheticSource(const WorkloadSpec& w, std::uint64_t seed, const SourceLimits& l)
      : w_(w),
        limits_(l),
        arrivals_(unit_rate_if_phased(w.arrival)),
        prompt_(w.prompt),
        output_(w.output),
        turns_(w.conversation.turns),
        rng_arrival_(stream_seed(seed, kArrivals)),
        rng_prompt_(stream_seed(seed, kPrompt)),
        rng_output_(stream_seed(seed, kOutput)),
        rng_prefix_(stream_seed(seed, kPrefix)),
        rng_turns_(stream_seed(seed, kTurns)),
        conversation_seed_(stream_seed(seed, kConversation)) {
    WorkloadSpec checked = w;
    if (std::isinf(w.arrival.rate_per_s)) checked.arrival.rate_per_s = 1;  // offline: the rest must still be valid
    validate(checked);
    if (!l.num_requests && !l.duration_s && w.arrival.phases.empty())
      throw std::invalid_argument("a synthetic workload needs a limit: a number of requests or a duration (or rate phases)");
    if (std::isinf(w.arrival.rate_per_s) && !l.num_requests)
      throw std::invalid_argument("requests all at once (rate inf) need a number of requests: a duration never ends them");
    double end = 0;
    for (const auto& ph : w.arrival.phases) phase_end_.push_back(end += ph.duration_s);
    if (w.conversation.users > 0) {
      user_turns_.assign(static_cast<std::size_t>(w.conversation.users), 0);
      user_prompt_.assign(static_cast<std::size_t>(w.conversation.users), 0);
    }
  }
  /// With phases the sampler draws gaps of the unit-rate process: operational time, mapped to seconds below.
  static ArrivalProcess unit_rate_if_phased(ArrivalProcess a) {
    if (!a.phases.empty()) a.rate_per_s = 1;
    return a;
  }
  /// Whether `x` lies before `end`, an arrival on the end (within 1e-12 of it, the rounding of rate x duration or of
  /// n / rate: 2.2 x 100 is 220.00000000000003) being past it: phases and durations are [start, end).
  static bool before_end(double x, double end) { return x < end - 1e-12 * std::max(1.0, std::fabs(end)); }
  /// t_ for `op` units of operational time (the unit-rate process's clock, from 0) through the rate phases; false
  /// past the last phase. Phases are visited in order.
  bool place_in_phases(double op) {
    const auto& ph = w_.arrival.phases;
    while (phase_ < ph.size()) {
      const double op_end = phase_op_start_ + ph[phase_].rate_per_s * ph[phase_].duration_s;
      if (before_end(op, op_end)) {
        t_ = (phase_ == 0 ? 0.0 : phase_end_[phase_ - 1]) + (op - phase_op_start_) / ph[phase_].rate_per_s;
        return true;
      }
      phase_op_start_ = op_end;
      ++phase_;
    }
    return false;
  }
  std::optional<RequestSpec> next() override {
    if (limits_.num_requests && produced_ >= *limits_.num_requests) return std::nullopt;
    if (arrived_ == 0 && !w_.arrival.phases.empty()) {
      // The first arrival at operational time 0: the start of the first phase with a rate (idle ones before it).
      if (!place_in_phases(op_)) return std::nullopt;
    } else if (arrived_ > 0) {
      const double gap = arrivals_.gap_s(rng_arrival_);
      // A fixed rate's n-th arrival is at n / rate (with phases n units of the unit-rate clock), not a sum of n
      // rounded gaps (5/s over 2 s: 10 arrivals, not 11).
      const double rate = w_.arrival.phases.empty() ? w_.arrival.rate_per_s : 1.0;
      op_ = w_.arrival.kind == ArrivalProcess::Kind::fixed_rate ? static_cast<double>(arrived_) / rate : op_ + gap;
      if (w_.arrival.phases.empty())
        t_ = op_;
      else if (!place_in_phases(op_))
        return std::nullopt;
    }
    if (limits_.duration_s && !before_end(t_, *limits_.duration_s)) return std::nullopt;
    RequestSpec r;
    r.arrival_s = t_;
    r.prompt_tokens = prompt_.sample(rng_prompt_);
    r.output_tokens = output_.sample(rng_output_);
    const auto& sp = w_.shared_prefix;
    if (w_.conversation.users > 0) {
      deal_to_user(r);
    } else if (sp.enabled()) {
      // Always two draws, so the stream stays aligned whatever the outcome.
      const double u = rng_prefix_.uniform01();
      const i64 g = rng_prefix_.uniform_int(0, sp.num_groups - 1);
      if (u < sp.fraction) {
        r.prefix_group = static_cast<std::int32_t>(g);
        r.prefix_tokens = std::min(sp.tokens, r.prompt_tokens);
      }
    }
    if (w_.conversation.enabled() && w_.conversation.users == 0) {
      r.conversation = static_cast<std::int64_t>(conversations_++);
      r.turns = static_cast<std::uint32_t>(std::min<i64>(turns_.sample(rng_turns_), UINT32_MAX));
      r.prompt_repeats = w_.conversation.history == ConversationSpec::History::repeat;
    }
    ++produced_;
    ++arrived_;
    return r;
  }
  std::optional<std::uint64_t> size_hint() const override { return limits_.num_requests; }

  std::optional<RequestSpec> next_turn(const RequestSpec& done) override {
    if (done.conversation < 0 || w_.conversation.users > 0) return std::nullopt;
    if (limits_.num_requests && produced_ >= *limits_.num_requests) return std::nullopt;
    if (done.turns != 0 && done.turn + 1 >= done.turns) return std::nullopt;
    // Each turn's draws from its own stream (conversation, turn): the same whatever order turns finish in.
    Rng rng(stream_seed(stream_seed(conversation_seed_, static_cast<std::uint64_t>(done.conversation)), done.turn + 1));
    RequestSpec r = done;
    ++r.turn;
    const i64 message = prompt_.sample(rng);
    r.output_tokens = output_.sample(rng);
    if (w_.conversation.history == ConversationSpec::History::accumulate) {
      r.follows_history = true;
      r.prompt_tokens = std::max<i64>(1, message - (done.prefix_group >= 0 ? done.prefix_tokens : 0));
    }
    r.think_time_s = think_time(rng);
    ++produced_;
    return r;
  }

 private:
  /// inference-perf's users: request i is user i mod users's next turn; a user keeps its shared-prefix group (user u
  /// in group u mod groups) and, repeating, its first prompt; accumulating, a later turn's prompt is the new message.
  void deal_to_user(RequestSpec& r) {
    const auto& cv = w_.conversation;
    const auto u = static_cast<std::size_t>(produced_ % static_cast<std::uint64_t>(cv.users));
    r.conversation = static_cast<std::int64_t>(u);
    r.turn = user_turns_[u]++;
    r.turns = 0;
    const auto& sp = w_.shared_prefix;
    if (sp.enabled()) {
      r.prefix_group = static_cast<std::int32_t>(static_cast<i64>(u) % sp.num_groups);
      r.prefix_tokens = sp.tokens;
    }
    if (r.turn == 0) user_prompt_[u] = r.prompt_tokens;
    // The user's prefix: as much of the group's as its first prompt held (every later turn starts with that prompt).
    r.prefix_tokens = std::min(r.prefix_tokens, user_prompt_[u]);
    if (cv.history == ConversationSpec::History::repeat) {
      r.prompt_tokens = user_prompt_[u];
      r.prompt_repeats = true;
    } else if (r.turn > 0) {
      r.follows_history = true;
      r.prompt_tokens = std::max<i64>(1, r.prompt_tokens - r.prefix_tokens);
    }
    if (r.turn > 0) r.think_time_s = think_time(rng_turns_);
  }
  double think_time(Rng& rng) const {
    const auto& cv = w_.conversation;
    return cv.think_time_exponential && cv.think_time_s > 0 ? rng.exponential(1.0 / cv.think_time_s) : cv.think_time_s;
  }

  WorkloadSpec w_;
  SourceLimits limits_;
  ArrivalSampler arrivals_;
  LengthSampler prompt_, output_, turns_;
  Rng rng_arrival_, rng_prompt_, rng_output_, rng_prefix_, rng_turns_;
  std::uint64_t conversation_seed_;
  std::uint64_t conversations_ = 0;        ///< conversations started (users == 0)
  std::vector<std::uint32_t> user_turns_;  ///< users: turns dealt to each
  std::vector<i64> user_prompt_;           ///< users: each user's first prompt
  double t_ = 0;
  double op_ = 0;                  ///< the arrivals' clock: seconds, or with phases the unit-rate process's time
  std::uint64_t produced_ = 0;     ///< requests made: arrivals and later turns of conversations
  std::uint64_t arrived_ = 0;      ///< arrivals made (next())
  std::vector<double> phase_end_;  ///< cumulative end of each rate phase (s)
  std::size_t phase_ = 0;          ///< the phase t_ is in
  double phase_op_start_ = 0;      ///< operational time at the start of phase_
};

class ListSource final : public RequestSource {
 public:
  ListSource(std::vector<RequestSpec> r, const SourceLimits& l) : r_(std::move(r)), limits_(l) {
    std::size_t n = r_.size();
    if (l.num_requests) n = static_cast<std::size_t>(std::min<std::uint64_t>(n, *l.num_requests));
    if (l.duration_s)
      n = static_cast<std::size_t>(
          std::lower_bound(r_.begin(), r_.begin() + static_cast<std::ptrdiff_t>(n), *l.duration_s,
                           [](const RequestSpec& a, double t) { return a.arrival_s < t; }) -
          r_.begin());
    r_.resize(n);
  }
  std::optional<RequestSpec> next() override {
    if (i_ >= r_.size()) return std::nullopt;
    return r_[i_++];
  }
  std::optional<std::uint64_t> size_hint() const override { return r_.size(); }

 private:
  std::vector<RequestSpec> r_;
  SourceLimits limits_;
  std::size_t i_ = 0;
};
}  // namespace

std::unique_ptr<RequestSource> synthetic_source(const WorkloadSpec& w, std::uint64_t seed, const SourceLimits& limits) {
  return std::make_unique<SyntheticSource>(w, seed, limits);
}

std::unique_ptr<RequestSource> list_source(std::vector<RequestSpec> requests, const SourceLimits& limits) {
  for (std::size_t i = 1; i < requests.size(); ++i)
    if (requests[i].arrival_s < requests[i - 1].arrival_s)
      throw std::invalid_argument("list_source: arrivals must be sorted by time");
  return std::make_unique<ListSource>(std::move(requests), limits);
}

}  // namespace kvcap::sim
