#include "kvcap/planner/sizing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>

#include "kvcap/planner/text.hpp"
#include "sizing_internal.hpp"

namespace kvcap {

std::string ep_text(const SizingCandidate& c) {
  return c.ep_group_replicas > 0
             ? " EP" + std::to_string(c.expert_parallel_size()) + " (DP " + std::to_string(c.ep_group_replicas) + ")"
             : "";
}

double kv_burst_requests(const SizingCandidate& c, bool open_loop) {
  if (!open_loop || c.status != CandidateStatus::ok || c.max_batch_memory <= 0 || !c.kv_limited) return 0;
  const double mean = static_cast<double>(c.batch), burst = mean + 3 * std::sqrt(mean);
  return burst > static_cast<double>(c.max_batch_memory) ? burst : 0;
}

namespace sizing_detail {
std::string dur(double s) {
  if (!std::isfinite(s)) return "unbounded";
  if (s >= 1) return fixed(s, 2) + " s";
  if (s >= 1e-3) return fixed(s * 1e3, 1) + " ms";
  return fixed(s * 1e3, 3) + " ms";
}

std::vector<i64> powers_of_two(i64 max) {
  std::vector<i64> r;
  for (i64 v = 1; v <= max; v *= 2) r.push_back(v);
  return r;
}

Deployment candidate_deployment(const ModelSpec& m, const SizingWorkload& w, const SizingSpace& s, const Key& k) {
  Deployment d = s.base;
  // One replica; with expert parallelism one EP group (its replicas share the routed experts).
  d.enable_expert_parallel = k.ep_group_replicas > 0;
  d.num_gpus = d.enable_expert_parallel ? k.ep_group_replicas * k.tp * k.pp : 0;
  // The expert-parallel options apply where there is an exchange across replicas (vLLM's rules, resolve()).
  if (!d.enable_expert_parallel || k.ep_group_replicas < 2)
    d.all2all_backend = Deployment::All2All::allgather_reducescatter;
  if (!d.enable_expert_parallel) d.enable_eplb = false, d.num_redundant_experts = 0;
  d.tensor_parallel_size = k.tp;
  d.pipeline_parallel_size = k.pp;
  // An unquantised checkpoint served as it is: no --quantization (its weights take --dtype, as resolve() does).
  d.quantization = m.quantization == DType::auto_ && k.wq == serving_dtype(m, s.base.dtype) ? DType::auto_ : k.wq;
  d.kv_cache_dtype = k.kv;
  // --kv-quant-group-size is the group of the KIVI formats (int4, int2): the other candidates' formats have none.
  if (!kv_group_size_settable(k.kv)) d.kv_quant_group_size = 0;
  d.max_model_len = sizing_max_model_len(w, d.max_model_len);
  return d;
}

void fill_throughput_and_cost(SizingCandidate& r, const SizingWorkload& w, double requests_per_s,
                              double cost_per_hour_usd) {
  r.output_tokens_per_s = requests_per_s * w.output_tokens;
  r.input_tokens_per_s = requests_per_s * w.prompt_tokens;
  r.tokens_per_s_per_gpu = r.output_tokens_per_s / dbl(r.gpus);
  r.tokens_per_s_per_user = 1 / r.tpot_s;
  r.cost_per_hour_usd = cost_per_hour_usd;
  r.cost_per_million_output_tokens_usd = r.cost_per_hour_usd / (r.output_tokens_per_s * 3600.0 / 1e6);
  r.cost_per_million_input_tokens_usd = r.cost_per_hour_usd / (r.input_tokens_per_s * 3600.0 / 1e6);
  r.cost_per_million_tokens_usd = r.cost_per_hour_usd / ((r.input_tokens_per_s + r.output_tokens_per_s) * 3600.0 / 1e6);
}
}  // namespace sizing_detail

namespace {
using sizing_detail::dbl;
using sizing_detail::dur;
using sizing_detail::Key;
using sizing_detail::kInf;
using sizing_detail::powers_of_two;

void positive_finite(double v, const char* field, const char* what) {
  if (!std::isfinite(v) || !(v > 0))
    throw SpecError(field, std::string("must be ") + what + " (got " + fixed(v, 6) + ")");
}

/// Squared coefficient of variation of a length distribution (0 for fixed lengths).
double scv(const LengthDistribution& d) {
  using K = LengthDistribution::Kind;
  switch (d.kind) {
    case K::fixed:
      return 0;
    case K::uniform: {
      const double n = dbl(d.max_tokens - d.min_tokens + 1), mean = (dbl(d.min_tokens) + dbl(d.max_tokens)) / 2;
      return mean > 0 ? (n * n - 1) / 12 / (mean * mean) : 0;
    }
    case K::lognormal:
      return std::expm1(d.sigma * d.sigma);  // unclamped: clamping only narrows it
    case K::empirical: {
      double sw = 0, m1 = 0, m2 = 0;
      for (std::size_t i = 0; i < d.values.size(); ++i) {
        const double w = d.weights.empty() ? 1.0 : d.weights[i], x = dbl(d.values[i]);
        sw += w, m1 += w * x, m2 += w * x * x;
      }
      if (!(sw > 0) || !(m1 > 0)) return 0;
      m1 /= sw, m2 /= sw;
      return std::max(0.0, m2 / (m1 * m1) - 1);
    }
  }
  return 0;
}

bool meets(const OperatingPoint& op, const SizingTargets& t, bool check_tpot) {
  return op.ttft_s <= t.ttft_s && (!check_tpot || op.tpot_s <= t.tpot_s);
}

}  // namespace

std::string_view to_string(CandidateStatus s) {
  switch (s) {
    case CandidateStatus::ok:
      return "ok";
    case CandidateStatus::invalid:
      return "invalid";
    case CandidateStatus::does_not_fit:
      return "does not fit";
    case CandidateStatus::tpot_too_high:
      return "TPOT too high";
    case CandidateStatus::ttft_too_high:
      return "TTFT too high";
    case CandidateStatus::too_many_gpus:
      return "too many GPUs";
  }
  return "?";
}

namespace {
/// E[T(T - 1)] of a turn count: exact for fixed, uniform and empirical; for lognormal the unclamped second moment
/// mean^2 exp(sigma^2) (clamping can only lower it: conservative).
double turn_pairs(const LengthDistribution& d) {
  switch (d.kind) {
    case LengthDistribution::Kind::fixed:
      return dbl(d.tokens) * dbl(d.tokens - 1);
    case LengthDistribution::Kind::uniform: {
      const double a = dbl(d.min_tokens), b = dbl(d.max_tokens), n = b - a + 1;
      const double sum_sq = (b * (b + 1) * (2 * b + 1) - (a - 1) * a * (2 * a - 1)) / 6;
      return sum_sq / n - (a + b) / 2;
    }
    case LengthDistribution::Kind::lognormal: {
      const double m = d.lognormal_mean_tokens;
      return m * m * std::exp(d.sigma * d.sigma) - d.mean_tokens();
    }
    case LengthDistribution::Kind::empirical: {
      double sum = 0, total = 0;
      for (std::size_t i = 0; i < d.values.size(); ++i) {
        const double w = d.weights.empty() ? 1.0 : d.weights[i];
        sum += w * dbl(d.values[i]) * dbl(d.values[i] - 1);
        total += w;
      }
      return sum / total;
    }
  }
  return 0;
}

/// Conversations as the queueing formulas see them: a started conversation brings E[T] requests (its turns). With
/// history `accumulate` the k-th turn's prompt carries k - 1 earlier turns of new tokens, so over all requests the
/// mean prompt grows by E[T(T - 1)] / (2 E[T]) turns (longer conversations contribute more requests); the prefix
/// cache's savings on prefill are not counted (conservative). With `repeat` the prompt stays. Users whose history
/// grows for as long as the arrivals last have no steady state to size; repeating users are requests as they come.
void size_conversations(const WorkloadSpec& spec, SizingWorkload& w) {
  const auto& cv = spec.conversation;
  if (!cv.enabled()) return;
  const bool accumulate = cv.history == ConversationSpec::History::accumulate;
  if (cv.users > 0) {
    if (accumulate)
      throw SpecError("conversation.history",
                      "users whose history accumulates grow without end: kvcap size has no steady state to size; "
                      "run kvcap simulate --workload, or use history: repeat");
    return;
  }
  const double turns = cv.turns.mean_tokens();
  const double conversations_per_s = w.arrival_rate_per_s;
  w.arrival_rate_per_s *= turns;
  const auto& sp = spec.shared_prefix;
  const double prefix = sp.enabled() ? static_cast<double>(sp.tokens) * sp.fraction : 0;
  const double per_turn = w.output_tokens + std::max(1.0, w.prompt_tokens - prefix);
  const double history_turns = accumulate ? turn_pairs(cv.turns) / (2 * turns) : 0;
  w.derivation = fixed(conversations_per_s, 2) + " conversations/s x " + fixed(turns, 1) + " turns";
  if (accumulate)
    w.derivation += "; the mean prompt carries " + fixed(history_turns, 2) + " turns of history of " +
                    fixed(per_turn, 0) + " tokens (prefix-cache savings on prefill not counted)";
  w.prompt_tokens += history_turns * per_turn;
  if (!accumulate) return;
  const i64 tmax = cv.turns.max_possible_tokens();
  const i64 pmax = spec.prompt.max_possible_tokens(), omax = spec.output.max_possible_tokens();
  w.max_context_tokens =
      tmax > 0 && pmax > 0 && omax > 0 ? mul(tmax, add(pmax, omax, "max context tokens"), "max context tokens") : -1;
}
}  // namespace

std::optional<i64> sizing_max_model_len(const SizingWorkload& w, std::optional<i64> given) {
  if (given) return given;
  if (w.max_context_tokens < 0) return std::nullopt;
  return w.max_context_tokens > 0 ? w.max_context_tokens
                                  : static_cast<i64>(std::ceil(w.prompt_tokens + w.output_tokens));
}

SizingWorkload sizing_workload(const WorkloadSpec& spec) {
  validate(spec);
  SizingWorkload w;
  w.prompt_tokens = spec.prompt.mean_tokens();
  w.output_tokens = spec.output.mean_tokens();
  const i64 pmax = spec.prompt.max_possible_tokens(), omax = spec.output.max_possible_tokens();
  // An unbounded (unclamped lognormal) length leaves max_model_len to the model's own default.
  w.max_context_tokens = pmax > 0 && omax > 0 ? add(pmax, omax, "max context tokens") : -1;
  using A = ArrivalProcess::Kind;
  if (spec.arrival.kind == A::closed) {
    // A closed loop of N clients: sized as N concurrent users (the think time is not modelled by the queueing
    // formulas; `kvcap simulate` runs it).
    w.concurrent_users = spec.arrival.concurrency;
    w.prompt_scv = scv(spec.prompt);
    w.output_scv = scv(spec.output);
    w.random_think_time = spec.arrival.think_time_s > 0 && spec.arrival.think_time_exponential;
    return w;
  }
  // Rate phases: sized for the busiest phase (rate_per_s holds its rate).
  w.arrival_rate_per_s = spec.arrival.rate_per_s;
  size_conversations(spec, w);
  w.arrival_scv = spec.arrival.kind == A::poisson      ? 1.0
                  : spec.arrival.kind == A::fixed_rate ? 0.0
                                                       : spec.arrival.cv * spec.arrival.cv;
  w.prompt_scv = scv(spec.prompt);
  w.output_scv = scv(spec.output);
  return w;
}

void validate(const SizingWorkload& w) {
  if (!std::isfinite(w.prompt_tokens) || w.prompt_tokens < 1)
    throw SpecError("prompt_tokens", "must be a mean of at least 1 token (got " + fixed(w.prompt_tokens, 2) + ")");
  if (!std::isfinite(w.output_tokens) || w.output_tokens < 1)
    throw SpecError("output_tokens", "must be a mean of at least 1 token (got " + fixed(w.output_tokens, 2) + ")");
  const bool open = w.arrival_rate_per_s != 0, closed = w.concurrent_users != 0;
  if (open == closed)
    throw SpecError("workload",
                    "give exactly one of an arrival rate (open loop) or a number of concurrent users (closed loop)");
  if (open)
    positive_finite(w.arrival_rate_per_s, "arrival_rate_per_s", "a positive, finite number of requests per second");
  if (closed && w.concurrent_users < 1)
    throw SpecError("concurrent_users", "must be >= 1 (got " + std::to_string(w.concurrent_users) + ")");
  if (!std::isfinite(w.arrival_scv) || w.arrival_scv < 0)
    throw SpecError("arrival_scv", "must be a finite number >= 0");
  if (!std::isfinite(w.prompt_scv) || w.prompt_scv < 0) throw SpecError("prompt_scv", "must be a finite number >= 0");
  if (!std::isfinite(w.output_scv) || w.output_scv < 0) throw SpecError("output_scv", "must be a finite number >= 0");
}

void validate(const SizingTargets& t) {
  positive_finite(t.ttft_s, "ttft_target_s", "a positive, finite number of seconds");
  positive_finite(t.tpot_s, "tpot_target_s", "a positive, finite number of seconds");
  if (!(t.ttft_percentile > 0 && t.ttft_percentile < 1))
    throw SpecError("ttft_percentile", "must be in (0, 1), e.g. 0.9 for p90 (got " + fixed(t.ttft_percentile, 4) + ")");
}

// Kingman (1961), "The single server queue in heavy traffic": E[W] ~ rho/(1-rho) (ca2+cs2)/2 E[S];
// with ca2 = 1 it is the Pollaczek-Khinchine mean of M/G/1 (Kleinrock, Queueing Systems I, eq. 5.105).
double kingman_mean_wait_s(double rho, double mean_service_s, double arrival_scv, double service_scv) {
  if (!(rho > 0)) return 0;
  if (rho >= 1) return kInf;
  return rho / (1 - rho) * (arrival_scv + service_scv) / 2 * mean_service_s;
}

// P(W > 0) = rho (M/G/1, PASTA) and an exponential tail with the mean above: P(W > t) = rho e^{-t rho / E[W]}.
double wait_percentile_s(double rho, double mean_wait_s, double p) {
  if (!(rho > 0) || !(mean_wait_s > 0)) return 0;
  if (!std::isfinite(mean_wait_s)) return kInf;
  if (rho <= 1 - p) return 0;
  return mean_wait_s / rho * std::log(rho / (1 - p));
}

// ---- ReplicaModel --------------------------------------------------------------------------------

ReplicaModel::ReplicaModel(SpeedContext c, const SizingWorkload& w, double ttft_percentile)
    : c_(std::move(c)), w_(w), p_(ttft_percentile) {
  mean_context_ = std::max<i64>(1, std::llround(w.prompt_tokens + w.output_tokens / 2));
  // What the replica decodes at once: sliding windows hold their window only (running_concurrency_at); vLLM's logged
  // concurrency charges them a whole step's tokens each, about half the capacity for Gemma 3 and gpt-oss.
  const double conc = running_concurrency_at(c_.plan, mean_context_, mean_context_);
  const i64 seqs = c_.plan.dep.max_num_seqs;
  max_batch_ = conc >= dbl(seqs) ? seqs : static_cast<i64>(std::floor(conc));
  kv_limited_ = conc < dbl(seqs);
  const PrefillResult pr = prefill(c_, std::max<i64>(1, std::llround(w.prompt_tokens)));
  prefill_s_ = pr.ttft_s;
  chunks_ = static_cast<i64>(pr.chunks.size());
  // A prefill merged into running decode steps (vLLM V1 mixes them in one step) adds its compute (a MoE model's
  // routed experts' GEMMs too) and its communication; the weights are read by the decode step anyway. An engine that
  // runs prefills in steps of their own (SpeedOptions::prefill_first: SGLang, vLLM V0) stops the decodes for the whole
  // prefill, its weight reads and overheads too, on every stage: a prompt's step is one micro-batch, which passes the
  // stages in turn. Merged, per stage: the stages work in parallel.
  const double alone_s = pr.ttft_s - c_.options.request_overhead_s;
  prefill_busy_s_ = c_.options.prefill_first ? alone_s
                                             : (pr.total.compute_s + (pr.total.experts_s - pr.total.experts_read_s) +
                                                pr.total.communication_s + pr.pipeline_p2p_s) /
                                                   dbl(c_.plan.dep.d.pipeline_parallel_size);
  tpot_.assign(static_cast<std::size_t>(std::max<i64>(max_batch_, 1)) + 1, 0.0);
  bound_.assign(tpot_.size(), Bound::memory);
}

double ReplicaModel::decode_step_s(i64 batch) const {
  const auto i = static_cast<std::size_t>(batch);
  if (i < tpot_.size() && tpot_[i] > 0) return tpot_[i];
  const DecodeStep st = decode_step(c_, batch, mean_context_);
  if (i < tpot_.size()) tpot_[i] = st.tpot_s, bound_[i] = st.bound;
  return st.tpot_s;
}

Bound ReplicaModel::decode_bound(i64 batch) const {
  const auto i = static_cast<std::size_t>(batch);
  if (i < tpot_.size()) {
    decode_step_s(batch);
    return bound_[i];
  }
  return decode_step(c_, batch, mean_context_).bound;
}

double ReplicaModel::own_prefill_s(double step_s) const {
  // Alone: T_prefill. Merged into decode steps: each chunk rides one step, which also does the prefill's compute.
  // Either way the engine's front end adds its cost per request (planner/engine.hpp), which T_prefill holds already.
  const double front_end = c_.options.request_overhead_s;
  if (c_.options.prefill_first) return prefill_s_;  // its steps hold no decode
  return front_end + std::max(prefill_s_ - front_end,
                              prefill_busy_s_ * dbl(c_.plan.dep.d.pipeline_parallel_size) + dbl(chunks_) * step_s);
}

double ReplicaModel::rate_for_batch(i64 batch) const {
  // Little's law on the decode phase: N = rate x (O - 1) x TPOT(N) / (1 - rate C), solved for the rate.
  const double decode = std::max(0.0, w_.output_tokens - 1) * decode_step_s(batch);
  return dbl(batch) / (decode + dbl(batch) * prefill_busy_s_);
}

i64 ReplicaModel::batch_for_rate(double rate_per_s, i64 limit) const {
  if (limit < 1 || rate_for_batch(limit) < rate_per_s) return 0;
  i64 lo = 1, hi = limit;  // rate_for_batch is non-decreasing in N (throughput rises with the batch)
  while (lo < hi) {
    const i64 mid = lo + (hi - lo) / 2;
    if (rate_for_batch(mid) >= rate_per_s)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

OperatingPoint ReplicaModel::open_loop(double rate_per_s, i64 batch) const {
  OperatingPoint op;
  op.rate_per_s = rate_per_s;
  op.batch = batch;
  op.decode_step_s = decode_step_s(batch);
  op.bound = decode_bound(batch);
  op.prefill_utilization = rate_per_s * prefill_busy_s_;
  const double u = op.prefill_utilization;
  if (u >= 1) {
    op.ttft_wait_s = op.ttft_mean_s = op.ttft_s = op.tpot_s = op.e2e_s = kInf;
    return op;
  }
  const double ew = kingman_mean_wait_s(u, prefill_busy_s_, w_.arrival_scv, w_.prompt_scv);
  op.ttft_wait_s = wait_percentile_s(u, ew, p_);
  const double own = own_prefill_s(op.decode_step_s);
  // A request arriving during a decode step waits for it (mean half a step; at the percentile, all of it).
  op.ttft_mean_s = ew + op.decode_step_s / 2 + own;
  op.ttft_s = op.ttft_wait_s + op.decode_step_s + own;
  op.tpot_s = op.decode_step_s / (1 - u);
  op.e2e_s = op.ttft_mean_s + std::max(0.0, w_.output_tokens - 1) * op.tpot_s;
  return op;
}

OperatingPoint ReplicaModel::closed_loop_lockstep(i64 users) const {
  if (users < 1) throw std::logic_error("closed_loop_lockstep: no users");
  const i64 prompt = std::max<i64>(1, std::llround(w_.prompt_tokens));
  const i64 budget = c_.plan.dep.max_num_batched_tokens;
  std::vector<double> first_token_s;  // from the wave's start, in FCFS order (ascending)
  first_token_s.reserve(static_cast<std::size_t>(std::max<i64>(users, 0)));
  std::vector<StepSequence> step;
  double wave_s = 0;
  for (i64 next = 0, done = 0; next < users;) {  // `done`: tokens of prompt `next` computed in earlier steps
    step.clear();
    i64 finished = 0;
    for (i64 room = budget; room > 0 && next < users;) {
      const i64 n = std::min(prompt - done, room);
      step.push_back(StepSequence{done, n, done + n == prompt});
      room -= n;
      done += n;
      if (done == prompt) ++next, ++finished, done = 0;
    }
    wave_s += mixed_step(c_, step).step_s;
    first_token_s.insert(first_token_s.end(), static_cast<std::size_t>(finished), wave_s);
  }
  OperatingPoint op;
  op.batch = users;
  op.decode_step_s = decode_step_s(users);
  op.bound = decode_bound(users);
  const double front_end = c_.options.request_overhead_s, decodes = std::max(0.0, w_.output_tokens - 1);
  double mean_first_s = 0;
  for (const double t : first_token_s) mean_first_s += t / dbl(users);
  const double cycle_s = front_end + wave_s + decodes * op.decode_step_s;
  op.rate_per_s = dbl(users) / cycle_s;
  op.prefill_utilization = wave_s / cycle_s;
  op.ttft_mean_s = front_end + mean_first_s;
  const auto at = static_cast<std::size_t>(std::clamp<i64>(std::llround(std::ceil(p_ * dbl(users))) - 1, 0, users - 1));
  op.ttft_s = front_end + first_token_s[at];
  op.ttft_wait_s = std::max(0.0, op.ttft_s - prefill_s_);
  // Request i's decode starts with the wave's end: (wave - t_i + decodes x step) / decodes, averaged.
  op.tpot_s = decodes > 0 ? op.decode_step_s + (wave_s - mean_first_s) / decodes : op.decode_step_s;
  op.e2e_s = cycle_s;
  return op;
}

OperatingPoint ReplicaModel::closed_loop(i64 users) const {
  // Identical requests stay in lockstep on a prefill-first engine (staggered_start_of in the simulator says the same).
  if (c_.options.prefill_first && w_.prompt_scv == 0 && w_.output_scv == 0 && !w_.random_think_time)
    return closed_loop_lockstep(users);
  OperatingPoint op;
  op.batch = users;
  op.decode_step_s = decode_step_s(users);
  op.bound = decode_bound(users);
  const double n = dbl(users), c = prefill_busy_s_;
  const double d = std::max(0.0, w_.output_tokens - 1) * op.decode_step_s;
  const double own = own_prefill_s(op.decode_step_s);
  // Each user's cycle x = T0 + D / (1 - u) with u = (N / x) C: x^2 - (T0 + N C + D) x + T0 N C = 0, larger root.
  // The prefill wait (M/G/1 at the throughput N / x, an upper bound for a finite source) enters T0; iterate. A user
  // waits for at most the other N - 1 prompts: the wait is capped there, as the M/G/1 mean diverges when prefills fill
  // the GPU (short answers), which a closed loop never overloads.
  const double max_wait = std::max(0.0, n - 1) * c;
  const auto cycle_s = [&](double wait) {
    const double t0 = wait + op.decode_step_s / 2 + own;
    const double b = t0 + n * c + d;
    return (b + std::sqrt(std::max(0.0, b * b - 4 * t0 * n * c))) / 2;
  };
  double wait_mean = 0;
  for (int it = 0; it < 4; ++it)
    wait_mean = std::min(max_wait, kingman_mean_wait_s(n * c / cycle_s(wait_mean), c, 1.0, w_.prompt_scv));
  const double x = cycle_s(wait_mean);  // the cycle of the wait the outputs use
  op.rate_per_s = n / x;
  // u < 1 whenever there is a decode (D > 0); without one (one-token answers) prefills may fill the GPU, u = 1.
  const double u = op.prefill_utilization = std::min(1.0, n * c / x);
  op.ttft_wait_s = std::min(max_wait, wait_percentile_s(u, wait_mean, p_));
  op.ttft_mean_s = wait_mean + op.decode_step_s / 2 + own;
  op.ttft_s = op.ttft_wait_s + op.decode_step_s + own;
  op.tpot_s = d > 0 ? op.decode_step_s / (1 - u) : op.decode_step_s;
  // An engine that mixes prefill chunks into decode steps (vLLM V1, TensorRT-LLM) holds a decode back by at most
  // the one chunk its step carries: where prefills fill the GPU (u near 1, short answers) the time between tokens is
  // that mixed step, and the rest of the cycle is the prompt's wait for its turn (E2E = x, Little's law).
  if (!c_.options.prefill_first && d > 0) {
    const double mixed_step_s = op.decode_step_s + prefill_busy_s_ / dbl(std::max<i64>(1, chunks_));
    if (op.tpot_s > mixed_step_s) {
      op.tpot_s = mixed_step_s;
      const double later = x - std::max(0.0, w_.output_tokens - 1) * op.tpot_s - op.ttft_mean_s;
      op.ttft_mean_s += later;
      op.ttft_s += later;
      op.ttft_wait_s += later;
    }
  }
  op.e2e_s = op.ttft_mean_s + std::max(0.0, w_.output_tokens - 1) * op.tpot_s;
  return op;
}

std::optional<OperatingPoint> closed_loop_steady_state(const SpeedContext& c, i64 clients, i64 prompt_tokens,
                                                       i64 output_tokens) {
  SizingWorkload w;
  w.prompt_tokens = dbl(prompt_tokens);
  w.output_tokens = dbl(output_tokens);
  w.max_context_tokens = add(prompt_tokens, output_tokens, "max context tokens");
  w.concurrent_users = clients;
  const ReplicaModel m(c, w, 0.9);
  if (clients < 1 || clients > m.max_batch_memory()) return std::nullopt;
  return m.closed_loop(clients);
}

// ---- The search ----------------------------------------------------------------------------------

namespace {

void fill_op(SizingCandidate& r, const ReplicaModel& rm, const OperatingPoint& op) {
  r.rate_per_replica_per_s = op.rate_per_s;
  r.batch = op.batch;
  r.prefill_s = rm.prefill_s();
  r.prefill_busy_s = rm.prefill_busy_s();
  r.prefill_utilization = op.prefill_utilization;
  r.decode_step_s = op.decode_step_s;
  r.ttft_wait_s = op.ttft_wait_s;
  r.ttft_s = op.ttft_s;
  r.tpot_s = op.tpot_s;
  r.e2e_s = op.e2e_s;
  r.decode_bound = op.bound;
}

std::string does_not_fit_reason(const MemoryPlan& p, i64 max_context, i64 mean_context) {
  const StagePlan& s = p.stages[p.binding_stage];
  if (s.available_kv_bytes <= 0)
    return "weights " + gib_text(dbl(s.weights_bytes), 1) + " + activation peak " +
           gib_text(dbl(s.activation_peak_bytes), 1) + " + non-torch " + gib_text(dbl(s.non_torch_bytes), 1) +
           " per GPU exceed " + budget_text(p, s);
  if (!p.fits())
    return "KV cache of " + std::to_string(p.kv_capacity_tokens) + " tokens per replica cannot hold one request of " +
           std::to_string(max_context) + " tokens (max_model_len)";
  return "KV cache of " + std::to_string(p.kv_capacity_tokens) +
         " tokens per replica cannot hold one request at the mean context of " + std::to_string(mean_context) +
         " tokens";
}

SizingCandidate evaluate(const ModelSpec& m, const SizingWorkload& w, const SizingTargets& t, const SizingSpace& s,
                         const Key& k) {
  SizingCandidate r;
  r.gpu = k.gpu->name;
  r.tp = k.tp;
  r.pp = k.pp;
  r.weight_dtype = k.wq;
  r.kv_dtype = k.kv;
  r.ep_group_replicas = k.ep_group_replicas;
  r.gpus_per_replica = k.tp * k.pp;
  // Replicas come in whole EP groups: the replica model is one data-parallel rank of a group whose other ranks carry
  // the same load (the speed model's balanced routing), so counts round up to a multiple of the group.
  const i64 unit = std::max<i64>(1, k.ep_group_replicas);
  r.priced = k.gpu->price_per_gpu_hour_usd > 0;
  const Deployment d = sizing_detail::candidate_deployment(m, w, s, k);
  std::optional<ReplicaModel> rm;
  try {
    MemoryPlan plan = plan_memory(m, *k.gpu, d, {});
    r.kv_capacity_tokens = to_signed(plan.kv_capacity_tokens, "KV capacity tokens");
    if (plan.max_model_len_asked > 0) {  // TensorRT-LLM would serve only shorter requests than the workload's
      r.status = CandidateStatus::does_not_fit;
      r.reason = lowered_length_text(plan);
      return r;
    }
    const i64 max_len = plan.dep.max_model_len;
    rm.emplace(make_speed_context(m, *k.gpu, std::move(plan), s.speed, s.calibration), w, t.ttft_percentile);
    r.max_batch_memory = rm->max_batch_memory();
    r.kv_limited = rm->kv_limited();
    if (!rm->context().plan.fits() || rm->max_batch_memory() < 1) {
      r.status = CandidateStatus::does_not_fit;
      r.reason = does_not_fit_reason(rm->context().plan, max_len, rm->mean_context_tokens());
      return r;
    }
  } catch (const SpecError& e) {
    r.status = CandidateStatus::invalid;
    r.reason = e.what();
    return r;
  }
  const bool check_tpot = w.output_tokens > 1;
  // Unloaded: batch 1 and no queue. If this misses a target, no replica count helps.
  const OperatingPoint idle = rm->open_loop(0, 1);
  fill_op(r, *rm, idle);
  if (check_tpot && idle.tpot_s > t.tpot_s) {
    r.status = CandidateStatus::tpot_too_high;
    r.reason = "TPOT " + dur(idle.tpot_s) + " at batch 1 (context " + std::to_string(rm->mean_context_tokens()) +
               ") > target " + dur(t.tpot_s);
    return r;
  }
  if (idle.ttft_s > t.ttft_s) {
    r.status = CandidateStatus::ttft_too_high;
    r.reason = "TTFT " + dur(idle.ttft_s) + " on an idle replica (prefill " + dur(rm->prefill_s()) + ") > target " +
               dur(t.ttft_s);
    return r;
  }
  const i64 limit = rm->max_batch_memory();
  // The largest batch per replica whose load still meets the targets (TTFT and TPOT rise with N).
  auto ok_at = [&](i64 n) {
    return meets(w.open_loop() ? rm->open_loop(rm->rate_for_batch(n), n) : rm->closed_loop(n), t, check_tpot);
  };
  i64 lo = 0, hi = limit;
  while (lo < hi) {
    const i64 mid = lo + (hi - lo + 1) / 2;
    if (ok_at(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  r.max_batch_targets = lo;
  double replicas_d = 0;
  if (w.open_loop()) {
    // Capacity: rate_for_batch(N*), refined by bisection over the rates that put N* + 1 in flight.
    double cap = lo > 0 ? rm->rate_for_batch(lo) : 0;
    if (lo < limit) {
      const i64 n = lo + 1;
      double a = cap, b = rm->rate_for_batch(n);
      for (int it = 0; it < 60 && b - a > 1e-9 * b; ++it) {
        const double mid = (a + b) / 2;
        if (meets(rm->open_loop(mid, n), t, check_tpot))
          a = mid;
        else
          b = mid;
      }
      cap = a;
    }
    if (!(cap > 0)) {
      r.status = CandidateStatus::ttft_too_high;
      r.reason = "no positive arrival rate meets the TTFT target";
      return r;
    }
    r.max_rate_per_replica_per_s = cap;
    replicas_d = std::ceil(w.arrival_rate_per_s / cap / dbl(unit)) * dbl(unit);
  } else {
    if (lo < 1) {
      r.status = CandidateStatus::ttft_too_high;
      const OperatingPoint one = rm->closed_loop(1);
      r.reason =
          "one user per replica already misses a target (TTFT " + dur(one.ttft_s) + ", TPOT " + dur(one.tpot_s) + ")";
      return r;
    }
    replicas_d = std::ceil(dbl(w.concurrent_users) / dbl(lo) / dbl(unit)) * dbl(unit);
  }
  if (replicas_d * dbl(r.gpus_per_replica) > dbl(s.max_gpus)) {
    r.status = CandidateStatus::too_many_gpus;
    r.reason = "needs " + fixed(replicas_d, 0) + " replicas x " + std::to_string(r.gpus_per_replica) +
               " GPUs > max_gpus " + std::to_string(s.max_gpus);
    return r;
  }
  r.replicas = static_cast<i64>(replicas_d);
  // The operating point of the most loaded replica; one more replica if rounding left it short.
  OperatingPoint op;
  for (int extra = 0;; r.replicas += unit, ++extra) {
    if (w.open_loop()) {
      const double rate = w.arrival_rate_per_s / dbl(r.replicas);
      const i64 n = std::max<i64>(1, rm->batch_for_rate(rate, limit));
      op = rm->open_loop(rate, n);
    } else {
      const i64 users = w.concurrent_users / r.replicas + (w.concurrent_users % r.replicas != 0 ? 1 : 0);
      op = rm->closed_loop(users);
    }
    if (meets(op, t, check_tpot) || extra == 64 || mul(r.replicas + unit, r.gpus_per_replica) > s.max_gpus) break;
  }
  fill_op(r, *rm, op);
  r.gpus = mul(r.replicas, r.gpus_per_replica, "GPUs");
  if (!meets(op, t, check_tpot)) {
    r.status = CandidateStatus::too_many_gpus;
    r.reason = "the targets are not met with " + std::to_string(r.replicas) + " replicas (max_gpus " +
               std::to_string(s.max_gpus) + ")";
    return r;
  }
  r.status = CandidateStatus::ok;
  const double requests_per_s = w.open_loop() ? w.arrival_rate_per_s : dbl(w.concurrent_users) / op.e2e_s;
  sizing_detail::fill_throughput_and_cost(r, w, requests_per_s, dbl(r.gpus) * k.gpu->price_per_gpu_hour_usd);
  r.deployment = launchable_deployment(rm->context().plan);
  // With expert parallelism the command starts one EP group (replicas / unit of them run side by side).
  r.deployment->num_gpus = k.ep_group_replicas > 0 ? unit * r.gpus_per_replica : r.gpus;
  return r;
}

/// The expert-parallel layouts searched: a MoE model tries every data-parallel group size (1, 2, 4, ...) beside plain
/// TP sharding (0); --enable-expert-parallel in the base flags searches only the EP layouts; a dense model has none.
std::vector<i64> expert_parallel_options(const ModelSpec& m, const SizingSpace& s) {
  std::vector<i64> r;
  if (!m.moe.enabled() || !s.base.enable_expert_parallel) r.push_back(0);
  if (m.moe.enabled())
    for (i64 dp : sizing_detail::powers_of_two(s.max_gpus_per_replica)) r.push_back(dp);
  return r;
}

std::string diagnose(const std::vector<SizingCandidate>& c, const SizingTargets& t) {
  std::size_t n[6] = {};
  const SizingCandidate *best_tpot = nullptr, *best_ttft = nullptr;
  for (const auto& x : c) {
    ++n[static_cast<int>(x.status)];
    if (x.status == CandidateStatus::tpot_too_high && (!best_tpot || x.tpot_s < best_tpot->tpot_s)) best_tpot = &x;
    if (x.status == CandidateStatus::ttft_too_high && (!best_ttft || x.ttft_s < best_ttft->ttft_s)) best_ttft = &x;
  }
  auto who = [](const SizingCandidate& x) {
    return x.gpu + " TP" + std::to_string(x.tp) + (x.pp > 1 ? " PP" + std::to_string(x.pp) : "") + ep_text(x) + " " +
           std::string(name(x.weight_dtype)) + "/" + std::string(name(x.kv_dtype));
  };
  std::string r = "no candidate meets the targets (" + std::to_string(c.size()) + " searched)";
  auto part = [&](CandidateStatus s, const std::string& what) {
    if (n[static_cast<int>(s)]) r += "; " + std::to_string(n[static_cast<int>(s)]) + " " + what;
  };
  part(CandidateStatus::invalid, "invalid for this model");
  part(CandidateStatus::does_not_fit, "do not fit in memory");
  if (best_tpot)
    part(CandidateStatus::tpot_too_high, "miss the TPOT target even at batch 1 (fastest: " + dur(best_tpot->tpot_s) +
                                             " on " + who(*best_tpot) + ", target " + dur(t.tpot_s) + ")");
  if (best_ttft)
    part(CandidateStatus::ttft_too_high, "miss the TTFT target even unloaded (fastest: " + dur(best_ttft->ttft_s) +
                                             " on " + who(*best_ttft) + ", target " + dur(t.ttft_s) + ")");
  part(CandidateStatus::too_many_gpus, "need more GPUs than allowed");
  return r;
}
}  // namespace

SizingResult size_cluster(const ModelSpec& m, const SizingWorkload& w, const SizingTargets& t, const SizingSpace& s) {
  validate(m);
  validate(w);
  validate(t);
  if (s.gpus.empty()) throw SpecError("gpus", "give at least one GPU type to search");
  for (const auto& g : s.gpus) validate(g);
  if (s.max_tp < 1) throw SpecError("max_tp", "must be >= 1 (got " + std::to_string(s.max_tp) + ")");
  if (s.max_pp < 1) throw SpecError("max_pp", "must be >= 1 (got " + std::to_string(s.max_pp) + ")");
  if (s.max_gpus_per_replica < 1)
    throw SpecError("max_gpus_per_replica", "must be >= 1 (got " + std::to_string(s.max_gpus_per_replica) + ")");
  if (s.max_gpus < 1) throw SpecError("max_gpus", "must be >= 1 (got " + std::to_string(s.max_gpus) + ")");

  // Weight formats: the checkpoint's, plus fp8 (vLLM --quantization fp8 quantises a 16-bit checkpoint online).
  std::vector<DType> wq = s.weight_dtypes;
  // An unquantised checkpoint's weights take the serving dtype (--dtype float32 holds them in fp32).
  const DType act = serving_dtype(m, s.base.dtype);
  const DType checkpoint = m.quantization == DType::auto_ ? act : m.quantization;
  if (wq.empty()) {
    wq.push_back(checkpoint);
    if (info(checkpoint).payload_bits >= 16) wq.push_back(DType::fp8);
  }
  for (auto& q : wq)
    if (q == DType::auto_) q = checkpoint;
  std::vector<DType> kv = s.kv_dtypes.empty() ? std::vector<DType>{DType::auto_, DType::fp8} : s.kv_dtypes;
  const DType auto_kv = auto_kv_dtype(m, s.base);
  for (auto& k : kv)
    if (k == DType::auto_) k = auto_kv;
  auto dedupe = [](std::vector<DType>& v) {
    std::vector<DType> r;
    for (DType x : v)
      if (std::find(r.begin(), r.end(), x) == r.end()) r.push_back(x);
    v = r;
  };
  dedupe(wq);
  dedupe(kv);

  if (s.disaggregated && s.base.enable_expert_parallel && m.moe.enabled())
    throw SpecError("disaggregated",
                    "xPyD is searched without expert parallelism: drop --enable-expert-parallel (the search then "
                    "ranks the expert-parallel layouts as aggregated candidates beside the xPyD ones)");
  if (s.disaggregated && !w.open_loop())
    throw SpecError("disaggregated",
                    "sizing prefill and decode pools needs an open-loop workload (an arrival rate or "
                    "a trace); a closed loop of users has no arrival rate to split between them");
  SizingResult res;
  std::vector<Key> keys;
  const std::vector<i64> eps = expert_parallel_options(m, s);
  for (const auto& g : s.gpus)
    for (i64 tp : powers_of_two(s.max_tp))
      for (i64 pp : powers_of_two(s.max_pp))
        for (i64 ep : eps) {
          // An EP group stays within max_gpus_per_replica; EP over one GPU is no EP (kept only when EP is asked for).
          if (tp * pp * std::max<i64>(1, ep) > s.max_gpus_per_replica) continue;
          if (ep == 1 && tp == 1) continue;
          for (DType q : wq)
            for (DType k : kv) {
              keys.push_back(Key{&g, tp, pp, q, k, ep});
              res.candidates.push_back(evaluate(m, w, t, s, keys.back()));
            }
        }
  if (s.disaggregated) {
    const auto options = sizing_detail::prefill_options(m, w, t, s, wq, kv);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (keys[i].ep_group_replicas > 0) continue;  // xPyD is searched without expert parallelism
      const CandidateStatus agg = res.candidates[i].status;
      if (agg == CandidateStatus::invalid || agg == CandidateStatus::does_not_fit) continue;
      if (auto c = sizing_detail::evaluate_disaggregated(m, w, t, s, keys[i], options))
        res.candidates.push_back(std::move(*c));
    }
  }

  auto rank_key = [](const SizingCandidate& x) {
    return std::make_tuple(static_cast<int>(x.status), !x.priced, x.cost_per_hour_usd,
                           x.cost_per_million_output_tokens_usd, x.gpus, x.ttft_s);
  };
  std::stable_sort(res.candidates.begin(), res.candidates.end(), [&](const auto& a, const auto& b) {
    if (a.status != CandidateStatus::ok || b.status != CandidateStatus::ok)
      return static_cast<int>(a.status) < static_cast<int>(b.status);
    return rank_key(a) < rank_key(b);
  });
  res.feasible = static_cast<std::size_t>(std::count_if(res.candidates.begin(), res.candidates.end(),
                                                        [](const auto& x) { return x.status == CandidateStatus::ok; }));
  if (res.feasible == 0) res.diagnosis = diagnose(res.candidates, t);
  // The cheapest per GPU type: the first of its type in the ranked list (so in rank order).
  for (std::size_t i = 0; i < res.feasible; ++i) {
    const auto same_gpu = [&](std::size_t j) { return res.candidates[j].gpu == res.candidates[i].gpu; };
    if (std::none_of(res.best_per_gpu.begin(), res.best_per_gpu.end(), same_gpu)) res.best_per_gpu.push_back(i);
  }
  // The purchase frontier: tokens/s/GPU and tokens/s/user (aiconfigurator's axes) and the price of a token; across
  // GPU types tokens/s/GPU alone would drop the cheapest deployment when a dearer GPU matches its throughput.
  std::vector<std::vector<double>> points;
  for (std::size_t i = 0; i < res.feasible; ++i) {
    const auto& c = res.candidates[i];
    points.push_back(
        {c.tokens_per_s_per_gpu, c.tokens_per_s_per_user, c.priced ? -c.cost_per_million_output_tokens_usd : -kInf});
  }
  res.pareto = pareto_frontier(points);
  std::stable_sort(res.pareto.begin(), res.pareto.end(), [&](std::size_t a, std::size_t b) {
    return res.candidates[a].tokens_per_s_per_gpu > res.candidates[b].tokens_per_s_per_gpu;
  });
  return res;
}

std::vector<std::size_t> pareto_frontier(const std::vector<std::vector<double>>& points) {
  // a dominates b: >= on every coordinate and > on one. Identical points: the first stays (the later is "dominated").
  auto dominates = [&](std::size_t a, std::size_t b) {
    bool better = false;
    for (std::size_t k = 0; k < points[a].size(); ++k) {
      if (points[a][k] < points[b][k]) return false;
      better = better || points[a][k] > points[b][k];
    }
    return better || a < b;
  };
  std::vector<std::size_t> r;
  for (std::size_t i = 0; i < points.size(); ++i) {
    bool kept = true;
    for (std::size_t j = 0; j < points.size() && kept; ++j) kept = j == i || !dominates(j, i);
    if (kept) r.push_back(i);
  }
  return r;
}

}  // namespace kvcap
