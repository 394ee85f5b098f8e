// The glue between the requirement files (profiles/) and the planner's promise evaluation: resolve, then evaluate.
#include "promises.hpp"

#include <chrono>
#include <exception>

namespace kvcap::cli {

namespace {
PromiseOutcome check_promise(const profiles::Requirements& r, const profiles::Promise& p,
                             const profiles::ProfileIndex* index) {
  const auto t0 = std::chrono::steady_clock::now();
  PromiseOutcome out;
  out.deployment = p.deployment_ref;
  try {
    const profiles::DeploymentProfile dp = profiles::deployment_of(r, p, index);
    out.deployment = (dp.name.empty() ? "" : dp.name + ": ") + profiles::describe(dp);
    const profiles::ResolvedProfile rp = profiles::resolve_deployment(dp, index);
    static_cast<PromiseResult&>(out) = evaluate(p, rp.model, rp.gpu, dp.deployment);
  } catch (const std::exception& e) {  // profiles::ProfileError: the deployment or its profiles, located
    static_cast<PromiseResult&>(out) = unevaluated(p, e.what());
  }
  out.name = p.name;
  out.at = p.at;
  out.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}
}  // namespace

std::vector<PromiseOutcome> check_requirements(const profiles::Requirements& r, const profiles::ProfileIndex* index) {
  std::vector<PromiseOutcome> out;
  out.reserve(r.promises.size());
  for (const auto& p : r.promises) out.push_back(check_promise(r, p, index));
  return out;
}

}  // namespace kvcap::cli
