// kvcap simulate: the serving simulator over a deployment (memory plan -> KV blocks per replica, speed
// model -> step times) driven by a workload file, a CSV trace, or flags. docs/simulator.md.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

#include "common.hpp"
#include "kvcap/planner/engine.hpp"
#include "format.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/simulator/simulator.hpp"
#include "kvcap/simulator/timeline.hpp"
#include "kvcap/simulator/trace.hpp"
#include "report.hpp"

namespace kvcap::cli {

namespace {

/// --prompt-tokens / --output-tokens:
///   N                                   fixed (N may be 1K, 2k, ...)
///   uniform:MIN-MAX                     integers in [MIN, MAX]
///   lognormal:mean=M,sigma=S[,min=A][,max=B]
///   empirical:V1,V2,...   or   empirical:V1@W1,V2@W2,...
LengthDistribution parse_length(const std::string& spec, const std::string& flag) {
  const std::string help = " (forms: 512 | uniform:128-2K | lognormal:mean=1K,sigma=0.9[,min=16,max=8K] | empirical:128@0.5,1K@0.5)";
  const auto colon = spec.find(':');
  if (colon == std::string::npos) return LengthDistribution::fixed_tokens(parse_tokens(spec, flag));
  const std::string kind = spec.substr(0, colon), rest = spec.substr(colon + 1);
  LengthDistribution d;
  if (kind == "uniform") {
    const auto dash = rest.find('-');
    if (dash == std::string::npos) throw UsageError(flag + ": expected uniform:MIN-MAX, got '" + spec + "'" + help);
    d = LengthDistribution::uniform_tokens(parse_tokens(rest.substr(0, dash), flag), parse_tokens(rest.substr(dash + 1), flag));
  } else if (kind == "lognormal") {
    d = LengthDistribution::lognormal_tokens(0, -1);
    for (const auto& kv : split_list(rest, ',', true)) {
      const auto eq = kv.find('=');
      const std::string k = kv.substr(0, eq), v = eq == std::string::npos ? "" : kv.substr(eq + 1);
      if (k == "mean") d.lognormal_mean_tokens = static_cast<double>(parse_tokens(v, flag + " mean"));
      else if (k == "sigma") d.sigma = parse_real(v, flag + " sigma", "a number such as 0.9");
      else if (k == "min") d.min_tokens = parse_tokens(v, flag + " min");
      else if (k == "max") d.max_tokens = parse_tokens(v, flag + " max");
      else throw UsageError(flag + ": unknown lognormal parameter '" + k + "' in '" + spec + "'" + help);
    }
    if (d.lognormal_mean_tokens <= 0 || d.sigma < 0) throw UsageError(flag + ": lognormal needs mean= and sigma=" + help);
  } else if (kind == "empirical") {
    std::vector<i64> values;
    std::vector<double> weights;
    for (const auto& item : split_list(rest, ',', true)) {
      const auto at = item.find('@');
      values.push_back(parse_tokens(item.substr(0, at), flag));
      if (at != std::string::npos) weights.push_back(parse_real(item.substr(at + 1), flag, "a weight such as 0.3"));
    }
    if (!weights.empty() && weights.size() != values.size())
      throw UsageError(flag + ": give a weight for every value or for none, in '" + spec + "'" + help);
    d = LengthDistribution::empirical_tokens(values, weights);
  } else {
    throw UsageError(flag + ": unknown distribution '" + kind + "'" + help);
  }
  try {
    validate(d, flag);
  } catch (const SpecError& e) {
    throw UsageError(e.what());
  }
  return d;
}

std::string length_desc(const LengthDistribution& d) {
  std::ostringstream o;
  switch (d.kind) {
    case LengthDistribution::Kind::fixed: o << d.tokens; break;
    case LengthDistribution::Kind::uniform: o << "uniform " << d.min_tokens << "-" << d.max_tokens; break;
    case LengthDistribution::Kind::lognormal:
      o << "lognormal mean " << fixed(d.lognormal_mean_tokens, 0) << " sigma " << d.sigma;
      if (d.min_tokens > 1 || d.max_tokens > 0) o << " in [" << d.min_tokens << ", " << (d.max_tokens > 0 ? std::to_string(d.max_tokens) : "inf") << "]";
      break;
    case LengthDistribution::Kind::empirical: o << "empirical over " << d.values.size() << " values"; break;
  }
  o << " (mean " << fixed(d.mean_tokens(), 1) << ")";
  return o.str();
}

/// Per-request CSV (--requests-out).
class RequestCsv : public sim::Observer {
 public:
  explicit RequestCsv(std::ostream& o) : o_(o) {
    o_ << "id,replica,arrival_s,first_scheduled_s,first_token_s,finish_s,prompt_tokens,output_tokens,cached_prompt_tokens,preemptions,truncated\n";
  }
  void on_request_done(const sim::RequestRecord& r) override {
    char buf[320];
    std::snprintf(buf, sizeof buf, "%llu,%u,%.6f,%.6f,%.6f,%.6f,%lld,%lld,%lld,%u,%d\n", static_cast<unsigned long long>(r.id),
                  r.replica, r.arrival_s, r.first_scheduled_s, r.first_token_s, r.finish_s, static_cast<long long>(r.prompt_tokens),
                  static_cast<long long>(r.output_tokens), static_cast<long long>(r.cached_prompt_tokens), r.preemptions,
                  r.truncated ? 1 : 0);
    o_ << buf;
  }

 private:
  std::ostream& o_;
};

std::ofstream open_out(const std::string& path, const char* flag) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw UsageError(std::string(flag) + ": cannot write '" + path + "'");
  return f;
}

std::string secs(double s) {
  if (s == 0) return "0";
  if (s < 1e-3) return fixed(s * 1e6, 0) + " us";
  if (s < 1) return fixed(s * 1e3, s < 0.01 ? 2 : 1) + " ms";
  return fixed(s, s < 100 ? 2 : 1) + " s";
}

nlohmann::ordered_json summary_json(const sim::LatencySummary& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"max", s.max}, {"count", s.count}};
}

