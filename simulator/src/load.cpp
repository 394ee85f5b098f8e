// A run's load, outside the event loop: a closed loop's cycle and the settings the speed model gives a run (the
// front end's cost per request, the clients' stagger); an open-loop result's offered against served load.
#include <algorithm>
#include <cmath>

#include "kvcap/planner/sizing.hpp"
#include "kvcap/simulator/simulator.hpp"

namespace kvcap::sim {

std::pair<double, double> offered_and_served_per_s(const SimResult& r, bool closed_loop) {
  const double arrivals_span = r.last_arrival_s - r.first_arrival_s;
  const std::uint64_t admitted = r.requests_arrived - r.requests_rejected;  // rejected ones cost no service
  if (closed_loop || admitted < 2 || !(arrivals_span > 0) || r.requests_completed == 0) return {0, 0};
  const double offered = static_cast<double>(admitted - 1) / arrivals_span;
  const double service = std::max(0.0, r.e2e_s.mean - r.queue_s.mean);
  const double window = r.end_s - r.first_arrival_s - service;
  if (!(window > 0)) return {offered, 0};
  return {offered, static_cast<double>(r.requests_completed) / window};
}

bool overloaded(const SimResult& r, bool closed_loop) {
  const auto [offered, served] = offered_and_served_per_s(r, closed_loop);
  const double service = std::max(0.0, r.e2e_s.mean - r.queue_s.mean);
  return offered > 1.02 * served && r.queue_s.mean > 0.25 * service;
}

double closed_loop_cycle_s(const SpeedContext& c, i64 clients, i64 prompt_tokens, i64 output_tokens,
                           double think_time_s) {
  const i64 prompt = std::max<i64>(1, std::min(prompt_tokens, c.plan.dep.max_model_len - 1));
  const i64 output = std::max<i64>(1, std::min(output_tokens, c.plan.dep.max_model_len - prompt));
  // The serving steady state of the planner (prefills between the decode steps, queueing for them): a cycle is
  // clients / throughput. When the clients do not all fit at once, the static estimate below.
  if (const auto ss = closed_loop_steady_state(c, clients, prompt, output);
      ss && ss->rate_per_s > 0 && std::isfinite(ss->rate_per_s))
    return static_cast<double>(clients) / ss->rate_per_s + think_time_s;
  // At most what the engine runs at once: max_num_seqs and the requests its KV cache holds at full length.
  const double fit = running_concurrency_at(c.plan, prompt + output, prompt);
  const i64 cap =
      std::max<i64>(1, std::min<i64>(c.plan.dep.max_num_seqs, std::isfinite(fit) ? static_cast<i64>(fit) : clients));
  const i64 batch = std::max<i64>(1, std::min(clients, cap));
  // Little's law: beyond what runs at once, the clients wait their turn, and a cycle takes clients / throughput.
  const double e2e = estimate_request(c, batch, prompt, output).e2e_s;
  const double cycle = clients > batch ? e2e * static_cast<double>(clients) / static_cast<double>(batch) : e2e;
  return cycle + think_time_s;
}

void apply_speed_model(SimConfig& cfg, const SpeedContext& c, i64 mean_prompt_tokens, i64 mean_output_tokens,
                       bool staggered) {
  cfg.request_overhead_s = c.options.request_overhead_s;
  // One cycle of a replica's share of the clients (the router spreads them): a cycle of every client on one replica
  // would start the last ones after a short run had ended, with the replicas below their load.
  const std::uint32_t replicas = std::max<std::uint32_t>(1, cfg.num_replicas);
  const i64 per_replica = (cfg.max_concurrency + replicas - 1) / replicas;
  if (cfg.max_concurrency > 0 && staggered)
    cfg.client_stagger_s =
        closed_loop_cycle_s(c, per_replica, mean_prompt_tokens, mean_output_tokens, cfg.think_time_s);
}

}  // namespace kvcap::sim
