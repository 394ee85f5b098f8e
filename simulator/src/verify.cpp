#include "kvcap/simulator/verify.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <thread>

#include "kvcap/planner/error.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/simulator/metrics.hpp"
#include "kvcap/simulator/run.hpp"

namespace kvcap::sim {

namespace {

/// TTFT of every completed request, for an arbitrary percentile (SimResult keeps p50/p90/p99 only).
class TtftHistogram : public Observer {
 public:
  void on_request_done(const RequestRecord& r) override { h_.add(r.first_token_s - r.arrival_s); }
  double quantile(double q) const { return h_.quantile(q); }

 private:
  LogHistogram h_;
};

struct Outcome {
  double ttft_s = 0, tpot_s = 0;
  std::uint64_t completed = 0, rejected = 0;
  bool meets = false;
  bool hopeless = false;  ///< too many rejected requests: no replica count meets (rejection does not depend on it)
  std::vector<Finding> findings;
};

/// One candidate: its deployment at any replica count, simulated on the workload.
class CandidateRun {
 public:
  CandidateRun(const SizingRequest& q, const SizingCandidate& c, const VerifyOptions& o) : q_(q), c_(c), o_(o) {
    const auto g =
        std::find_if(q.space.gpus.begin(), q.space.gpus.end(), [&](const GpuSpec& x) { return x.name == c.gpu; });
    if (g == q.space.gpus.end()) throw SpecError("gpus", "the candidate's GPU " + c.gpu + " is not in the search");
    gpu_ = &*g;
    if (c.prefill) {
      const auto pg = std::find_if(q.space.gpus.begin(), q.space.gpus.end(),
                                   [&](const GpuSpec& x) { return x.name == c.prefill->gpu; });
      if (pg == q.space.gpus.end())
        throw SpecError("gpus", "the candidate's prefill GPU " + c.prefill->gpu + " is not in the search");
      prefill_gpu_ = &*pg;
    }
  }

  /// xPyD: the prefill workers beside `replicas` decode workers (the analytic ratio kept); 0 for aggregated.
  i64 prefill_workers(i64 replicas) const {
    if (!c_.prefill) return 0;
    const i64 x = c_.prefill->replicas, y = std::max<i64>(1, c_.replicas);
    return std::max<i64>(1, (x * replicas + y - 1) / y);
  }
  i64 gpus(i64 replicas) const {
    return replicas * c_.gpus_per_replica + (c_.prefill ? prefill_workers(replicas) * c_.prefill->tp : 0);
  }
  /// The replicas counts come in: one, or one expert-parallel group's (whose ranks share the routed experts).
  i64 unit() const { return std::max<i64>(1, c_.ep_group_replicas); }

  /// `replicas` a multiple of unit(): with expert parallelism that many ranks of one EP group's layout (the memory
  /// plan and the step times of a group of unit() ranks), side by side behind the router.
  Outcome at(i64 replicas) {
    ++simulations;
    Deployment d = *c_.deployment;
    d.num_gpus = (c_.ep_group_replicas > 0 ? unit() : replicas) * c_.gpus_per_replica;
    SimulationRequest r;
    if (c_.ep_group_replicas > 0) r.replicas = static_cast<std::uint32_t>(replicas);
    r.speed =
        make_speed_context(q_.model, *gpu_, plan_memory(q_.model, *gpu_, d, {}), q_.space.speed, q_.space.calibration);
    r.trace = o_.trace;
    r.workload = o_.workload;
    r.limits = o_.limits;
    r.seed = o_.seed;
    r.router = RouterPolicy::least_outstanding;  // what a load balancer in front of the replicas does
    if (c_.prefill) {
      Deployment pd = *c_.prefill->deployment;
      pd.num_gpus = 0;
      SimulationRequest::PrefillWorkers w;
      w.replicas = static_cast<std::uint32_t>(prefill_workers(replicas));
      w.speed = make_speed_context(q_.model, *prefill_gpu_, plan_memory(q_.model, *prefill_gpu_, pd, {}),
                                   q_.space.speed, q_.space.calibration);
      w.link = kv_transfer_link(*prefill_gpu_, *gpu_, q_.space.kv_link);
      r.prefill = std::move(w);
    }
    TtftHistogram ttft;
    r.observer = &ttft;
    const SimulationRun run = run_simulation(r);
    Outcome out;
    out.completed = run.result.requests_completed;
    out.rejected = run.result.requests_rejected;
    out.ttft_s = ttft.quantile(q_.targets.ttft_percentile);
    out.tpot_s = run.result.tpot_s.mean;
    out.findings = run.findings;
    const bool check_tpot = q_.workload.output_tokens > 1;
    // Goodput counts every request sent: one the engine rejected (longer than max_model_len) missed the TTFT target,
    // so the percentile's nearest rank over completed + rejected requests must fall on a completed one.
    const double sent = static_cast<double>(out.completed + out.rejected);
    const bool rejected_within = std::ceil(q_.targets.ttft_percentile * sent) <= static_cast<double>(out.completed);
    out.hopeless = !rejected_within;
    out.meets = out.completed > 0 && rejected_within && out.ttft_s <= q_.targets.ttft_s &&
                (!check_tpot || out.tpot_s <= q_.targets.tpot_s);
    return out;
  }

  int simulations = 0;