struct RunInfo {
  std::string model, model_display, gpu, gpu_display;
  const MemoryPlan* plan = nullptr;
  sim::SimConfig cfg;
  std::string workload_desc;   ///< one line for people
  std::string workload_source; ///< "trace" | "workload" | "flags"
  std::string workload_name;
  std::string step_time_source;
  std::string expected_error;  ///< the engine profile's error band ("" when unknown)
  std::optional<double> wall_s;
};

void report_table(std::ostream& o, const RunInfo& in, const sim::SimResult& r) {
  const auto& p = *in.plan;
  const auto& d = p.dep;
  const auto& rc = in.cfg.replica;
  o << "Simulation: " << in.model_display << " on " << in.gpu_display << "\n";
  o << "  " << in.cfg.num_replicas << " replica" << (in.cfg.num_replicas == 1 ? "" : "s") << " x (TP " << d.d.tensor_parallel_size
    << " x PP " << d.d.pipeline_parallel_size << "), router " << sim::to_string(in.cfg.router) << "; KV cache "
    << grouped(rc.num_blocks) << " blocks x " << rc.block_size << " tokens per replica ("
    << (rc.allocator == sim::Allocator::paged ? "paged" : "contiguous, max_model_len reserved per request")
    << (rc.allocator == sim::Allocator::paged ? (rc.prefix_caching ? ", prefix caching" : ", no prefix caching") : "") << ")\n";
  o << "  max_num_seqs " << rc.max_num_seqs << ", max_num_batched_tokens " << grouped(static_cast<std::uint64_t>(rc.max_num_batched_tokens))
    << ", max_model_len " << grouped(static_cast<std::uint64_t>(rc.max_model_len)) << "; step time: " << in.step_time_source << "\n";
  o << "  workload: " << in.workload_desc << "\n\n";

  const double span = r.end_s - r.first_arrival_s;
  o << "Requests     " << grouped(r.requests_completed) << " completed of " << grouped(r.requests_arrived) << " arrived";
  if (r.requests_rejected) o << ", " << grouped(r.requests_rejected) << " rejected (prompt >= max_model_len)";
  if (r.requests_truncated) o << ", " << grouped(r.requests_truncated) << " outputs cut at max_model_len";
  o << "; simulated " << fixed(span, 1) << " s\n";
  o << "Throughput   " << fixed(r.requests_per_s, 2) << " req/s, " << grouped(static_cast<std::uint64_t>(std::llround(r.output_tokens_per_s)))
    << " output tokens/s, " << grouped(static_cast<std::uint64_t>(std::llround(r.prompt_tokens_per_s))) << " prompt tokens/s\n";
  if (in.cfg.slo.ttft_s || in.cfg.slo.tpot_s) {
    o << "Goodput      " << fixed(r.goodput_requests_per_s, 2) << " req/s meeting";
    if (in.cfg.slo.ttft_s) o << " TTFT <= " << secs(*in.cfg.slo.ttft_s);
    if (in.cfg.slo.ttft_s && in.cfg.slo.tpot_s) o << " and";
    if (in.cfg.slo.tpot_s) o << " TPOT <= " << secs(*in.cfg.slo.tpot_s);
    // Over every request that arrived: a rejected request (longer than max_model_len) met no target.
    o << " (" << fixed(r.requests_arrived ? 100.0 * static_cast<double>(r.slo_met) / static_cast<double>(r.requests_arrived) : 0, 1)
      << "% of requests" << (r.requests_rejected ? ", rejected ones counted as failed" : "") << ")\n";
  }
  o << "Preemptions  " << grouped(r.preemptions) << " (recompute; " << grouped(r.recomputed_tokens) << " tokens computed again)\n";
  o << "KV cache     utilisation mean " << fixed(100 * r.kv_utilization_mean, 1) << "%, max " << fixed(100 * r.kv_utilization_max, 1)
    << "%; " << fixed(100 * r.kv_waste_fraction, 1) << "% of allocated slots empty\n";
  o << "Queues       running mean " << fixed(r.running_mean, 1) << " (max " << r.running_max << "), waiting mean "
    << fixed(r.waiting_mean, 1) << " (max " << r.waiting_max << ") per replica\n\n";

  o << "Latency             mean       p50       p90       p99       max\n";
  auto row = [&](const char* name, const sim::LatencySummary& s) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "  %-10s %10s%10s%10s%10s%10s\n", name, secs(s.mean).c_str(), secs(s.p50).c_str(),
                  secs(s.p90).c_str(), secs(s.p99).c_str(), secs(s.max).c_str());
    o << buf;
  };
  row("TTFT", r.ttft_s);
  row("TPOT", r.tpot_s);
  row("E2E", r.e2e_s);
  row("queueing", r.queue_s);
  if (!in.expected_error.empty()) o << "Expected error: " << in.expected_error << "\n";

  if (r.replicas.size() > 1) {
    o << "\nPer replica  requests  preempted  KV mean  KV max  busy  running mean\n";
    for (std::size_t i = 0; i < r.replicas.size(); ++i) {
      const auto& s = r.replicas[i];
      char buf[200];
      std::snprintf(buf, sizeof buf, "  %3zu  %12s %10s %7.1f%% %6.1f%% %4.0f%% %13.1f\n", i, grouped(s.completed).c_str(),
                    grouped(s.preemptions).c_str(), 100 * s.kv_utilization_mean, 100 * s.kv_utilization_max,
                    span > 0 ? 100 * s.busy_s / span : 0.0, s.running_mean);
      o << buf;
    }
    o << "  balance: busiest replica completed " << fixed(r.balance_max_over_mean, 2) << "x the mean\n";
  }
  const auto& b = r.busy_breakdown_s;
  if (b.step_s > 0) {
    auto pct = [&](double v) { return fixed(100 * v / b.step_s, 0) + "%"; };
    o << "\nStep time    " << grouped(r.steps) << " steps, busy " << fixed(b.step_s, 1) << " s; binding stage per step: weights "
      << pct(b.weights_read_s) << ", KV read " << pct(b.kv_read_s) << ", GEMM " << pct(b.gemm_s) << ", attention "
      << pct(b.attention_s) << ", communication " << pct(b.communication_s) << ", overhead " << pct(b.overhead_s)
      << " (memory and compute overlap)\n";
  }
  if (in.wall_s) {
    o << "\nSimulated " << grouped(r.requests_arrived) << " requests (" << grouped(r.events) << " events) in " << fixed(*in.wall_s, 2)
      << " s wall: " << grouped(static_cast<std::uint64_t>(std::llround(*in.wall_s > 0 ? static_cast<double>(r.requests_arrived) / *in.wall_s : 0)))
      << " requests per wall-second\n";
  }
}

