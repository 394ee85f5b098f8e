// Disaggregated prefill/decode (xPyD) in the sizing search: a prefill pool in front of a decode-only pool, each sized
// by its own queue (docs/sizing.md, "Disaggregated prefill/decode"; the simulator checks it, simulator/verify.cpp).
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "kvcap/planner/error.hpp"
#include "kvcap/planner/text.hpp"
#include "sizing_internal.hpp"

namespace kvcap {

std::string xpyd(const SizingCandidate& c) {
  return c.prefill ? std::to_string(c.prefill->replicas) + "P" + std::to_string(c.replicas) + "D" : "";
}

namespace sizing_detail {

std::vector<PrefillOption> prefill_options(const ModelSpec& m, const SizingWorkload& w, const SizingTargets& t,
                                           const SizingSpace& s, const std::vector<DType>& weight_dtypes,
                                           const std::vector<DType>& kv_dtypes) {
  std::vector<PrefillOption> out;
  for (const auto& g : s.gpus)
    for (i64 tp : powers_of_two(std::min(s.max_tp, s.max_gpus_per_replica)))
      for (DType q : weight_dtypes)
        for (DType k : kv_dtypes) {
          PrefillOption o{Key{&g, tp, 1, q, k, 0}, nullptr};
          try {
            MemoryPlan plan = plan_memory(m, g, candidate_deployment(m, w, s, o.key), {});
            if (plan.fits())
              o.model = std::make_shared<const ReplicaModel>(
                  make_speed_context(m, g, std::move(plan), s.speed, s.calibration), w, t.ttft_percentile);
          } catch (const SpecError&) {
            // invalid for this model (TP does not divide the heads, ...): not an option
          }
          out.push_back(std::move(o));
        }
  return out;
}

namespace {

/// The decode pool's side of an xPyD candidate: a decode-only worker's step at batch N has no prefill beside it; a
/// handed-off request waits for the step in flight and then takes one step for its last prompt token, so it stays
/// O steps in the batch (Little's law: N = rate x O x TPOT(N)).
struct DecodePool {
  const ReplicaModel& rm;
  double output_tokens;
  double rate_for_batch(i64 n) const { return dbl(n) / (output_tokens * rm.decode_step_s(n)); }
  /// The smallest N in [1, limit] with rate_for_batch(N) >= rate (non-decreasing in N); 0 when none.
  i64 batch_for_rate(double rate, i64 limit) const {
    if (limit < 1 || rate_for_batch(limit) < rate) return 0;
    i64 lo = 1, hi = limit;
    while (lo < hi) {
      const i64 mid = lo + (hi - lo) / 2;
      if (rate_for_batch(mid) >= rate)
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  }
};

/// The best pool sizes found for one prefill option.
struct Sizes {
  i64 x = 0, y = 0, batch = 0;
  double cost = kInf, tpot_s = 0, wait_s = 0, wait_mean_s = 0, utilization = 0;
  i64 gpus = 0;
};

/// The cheapest (x, y) for `p` in front of decode pool `d`: y from the largest batch meeting the targets up a few
/// counts (a smaller batch shortens the TTFT's decode steps), x the fewest prefill workers whose queue at the TTFT
/// percentile keeps the TTFT within target. Infinite cost when none within max_gpus.
Sizes size_pools(const SizingWorkload& w, const SizingTargets& t, const SizingSpace& s, const DecodePool& d,
                 i64 decode_gpus, double decode_price, const PrefillOption& p, double fixed_s, i64 best_batch) {
  const ReplicaModel& rp = *p.model;
  const double busy = std::max(1e-12, rp.prefill_s() - rp.context().options.request_overhead_s);
  const double lambda = w.arrival_rate_per_s;
  const i64 prefill_gpus = p.key.tp;
  Sizes best;
  const i64 y0 = static_cast<i64>(std::ceil(lambda / d.rate_for_batch(best_batch)));
  for (i64 y = std::max<i64>(1, y0); y <= std::max<i64>(1, y0) + 8; ++y) {
    const i64 n = std::max<i64>(1, d.batch_for_rate(lambda / dbl(y), best_batch));
    const double tpot = d.rm.decode_step_s(n);
    // The decode side of the TTFT: the step in flight, then the step computing the last prompt token.
    const double budget = t.ttft_s - fixed_s - 2 * tpot;
    if (budget < 0) continue;
    // Prefill workers: G/G/1 each at rate lambda / x (Kingman), the wait at the percentile within the budget.
    for (i64 x = static_cast<i64>(std::floor(lambda * busy)) + 1;; ++x) {
      const i64 gpus = x * prefill_gpus + y * decode_gpus;
      if (gpus > s.max_gpus) break;
      const double rho = lambda / dbl(x) * busy;
      const double ew = kingman_mean_wait_s(rho, busy, w.arrival_scv, w.prompt_scv);
      const double wp = wait_percentile_s(rho, ew, t.ttft_percentile);
      if (wp > budget) continue;
      const double cost =
          dbl(x * prefill_gpus) * p.key.gpu->price_per_gpu_hour_usd + dbl(y * decode_gpus) * decode_price;
      if (cost < best.cost || (cost == best.cost && gpus < best.gpus))
        best = Sizes{x, y, n, cost, tpot, wp, ew, rho, gpus};
      break;  // more prefill workers only cost more
    }
  }
  return best;
}

}  // namespace

std::optional<SizingCandidate> evaluate_disaggregated(const ModelSpec& m, const SizingWorkload& w,
                                                      const SizingTargets& t, const SizingSpace& s, const Key& k,
                                                      const std::vector<PrefillOption>& prefill) {
  std::optional<ReplicaModel> rm;
  try {
    MemoryPlan plan = plan_memory(m, *k.gpu, candidate_deployment(m, w, s, k), {});
    if (!plan.fits()) return std::nullopt;
    rm.emplace(make_speed_context(m, *k.gpu, std::move(plan), s.speed, s.calibration), w, t.ttft_percentile);
    if (rm->max_batch_memory() < 1) return std::nullopt;
  } catch (const SpecError&) {
    return std::nullopt;
  }
  SizingCandidate r;
  r.gpu = k.gpu->name;
  r.tp = k.tp;
  r.pp = k.pp;
  r.weight_dtype = k.wq;
  r.kv_dtype = k.kv;
  r.gpus_per_replica = k.tp * k.pp;
  r.kv_capacity_tokens = to_signed(rm->context().plan.kv_capacity_tokens, "KV capacity tokens");
  r.max_batch_memory = rm->max_batch_memory();
  r.decode_step_s = rm->decode_step_s(1);
  r.tpot_s = r.decode_step_s;
  const bool check_tpot = w.output_tokens > 1;
  const DecodePool d{*rm, std::max(1.0, w.output_tokens)};
  const i64 mean_prompt = std::max<i64>(1, std::llround(w.prompt_tokens));
  if (check_tpot && r.tpot_s > t.tpot_s) {
    r.status = CandidateStatus::tpot_too_high;
    r.reason = "decode workers: TPOT " + dur(r.tpot_s) + " at batch 1 > target " + dur(t.tpot_s);
    r.prefill = SizingPrefillPool{};
    return r;
  }
  // Per prefill option: its fixed TTFT part (prefill alone + KV transfer), then the largest decode batch whose steps
  // keep TPOT and the TTFT's decode part within the targets, then the pool sizes.
  Sizes best;
  const PrefillOption* chosen = nullptr;
  KvTransferLink chosen_link;
  double chosen_transfer = 0, fastest_ttft = kInf;
  for (const PrefillOption& p : prefill) {
    if (!p.model || p.key.wq != k.wq || p.key.kv != k.kv) continue;
    KvTransferLink link;
    try {
      link = kv_transfer_link(*p.key.gpu, *k.gpu, s.kv_link);
    } catch (const SpecError&) {
      continue;  // a GPU type without the link: no xPyD with it
    }
    const double transfer = kv_transfer_s(p.model->context().plan, rm->context().plan, link, mean_prompt - 1);
    const double fixed_s = p.model->prefill_s() + transfer;
    fastest_ttft = std::min(fastest_ttft, fixed_s + 2 * r.decode_step_s);
    i64 lo = 0, hi = rm->max_batch_memory();
    while (lo < hi) {
      const i64 mid = lo + (hi - lo + 1) / 2;
      const double tp = rm->decode_step_s(mid);
      if ((!check_tpot || tp <= t.tpot_s) && fixed_s + 2 * tp <= t.ttft_s)
        lo = mid;
      else
        hi = mid - 1;
    }
    if (lo < 1) continue;
    const Sizes z = size_pools(w, t, s, d, r.gpus_per_replica, k.gpu->price_per_gpu_hour_usd, p, fixed_s, lo);
    // A priced pair before an unpriced one (an unpriced GPU is not free), then the cost, then fewer GPUs.
    const bool z_priced = p.key.gpu->price_per_gpu_hour_usd > 0,
               best_priced = chosen && chosen->key.gpu->price_per_gpu_hour_usd > 0;
    if (z.x > 0 &&
        (!chosen || std::make_tuple(!z_priced, z.cost, z.gpus) < std::make_tuple(!best_priced, best.cost, best.gpus))) {
      best = z;
      chosen = &p;
      chosen_link = link;
      chosen_transfer = transfer;
    }
  }
  if (!chosen || best.x == 0) {
    r.status = std::isfinite(fastest_ttft) && fastest_ttft > t.ttft_s ? CandidateStatus::ttft_too_high
                                                                      : CandidateStatus::too_many_gpus;
    r.reason = std::isfinite(fastest_ttft)
                   ? (fastest_ttft > t.ttft_s
                          ? "disaggregated: TTFT " + dur(fastest_ttft) +
                                " unloaded (prefill + KV transfer + two decode "
                                "steps) > target " +
                                dur(t.ttft_s)
                          : "disaggregated: no prefill/decode pool sizes meet the targets within max_gpus " +
                                std::to_string(s.max_gpus))
                   : "disaggregated: no prefill deployment fits, or no GPU profile gives the KV link (" +
                         std::string(to_string(s.kv_link)) + ")";
    r.prefill = SizingPrefillPool{};
    return r;
  }
  const ReplicaModel& rp = *chosen->model;
  SizingPrefillPool pool;
  pool.gpu = chosen->key.gpu->name;
  pool.tp = chosen->key.tp;
  pool.replicas = best.x;
  pool.gpus = best.x * chosen->key.tp;
  pool.prefill_s = rp.prefill_s();
  pool.utilization = best.utilization;
  pool.ttft_wait_s = best.wait_s;
  pool.kv_transfer_s = chosen_transfer;
  pool.link = chosen_link.name;
  pool.price_per_gpu_hour_usd = chosen->key.gpu->price_per_gpu_hour_usd;
  pool.deployment = launchable_deployment(rp.context().plan);
  pool.deployment->num_gpus = pool.gpus;
  r.replicas = best.y;
  r.gpus = best.gpus;
  r.batch = best.batch;
  r.rate_per_replica_per_s = w.arrival_rate_per_s / dbl(best.y);
  r.max_rate_per_replica_per_s = d.rate_for_batch(best.batch);
  r.max_batch_targets = best.batch;
  r.prefill_s = rp.prefill_s();
  r.prefill_busy_s = 0;  // no prefill on a decode worker
  r.prefill_utilization = best.utilization;
  r.decode_step_s = best.tpot_s;
  r.decode_bound = rm->decode_bound(best.batch);
  r.ttft_wait_s = best.wait_s;
  r.ttft_s = best.wait_s + pool.prefill_s + chosen_transfer + 2 * best.tpot_s;
  r.tpot_s = best.tpot_s;
  r.e2e_s = best.wait_mean_s + pool.prefill_s + chosen_transfer + 1.5 * best.tpot_s +
            std::max(0.0, w.output_tokens - 1) * best.tpot_s;
  r.priced = k.gpu->price_per_gpu_hour_usd > 0 && chosen->key.gpu->price_per_gpu_hour_usd > 0;
  fill_throughput_and_cost(r, w, w.arrival_rate_per_s, best.cost);
  r.deployment = launchable_deployment(rm->context().plan);
  r.deployment->num_gpus = best.y * r.gpus_per_replica;
  r.prefill = std::move(pool);
  r.status = CandidateStatus::ok;
  return r;
}

}  // namespace sizing_detail
}  // namespace kvcap