 private:
  const SizingRequest& q_;
  const SizingCandidate& c_;
  const VerifyOptions& o_;
  const GpuSpec* gpu_ = nullptr;
  const GpuSpec* prefill_gpu_ = nullptr;
};

/// The smallest replica count meeting the targets: from the analytic count, doubling up until one meets (or the
/// limit), then bisecting between the last miss and the first meet. Latency falls as replicas are added (a fixed
/// load over more replicas), which the bisection relies on.
VerifiedCandidate settle(const SizingRequest& q, const SizingResult& r, std::size_t index, const VerifyOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const SizingCandidate& c = r.candidates[index];
  VerifiedCandidate v;
  v.index = index;
  v.analytic_replicas = c.replicas;
  CandidateRun run(q, c, o);
  // The search counts units (replicas, or expert-parallel groups of unit replicas).
  const i64 u = run.unit();
  v.max_replicas = 1;
  while (run.gpus((v.max_replicas + 1) * u) <= q.space.max_gpus && v.max_replicas < (i64{1} << 40)) {
    // The largest count within max_gpus (doubling, then bisecting: gpus() grows with the count).
    i64 step = 1;
    while (run.gpus((v.max_replicas + step * 2) * u) <= q.space.max_gpus && step < (i64{1} << 30)) step *= 2;
    v.max_replicas += step;
  }
  const auto at = [&](i64 units) { return run.at(units * u); };
  i64 lo = 0, hi = 0;  // lo: a count known to miss (0: none); hi: the smallest known to meet (0: none)
  Outcome best;
  i64 n = std::clamp<i64>((c.replicas + u - 1) / u, 1, v.max_replicas);
  Outcome at_n = at(n);
  v.ttft_at_analytic_s = at_n.ttft_s;
  v.tpot_at_analytic_s = at_n.tpot_s;
  v.findings_at_analytic = at_n.findings;
  if (at_n.meets) {
    hi = n, best = at_n;
    // Downwards: the analytic count may be generous; bisect [0, n].
  } else {
    lo = n;
    Outcome last = at_n;
    while (hi == 0 && lo < v.max_replicas && !last.hopeless) {
      const i64 next = std::min(v.max_replicas, lo * 2);
      const Outcome o2 = at(next);
      if (o2.meets)
        hi = next, best = o2;
      else
        lo = next, last = o2;
    }
    if (hi == 0) best = last;
  }
  if (hi > 0) {
    if (lo == 0 && hi > 1) {
      // Is one replica enough? Then there is nothing to bisect.
      const Outcome one = at(1);
      if (one.meets)
        hi = 1, best = one;
      else
        lo = 1;
    }
    while (lo > 0 && hi - lo > 1) {
      const i64 mid = lo + (hi - lo) / 2;
      const Outcome m = at(mid);
      if (m.meets)
        hi = mid, best = m;
      else
        lo = mid;
    }
  }
  v.replicas = hi * u;
  v.max_replicas *= u;
  v.prefill_replicas = hi > 0 ? run.prefill_workers(hi) : 0;
  v.gpus = hi > 0 ? run.gpus(hi * u) : 0;
  v.ttft_s = best.ttft_s;
  v.tpot_s = best.tpot_s;
  v.completed = best.completed;
  v.rejected = best.rejected;
  v.too_many_rejected = best.hopeless;
  v.simulations = run.simulations;
  v.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return v;
}

}  // namespace

SizingWorkload sizing_workload_of_trace(const std::vector<RequestSpec>& t) {
  if (t.size() < 2) throw SpecError("trace", "needs at least 2 requests to give an arrival rate");
  const double span = t.back().arrival_s - t.front().arrival_s;
  if (!(span > 0)) throw SpecError("trace", "every request arrives at the same time: no arrival rate (use simulate)");
  const auto n = static_cast<double>(t.size());
  double p = 0, p2 = 0, o = 0, g = 0, g2 = 0;
  i64 longest = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto pt = static_cast<double>(t[i].prompt_tokens);
    p += pt, p2 += pt * pt, o += static_cast<double>(t[i].output_tokens);
    longest = std::max(longest, t[i].prompt_tokens + t[i].output_tokens);
    if (i > 0) {
      const double gap = t[i].arrival_s - t[i - 1].arrival_s;
      g += gap, g2 += gap * gap;
    }
  }
  SizingWorkload w;
  w.prompt_tokens = p / n;
  w.output_tokens = std::max(1.0, o / n);
  w.max_context_tokens = longest;
  w.arrival_rate_per_s = (n - 1) / span;
  const double mean_gap = g / (n - 1);
  w.arrival_scv = std::max(0.0, g2 / (n - 1) / (mean_gap * mean_gap) - 1);
  w.prompt_scv = std::max(0.0, p2 / n / (w.prompt_tokens * w.prompt_tokens) - 1);
  return w;
}

std::vector<VerifiedCandidate> verify_sizing(const SizingRequest& q, const SizingResult& r, const VerifyOptions& o) {
  const std::size_t n = o.candidates.size();
  for (const std::size_t i : o.candidates)
    if (i >= r.feasible || !r.candidates[i].deployment)
      throw SpecError("candidates", "candidate " + std::to_string(i) + " is not a feasible one with a deployment");
  std::vector<VerifiedCandidate> out(n);
  std::atomic<std::size_t> next{0}, done{0};
  std::exception_ptr error;
  std::mutex error_mutex, progress_mutex;
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        out[i] = settle(q, r, o.candidates[i], o);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next = n;  // stop handing out work
      }
      if (o.progress) {
        const std::lock_guard<std::mutex> lock(progress_mutex);
        o.progress(++done, n);
      }
    }
  };
  const unsigned threads =
      std::max(1u, std::min<unsigned>(o.threads, static_cast<unsigned>(std::max<std::size_t>(n, 1))));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return out;
}

}  // namespace kvcap::sim
