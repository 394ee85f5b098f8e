#pragma once
// WorkloadSpec: the traffic a deployment serves, as a value (no I/O, no sampling). The YAML reader
// (`kind: workload`) is profiles::parse_workload; the simulator samples from it (simulator/workload.hpp);
// `kvcap size` reads its means. Times in seconds, lengths in tokens.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvcap/planner/checked.hpp"

namespace kvcap {

/// A distribution of token counts (prompt or output lengths). Samples are integers >= 1.
struct LengthDistribution {
  enum class Kind : std::uint8_t {
    fixed,      ///< always `tokens`
    uniform,    ///< integers in [min_tokens, max_tokens], each equally likely
    lognormal,  ///< round(exp(N(mu, sigma^2))) with mu = ln(mean_tokens) - sigma^2/2, clamped to [min, max]
    empirical,  ///< `values[i]` with probability weights[i] / sum(weights) (equal weights when empty)
  };
  Kind kind = Kind::fixed;
  i64 tokens = 0;              ///< fixed
  i64 min_tokens = 1;          ///< uniform: lower bound; lognormal: clamp (>= 1)
  i64 max_tokens = 0;          ///< uniform: upper bound; lognormal: clamp (0: no upper clamp)
  double lognormal_mean_tokens = 0;  ///< lognormal: mean of the unclamped distribution
  double sigma = 0;            ///< lognormal: standard deviation of ln(length)
  std::vector<i64> values;     ///< empirical
  std::vector<double> weights; ///< empirical (empty: equal)

  /// Expected length in tokens. Exact for fixed, uniform and empirical; for lognormal the mean of the
  /// clamped continuous distribution, E[min(max(X, a), b)] in closed form (rounding to integers ignored).
  double mean_tokens() const;
  /// The largest length a sample can take (lognormal without max_tokens: 0, unbounded).
  i64 max_possible_tokens() const;
  /// Whether every sample has the same length (fixed; uniform of one value; empirical of one value; lognormal without
  /// spread or clamped to one value).
  bool is_constant() const;

  static LengthDistribution fixed_tokens(i64 n);
  static LengthDistribution uniform_tokens(i64 lo, i64 hi);
  static LengthDistribution lognormal_tokens(double mean, double sigma, i64 lo = 1, i64 hi = 0);
  static LengthDistribution empirical_tokens(std::vector<i64> values, std::vector<double> weights = {});
};
std::string_view to_string(LengthDistribution::Kind k);  ///< "fixed" | "uniform" | "lognormal" | "empirical"

/// A step of the arrival rate (load tests, inference-perf's stages): `rate_per_s` for `duration_s` seconds.
struct RatePhase {
  double rate_per_s = 0;
  double duration_s = 0;
};

/// Request arrivals: a renewal process with mean rate `rate_per_s`, or a closed loop of clients.
struct ArrivalProcess {
  enum class Kind : std::uint8_t {
    poisson,     ///< exponential gaps, coefficient of variation 1
    gamma,       ///< gamma gaps with coefficient of variation `cv` (> 1: burstier than Poisson)
    fixed_rate,  ///< constant gaps 1 / rate
    closed,      ///< `concurrency` clients, each sending its next request when its last finishes (+ think time)
  };
  Kind kind = Kind::poisson;
  double rate_per_s = 0;  ///< mean arrivals per second (with phases: the busiest phase's; closed: +inf)
  double cv = 1;          ///< gamma: std / mean of the gaps (shape = 1 / cv^2)
  /// Non-empty: the rate steps through these phases in order and arrivals end with the last; the gaps are the
  /// process's unit-rate gaps in operational time (the integral of the rate), so a Poisson process stays one.
  std::vector<RatePhase> phases;
  i64 concurrency = 0;      ///< closed: the number of clients (vllm bench serve --max-concurrency)
  double think_time_s = 0;  ///< closed: a client's pause between an answer and its next request (mean)
  bool think_time_exponential = false;  ///< closed: think times exponential with that mean (else all equal)