/// --allocator compare: the same workload on paged blocks and on contiguous max_model_len reservations.
void report_compare_table(std::ostream& o, const RunInfo& paged, const sim::SimResult& p, const RunInfo& contiguous,
                          const sim::SimResult& c) {
  const auto& rc = paged.cfg.replica;
  const u64 per_request = ceil_div(static_cast<u64>(rc.max_model_len), static_cast<u64>(rc.block_size));
  o << "Allocator comparison: " << paged.model_display << " on " << paged.gpu_display << ", " << paged.cfg.num_replicas
    << " replica" << (paged.cfg.num_replicas == 1 ? "" : "s") << "\n";
  o << "  KV cache " << grouped(rc.num_blocks) << " blocks x " << rc.block_size << " tokens per replica; max_model_len "
    << grouped(static_cast<std::uint64_t>(rc.max_model_len)) << " (contiguous: " << grouped(per_request)
    << " blocks reserved per request, at most " << grouped(rc.num_blocks / per_request) << " at once)\n";
  o << "  workload: " << paged.workload_desc << "\n\n";
  o << "              KV slots empty  running mean  running max  KV used mean   req/s  TTFT p50  TTFT p99   E2E p99  preemptions\n";
  auto row = [&](const char* name, const sim::SimResult& r) {
    char buf[320];
    std::snprintf(buf, sizeof buf, "  %-12s %13.1f%% %13.1f %12lld %12.1f%% %7.2f %9s %9s %9s %12s\n", name,
                  100 * r.kv_waste_fraction, r.running_mean, static_cast<long long>(r.running_max), 100 * r.kv_utilization_mean,
                  r.requests_per_s, secs(r.ttft_s.p50).c_str(), secs(r.ttft_s.p99).c_str(), secs(r.e2e_s.p99).c_str(),
                  grouped(r.preemptions).c_str());
    o << buf;
  };
  row("paged", p);
  row("contiguous", c);
  o << "\nKV slots empty: time-weighted share of allocated KV slots holding no token (paged: the last partial block of\n"
       "each request; contiguous: everything between a request's length and max_model_len).\n";
  if (paged.wall_s && contiguous.wall_s)
    o << "\nSimulated 2 x " << grouped(p.requests_arrived) << " requests in " << fixed(*paged.wall_s + *contiguous.wall_s, 2)
      << " s wall\n";
}

nlohmann::ordered_json result_json(const RunInfo& in, const sim::SimResult& r) {
  const auto& p = *in.plan;
  const auto& rc = in.cfg.replica;
  nlohmann::ordered_json j;
  j["model"] = in.model;
  j["gpu"] = in.gpu;
  j["deployment"] = {{"tensor_parallel_size", p.dep.d.tensor_parallel_size},
                     {"pipeline_parallel_size", p.dep.d.pipeline_parallel_size},
                     {"replicas", in.cfg.num_replicas},
                     {"router", std::string(sim::to_string(in.cfg.router))},
                     {"allocator", rc.allocator == sim::Allocator::paged ? "paged" : "contiguous"},
                     {"prefix_caching", rc.allocator == sim::Allocator::paged && rc.prefix_caching},
                     {"block_size", rc.block_size},
                     {"num_blocks_per_replica", rc.num_blocks},
                     {"kv_capacity_tokens_per_replica", p.kv_capacity_tokens},
                     {"max_num_seqs", rc.max_num_seqs},
                     {"max_num_batched_tokens", rc.max_num_batched_tokens},
                     {"max_model_len", rc.max_model_len}};
  j["workload"] = {{"source", in.workload_source}, {"name", in.workload_name}, {"description", in.workload_desc}};
  if (in.cfg.max_concurrency > 0) {
    j["workload"]["max_concurrency"] = in.cfg.max_concurrency;
    j["workload"]["think_time_s"] = in.cfg.think_time_s;
  }
  j["step_time"] = in.step_time_source;
  if (!in.expected_error.empty()) j["expected_error"] = in.expected_error;
  j["requests_arrived"] = r.requests_arrived;
  j["requests_completed"] = r.requests_completed;
  j["requests_rejected"] = r.requests_rejected;
  j["requests_truncated"] = r.requests_truncated;
  j["ttft_s"] = summary_json(r.ttft_s);
  j["tpot_s"] = summary_json(r.tpot_s);
  j["e2e_s"] = summary_json(r.e2e_s);
  j["queue_s"] = summary_json(r.queue_s);
  j["throughput"] = {{"requests_per_s", r.requests_per_s},
                     {"output_tokens_per_s", r.output_tokens_per_s},
                     {"prompt_tokens_per_s", r.prompt_tokens_per_s}};
  nlohmann::ordered_json g;
  g["ttft_target_s"] = in.cfg.slo.ttft_s ? nlohmann::ordered_json(*in.cfg.slo.ttft_s) : nlohmann::ordered_json(nullptr);
  g["tpot_target_s"] = in.cfg.slo.tpot_s ? nlohmann::ordered_json(*in.cfg.slo.tpot_s) : nlohmann::ordered_json(nullptr);
  g["requests_per_s"] = r.goodput_requests_per_s;
  g["slo_attainment"] = r.requests_arrived ? static_cast<double>(r.slo_met) / static_cast<double>(r.requests_arrived) : 0.0;
  j["goodput"] = g;
  j["preemptions"] = r.preemptions;
  j["recomputed_tokens"] = r.recomputed_tokens;
  j["kv_utilization"] = {{"mean", r.kv_utilization_mean}, {"max", r.kv_utilization_max}};
  j["kv_waste_fraction"] = r.kv_waste_fraction;
  j["running"] = {{"mean", r.running_mean}, {"max", r.running_max}};
  j["waiting"] = {{"mean", r.waiting_mean}, {"max", r.waiting_max}};
  j["first_arrival_s"] = r.first_arrival_s;
  j["end_s"] = r.end_s;
  j["prompt_tokens"] = r.prompt_tokens;
  j["output_tokens"] = r.output_tokens;
  const auto& b = r.busy_breakdown_s;
  j["step_time_breakdown_s"] = {{"busy", b.step_s},        {"weights_read", b.weights_read_s}, {"kv_read", b.kv_read_s},
                                {"gemm", b.gemm_s},         {"attention", b.attention_s},       {"communication", b.communication_s},
                                {"overhead", b.overhead_s}, {"pipeline_p2p", b.pipeline_p2p_s}};
  nlohmann::ordered_json reps = nlohmann::ordered_json::array();
  for (const auto& s : r.replicas)
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
                    {"prefix_cache_hit_tokens", s.prefix_cache_hit_tokens}});
  j["replicas"] = reps;
  j["balance_max_over_mean"] = r.balance_max_over_mean;
  j["steps"] = r.steps;
  j["events"] = r.events;
  j["wall_time_s"] = in.wall_s ? nlohmann::ordered_json(*in.wall_s) : nlohmann::ordered_json(nullptr);
  j["simulated_requests_per_wall_s"] =
      in.wall_s && *in.wall_s > 0 ? nlohmann::ordered_json(static_cast<double>(r.requests_arrived) / *in.wall_s) : nlohmann::ordered_json(nullptr);
  return j;
}

