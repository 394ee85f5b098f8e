// Reporters of `kvcap simulate` (report/simulate.hpp).
#include "report/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "kvcap/escape.hpp"
#include "kvcap/planner/text.hpp"

namespace kvcap::cli {

namespace {

/// A rate for people: request rates with 2 decimals and token rates as whole numbers from `small` up; below it 3
/// significant digits, so a run at 0.002 req/s does not read as 0.
std::string rate(double v, double small) {
  if (v >= small || v == 0) return small < 1 ? fixed(v, 2) : grouped(static_cast<std::uint64_t>(std::llround(v)));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

/// Percentiles of no request at all (every one rejected) are null, not 0 s.
nlohmann::ordered_json summary_json(const sim::LatencySummary& s) {
  const auto v = [&](double x) { return s.count ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr); };
  return {{"mean", v(s.mean)}, {"p50", v(s.p50)}, {"p90", v(s.p90)},
          {"p99", v(s.p99)},   {"max", v(s.max)}, {"count", s.count}};
}

/// A CSV number ("%.6g"); an empty field for a latency of no request.
std::string csv_num(double x, bool present = true) {
  if (!present) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

}  // namespace

std::string describe_length(const LengthDistribution& d) {
  std::ostringstream o;
  switch (d.kind) {
    case LengthDistribution::Kind::fixed:
      o << d.tokens;
      break;
    case LengthDistribution::Kind::uniform:
      o << "uniform " << d.min_tokens << "-" << d.max_tokens;
      break;
    case LengthDistribution::Kind::lognormal:
      o << "lognormal mean " << fixed(d.lognormal_mean_tokens, 0) << " sigma " << d.sigma;
      if (d.min_tokens > 1 || d.max_tokens > 0)
        o << " in [" << d.min_tokens << ", " << (d.max_tokens > 0 ? std::to_string(d.max_tokens) : "inf") << "]";
      break;
    case LengthDistribution::Kind::empirical:
      o << "empirical over " << d.values.size() << " values";
      break;
  }
  o << " (mean " << fixed(d.mean_tokens(), 1) << ")";
  return o.str();
}

namespace {

/// Disaggregated serving: the KV transfers and the prefill pool's load (nothing for aggregated serving).
void disaggregation_lines(std::ostream& o, const SimulationInfo& in, const sim::SimResult& r, double span) {
  if (in.cfg.prefill.num_replicas == 0) return;
  double busy = 0, waiting = 0;
  for (const auto& s : r.prefill_replicas) busy += s.busy_s, waiting += s.waiting_mean;
  const auto n = static_cast<double>(std::max<std::size_t>(1, r.prefill_replicas.size()));
  o << "KV transfer  " << grouped(r.kv_transfers) << " requests' KV moved to the decode workers, mean "
    << human_seconds(r.kv_transfer_s_mean) << " for "
    << grouped(static_cast<std::uint64_t>(std::llround(r.kv_transfer_tokens_mean))) << " tokens (in TTFT)\n";
  o << "Prefill pool busy " << fixed(span > 0 ? 100 * busy / n / span : 0.0, 1) << "% (mean over "
    << r.prefill_replicas.size() << (r.prefill_replicas.size() == 1 ? " worker" : " workers") << "), waiting mean "
    << fixed(waiting / n, 1) << " per worker\n";
}

/// The latency percentiles, the replicas side by side, where the step time went, the simulator's own speed.
/// Where the replicas' busy time went, in shares of it (the binding pipeline stage of each step).
void step_time_line(std::ostream& o, const sim::SimResult& r) {
  const auto& b = r.busy_breakdown_s;
  if (!(b.step_s > 0)) return;
  auto pct = [&](double v) { return fixed(100 * v / b.step_s, 0) + "%"; };
  o << "\nStep time    " << grouped(r.steps) << " steps, busy " << fixed(b.step_s, 1)
    << " s; binding stage per step: weights " << pct(b.weights_read_s) << ", KV read " << pct(b.kv_read_s) << ", GEMM "
    << pct(b.gemm_s) << ", attention " << pct(b.attention_s)
    << (b.experts_s > 0 ? ", routed experts " + pct(b.experts_s) : std::string()) << ", communication "
    << pct(b.communication_s) << ", overhead " << pct(b.overhead_s) << " (memory and compute overlap"
    << (b.experts_s > 0 ? "; the routed experts run after them" : "") << ")\n";
}

void latency_and_replicas(std::ostream& o, const SimulationInfo& in, const sim::SimResult& r) {
  const double span = r.end_s - r.first_arrival_s;
  o << "Latency             mean       p50       p90       p99       max\n";
  auto row = [&](const char* name, const sim::LatencySummary& s) {
    char buf[200];
    const auto t = [&](double x) { return s.count ? human_seconds(x) : std::string("-"); };  // no request: no latency
    std::snprintf(buf, sizeof buf, "  %-10s %10s%10s%10s%10s%10s\n", name, t(s.mean).c_str(), t(s.p50).c_str(),
                  t(s.p90).c_str(), t(s.p99).c_str(), t(s.max).c_str());
    o << buf;
  };
  row("TTFT", r.ttft_s);
  row("TPOT", r.tpot_s);
  row("ITL", r.itl_s);
  row("E2E", r.e2e_s);
  row("queueing", r.queue_s);
  if (const auto& b = in.benchmark) {
    const auto n = std::to_string(b->clients);
    o << "Benchmark    the table is the steady state of clients started apart; a benchmark whose " << n
      << " clients send their\n             first requests together (AIPerf, vllm bench serve) reads over these "
      << grouped(b->requests) << " requests:\n             mean TTFT " << human_seconds(b->ttft_s) << " (the first "
      << n << ": " << human_seconds(b->first_wave_ttft_s.mean) << "), TPOT "
      << (std::isnan(b->tpot_s) ? "-" : human_seconds(b->tpot_s)) << ", E2E " << human_seconds(b->e2e_s) << "\n";
  }
  // Clients in lockstep (SimResult::coincident_sends): worth a line from a tenth of the sends on.
  if (in.cfg.max_concurrency > 0 && r.requests_arrived > 0 && 10 * r.coincident_sends >= r.requests_arrived) {
    o << "Lockstep     "
      << fixed(100.0 * static_cast<double>(r.coincident_sends) / static_cast<double>(r.requests_arrived), 1)
      << "% of the sends came at the instant of the one before: clients whose requests finish in one step send\n"
      << "             together again, and with equal lengths stay together (real clients' timing jitter may part "
         "them;\n             a think-time distribution, e.g. --think-time exp:2s, or varied lengths do)\n";
  }
  if (!in.expected_error.empty()) o << "Expected error: " << in.expected_error << "\n";

  if (r.replicas.size() > 1) {
    o << "\nPer replica  requests  preempted  KV mean  KV max  busy  running mean\n";
    for (std::size_t i = 0; i < r.replicas.size(); ++i) {
      const auto& s = r.replicas[i];
      char buf[200];
      std::snprintf(buf, sizeof buf, "  %3zu  %12s %10s %7.1f%% %6.1f%% %4.0f%% %13.1f\n", i,
                    grouped(s.completed).c_str(), grouped(s.preemptions).c_str(), 100 * s.kv_utilization_mean,
                    100 * s.kv_utilization_max, span > 0 ? 100 * s.busy_s / span : 0.0, s.running_mean);
      o << buf;
    }
    o << "  balance: busiest replica completed " << fixed(r.balance_max_over_mean, 2) << "x the mean\n";
  }
  step_time_line(o, r);
  if (in.wall_s) {
    o << "\nSimulated " << grouped(r.requests_arrived) << " requests (" << grouped(r.events) << " events) in "
      << fixed(*in.wall_s, 2) << " s wall: "
      << grouped(static_cast<std::uint64_t>(
             std::llround(*in.wall_s > 0 ? static_cast<double>(r.requests_arrived) / *in.wall_s : 0)))
      << " requests per wall-second\n";
  }
}

/// What was simulated: the model on its GPUs, the cluster, the scheduler, the disaggregated pools, the workload.
void simulation_header(std::ostream& o, const SimulationInfo& in) {
  const auto& d = in.plan->dep;
  const auto& rc = in.cfg.replica;
  o << "Simulation: " << escape::terminal_text(in.model_display) << " on " << escape::terminal_text(in.gpu_display)
    << "\n";
  o << "  " << in.cfg.num_replicas << " replica" << (in.cfg.num_replicas == 1 ? "" : "s") << " x (TP "
    << d.d.tensor_parallel_size << " x PP " << d.d.pipeline_parallel_size << "), router "
    << sim::to_string(in.cfg.router) << "; KV cache " << grouped(rc.num_blocks) << " blocks x " << rc.block_size
    << " tokens per replica ("
    << (rc.allocator == sim::Allocator::paged ? "paged" : "contiguous, max_model_len reserved per request")
    << (rc.allocator == sim::Allocator::paged
            ? (rc.prefix_caching && !rc.table_evicts ? ", prefix caching" : ", no prefix caching")
            : "")
    << ")\n";
  o << "  max_num_seqs " << rc.max_num_seqs << ", max_num_batched_tokens "
    << grouped(static_cast<std::uint64_t>(rc.max_num_batched_tokens)) << ", max_model_len "
    << grouped(static_cast<std::uint64_t>(rc.max_model_len)) << "; step time: " << in.step_time_source << "\n";
  if (in.cfg.prefill.num_replicas > 0)
    o << "  disaggregated: " << escape::terminal_text(in.prefill_desc) << "; the replicas above decode only\n";
  o << "  workload: " << escape::terminal_text(in.workload_desc) << "\n\n";
}

}  // namespace

void report_simulation_table(std::ostream& o, const SimulationInfo& in, const sim::SimResult& r) {
  simulation_header(o, in);

  const double span = r.end_s - r.first_arrival_s;
  o << "Requests     " << grouped(r.requests_completed) << " completed of " << grouped(r.requests_arrived)
    << " arrived";
  // The limit is max_model_len unless the KV pool holds less of one request (SimResult::max_request_tokens).
  const bool pool = in.plan && r.max_request_tokens > 0 && r.max_request_tokens < in.plan->dep.max_model_len;
  const std::string limit = pool ? "the pool's " + grouped(static_cast<std::uint64_t>(r.max_request_tokens)) + " tokens"
                                 : std::string("max_model_len");
  if (r.requests_rejected) o << ", " << grouped(r.requests_rejected) << " rejected (prompt >= " << limit << ")";
  if (r.requests_truncated) o << ", " << grouped(r.requests_truncated) << " outputs cut at " << limit;
  if (r.requests_completed == 0)
    o << "; nothing was served\n";
  else
    o << "; simulated " << fixed(span, 1) << " s\n";
  o << "Throughput   " << rate(r.requests_per_s, 0.01) << " req/s, " << rate(r.output_tokens_per_s, 10)
    << " output tokens/s, " << rate(r.prompt_tokens_per_s, 10) << " prompt tokens/s\n";
  if (in.cfg.slo.ttft_s || in.cfg.slo.tpot_s) {
    o << "Goodput      " << rate(r.goodput_requests_per_s, 0.01) << " req/s meeting";
    if (in.cfg.slo.ttft_s) o << " TTFT <= " << human_seconds(*in.cfg.slo.ttft_s);
    if (in.cfg.slo.ttft_s && in.cfg.slo.tpot_s) o << " and";
    if (in.cfg.slo.tpot_s) o << " TPOT <= " << human_seconds(*in.cfg.slo.tpot_s);
    // Over every request that arrived: a rejected request (longer than max_model_len) met no target.
    o << " ("
      << fixed(
             r.requests_arrived ? 100.0 * static_cast<double>(r.slo_met) / static_cast<double>(r.requests_arrived) : 0,
             1)
      << "% of requests" << (r.requests_rejected ? ", rejected ones counted as failed" : "") << ")\n";
  }
  o << "Preemptions  " << grouped(r.preemptions) << " (recompute; " << grouped(r.recomputed_tokens)
    << " tokens computed again)\n";
  if (r.prefix_cache_hit_tokens > 0)
    o << "Prefix cache " << fixed(100 * r.prefix_cache_hit_rate, 1) << "% of admitted tokens found cached ("
      << grouped(r.prefix_cache_hit_tokens) << " tokens)\n";
  if (r.host_hit_tokens > 0)
    o << "Host tier    " << grouped(r.host_hit_tokens) << " of the cached tokens loaded from host memory ("
      << fixed(1e3 * r.host_load_s / static_cast<double>(r.host_hit_tokens) * 1024, 2)
      << " ms per 1K tokens) instead of recomputed"
      << (r.host_disk_hit_tokens > 0 ? ", " + grouped(r.host_disk_hit_tokens) + " of them read from disk first" : "")
      << "\n";
  o << "KV cache     utilisation mean " << fixed(100 * r.kv_utilization_mean, 1) << "%, max "
    << fixed(100 * r.kv_utilization_max, 1) << "%; "
    << (r.kv_waste_measured ? fixed(100 * r.kv_waste_fraction, 1) + "% of allocated slots empty"
                            : std::string("empty slots not measured under --kv-eviction"))
    << "\n";
  o << "Queues       running mean " << fixed(r.running_mean, 1) << " (max " << r.running_max << "), waiting mean "
    << fixed(r.waiting_mean, 1) << " (max " << r.waiting_max << ") per replica\n";
  disaggregation_lines(o, in, r, span);
  o << "\n";

  latency_and_replicas(o, in, r);
}

/// --allocator compare: the same workload on paged blocks and on contiguous max_model_len reservations.
void report_allocator_comparison(std::ostream& o, const SimulationInfo& paged, const sim::SimResult& p,
                                 const SimulationInfo& contiguous, const sim::SimResult& c) {
  const auto& rc = paged.cfg.replica;
  const u64 per_request = ceil_div(static_cast<u64>(rc.max_model_len), static_cast<u64>(rc.block_size));
  o << "Allocator comparison: " << escape::terminal_text(paged.model_display) << " on "
    << escape::terminal_text(paged.gpu_display) << ", " << paged.cfg.num_replicas << " replica"
    << (paged.cfg.num_replicas == 1 ? "" : "s") << "\n";
  o << "  KV cache " << grouped(rc.num_blocks) << " blocks x " << rc.block_size << " tokens per replica; max_model_len "
    << grouped(static_cast<std::uint64_t>(rc.max_model_len)) << " (contiguous: " << grouped(per_request)
    << " blocks reserved per request, at most " << grouped(rc.num_blocks / per_request) << " at once)\n";
  o << "  workload: " << escape::terminal_text(paged.workload_desc) << "\n\n";
  o << "              KV slots empty  running mean  running max  KV used mean   req/s  TTFT p50  TTFT p99   E2E p99  "
       "preemptions\n";
  auto row = [&](const char* name, const sim::SimResult& r) {
    char buf[320];
    std::snprintf(buf, sizeof buf, "  %-12s %13.1f%% %13.1f %12lld %12.1f%% %7.2f %9s %9s %9s %12s\n", name,
                  100 * r.kv_waste_fraction, r.running_mean, static_cast<long long>(r.running_max),
                  100 * r.kv_utilization_mean, r.requests_per_s, human_seconds(r.ttft_s.p50).c_str(),
                  human_seconds(r.ttft_s.p99).c_str(), human_seconds(r.e2e_s.p99).c_str(),
                  grouped(r.preemptions).c_str());
    o << buf;
  };
  row("paged", p);
  row("contiguous", c);
  o << "\nKV slots empty: time-weighted share of allocated KV slots holding no token (paged: the last partial block "
       "of\n"
       "each request; contiguous: everything between a request's length and max_model_len).\n";
  if (paged.benchmark && contiguous.benchmark)
    o << "A benchmark whose " << paged.benchmark->clients
      << " clients send their first requests together reads (first wave and steady state, docs/simulator.md):\n"
      << "mean TTFT " << human_seconds(paged.benchmark->ttft_s) << " paged, "
      << human_seconds(contiguous.benchmark->ttft_s) << " contiguous.\n";
  if (paged.wall_s && contiguous.wall_s)
    o << "\nSimulated 2 x " << grouped(p.requests_arrived) << " requests in "
      << fixed(*paged.wall_s + *contiguous.wall_s, 2) << " s wall\n";
}

namespace {

/// Per replica: routed, completed, preempted, KV and queue figures.
nlohmann::ordered_json replicas_json(const std::vector<sim::ReplicaStats>& replicas) {
  nlohmann::ordered_json reps = nlohmann::ordered_json::array();
  for (const auto& s : replicas)
    reps.push_back({{"requests_routed", s.routed},
                    {"requests_completed", s.completed},
                    {"preemptions", s.preemptions},
                    {"steps", s.steps},
                    {"busy_s", s.busy_s},
                    {"kv_utilization", {{"mean", s.kv_utilization_mean}, {"max", s.kv_utilization_max}}},
                    {"running", {{"mean", s.running_mean}, {"max", s.running_max}}},
                    {"waiting", {{"mean", s.waiting_mean}, {"max", s.waiting_max}}},
                    {"prefill_tokens", s.prefill_tokens},
                    {"decode_tokens", s.decode_tokens},
                    {"recomputed_tokens", s.recomputed_tokens},
                    {"prefix_cache_hit_tokens", s.prefix_cache_hit_tokens},
                    {"host_hit_tokens", s.host_hit_tokens}});
  return reps;
}

}  // namespace

namespace {

/// The cluster and scheduler the run had.
nlohmann::ordered_json deployment_json(const SimulationInfo& in) {
  const auto& p = *in.plan;
  const auto& rc = in.cfg.replica;
  return {{"tensor_parallel_size", p.dep.d.tensor_parallel_size},
          {"pipeline_parallel_size", p.dep.d.pipeline_parallel_size},
          {"replicas", in.cfg.num_replicas},
          {"router", std::string(sim::to_string(in.cfg.router))},
          {"allocator", rc.allocator == sim::Allocator::paged ? "paged" : "contiguous"},
          {"prefix_caching", rc.allocator == sim::Allocator::paged && rc.prefix_caching && !rc.table_evicts},
          {"block_size", rc.block_size},
          {"num_blocks_per_replica", rc.num_blocks},
          {"kv_capacity_tokens_per_replica", p.kv_capacity_tokens},
          {"max_num_seqs", rc.max_num_seqs},
          {"max_num_batched_tokens", rc.max_num_batched_tokens},
          {"max_model_len", rc.max_model_len}};
}

/// Disaggregated serving: both pools, the link and the transfers.
nlohmann::ordered_json disaggregation_json(const SimulationInfo& in, const sim::SimResult& r) {
  const auto& pd = in.cfg.prefill.replica;
  return {{"prefill_replicas", in.cfg.prefill.num_replicas},
          {"decode_replicas", in.cfg.num_replicas},
          {"prefill_gpu", in.prefill_gpu},
          {"prefill_num_blocks_per_replica", pd.num_blocks},
          {"prefill_max_num_batched_tokens", pd.max_num_batched_tokens},
          {"kv_link",
           {{"name", in.kv_link.name},
            {"bandwidth_bytes_per_s", in.kv_link.bandwidth_bytes_per_s},
            {"latency_s", in.kv_link.latency_s}}},
          {"kv_transfers", r.kv_transfers},
          {"kv_transfer_s_mean", r.kv_transfer_s_mean},
          {"kv_transfer_tokens_mean", r.kv_transfer_tokens_mean},
          {"prefill_workers", replicas_json(r.prefill_replicas)}};
}

/// The goodput targets and how many requests met them (rejected ones count as failed).
nlohmann::ordered_json goodput_json(const SimulationInfo& in, const sim::SimResult& r) {
  nlohmann::ordered_json g;
  g["ttft_target_s"] = in.cfg.slo.ttft_s ? nlohmann::ordered_json(*in.cfg.slo.ttft_s) : nlohmann::ordered_json(nullptr);
  g["tpot_target_s"] = in.cfg.slo.tpot_s ? nlohmann::ordered_json(*in.cfg.slo.tpot_s) : nlohmann::ordered_json(nullptr);
  g["requests_per_s"] = r.goodput_requests_per_s;
  g["slo_attainment"] =
      r.requests_arrived ? static_cast<double>(r.slo_met) / static_cast<double>(r.requests_arrived) : 0.0;
  return g;
}

/// A closed loop's benchmark mean, first wave included (null where the run has none; sim::benchmark_mean).
nlohmann::ordered_json benchmark_json(const SimulationInfo& in) {
  const auto& b = in.benchmark;
  if (!b) return nullptr;
  return {{"requests", b->requests},
          {"clients", b->clients},
          {"first_wave_requests", b->first_wave_requests},
          {"ttft_s", b->ttft_s},
          {"tpot_s", std::isnan(b->tpot_s) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(b->tpot_s)},
          {"e2e_s", b->e2e_s},
          {"first_wave_ttft_s", summary_json(b->first_wave_ttft_s)}};
}

/// The replicas' busy time by term (as step_time_line), in seconds.
nlohmann::ordered_json step_breakdown_json(const StepCost& b) {
  return {{"busy", b.step_s},
          {"weights_read", b.weights_read_s},
          {"kv_read", b.kv_read_s},
          {"gemm", b.gemm_s},
          {"attention", b.attention_s},
          {"routed_experts", b.experts_s},
          {"communication", b.communication_s},
          {"overhead", b.overhead_s},
          {"pipeline_p2p", b.pipeline_p2p_s}};
}

}  // namespace

nlohmann::ordered_json simulation_json(const SimulationInfo& in, const sim::SimResult& r) {
  nlohmann::ordered_json j;
  j["model"] = in.model;
  j["gpu"] = in.gpu;
  j["deployment"] = deployment_json(in);
  j["workload"] = {{"source", in.workload_source}, {"name", in.workload_name}, {"description", in.workload_desc}};
  if (in.cfg.max_concurrency > 0) {
    j["workload"]["max_concurrency"] = in.cfg.max_concurrency;
    j["workload"]["think_time_s"] = in.cfg.think_time_s;
    j["workload"]["coincident_sends"] = r.coincident_sends;
  }
  j["step_time"] = in.step_time_source;
  if (!in.expected_error.empty()) j["expected_error"] = in.expected_error;
  j["requests_arrived"] = r.requests_arrived;
  j["requests_completed"] = r.requests_completed;
  j["requests_rejected"] = r.requests_rejected;
  j["requests_truncated"] = r.requests_truncated;
  j["ttft_s"] = summary_json(r.ttft_s);
  j["tpot_s"] = summary_json(r.tpot_s);
  j["itl_s"] = summary_json(r.itl_s);
  j["e2e_s"] = summary_json(r.e2e_s);
  j["queue_s"] = summary_json(r.queue_s);
  j["benchmark_mean"] = benchmark_json(in);
  j["throughput"] = {{"requests_per_s", r.requests_per_s},
                     {"output_tokens_per_s", r.output_tokens_per_s},
                     {"prompt_tokens_per_s", r.prompt_tokens_per_s}};
  j["goodput"] = goodput_json(in, r);
  j["preemptions"] = r.preemptions;
  j["recomputed_tokens"] = r.recomputed_tokens;
  j["prefix_cache"] = {{"hit_tokens", r.prefix_cache_hit_tokens},
                       {"hit_rate", r.prefix_cache_hit_rate},
                       {"host_hit_tokens", r.host_hit_tokens},
                       {"host_disk_hit_tokens", r.host_disk_hit_tokens},
                       {"host_load_s", r.host_load_s}};
  j["kv_utilization"] = {{"mean", r.kv_utilization_mean}, {"max", r.kv_utilization_max}};
  j["kv_waste_fraction"] = r.kv_waste_measured ? nlohmann::ordered_json(r.kv_waste_fraction) : nullptr;
  j["running"] = {{"mean", r.running_mean}, {"max", r.running_max}};
  j["waiting"] = {{"mean", r.waiting_mean}, {"max", r.waiting_max}};
  j["first_arrival_s"] = r.first_arrival_s;
  j["end_s"] = r.end_s;
  j["prompt_tokens"] = r.prompt_tokens;
  j["output_tokens"] = r.output_tokens;
  j["step_time_breakdown_s"] = step_breakdown_json(r.busy_breakdown_s);
  j["replicas"] = replicas_json(r.replicas);
  if (in.cfg.prefill.num_replicas > 0) j["disaggregation"] = disaggregation_json(in, r);
  j["balance_max_over_mean"] = r.balance_max_over_mean;
  j["steps"] = r.steps;
  j["events"] = r.events;
  j["wall_time_s"] = in.wall_s ? nlohmann::ordered_json(*in.wall_s) : nlohmann::ordered_json(nullptr);
  j["simulated_requests_per_wall_s"] =
      in.wall_s && *in.wall_s > 0 ? nlohmann::ordered_json(static_cast<double>(r.requests_arrived) / *in.wall_s)
                                  : nlohmann::ordered_json(nullptr);
  return j;
}

void report_simulation_csv(std::ostream& o, const SimulationInfo& in, const sim::SimResult& r, bool header) {
  if (header)
    o << "model,gpu,replicas,router,allocator,requests_completed,requests_arrived,requests_rejected,requests_"
         "truncated,ttft_mean_s,ttft_p50_s,ttft_p90_s,ttft_p99_s,tpot_"
         "mean_s,tpot_p50_s,"
         "tpot_p90_s,tpot_p99_s,itl_mean_s,itl_p50_s,itl_p90_s,itl_p99_s,e2e_mean_s,e2e_p50_s,e2e_p90_s,e2e_p99_s,"
         "requests_per_s,output_tokens_per_s,goodput_"
         "requests_per_s,"
         "preemptions,kv_utilization_mean,kv_utilization_max,kv_waste_fraction,wall_time_s,prefill_replicas,kv_"
         "transfer_s_mean,benchmark_ttft_mean_s,benchmark_tpot_mean_s\n";
  // Names come from profiles and config files: RFC 4180 quoting and formula neutralisation (cli/escape).
  o << escape::csv_field(in.model) << ',' << escape::csv_field(in.gpu) << ',' << in.cfg.num_replicas << ','
    << sim::to_string(in.cfg.router) << ','
    << (in.cfg.replica.allocator == sim::Allocator::paged ? "paged" : "contiguous") << ',';
  o << r.requests_completed << ',' << r.requests_arrived << ',' << r.requests_rejected << ',' << r.requests_truncated
    << ',';
  for (const sim::LatencySummary* s : {&r.ttft_s, &r.tpot_s, &r.itl_s, &r.e2e_s})
    for (double x : {s->mean, s->p50, s->p90, s->p99}) o << csv_num(x, s->count > 0) << ',';
  for (double x : {r.requests_per_s, r.output_tokens_per_s, r.goodput_requests_per_s}) o << csv_num(x) << ',';
  o << r.preemptions << ',';
  for (double x : {r.kv_utilization_mean, r.kv_utilization_max}) o << csv_num(x) << ',';
  o << csv_num(r.kv_waste_fraction, r.kv_waste_measured) << ',';
  o << (in.wall_s ? fixed(*in.wall_s, 3) : "") << ',' << in.cfg.prefill.num_replicas << ','
    << csv_num(r.kv_transfer_s_mean, in.cfg.prefill.num_replicas > 0) << ','
    << (in.benchmark ? csv_num(in.benchmark->ttft_s) : "") << ','
    << (in.benchmark ? csv_num(in.benchmark->tpot_s, !std::isnan(in.benchmark->tpot_s)) : "") << "\n";
}

std::string describe_workload(const WorkloadSpec& w, const std::string& file, const sim::SourceLimits& limits,
                              std::uint64_t seed, bool closed_loop) {
  std::ostringstream o;
  if (!file.empty()) o << "'" << w.name << "' (" << file << "): ";
  // Each arrival starts a conversation: the rate counts conversations.
  const char* per_s = w.conversation.enabled() && w.conversation.users == 0 ? " conversations/s" : " req/s";
  if (w.arrival.kind == ArrivalProcess::Kind::closed) {
    o << "closed loop from the file";
  } else if (std::isinf(w.arrival.rate_per_s)) {
    // --max-concurrency without --rate: no pacing, each client sends when its previous request ends.
    o << (closed_loop ? "no rate cap (clients send as they free up)" : "every request at t = 0");
  } else if (!w.arrival.phases.empty()) {
    o << to_string(w.arrival.kind) << " arrivals in " << w.arrival.phases.size()
      << (w.arrival.phases.size() == 1 ? " phase:" : " phases:");
    for (std::size_t i = 0; i < w.arrival.phases.size(); ++i)
      o << (i ? "," : "") << " " << w.arrival.phases[i].rate_per_s << per_s << " for " << w.arrival.phases[i].duration_s
        << " s";
  } else {
    o << to_string(w.arrival.kind) << " arrivals at " << w.arrival.rate_per_s << per_s;
    if (w.arrival.kind == ArrivalProcess::Kind::gamma) o << " (cv " << w.arrival.cv << ")";
  }
  o << "; prompt " << describe_length(w.prompt) << ", output " << describe_length(w.output);
  if (w.shared_prefix.enabled())
    o << "; " << w.shared_prefix.num_groups
      << (w.shared_prefix.num_groups == 1 ? " shared prefix of " : " shared prefixes of ") << w.shared_prefix.tokens
      << " tokens (" << fixed(100 * w.shared_prefix.fraction, 0) << "% of requests)";
  const auto& cv = w.conversation;
  if (cv.users > 0)
    o << "; requests dealt to " << grouped(static_cast<std::uint64_t>(cv.users)) << " users, one turn in flight each";
  else if (cv.enabled())
    o << "; each arrival starts a conversation of " << describe_length(cv.turns) << " turns";
  if (cv.enabled()) {
    o << " (history " << to_string(cv.history);
    if (cv.think_time_s > 0)
      o << ", think time " << (cv.think_time_exponential ? "exponential, mean " : "") << cv.think_time_s << " s";
    o << ")";
  }
  // Phases or a duration may end the arrivals first: the count is then a bound.
  if (limits.num_requests)
    o << "; " << (w.arrival.phases.empty() && !limits.duration_s ? "" : "at most ") << grouped(*limits.num_requests)
      << " requests";
  if (limits.duration_s) o << "; arrivals for " << amount(*limits.duration_s, 1) << " s";
  o << "; seed " << seed;
  return o.str();
}

std::string describe_trace(const std::string& name, const sim::Trace& t, double speedup,
                           const sim::SourceLimits& limits) {
  std::ostringstream o;
  o << "trace " << name << " (" << grouped(t.requests.size()) << " requests over " << fixed(t.span_s, 1) << " s";
  if (speedup != 1) o << " after x" << speedup << " speed-up";
  o << "; columns " << t.time_column << ", " << t.prompt_column << ", " << t.output_column;
  if (t.reordered_rows) o << "; " << grouped(t.reordered_rows) << " rows out of time order, sorted";
  o << ")";
  if (limits.num_requests && *limits.num_requests < t.requests.size())
    o << ", first " << grouped(*limits.num_requests);
  else if (limits.num_requests && *limits.num_requests > t.requests.size())  // a replay ends with the trace
    o << ", every row (--num-requests " << grouped(*limits.num_requests) << " is more than the trace holds)";
  if (limits.duration_s) o << ", arrivals before " << amount(*limits.duration_s, 1) << " s";
  return o.str();
}

std::string describe_closed_loop(const sim::SimConfig& cfg, bool staggered_asked, bool one_wave, bool lockstep_engine) {
  if (cfg.max_concurrency == 0) return "";
  std::string d = "; closed loop: at most " + grouped(cfg.max_concurrency) + " in flight";
  if (cfg.think_time_s > 0)
    d += ", think time " + std::string(cfg.think_time_exponential ? "exponential, mean " : "") +
         fixed(cfg.think_time_s, 3) + " s";
  // A run of fewer than 2N requests is one wave of the benchmark: its clients do start together.
  if (staggered_asked && one_wave)
    d += "; clients together (fewer than 2 x " + grouped(cfg.max_concurrency) + " requests: one wave)";
  if (lockstep_engine) d += "; clients together (a prefill-first engine keeps them in lockstep)";
  if (cfg.client_stagger_s > 0) d += "; clients staggered over " + fixed(cfg.client_stagger_s, 2) + " s";
  return d;
}

RequestCsv::RequestCsv(std::ostream& o) : o_(o) {
  o_ << "id,replica,arrival_s,first_scheduled_s,first_token_s,finish_s,prompt_tokens,output_tokens,cached_prompt_"
        "tokens,"
        "preemptions,truncated,conversation,turn\n";
}

void RequestCsv::on_request_done(const sim::RequestRecord& r) {
  char buf[320];
  std::snprintf(buf, sizeof buf, "%llu,%u,%.6f,%.6f,%.6f,%.6f,%lld,%lld,%lld,%u,%d,%lld,%u\n",
                static_cast<unsigned long long>(r.id), r.replica, r.arrival_s, r.first_scheduled_s, r.first_token_s,
                r.finish_s, static_cast<long long>(r.prompt_tokens), static_cast<long long>(r.output_tokens),
                static_cast<long long>(r.cached_prompt_tokens), r.preemptions, r.truncated ? 1 : 0,
                static_cast<long long>(r.conversation), r.turn);
  o_ << buf;
}

std::function<void(const sim::Progress&)> ProgressLine::callback() {
  return [this](const sim::Progress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    printed_ = true;
    std::string line = "\r  simulating: " + grouped(p.arrived) + " requests arrived";
    if (p.total && *p.total > 0)
      line += " of " + grouped(*p.total) + " (" +
              fixed(100.0 * static_cast<double>(p.arrived) / static_cast<double>(*p.total), 0) + "%)";
    line += ", " + grouped(p.completed) + " done, t = " + fixed(p.time_s, 0) + " s   ";
    std::cerr << line << std::flush;
  };
}

void ProgressLine::clear() {
  if (printed_) std::cerr << "\r" << std::string(100, ' ') << "\r" << std::flush;
  printed_ = false;
}

}  // namespace kvcap::cli