  /// An open-loop renewal process at one rate.
  static ArrivalProcess renewal(Kind kind, double rate_per_s, double cv = 1) {
    ArrivalProcess a;
    a.kind = kind, a.rate_per_s = rate_per_s, a.cv = cv;
    return a;
  }
};
std::string_view to_string(ArrivalProcess::Kind k);  ///< "poisson" | "gamma" | "fixed_rate" | "closed"

/// Shared-prefix groups (system prompts, few-shot templates): a request in a group starts with the
/// group's `tokens`-token prefix, which counts inside its prompt length (a prompt shorter than the
/// prefix shares only its own length). With prefix caching those blocks are held once per replica.
struct SharedPrefixGroups {
  i64 num_groups = 0;     ///< 0: no shared prefixes
  i64 tokens = 0;         ///< prefix length per group
  double fraction = 1.0;  ///< share of requests that belong to some group (chosen uniformly among groups)
  bool enabled() const { return num_groups > 0 && tokens > 0 && fraction > 0; }
};

/// Multi-turn conversations (chat with history). Turn 1 of a conversation sends a prompt drawn from prompt_tokens
/// (shared prefix included, as a single-turn request); with history `accumulate`, turn k+1 sends turn k's prompt and
/// answer followed by a new user message of prompt_tokens - shared-prefix tokens (at least 1), so the history is
/// found in the prefix cache while its blocks are still cached; with `repeat` every turn sends turn 1's prompt again.
/// Who sends turns:
///   users == 0  each arrival starts a conversation of `turns` turns (a rate counts conversations per second); turn
///               k+1 is sent when answer k has finished plus the think time;
///   users > 0   inference-perf's `enable_multi_turn_chat` sessions (inference_perf/apis/user_session.py): arrivals
///               are turns, dealt round-robin to `users` persistent conversations; a user's turn waits until its
///               previous answer has finished (plus the think time). A user keeps its shared-prefix group.
struct ConversationSpec {
  enum class History : std::uint8_t {
    accumulate,  ///< every earlier prompt and answer, then the new user message
    repeat,      ///< turn 1's prompt again (what inference-perf's multi-turn chat sends, as measured: constant input)
  };
  LengthDistribution turns = LengthDistribution::fixed_tokens(1);  ///< turns per conversation (users == 0)
  i64 users = 0;
  double think_time_s = 0;              ///< pause between an answer and the next turn (mean)
  bool think_time_exponential = false;  ///< think times exponential with that mean (else all equal)
  History history = History::accumulate;
  bool enabled() const { return users > 0 || turns.kind != LengthDistribution::Kind::fixed || turns.tokens > 1; }
};
std::string_view to_string(ConversationSpec::History h);  ///< "accumulate" | "repeat"

/// Optional latency targets for goodput (a request counts when it meets every target given).
struct LatencyTargets {
  std::optional<double> ttft_s;  ///< time to first token
  std::optional<double> tpot_s;  ///< mean time per output token after the first
};

struct WorkloadSpec {
  std::string name;
  std::string description;
  ArrivalProcess arrival;
  LengthDistribution prompt;  ///< prompt tokens per request (shared prefix included)
  LengthDistribution output;  ///< output tokens per request
  SharedPrefixGroups shared_prefix;
  ConversationSpec conversation;  ///< single-turn requests unless enabled()
  LatencyTargets slo;
};

/// Throws SpecError naming the field (arrival.rate_per_s, prompt_tokens.max, ...) when impossible.
/// Field paths match the YAML keys of profiles::parse_workload.
void validate(const WorkloadSpec& w);
/// Every section's first problem (arrival, prompt_tokens, output_tokens, shared_prefix, conversation, slo), in
/// that order; empty when valid. validate() throws the first.
std::vector<SpecError> workload_problems(const WorkloadSpec& w);
void validate(const LengthDistribution& d, const std::string& field);

}  // namespace kvcap