void report_csv(std::ostream& o, const RunInfo& in, const sim::SimResult& r) {
  o << "model,gpu,replicas,router,allocator,requests_completed,ttft_mean_s,ttft_p50_s,ttft_p90_s,ttft_p99_s,tpot_mean_s,tpot_p50_s,"
       "tpot_p90_s,tpot_p99_s,e2e_mean_s,e2e_p50_s,e2e_p90_s,e2e_p99_s,requests_per_s,output_tokens_per_s,goodput_requests_per_s,"
       "preemptions,kv_utilization_mean,kv_utilization_max,kv_waste_fraction,wall_time_s\n";
  // Names come from profiles and config files: RFC 4180 quoting and formula neutralisation (cli/escape).
  o << escape::csv_field(in.model) << ',' << escape::csv_field(in.gpu) << ',' << in.cfg.num_replicas << ','
    << sim::to_string(in.cfg.router) << ',' << (in.cfg.replica.allocator == sim::Allocator::paged ? "paged" : "contiguous")
    << ',';
  char buf[1024];
  std::snprintf(buf, sizeof buf, "%llu,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%llu,%.6g,%.6g,%.6g,",
                static_cast<unsigned long long>(r.requests_completed), r.ttft_s.mean, r.ttft_s.p50, r.ttft_s.p90, r.ttft_s.p99,
                r.tpot_s.mean, r.tpot_s.p50, r.tpot_s.p90, r.tpot_s.p99, r.e2e_s.mean, r.e2e_s.p50, r.e2e_s.p90, r.e2e_s.p99,
                r.requests_per_s, r.output_tokens_per_s, r.goodput_requests_per_s, static_cast<unsigned long long>(r.preemptions),
                r.kv_utilization_mean, r.kv_utilization_max, r.kv_waste_fraction);
  o << buf << (in.wall_s ? fixed(*in.wall_s, 3) : "") << "\n";
}

/// Refuses a timeline that would write more than 2,000,000 rows (~120 MB): arrivals' span / interval x replicas
/// (the drain after the last arrival adds to it). A two-row trace 10^9 s long is not a gigabyte file.
void check_timeline_rows(double span_s, double interval_s, std::uint32_t replicas, bool force) {
  constexpr double kMaxRows = 2e6;
  const double rows = (span_s / interval_s + 1) * replicas;
  if (rows <= kMaxRows || force) return;
  const double need_s = span_s * replicas / kMaxRows;
  throw UsageError("--timeline: about " + grouped(static_cast<std::uint64_t>(std::min(rows, 9e18))) + " rows (" +
                   fixed(span_s, 0) + " s of arrivals / " + fixed(interval_s, 3) + " s x " + std::to_string(replicas) +
                   " replicas); at most 2,000,000: use --timeline-interval " + fixed(std::ceil(need_s), 0) +
                   "s or longer, or --force");
}

}  // namespace

