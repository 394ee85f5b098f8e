#pragma once
// What the aggregated search (sizing.cpp) and the disaggregated one (sizing_disagg.cpp) share. Private to the planner.
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvcap/planner/sizing.hpp"

namespace kvcap::sizing_detail {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline double dbl(i64 v) {
  return static_cast<double>(v);
}
/// "2.10 s", "41.3 ms", "0.012 ms" for reasons.
std::string dur(double s);
std::vector<i64> powers_of_two(i64 max);

/// One deployment of the search: GPU type, TP, PP, weight and KV formats, and expert parallelism: the data-parallel
/// replicas of one EP group (vLLM --data-parallel-size with --enable-expert-parallel), 0 without EP.
struct Key {
  const GpuSpec* gpu;
  i64 tp, pp;
  DType wq, kv;
  i64 ep_group_replicas;
};

/// The deployment a key stands for: the search's base flags, its layout and formats, max_model_len from the workload.
Deployment candidate_deployment(const ModelSpec& m, const SizingWorkload& w, const SizingSpace& s, const Key& k);
/// Throughput, tokens/s/GPU and /user, and the costs of a candidate serving `requests_per_s` (r.gpus and r.tpot_s set).
void fill_throughput_and_cost(SizingCandidate& r, const SizingWorkload& w, double requests_per_s,
                              double cost_per_hour_usd);

/// A prefill pool the disaggregated search may put in front of a decode pool: a deployment at PP 1 and its replica
/// model (prefill time of the mean prompt), built once per search.
struct PrefillOption {
  Key key;
  std::shared_ptr<const ReplicaModel> model;  ///< null: the deployment is invalid or does not fit
};
std::vector<PrefillOption> prefill_options(const ModelSpec& m, const SizingWorkload& w, const SizingTargets& t,
                                           const SizingSpace& s, const std::vector<DType>& weight_dtypes,
                                           const std::vector<DType>& kv_dtypes);

/// The cheapest xPyD candidate whose decode workers are deployment `k` (planner/disagg.hpp, docs/sizing.md
/// "Disaggregated prefill/decode"); nullopt when `k` itself is invalid or does not fit.
std::optional<SizingCandidate> evaluate_disaggregated(const ModelSpec& m, const SizingWorkload& w,
                                                      const SizingTargets& t, const SizingSpace& s, const Key& k,
                                                      const std::vector<PrefillOption>& prefill);

}  // namespace kvcap::sizing_detail