int cmd_simulate(const std::vector<std::string>& args) {
  auto desc = deployment_options();
  po::options_description wl("Workload (one of --workload, --trace, --rate)");
  wl.add_options()
    ("workload", po::value<std::string>(), "workload file (kind: workload; see profiles/examples/workload-chat.yaml)")
    ("trace", po::value<std::string>(), "CSV trace: arrival time, prompt tokens, output tokens per row (Azure LLM traces auto-detected)")
    ("trace-columns", po::value<std::string>(), "TIME,PROMPT,OUTPUT column names of the trace (default: auto-detect)")
    ("trace-speedup", po::value<std::string>()->default_value("1"), "replay the trace this many times faster")
    ("rate", po::value<std::string>(), "arrivals per second (with --prompt-tokens and --output-tokens); inf: all at once (offline)")
    ("max-concurrency", po::value<std::string>(), "closed loop: at most N requests in flight, each client sending its next when its last "
                                                   "finishes (vllm bench serve --max-concurrency); without --rate, --rate inf")
    ("think-time", po::value<std::string>(), "closed loop: a client's pause between an answer and its next request: 2s (fixed) or exp:2s "
                                              "(exponential with that mean); default 0s")
    ("num-scheduler-steps", po::value<std::string>()->default_value("1"), "vLLM 0.6 multi-step scheduling: admit waiting requests only every k steps")
    ("client-start", po::value<std::string>()->default_value("staggered"),
     "closed loop: staggered (clients' first requests spread over one request's cycle: the steady state real clients drift "
     "into) or together (all N at t = 0, the first wave of a benchmark; identical requests then stay in lockstep)")
    ("arrival", po::value<std::string>()->default_value("poisson"), "arrival process with --rate: poisson, gamma or fixed")
    ("cv", po::value<std::string>(), "gamma arrivals: coefficient of variation of the gaps (> 1: bursty)")
    ("prompt-tokens", po::value<std::string>(), "prompt lengths: 512 | uniform:128-2K | lognormal:mean=1K,sigma=0.9[,min=16,max=8K] | empirical:128@0.5,1K@0.5")
    ("output-tokens", po::value<std::string>(), "output lengths, same forms")
    ("duration", po::value<std::string>(), "arrivals during this many seconds (e.g. 600, 10min); every one runs to completion")
    ("num-requests", po::value<std::string>(), "this many requests (a trace: its first N)")
    ("seed", po::value<std::string>()->default_value("0"), "random seed (same seed, same output)");
  po::options_description cl("Cluster and scheduler");
  cl.add_options()
    ("replicas", po::value<std::string>(), "data-parallel replicas (default: --num-gpus / (TP x PP), else 1)")
    ("router", po::value<std::string>()->default_value("round-robin"), "round-robin, lor (least outstanding requests) or kv (least KV load)")
    ("allocator", po::value<std::string>()->default_value("paged"), "paged (vLLM blocks), contiguous (reserve max_model_len per request), or compare (both, same workload)")
    ("prefix-caching", po::value<std::string>()->default_value("on"), "on or off (vLLM V1 default on; matters for shared-prefix groups)")
    ("ttft-target", po::value<std::string>(), "goodput target for time to first token (default: the workload's slo)")
    ("tpot-target", po::value<std::string>(), "goodput target for time per output token (default: the workload's slo)");
  po::options_description out("Output");
  out.add_options()
    ("format,f", po::value<std::string>()->default_value("table"), "table (people), json or csv (one summary row)")
    ("timeline", po::value<std::string>(), "write running/waiting/KV per replica over time to this CSV")
    ("timeline-interval", po::value<std::string>()->default_value("1s"), "simulated time between timeline samples")
    ("requests-out", po::value<std::string>(), "write one CSV row per completed request (arrival, first token, finish, ...)")
    ("no-wall-time", "leave wall-clock timing out of the output (reproducible output, e.g. for golden tests)")
    ("no-progress", "no progress indicator (it is shown on stderr only when stderr is a terminal)")
    ("force", "run even when --num-requests or the timeline exceed the limits that keep a run to minutes and megabytes")
    ("help,h", "show this help");
  desc.add(speed_options());
  desc.add(wl);
  desc.add(cl);
  desc.add(out);
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    print_help("kvcap simulate --model M --gpu G [deployment flags] (--workload F | --trace F.csv | --rate R --prompt-tokens P --output-tokens O) (--duration S | --num-requests N)",
               "Discrete-event simulation of a vLLM-V1-like serving cluster: continuous batching with a token budget,\n"
               "chunked prefill, decode-first scheduling, paged KV blocks (count from the memory model) with preemption\n"
               "by recompute, and step times from the speed model. Reports TTFT, TPOT, end-to-end latency percentiles,\n"
               "throughput, goodput, preemptions and KV utilisation; --timeline writes the KV utilisation over time.",
               desc,
               "  kvcap simulate --model llama-3.1-8b --gpu h100-sxm --trace ../shared/fixtures/traces/AzureLLMInferenceTrace_conv.csv\n"
               "  kvcap simulate --model llama-3.1-70b --gpu h100-sxm --tensor-parallel-size 4 --num-gpus 16 --router lor \\\n"
               "                 --rate 20 --prompt-tokens lognormal:mean=1K,sigma=0.9,max=8K --output-tokens uniform:32-512 --duration 10min\n"
               "  kvcap simulate --model llama-3.1-8b --gpu a100-80gb --workload profiles/examples/workload-chat.yaml --num-requests 5000 \\\n"
               "                 --timeline kv.csv --format json\n"
               "  kvcap simulate --model llama-3.1-8b --gpu h100-sxm --max-model-len 8K --allocator contiguous --rate 10 \\\n"
               "                 --prompt-tokens 1K --output-tokens 256 --num-requests 2000   # the pre-paging design\n"
               "  kvcap simulate --model llama-3.1-8b --gpu h100-sxm --max-model-len 8K --allocator compare --rate 10 \\\n"
               "                 --prompt-tokens 1K --output-tokens 256 --num-requests 2000   # paged vs contiguous");
    return 0;
  }
  if (!vm.count("model")) throw UsageError("--model is required (a built-in name such as llama-3.1-8b, a YAML profile, or a config.json)");
  if (!vm.count("gpu")) throw UsageError("--gpu is required (a built-in name such as h100-sxm, or a YAML profile)");
  // --max-concurrency alone is vllm bench serve's default load: --request-rate inf behind a semaphore of N.
  const bool closed_default_rate = vm.count("max-concurrency") && !vm.count("workload") && !vm.count("trace") && !vm.count("rate");
  const int sources = static_cast<int>(vm.count("workload") + vm.count("trace") + vm.count("rate") + (closed_default_rate ? 1 : 0));
  if (sources != 1)
    throw UsageError(sources == 0 ? "give a workload: --workload FILE.yaml, --trace FILE.csv, or --rate R with --prompt-tokens and --output-tokens"
                                  : "give only one of --workload, --trace and --rate");
  if (vm.count("trace") && (vm.count("prompt-tokens") || vm.count("output-tokens")))
    throw UsageError("--prompt-tokens/--output-tokens do not apply to a trace (its rows give the lengths)");
  const Format fmt = parse_format(vm["format"].as<std::string>());
  auto str = [&](const char* k) { return vm[k].as<std::string>(); };

  sim::SourceLimits limits;
  if (vm.count("duration")) limits.duration_s = parse_seconds(str("duration"), "--duration");
  if (vm.count("num-requests")) limits.num_requests = static_cast<std::uint64_t>(parse_int(str("num-requests"), "--num-requests", 1));
  const auto no_end = [] { return UsageError("give --duration SECONDS or --num-requests N (a synthetic workload has no end of its own)"); };
  if (!vm.count("trace") && !vm.count("workload") && !limits.duration_s && !limits.num_requests) throw no_end();
  const auto seed = static_cast<std::uint64_t>(parse_int(str("seed"), "--seed", 0));
  // Bounded work: 10^7 requests take about 40 s of CPU (bench/bench_simulate: ~250,000 requests per CPU-second).
  constexpr std::uint64_t kMaxRequests = 10'000'000;
  if (limits.num_requests && *limits.num_requests > kMaxRequests && !vm.count("force"))
    throw UsageError("--num-requests " + grouped(*limits.num_requests) + ": about " +
                     grouped(*limits.num_requests / 250'000 + 1) + " s of CPU at ~250,000 requests/s; at most " +
                     grouped(kMaxRequests) + " without --force");
  const std::string rate_text = vm.count("rate") ? str("rate") : closed_default_rate ? "inf" : "";
  if (rate_text == "inf" && !limits.num_requests)
    throw UsageError("--rate inf sends every request at once: give --num-requests N (a duration would never end it)");
  if (vm.count("think-time") && !vm.count("max-concurrency"))
    throw UsageError("--think-time applies to a closed loop: give --max-concurrency N too");

  const Deployment dep = deployment_from(vm);
  const ModelSpec model = profiles::resolve_model(str("model"));
  const GpuSpec gpu = profiles::resolve_gpu(str("gpu"));
  const MemoryPlan plan = plan_memory(model, gpu, dep, {});
  if (!plan.fits())
    throw SpecError("max_model_len", "one request of max_model_len " + grouped(static_cast<std::uint64_t>(plan.dep.max_model_len)) +
                                         " tokens does not fit in the KV cache (" + grouped(plan.kv_capacity_tokens) +
                                         " tokens per replica); vLLM would refuse to start: lower --max-model-len or add memory");

  RunInfo info;
  info.model = model.name;
  info.model_display = model.display_name.empty() ? model.name : model.display_name;
  info.gpu = gpu.name;
  info.gpu_display = std::to_string(plan.dep.d.tensor_parallel_size * plan.dep.d.pipeline_parallel_size) + " x " +
                     (gpu.display_name.empty() ? gpu.name : gpu.display_name) + " per replica";
  info.plan = &plan;
  sim::SimConfig& cfg = info.cfg;
  cfg.replica = sim::replica_config(plan);
  i64 replicas = plan.dep.replicas;
  if (vm.count("replicas")) {
    const i64 want = parse_int(str("replicas"), "--replicas", 1);
    if (vm.count("num-gpus") && want != plan.dep.replicas)
      throw UsageError("--replicas " + std::to_string(want) + " disagrees with --num-gpus " + std::to_string(dep.num_gpus) + " / (TP x PP) = " +
                       std::to_string(plan.dep.replicas) + "; give one of them");
    replicas = want;
  }
  if (replicas > 100000) throw UsageError("--replicas: at most 100,000");
  cfg.num_replicas = static_cast<std::uint32_t>(replicas);
  const auto router = sim::parse_router(str("router"));
  if (!router) throw UsageError("--router: expected round-robin, lor or kv, got '" + str("router") + "'");
  cfg.router = *router;
  const bool compare = str("allocator") == "compare";
  if (str("allocator") == "paged" || compare) cfg.replica.allocator = sim::Allocator::paged;
  else if (str("allocator") == "contiguous") cfg.replica.allocator = sim::Allocator::contiguous;
  else throw UsageError("--allocator: expected paged, contiguous or compare, got '" + str("allocator") + "'");
  if (compare && (vm.count("timeline") || vm.count("requests-out")))
    throw UsageError("--timeline and --requests-out follow one run; leave them out with --allocator compare");
  if (str("prefix-caching") == "on") cfg.replica.prefix_caching = true;
  else if (str("prefix-caching") == "off") cfg.replica.prefix_caching = false;
  else throw UsageError("--prefix-caching: expected on or off, got '" + str("prefix-caching") + "'");
  if (vm.count("max-concurrency")) {
    const i64 n = parse_int(str("max-concurrency"), "--max-concurrency", 1);
    if (n > 10'000'000) throw UsageError("--max-concurrency: at most 10,000,000 clients, got '" + str("max-concurrency") + "'");
    cfg.max_concurrency = static_cast<std::uint32_t>(n);
    if (vm.count("think-time")) {
      std::string t = trim(str("think-time"));
      if (t.rfind("exp:", 0) == 0) cfg.think_time_exponential = true, t = t.substr(4);
      cfg.think_seed = seed;
      cfg.think_time_s = (t == "0" || t == "0s" || t == "0ms") ? 0.0 : parse_seconds(t, "--think-time");
    }
  }

  // The workload.
  // A fresh source per run (--allocator compare runs the same workload twice).
  std::function<std::unique_ptr<sim::RequestSource>()> make_source;
  double timeline_span_s = 0;  ///< arrivals span, for the timeline's row estimate
  LatencyTargets slo;
  double mean_prompt = 0, mean_output = 0;  ///< of the workload, for the closed loop's stagger
  if (vm.count("trace")) {
    sim::TraceOptions to;
    if (vm.count("trace-columns")) {
      try {
        to = sim::parse_trace_columns(str("trace-columns"));
      } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
      }
    }
    to.speedup = parse_real(str("trace-speedup"), "--trace-speedup", "a positive number such as 2", kPositive);
    sim::Trace t;
    try {
      t = sim::read_trace_csv(str("trace"), to);
    } catch (const sim::TraceError& e) {
      std::cerr << e.what() << "\n";
      return 1;
    }
    std::string file = str("trace");
    const auto slash = file.find_last_of('/');
    info.workload_name = slash == std::string::npos ? file : file.substr(slash + 1);
    info.workload_source = "trace";
    std::ostringstream o;
    o << "trace " << info.workload_name << " (" << grouped(t.requests.size()) << " requests over " << fixed(t.span_s, 1) << " s";
    if (to.speedup != 1) o << " after x" << to.speedup << " speed-up";
    o << "; columns " << t.time_column << ", " << t.prompt_column << ", " << t.output_column;
    if (t.reordered_rows) o << "; " << grouped(t.reordered_rows) << " rows out of time order, sorted";
    o << ")";
    if (limits.num_requests) o << ", first " << grouped(*limits.num_requests);
    if (limits.duration_s) o << ", arrivals before " << fixed(*limits.duration_s, 1) << " s";
    info.workload_desc = o.str();
    timeline_span_s = limits.duration_s ? std::min(*limits.duration_s, t.span_s) : t.span_s;
    for (const auto& r : t.requests) mean_prompt += static_cast<double>(r.prompt_tokens), mean_output += static_cast<double>(r.output_tokens);
    if (!t.requests.empty()) mean_prompt /= static_cast<double>(t.requests.size()), mean_output /= static_cast<double>(t.requests.size());
    make_source = [requests = std::move(t.requests), limits] { return sim::list_source(requests, limits); };
  } else {
    WorkloadSpec w;
    if (vm.count("workload")) {
      w = profiles::load_workload_file(str("workload"));
      info.workload_source = "workload";
      // Rate phases end the arrivals by themselves; anything else needs a limit.
      if (w.arrival.phases.empty() && !limits.duration_s && !limits.num_requests) throw no_end();
      if (w.arrival.kind == ArrivalProcess::Kind::closed) {
        if (vm.count("max-concurrency") || vm.count("think-time"))
          throw UsageError("--max-concurrency/--think-time: the workload file already describes a closed loop (arrival.process: closed)");
        cfg.max_concurrency = static_cast<std::uint32_t>(w.arrival.concurrency);
        cfg.think_time_s = w.arrival.think_time_s;
        cfg.think_time_exponential = w.arrival.think_time_exponential;
        cfg.think_seed = seed;
      }
    } else {
      info.workload_source = "flags";
      w.name = "flags";
      if (!vm.count("prompt-tokens") || !vm.count("output-tokens"))
        throw UsageError(std::string(vm.count("rate") ? "--rate" : "--max-concurrency") + " needs --prompt-tokens and --output-tokens");
      w.arrival.rate_per_s = rate_text == "inf" ? std::numeric_limits<double>::infinity()
                                                : parse_real(rate_text, "--rate", "arrivals per second such as 4.5, or inf");
      if (!(w.arrival.rate_per_s > 0)) throw UsageError("--rate: expected a positive number of arrivals per second, or inf");
      const std::string a = str("arrival");
      if (a == "poisson") w.arrival.kind = ArrivalProcess::Kind::poisson;
      else if (a == "gamma") w.arrival.kind = ArrivalProcess::Kind::gamma;
      else if (a == "fixed" || a == "fixed_rate") w.arrival.kind = ArrivalProcess::Kind::fixed_rate;
      else throw UsageError("--arrival: expected poisson, gamma or fixed, got '" + a + "'");
      if (vm.count("cv")) {
        if (w.arrival.kind != ArrivalProcess::Kind::gamma) throw UsageError("--cv applies to --arrival gamma only");
        w.arrival.cv = parse_real(str("cv"), "--cv", "a coefficient of variation such as 2");
      } else if (w.arrival.kind == ArrivalProcess::Kind::gamma) {
        throw UsageError("--arrival gamma needs --cv (the gaps' coefficient of variation; 1 is Poisson)");
      }
      w.prompt = parse_length(str("prompt-tokens"), "--prompt-tokens");
      w.output = parse_length(str("output-tokens"), "--output-tokens");
      try {
        WorkloadSpec checked = w;
        if (std::isinf(w.arrival.rate_per_s)) checked.arrival.rate_per_s = 1;  // offline: check the rest
        validate(checked);
      } catch (const SpecError& e) {
        throw UsageError(e.what());
      }
    }
    if (vm.count("workload") && (vm.count("prompt-tokens") || vm.count("output-tokens") || vm.count("cv")))
      throw UsageError("--prompt-tokens/--output-tokens/--cv do not apply with --workload (the file gives them)");
    info.workload_name = w.name;
    slo = w.slo;
    std::ostringstream o;
    if (vm.count("workload")) o << "'" << w.name << "' (" << str("workload") << "): ";
    if (w.arrival.kind == ArrivalProcess::Kind::closed) {
      o << "closed loop from the file";
    } else if (std::isinf(w.arrival.rate_per_s)) {
      o << "every request at t = 0";
    } else if (!w.arrival.phases.empty()) {
      o << to_string(w.arrival.kind) << " arrivals in " << w.arrival.phases.size() << " phases:";
      for (std::size_t i = 0; i < w.arrival.phases.size(); ++i)
        o << (i ? "," : "") << " " << w.arrival.phases[i].rate_per_s << " req/s for " << w.arrival.phases[i].duration_s << " s";
    } else {
      o << to_string(w.arrival.kind) << " arrivals at " << w.arrival.rate_per_s << " req/s";
      if (w.arrival.kind == ArrivalProcess::Kind::gamma) o << " (cv " << w.arrival.cv << ")";
    }
    o << "; prompt " << length_desc(w.prompt) << ", output " << length_desc(w.output);
    if (w.shared_prefix.enabled())
      o << "; " << w.shared_prefix.num_groups << " shared prefixes of " << w.shared_prefix.tokens << " tokens (" << fixed(100 * w.shared_prefix.fraction, 0) << "% of requests)";
    if (limits.num_requests) o << "; " << grouped(*limits.num_requests) << " requests";
    if (limits.duration_s) o << "; arrivals for " << fixed(*limits.duration_s, 1) << " s";
    o << "; seed " << seed;
    info.workload_desc = o.str();
    double phases_s = 0;
    for (const auto& ph : w.arrival.phases) phases_s += ph.duration_s;
    if (phases_s > 0) timeline_span_s = limits.duration_s ? std::min(*limits.duration_s, phases_s) : phases_s;
    else if (limits.duration_s) timeline_span_s = *limits.duration_s;
    else if (limits.num_requests && std::isfinite(w.arrival.rate_per_s))
      timeline_span_s = static_cast<double>(*limits.num_requests) / w.arrival.rate_per_s;
    mean_prompt = w.prompt.mean_tokens();
    mean_output = w.output.mean_tokens();
    make_source = [w, seed, limits] { return sim::synthetic_source(w, seed, limits); };
  }
  if (cfg.max_concurrency > 0) {
    info.workload_desc += "; closed loop: at most " + grouped(cfg.max_concurrency) + " in flight";
    if (cfg.think_time_s > 0)
      info.workload_desc += ", think time " + std::string(cfg.think_time_exponential ? "exponential, mean " : "") + fixed(cfg.think_time_s, 3) + " s";
  }
  if (vm.count("ttft-target")) slo.ttft_s = parse_seconds(str("ttft-target"), "--ttft-target");
  if (vm.count("tpot-target")) slo.tpot_s = parse_seconds(str("tpot-target"), "--tpot-target");
  cfg.slo = slo;

  const SpeedContext speed = speed_context_from(vm, model, gpu, plan);
  const std::string engine = str("engine");
  info.step_time_source = "roofline speed model (" +
                          std::string(speed.calibration ? "calibrated: " + vm["calibration"].as<std::string>()
                                                        : engine == "datasheet" ? "datasheet x default efficiencies"
                                                                                : "engine profile " + engine) + ")";
  if (!speed.calibration) info.expected_error = error_band(engine_profile(engine));
  cfg.replica.num_scheduler_steps = parse_int(str("num-scheduler-steps"), "--num-scheduler-steps", 1, 1024);
  const std::string client_start = str("client-start");
  if (client_start != "staggered" && client_start != "together")
    throw UsageError("--client-start: expected staggered or together, got '" + client_start + "'");
  // A run of fewer than 2N requests is one wave of the benchmark: its clients do start together.
  const bool one_wave = limits.num_requests && *limits.num_requests < 2ull * cfg.max_concurrency;
  if (cfg.max_concurrency > 0 && client_start == "staggered" && one_wave)
    info.workload_desc += "; clients together (fewer than 2 x " + grouped(cfg.max_concurrency) + " requests: one wave)";
  sim::apply_speed_model(cfg, speed, std::llround(std::max(1.0, mean_prompt)), std::llround(std::max(1.0, mean_output)),
                         client_start == "staggered" && !one_wave);
  if (cfg.client_stagger_s > 0) info.workload_desc += "; clients staggered over " + fixed(cfg.client_stagger_s, 2) + " s";
  const sim::StepTimer timer = sim::StepTimer::roofline(speed);

  // Outputs beside the report.
  std::optional<std::ofstream> timeline_file, requests_file;
  std::unique_ptr<sim::Observer> requests_obs;
  std::unique_ptr<sim::TimelineCsvWriter> timeline_obs;
  if (vm.count("requests-out")) {
    requests_file = open_out(str("requests-out"), "--requests-out");
    requests_obs = std::make_unique<RequestCsv>(*requests_file);
  }
  if (vm.count("timeline")) {
    cfg.timeline_interval_s = parse_seconds(str("timeline-interval"), "--timeline-interval");
    check_timeline_rows(timeline_span_s, cfg.timeline_interval_s, cfg.num_replicas, vm.count("force") > 0);
    timeline_file = open_out(str("timeline"), "--timeline");
    timeline_obs = std::make_unique<sim::TimelineCsvWriter>(*timeline_file, requests_obs.get());
    cfg.observer = timeline_obs.get();
  } else {
    cfg.observer = requests_obs.get();
  }

  // Progress on stderr, only for people watching a terminal.
  const bool progress = !vm.count("no-progress") && isatty(STDERR_FILENO);
  auto last_print = std::chrono::steady_clock::now();
  bool printed = false;
  if (progress) {
    cfg.progress = [&](const sim::Progress& p) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_print < std::chrono::milliseconds(250)) return;
      last_print = now;
      printed = true;
      std::string line = "\r  simulating: " + grouped(p.arrived) + " requests arrived";
      if (p.total && *p.total > 0) line += " of " + grouped(*p.total) + " (" + fixed(100.0 * static_cast<double>(p.arrived) / static_cast<double>(*p.total), 0) + "%)";
      line += ", " + grouped(p.completed) + " done, t = " + fixed(p.time_s, 0) + " s   ";
      std::cerr << line << std::flush;
    };
  }
  auto run = [&](RunInfo& in) {
    auto source = make_source();
    const auto t0 = std::chrono::steady_clock::now();
    sim::SimResult r = sim::simulate(in.cfg, timer, *source);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (printed) std::cerr << "\r" << std::string(100, ' ') << "\r" << std::flush;
    printed = false;
    if (!vm.count("no-wall-time")) in.wall_s = wall;
    return r;
  };
  if (compare) {
    RunInfo contiguous = info;
    contiguous.cfg.replica.allocator = sim::Allocator::contiguous;
    const sim::SimResult paged_result = run(info);
    const sim::SimResult contiguous_result = run(contiguous);
    switch (fmt) {
      case Format::table: report_compare_table(std::cout, info, paged_result, contiguous, contiguous_result); break;
      case Format::json: {
        nlohmann::ordered_json j;
        j["paged"] = result_json(info, paged_result);
        j["contiguous"] = result_json(contiguous, contiguous_result);
        std::cout << j.dump(2) << "\n";
        break;
      }
      case Format::csv: {
        std::ostringstream second;
        report_csv(std::cout, info, paged_result);
        report_csv(second, contiguous, contiguous_result);
        const std::string row = second.str();
        std::cout << row.substr(row.find('\n') + 1);  // one header
        break;
      }
    }
    return 0;
  }
  const sim::SimResult result = run(info);
  if (timeline_file) timeline_file->flush();
  if (requests_file) requests_file->flush();
  if ((timeline_file && !*timeline_file) || (requests_file && !*requests_file))
    throw std::runtime_error("writing an output CSV failed (disk full?)");

  // Offered load beyond what the replicas serve (KVCAP-W202): the run's latency percentiles then grow
  // with its length (sim::overloaded: offered > 1.02 x the saturated completion rate, and a queue that built up).
  std::vector<Finding> findings;
  const bool closed = info.cfg.max_concurrency > 0;
  if (sim::overloaded(result, closed)) {
    const auto [offered, served] = sim::offered_and_served_per_s(result, closed);
    if (auto f = check_offered_load(offered, served)) findings.push_back(*f);
  }
  switch (fmt) {
    case Format::table: report_table(std::cout, info, result); break;
    case Format::json: {
      auto j = result_json(info, result);
      j["findings"] = findings_json(findings);
      std::cout << j.dump(2) << "\n";
      break;
    }
    case Format::csv: report_csv(std::cout, info, result); break;
  }
  print_findings("simulate", findings);
  return exit_code(findings);
}

}  // namespace kvcap::cli
