// Reporters of `kvcap size` (report/size.hpp): the ranked table for people, JSON and CSV for programs.
#include "report/size.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/planner/engine.hpp"
#include "kvcap/planner/text.hpp"

namespace kvcap::cli {

namespace {

std::string dur(double s) {
  if (!std::isfinite(s)) return "unbounded";
  if (s >= 1) return fixed(s, 2) + " s";
  if (s < 1e-3) return amount(s * 1e6, 0) + " us";
  return fixed(s * 1e3, s >= 0.1 ? 0 : 1) + " ms";
}

std::string pct_name(double p) {
  // As given, to 10 significant digits: p99.99999 is not p100, p0.0001 not p0.
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", p * 100);
  return "p" + std::string(buf);
}

std::string pad_left(const std::string& s, std::size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}
std::string pad_right(const std::string& s, std::size_t w) {
  return s.size() >= w ? s : s + std::string(w - s.size(), ' ');
}

/// Finite doubles for JSON (nlohmann writes inf as null; say so explicitly).
void sanitize(nlohmann::ordered_json& j) {
  for (auto& [k, v] : j.items())
    if (v.is_number_float() && !std::isfinite(v.get<double>())) v = nullptr;
}

void add_pools_json(nlohmann::ordered_json& j, const SizingCandidate& c);

nlohmann::ordered_json candidate_json(const SizingCandidate& c, bool open_loop) {
  nlohmann::ordered_json j;
  j["gpu"] = c.gpu;
  j["tensor_parallel_size"] = c.tp;
  j["pipeline_parallel_size"] = c.pp;
  j["expert_parallel_size"] = c.expert_parallel_size();
  j["ep_group_replicas"] = c.ep_group_replicas;
  j["weight_dtype"] = std::string(name(c.weight_dtype));
  j["kv_cache_dtype"] = std::string(name(c.kv_dtype));
  j["status"] = std::string(to_string(c.status));
  if (c.status != CandidateStatus::ok) j["reason"] = c.reason;
  j["gpus_per_replica"] = c.gpus_per_replica;
  j["replicas"] = c.replicas;
  j["gpus"] = c.gpus;
  j["kv_capacity_tokens_per_replica"] = c.kv_capacity_tokens;
  j["max_batch_memory"] = c.max_batch_memory;
  j["max_batch_targets"] = c.max_batch_targets;
  if (open_loop) {
    const double burst = kv_burst_requests(c, true);
    j["kv_burst_warning"] = burst > 0;
    j["kv_burst_requests_per_replica"] = burst > 0 ? nlohmann::ordered_json(burst) : nlohmann::ordered_json(nullptr);
  }
  if (open_loop) j["max_rate_per_replica_per_s"] = c.max_rate_per_replica_per_s;
  j["rate_per_replica_per_s"] = c.rate_per_replica_per_s;
  j["batch_per_replica"] = c.batch;
  j["prefill_s"] = c.prefill_s;
  j["prefill_busy_s"] = c.prefill_busy_s;
  j["prefill_utilization"] = c.prefill_utilization;
  j["decode_step_s"] = c.decode_step_s;
  j["decode_bound"] = std::string(to_string(c.decode_bound));
  j["ttft_wait_s"] = c.ttft_wait_s;
  j["ttft_s"] = c.ttft_s;
  j["tpot_s"] = c.tpot_s;
  j["e2e_s"] = c.e2e_s;
  j["output_tokens_per_s"] = c.output_tokens_per_s;
  j["input_tokens_per_s"] = c.input_tokens_per_s;
  j["tokens_per_s_per_gpu"] = c.tokens_per_s_per_gpu;
  j["tokens_per_s_per_user"] = c.tokens_per_s_per_user;
  j["cost_per_hour_usd"] = c.cost_per_hour_usd;
  j["cost_per_million_output_tokens_usd"] = c.cost_per_million_output_tokens_usd;
  j["cost_per_million_input_tokens_usd"] = c.cost_per_million_input_tokens_usd;
  j["cost_per_million_tokens_usd"] = c.cost_per_million_tokens_usd;
  j["mode"] = c.prefill ? "disaggregated" : "aggregated";
  if (c.prefill) add_pools_json(j, c);
  return j;
}

/// An xPyD candidate's two pools.
void add_pools_json(nlohmann::ordered_json& j, const SizingCandidate& c) {
  const auto& p = *c.prefill;
  j["xpyd"] = xpyd(c);
  j["prefill"] = {{"gpu", p.gpu},
                  {"tensor_parallel_size", p.tp},
                  {"pipeline_parallel_size", 1},
                  {"weight_dtype", std::string(name(c.weight_dtype))},
                  {"kv_cache_dtype", std::string(name(c.kv_dtype))},
                  {"replicas", p.replicas},
                  {"gpus", p.gpus},
                  {"prefill_s", p.prefill_s},
                  {"utilization", p.utilization},
                  {"ttft_wait_s", p.ttft_wait_s},
                  {"kv_transfer_s", p.kv_transfer_s},
                  {"kv_link", p.link}};
  j["decode"] = {{"gpu", c.gpu},
                 {"tensor_parallel_size", c.tp},
                 {"pipeline_parallel_size", c.pp},
                 {"weight_dtype", std::string(name(c.weight_dtype))},
                 {"kv_cache_dtype", std::string(name(c.kv_dtype))},
                 {"replicas", c.replicas},
                 {"gpus", c.replicas * c.gpus_per_replica}};
}

/// launch_command with the scheduling flag the sizing assumed (SGLang's --enable-mixed-chunk).
LaunchCommand launch(LaunchEngine e, const ModelSpec& m, const Deployment& d, std::optional<DisaggRole> role,
                     const SizingReportOptions& o) {
  LaunchCommand cmd = role ? launch_command(e, m, d, *role) : launch_command(e, m, d);
  if (e == LaunchEngine::sglang && o.mixed_chunk) cmd.argv.emplace_back("--enable-mixed-chunk");
  return cmd;
}

/// An aggregated candidate's launch command; with several expert-parallel groups, a note that it starts one.
LaunchCommand candidate_launch(LaunchEngine e, const ModelSpec& m, const SizingCandidate& c,
                               const SizingReportOptions& o) {
  LaunchCommand cmd = launch(e, m, *c.deployment, std::nullopt, o);
  if (c.ep_group_replicas > 0 && c.replicas > c.ep_group_replicas)
    cmd.notes.push_back("this command starts one expert-parallel group of " +
                        std::to_string(c.gpus_per_replica * c.ep_group_replicas) + " GPUs; the plan runs " +
                        std::to_string(c.ep_groups()) + " groups, one server each, behind a router");
  return cmd;
}

nlohmann::ordered_json launch_json(const LaunchCommand& cmd) {
  return {{"argv", cmd.argv}, {"command", launch_line(cmd)}, {"notes", cmd.notes}};
}

/// A feasible candidate as the JSON lists give it: its rank, its figures, and its launch command under --emit.
nlohmann::ordered_json ranked_json(const SizingRequest& q, const SizingResult& r, std::size_t i,
                                   const SizingReportOptions& o) {
  const auto& c = r.candidates[i];
  auto j = candidate_json(c, q.workload.open_loop());
  sanitize(j);
  if (c.status != CandidateStatus::ok) return j;
  j["rank"] = i + 1;
  if (o.emit && c.deployment) {
    auto& l = j["launch"] = {{"engine", *o.emit == LaunchEngine::vllm ? "vllm" : "sglang"}};
    if (c.prefill && c.prefill->deployment) {
      l["prefill"] = launch_json(launch(*o.emit, q.model, *c.prefill->deployment, DisaggRole::prefill, o));
      l["decode"] = launch_json(launch(*o.emit, q.model, *c.deployment, DisaggRole::decode, o));
    } else {
      l.update(launch_json(candidate_launch(*o.emit, q.model, c, o)));
    }
  }
  return j;
}

/// GPUs and cost per hour of a candidate at the simulated replica count (0 replicas: none met the targets).
std::pair<i64, double> verified_cost(const SizingCandidate& c, const sim::VerifiedCandidate& v) {
  if (!c.prefill)
    return {v.gpus, c.gpus > 0 ? c.cost_per_hour_usd / static_cast<double>(c.gpus) * static_cast<double>(v.gpus) : 0};
  // xPyD: each pool at its own price (the decode pool's from the analytic cost less the prefill pool's).
  const auto& p = *c.prefill;
  const double decode_gpus = static_cast<double>(c.replicas * c.gpus_per_replica);
  const double decode_price =
      decode_gpus > 0 ? (c.cost_per_hour_usd - static_cast<double>(p.gpus) * p.price_per_gpu_hour_usd) / decode_gpus
                      : 0;
  return {v.gpus, static_cast<double>(v.prefill_replicas * p.tp) * p.price_per_gpu_hour_usd +
                      static_cast<double>(v.replicas * c.gpus_per_replica) * decode_price};
}

nlohmann::ordered_json verified_json(const SizingResult& r, const sim::VerifiedCandidate& v) {
  const auto& c = r.candidates[v.index];
  const auto [gpus, cost] = verified_cost(c, v);
  nlohmann::ordered_json j;
  j["rank"] = v.index + 1;
  j["gpu"] = c.gpu;
  j["tensor_parallel_size"] = c.tp;
  j["pipeline_parallel_size"] = c.pp;
  j["expert_parallel_size"] = c.expert_parallel_size();
  j["ep_group_replicas"] = c.ep_group_replicas;
  j["weight_dtype"] = std::string(name(c.weight_dtype));
  j["kv_cache_dtype"] = std::string(name(c.kv_dtype));
  j["analytic_replicas"] = v.analytic_replicas;
  j["replicas"] = v.replicas;
  if (c.prefill) {
    j["mode"] = "disaggregated";
    j["analytic_prefill_replicas"] = c.prefill->replicas;
    j["prefill_replicas"] = v.prefill_replicas;
  }
  j["meets_targets"] = v.replicas > 0;
  j["gpus"] = gpus;
  j["cost_per_hour_usd"] = cost;
  j["ttft_s"] = v.ttft_s;
  j["tpot_s"] = v.tpot_s;
  j["analytic_ttft_s"] = c.ttft_s;
  j["analytic_tpot_s"] = c.tpot_s;
  j["ttft_s_at_analytic_replicas"] = v.ttft_at_analytic_s;
  j["tpot_s_at_analytic_replicas"] = v.tpot_at_analytic_s;
  j["findings_at_analytic_replicas"] = findings_json(v.findings_at_analytic);
  j["requests_completed"] = v.completed;
  j["requests_rejected"] = v.rejected;
  j["too_many_rejected"] = v.too_many_rejected;
  j["simulations"] = v.simulations;
  j["wall_s"] = v.wall_s;
  return j;
}

/// --disagg: the cheapest aggregated and the cheapest xPyD candidate (ranks 0-based; npos when none), and whether both
/// are priced so that their costs compare.
struct DisaggVerdict {
  std::size_t aggregated = std::string::npos, disaggregated = std::string::npos;
  bool comparable() const { return aggregated != std::string::npos && disaggregated != std::string::npos; }
};
DisaggVerdict disagg_verdict(const SizingResult& r) {
  DisaggVerdict v;
  for (std::size_t i = 0; i < r.feasible; ++i) {
    auto& slot = r.candidates[i].prefill ? v.disaggregated : v.aggregated;
    if (slot == std::string::npos) slot = i;
  }
  return v;
}
/// "saves 11%" / "costs 12% more" of the xPyD's price per hour against the aggregated one's.
std::string verdict_text(const SizingResult& r, const DisaggVerdict& v) {
  const auto& a = r.candidates[v.aggregated];
  const auto& d = r.candidates[v.disaggregated];
  if (!a.priced || !d.priced) return "not priced";
  const double ratio = d.cost_per_hour_usd / a.cost_per_hour_usd;
  if (std::abs(ratio - 1) < 0.005) return "costs the same";
  return ratio < 1 ? "saves " + fixed(100 * (1 - ratio), 0) + "%" : "costs " + fixed(100 * (ratio - 1), 0) + "% more";
}

bool contains(const std::vector<std::size_t>& v, std::size_t i) {
  return std::find(v.begin(), v.end(), i) != v.end();
}

const char* kCsvHeader =
    "rank,gpu,tensor_parallel_size,pipeline_parallel_size,weight_dtype,kv_cache_dtype,status,reason,gpus_per_replica,"
    "replicas,gpus,kv_capacity_tokens_per_replica,max_batch_memory,max_batch_targets,max_rate_per_replica_per_s,"
    "rate_per_replica_per_s,batch_per_replica,prefill_s,prefill_utilization,decode_step_s,decode_bound,ttft_s,tpot_s,"
    "e2e_s,output_tokens_per_s,cost_per_hour_usd,cost_per_million_output_tokens_usd,input_tokens_per_s,"
    "tokens_per_s_per_gpu,tokens_per_s_per_user,cost_per_million_input_tokens_usd,cost_per_million_tokens_usd,pareto,"
    "best_for_gpu_type,mode,prefill_gpu,prefill_tensor_parallel_size,prefill_replicas,prefill_gpus,kv_transfer_s,"
    "expert_parallel_size,ep_group_replicas,kv_burst_warning";

std::string csv_num(double v) {
  if (!std::isfinite(v)) return "";
  std::ostringstream o;
  o.precision(6);
  o << v;
  return o.str();
}

}  // namespace

std::string launch_line(const LaunchCommand& c) {
  std::string r;
  for (const auto& w : c.argv) r.append(r.empty() ? "" : " ").append(escape::shell_word(w));
  return r;
}

void report_sizing_json(std::ostream& out, const SizingRequest& q, const SizingResult& r,
                        const SizingReportOptions& o) {
  const auto& model = q.model;
  const auto& w = q.workload;
  const auto& t = q.targets;
  const auto& s = q.space;
  const bool open = w.open_loop();
  const std::size_t shown = o.explain ? r.candidates.size() : r.feasible;
  nlohmann::ordered_json j;
  j["model"] = model.name;
  auto& jw = j["workload"];
  jw["prompt_tokens"] = w.prompt_tokens;
  jw["output_tokens"] = w.output_tokens;
  if (open)
    jw["arrival_rate_per_s"] = w.arrival_rate_per_s, jw["arrival_scv"] = w.arrival_scv;
  else
    jw["concurrent_users"] = w.concurrent_users;
  jw["prompt_scv"] = w.prompt_scv;
  j["targets"] = {{"ttft_s", t.ttft_s}, {"ttft_percentile", t.ttft_percentile}, {"tpot_s", t.tpot_s}};
  j["candidates_searched"] = r.candidates.size();
  j["feasible"] = r.feasible;
  if (r.feasible == 0) j["diagnosis"] = r.diagnosis;
  j["rates"] = s.calibration ? "calibrated" : o.engine;
  if (const std::string band = error_band(engine_profile(o.engine)); !s.calibration && !band.empty())
    j["expected_error"] = band;
  add_findings_json(j, o.findings);
  auto& best = j["best_per_gpu_type"] = nlohmann::ordered_json::array();
  for (const std::size_t i : r.best_per_gpu) best.push_back(ranked_json(q, r, i, o));
  auto& pareto = j["pareto"] = nlohmann::ordered_json::array();
  for (const std::size_t i : r.pareto) pareto.push_back(ranked_json(q, r, i, o));
  if (!o.verified.empty()) {
    auto& ver = j["verified"] = nlohmann::ordered_json::array();
    for (const auto& v : o.verified) ver.push_back(verified_json(r, v));
    j["verified_how"] = o.verified_how;
  }
  if (q.space.disaggregated) {
    const DisaggVerdict v = disagg_verdict(r);
    auto rank = [](std::size_t i) {
      return i == std::string::npos ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(i + 1);
    };
    j["disaggregation"] = {{"best_aggregated_rank", rank(v.aggregated)},
                           {"best_disaggregated_rank", rank(v.disaggregated)},
                           {"cost_ratio", v.comparable() && r.candidates[v.aggregated].cost_per_hour_usd > 0
                                              ? nlohmann::ordered_json(r.candidates[v.disaggregated].cost_per_hour_usd /
                                                                       r.candidates[v.aggregated].cost_per_hour_usd)
                                              : nlohmann::ordered_json(nullptr)}};
  }
  auto& arr = j["candidates"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < shown; ++i) arr.push_back(ranked_json(q, r, i, o));
  out << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
}

void report_sizing_csv(std::ostream& out, const SizingRequest& q, const SizingResult& r, const SizingReportOptions& o) {
  const auto& w = q.workload;
  const bool open = w.open_loop();
  const std::size_t shown = o.explain ? r.candidates.size() : r.feasible;
  out << kCsvHeader << (o.emit ? ",launch_command\n" : "\n");
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& c = r.candidates[i];
    const bool ok = c.status == CandidateStatus::ok;
    std::string reason = c.reason;
    for (auto& ch : reason)
      if (ch == '"') ch = '\'';
    out << (ok ? std::to_string(i + 1) : "") << "," << escape::csv_field(c.gpu) << "," << c.tp << "," << c.pp << ","
        << name(c.weight_dtype) << "," << name(c.kv_dtype) << "," << to_string(c.status) << ","
        << escape::csv_field(reason, true) << "," << c.gpus_per_replica << "," << c.replicas << "," << c.gpus << ","
        << c.kv_capacity_tokens << "," << c.max_batch_memory << "," << c.max_batch_targets << ","
        << (open ? csv_num(c.max_rate_per_replica_per_s) : "") << "," << csv_num(c.rate_per_replica_per_s) << ","
        << c.batch << "," << csv_num(c.prefill_s) << "," << csv_num(c.prefill_utilization) << ","
        << csv_num(c.decode_step_s) << "," << to_string(c.decode_bound) << "," << csv_num(c.ttft_s) << ","
        << csv_num(c.tpot_s) << "," << csv_num(c.e2e_s) << "," << csv_num(c.output_tokens_per_s) << ","
        << csv_num(c.cost_per_hour_usd) << "," << csv_num(c.cost_per_million_output_tokens_usd) << ","
        << csv_num(c.input_tokens_per_s) << "," << csv_num(c.tokens_per_s_per_gpu) << ","
        << csv_num(c.tokens_per_s_per_user) << "," << csv_num(c.cost_per_million_input_tokens_usd) << ","
        << csv_num(c.cost_per_million_tokens_usd) << "," << (ok && contains(r.pareto, i) ? "true" : "false") << ","
        << (ok && contains(r.best_per_gpu, i) ? "true" : "false") << "," << (c.prefill ? "disaggregated" : "aggregated")
        << ",";
    if (c.prefill)
      out << escape::csv_field(c.prefill->gpu) << "," << c.prefill->tp << "," << c.prefill->replicas << ","
          << c.prefill->gpus << "," << csv_num(c.prefill->kv_transfer_s);
    else
      out << ",,,,";
    out << "," << c.expert_parallel_size() << "," << c.ep_group_replicas << ","
        << (kv_burst_requests(c, open) > 0 ? "true" : "false");
    if (o.emit) {
      std::string line;
      if (ok && c.prefill && c.prefill->deployment)
        line = "prefill: " + launch_line(launch(*o.emit, q.model, *c.prefill->deployment, DisaggRole::prefill, o)) +
               "; decode: " + launch_line(launch(*o.emit, q.model, *c.deployment, DisaggRole::decode, o));
      else if (ok && c.deployment)
        line = launch_line(candidate_launch(*o.emit, q.model, c, o));
      out << "," << (line.empty() ? "" : escape::csv_field(line));
    }
    out << "\n";
  }
}

namespace {

/// The first lines: what was sized, the targets, how many candidates met them.
void table_header(std::ostream& out, const SizingRequest& q, const SizingResult& r, const SizingReportOptions& o) {
  const auto& w = q.workload;
  const auto& s = q.space;
  std::ostringstream load;
  if (w.open_loop())
    load << amount(w.arrival_rate_per_s, w.arrival_rate_per_s < 10 ? 2 : 1) << " req/s (open loop"
         << (w.arrival_scv == 1 ? ", Poisson" : ", gap SCV " + fixed(w.arrival_scv, 2)) << ")";
  else
    load << w.concurrent_users << " concurrent users (closed loop, no think time)";
  out << "Sizing " << escape::terminal_text(q.model.display_name) << " (" << escape::terminal_text(q.model.name)
      << ") for " << load.str() << ", prompt " << grouped(static_cast<std::uint64_t>(std::llround(w.prompt_tokens)))
      << " / output " << grouped(static_cast<std::uint64_t>(std::llround(w.output_tokens))) << " tokens (means)";
  if (s.base.max_model_len)
    out << ", max_model_len " << grouped(static_cast<std::uint64_t>(*s.base.max_model_len));
  else if (w.max_context_tokens > 0)
    out << ", max_model_len " << grouped(static_cast<std::uint64_t>(w.max_context_tokens));
  else if (w.max_context_tokens == 0)
    out << ", max_model_len " << grouped(static_cast<std::uint64_t>(std::ceil(w.prompt_tokens + w.output_tokens)));
  else
    out << ", max_model_len: the model's";
  out << "\n";
  if (!w.derivation.empty()) out << "  from " << w.derivation << "\n";
  out << "Targets: TTFT " << pct_name(q.targets.ttft_percentile) << " <= " << dur(q.targets.ttft_s)
      << ", TPOT <= " << dur(q.targets.tpot_s) << "; rates "
      << (s.calibration             ? "calibrated"
          : o.engine == "datasheet" ? "datasheet x default efficiencies"
                                    : "engine profile " + o.engine + " (fitted efficiencies and overheads)")
      << "; price per GPU-hour from the GPU profiles" << (o.prices_overridden ? " and --price" : "") << "\n";
  // vllm bench serve leaves TPOT out for a request of one output token: no decode step follows the prefill's.
  if (w.output_tokens <= 1)
    out << "Note: one output token per request: no decode step follows the first token, so the TPOT target is not "
           "applied; the TPOT and tokens/s per user columns show one decode step's time at that batch\n";
  if (const std::string band = error_band(engine_profile(o.engine)); !s.calibration && !band.empty())
    out << "Expected error of the latencies: " << band << "\n";
  std::size_t counts[6] = {};
  for (const auto& c : r.candidates) ++counts[static_cast<int>(c.status)];
  out << r.candidates.size() << " candidates: " << r.feasible << " meet the targets";
  const std::pair<CandidateStatus, const char*> kinds[] = {{CandidateStatus::does_not_fit, "do not fit"},
                                                           {CandidateStatus::tpot_too_high, "TPOT too high"},
                                                           {CandidateStatus::ttft_too_high, "TTFT too high"},
                                                           {CandidateStatus::too_many_gpus, "too many GPUs"},
                                                           {CandidateStatus::invalid, "invalid for the model"}};
  std::string rej;
  for (const auto& [st, what] : kinds)
    if (counts[static_cast<int>(st)])
      rej += (rej.empty() ? "" : ", ") + std::to_string(counts[static_cast<int>(st)]) + " " + what;
  if (!rej.empty()) out << "; rejected: " << rej << (o.explain ? "" : " (--explain lists them)");
  out << "\n";
}

/// The column heads of a candidate row (table_row).
void table_head(std::ostream& out, const SizingRequest& q) {
  const std::string ttft_head = "TTFT " + pct_name(q.targets.ttft_percentile);
  out << "    #  GPU        TP  PP  EP  weights  KV        GPUs  replicas  batch  " << pad_left(ttft_head, 10)
      << "      TPOT  " << (q.workload.open_loop() ? "max req/s" : "max users")
      << "  tok/s/GPU  tok/s/user    $/hour  $/M in  $/M out  $/M all\n";
}

/// The EP column: the expert-parallel size, "-" without expert parallelism.
std::string ep_column(const SizingCandidate& c) {
  return c.ep_group_replicas > 0 ? std::to_string(c.expert_parallel_size()) : "-";
}

/// What an expert-parallel candidate's replicas are, in a line ("" without expert parallelism).
std::string ep_groups_text(const SizingCandidate& b) {
  if (b.ep_group_replicas <= 0) return "";
  const i64 groups = b.ep_groups();
  return "  expert parallel: " + std::to_string(groups) + (groups == 1 ? " group" : " groups") + " of " +
         std::to_string(b.ep_group_replicas) +
         " data-parallel replicas; each replica keeps its own requests and KV cache, and a group's routed experts "
         "are split over its " +
         std::to_string(b.expert_parallel_size()) + " GPUs\n";
}

/// A warning line when a replica's Poisson bursts exceed the requests its KV cache holds (kv_burst_requests; ""
/// otherwise).
std::string kv_burst_text(const SizingCandidate& b, bool open) {
  const double burst = kv_burst_requests(b, open);
  if (burst <= 0) return "";
  return "  warning: the KV cache holds " + std::to_string(b.max_batch_memory) + " requests per replica and " +
         std::to_string(b.batch) + " decode on average; Poisson bursts reach it (mean + 3 sd = " + fixed(burst, 0) +
         "), and vLLM then preempts requests and recomputes their prompts, which can cut the capacity below the load: "
         "--verify simulates it\n";
}

/// One feasible candidate, `rank` its place in the ranking (1 = cheapest).
void table_row(std::ostream& out, std::size_t rank, const SizingCandidate& c, bool open) {
  const double cap = open ? c.max_rate_per_replica_per_s * static_cast<double>(c.replicas)
                          : static_cast<double>(c.max_batch_targets * c.replicas);
  // A figure wider than its column still stands apart from the one before it.
  const auto col = [](const std::string& t, std::size_t w) { return t.size() >= w ? " " + t : pad_left(t, w); };
  const auto money = [&](double v, int digits, std::size_t w) { return col(c.priced ? amount(v, digits) : "n/a", w); };
  out << pad_left(std::to_string(rank), 5) << "  " << pad_right(escape::terminal_text(c.gpu), 10)
      << pad_left(std::to_string(c.tp), 3) << pad_left(std::to_string(c.pp), 4) << pad_left(ep_column(c), 4) << "  "
      << pad_right(std::string(name(c.weight_dtype)), 9) << pad_right(std::string(name(c.kv_dtype)), 8)
      << col(grouped(static_cast<std::uint64_t>(c.gpus)), 6)
      << col(c.prefill ? xpyd(c) : grouped(static_cast<std::uint64_t>(c.replicas)), 10)
      << col(std::to_string(c.batch), 7) << col(dur(c.ttft_s), 12) << col(dur(c.tpot_s), 10)
      << col(open ? amount(cap, cap < 10 ? 2 : 1) : grouped(static_cast<std::uint64_t>(cap)), 11)
      << col(amount(c.tokens_per_s_per_gpu, 0), 11)
      << col(std::isfinite(c.tokens_per_s_per_user) ? amount(c.tokens_per_s_per_user, 1) : "-", 12)
      << money(c.cost_per_hour_usd, 2, 10) << money(c.cost_per_million_input_tokens_usd, 3, 8)
      << money(c.cost_per_million_output_tokens_usd, 3, 9) << money(c.cost_per_million_tokens_usd, 3, 9) << "\n";
  if (!c.prefill) return;
  const auto& p = *c.prefill;
  out << "         " << xpyd(c) << ": prefill " << p.replicas << " x " << escape::terminal_text(p.gpu) << " TP" << p.tp
      << " (" << fixed(p.utilization * 100, 0) << "% busy, prefill " << dur(p.prefill_s) << ", KV transfer "
      << dur(p.kv_transfer_s) << " over " << escape::terminal_text(p.link) << "), decode " << c.replicas << " x "
      << escape::terminal_text(c.gpu) << " TP" << c.tp << (c.pp > 1 ? " PP" + std::to_string(c.pp) : "") << "\n";
}

/// The ranked rows of the candidates that meet the targets, then the best per GPU type and the frontier.
void table_rows(std::ostream& out, const SizingRequest& q, const SizingResult& r, const SizingReportOptions& o) {
  const bool open = q.workload.open_loop();
  out << "\n";
  table_head(out, q);
  const std::size_t n = o.top == 0 ? r.feasible : std::min<std::size_t>(r.feasible, static_cast<std::size_t>(o.top));
  for (std::size_t i = 0; i < n; ++i) table_row(out, i + 1, r.candidates[i], open);
  if (n < r.feasible) out << "    ... " << r.feasible - n << " more (--top 0 shows all)\n";
  out << "\nBest per GPU type (the cheapest deployment of each; # is its rank):\n";
  for (const std::size_t i : r.best_per_gpu) table_row(out, i + 1, r.candidates[i], open);
  out << "\nPareto frontier: " << r.pareto.size() << " of " << r.feasible
      << " deployments that no other matches or beats on tokens/s per GPU, tokens/s per user (1 / TPOT) and $ per "
         "million output tokens at once, at this load:\n";
  for (const std::size_t i : r.pareto) table_row(out, i + 1, r.candidates[i], open);
}

/// --verify: the analytic and the simulated replica counts side by side.
void table_verified(std::ostream& out, const SizingRequest& q, const SizingResult& r, const SizingReportOptions& o) {
  const std::string p = pct_name(q.targets.ttft_percentile);
  out << "\nVerified by simulation (" << escape::terminal_text(o.verified_how)
      << "): the smallest replica count whose simulated TTFT " << p
      << " and mean TPOT meet the targets, and at the model's count the model's figures beside the simulation's:\n"
      << "    #  GPU        TP  PP  EP  weights  KV       replicas: model  sim    GPUs    $/hour  "
      << pad_left("TTFT " + p, 8) << ": model       sim    TPOT: model       sim  runs\n";
  const sim::VerifiedCandidate* best = nullptr;
  double best_cost = 0;
  for (const auto& v : o.verified) {
    const auto& c = r.candidates[v.index];
    const auto [gpus, cost] = verified_cost(c, v);
    out << pad_left(std::to_string(v.index + 1), 5) << "  " << pad_right(escape::terminal_text(c.gpu), 10)
        << pad_left(std::to_string(c.tp), 3) << pad_left(std::to_string(c.pp), 4) << pad_left(ep_column(c), 4) << "  "
        << pad_right(std::string(name(c.weight_dtype)), 9) << pad_right(std::string(name(c.kv_dtype)), 8)
        << pad_left(c.prefill ? xpyd(c) : std::to_string(v.analytic_replicas), 16)
        << pad_left(v.replicas > 0 && c.prefill
                        ? std::to_string(v.prefill_replicas) + "P" + std::to_string(v.replicas) + "D"
                    : v.replicas > 0      ? std::to_string(v.replicas)
                    : v.too_many_rejected ? "none"
                                          : ">" + std::to_string(v.max_replicas),
                    5)
        << pad_left(v.replicas > 0 ? grouped(static_cast<std::uint64_t>(gpus)) : "-", 7)
        << pad_left(v.replicas > 0 && c.priced ? fixed(cost, 2) : "n/a", 10) << pad_left(dur(c.ttft_s), 17)
        << pad_left(dur(v.ttft_at_analytic_s), 10) << pad_left(dur(c.tpot_s), 13)
        << pad_left(dur(v.tpot_at_analytic_s), 10) << pad_left(std::to_string(v.simulations), 6)
        << (v.replicas != v.analytic_replicas ? "  replicas differ" : "") << "\n";
    for (const auto& f : v.findings_at_analytic)
      out << "         at " << v.analytic_replicas << (v.analytic_replicas == 1 ? " replica: " : " replicas: ")
          << escape::terminal_text(to_string(f)) << "\n";
    if (v.rejected > 0)
      out << "         " << v.rejected
          << " requests longer than max_model_len were rejected, each a miss of the TTFT target"
          << (v.too_many_rejected ? ": more than its percentile allows at any replica count\n" : "\n");
    if (v.replicas > 0 && c.priced && (!best || cost < best_cost)) best = &v, best_cost = cost;
  }
  if (best) {
    const auto& c = r.candidates[best->index];
    out << "Cheapest after simulation: #" << best->index + 1 << ", "
        << (c.prefill ? std::to_string(best->prefill_replicas) + " prefill x " + escape::terminal_text(c.prefill->gpu) +
                            " TP" + std::to_string(c.prefill->tp) + " + " + std::to_string(best->replicas) + " decode"
                      : std::to_string(best->replicas))
        << " x " << escape::terminal_text(c.gpu) << " TP" << c.tp << (c.pp > 1 ? " PP" + std::to_string(c.pp) : "")
        << ep_text(c) << " (" << verified_cost(c, *best).first
        << (verified_cost(c, *best).first == 1 ? " GPU, $" : " GPUs, $") << fixed(best_cost, 2) << "/hour).\n";
  }
}

/// --emit: the launch commands of the cheapest deployment and of the best per GPU type.
void table_launch(std::ostream& out, const SizingRequest& q, const SizingResult& r, LaunchEngine e,
                  const SizingReportOptions& o) {
  out << "\nLaunch (" << (e == LaunchEngine::vllm ? "vLLM" : "SGLang")
      << "; the flags kvcap planned with, vLLM's GPU-dependent defaults made explicit):\n";
  std::vector<std::size_t> picks = {0};
  for (const std::size_t i : r.best_per_gpu)
    if (!contains(picks, i)) picks.push_back(i);
  for (const std::size_t i : picks) {
    const auto& c = r.candidates[i];
    if (!c.deployment) continue;
    // Disaggregated: the prefill pool's GPU and the decode pool's, each with its count.
    const std::string gpu_text =
        c.prefill && c.prefill->gpu != c.gpu
            ? escape::terminal_text(c.prefill->gpu) + " (prefill) + " + escape::terminal_text(c.gpu) + " (decode)"
            : escape::terminal_text(c.gpu);
    out << "  # " << i + 1 << ": " << gpu_text << ", " << c.gpus << (c.gpus == 1 ? " GPU" : " GPUs")
        << (c.prefill ? " (" + xpyd(c) + ")" : "") << "\n";
    auto print = [&](const LaunchCommand& cmd, const char* role) {
      out << "  " << role << launch_line(cmd) << "\n";
      for (const auto& note : cmd.notes) out << "  # " << escape::terminal_text(note) << "\n";
    };
    if (c.prefill && c.prefill->deployment) {
      print(launch(e, q.model, *c.prefill->deployment, DisaggRole::prefill, o), "prefill: ");
      print(launch(e, q.model, *c.deployment, DisaggRole::decode, o), "decode:  ");
    } else {
      print(candidate_launch(e, q.model, c, o), "");
    }
  }
}

/// --disagg: whether splitting prefill and decode pays at this load, by the cheapest of each kind.
void table_disagg_verdict(std::ostream& out, const SizingResult& r) {
  const DisaggVerdict v = disagg_verdict(r);
  if (!v.comparable()) {
    out << "Disaggregated vs aggregated: "
        << (v.disaggregated == std::string::npos ? "no xPyD deployment meets the targets"
                                                 : "no aggregated deployment meets the targets")
        << ".\n";
    return;
  }
  const auto& a = r.candidates[v.aggregated];
  const auto& d = r.candidates[v.disaggregated];
  out << "Disaggregated vs aggregated: the cheapest xPyD (#" << v.disaggregated + 1 << ", " << xpyd(d) << ", " << d.gpus
      << " GPUs, $" << fixed(d.cost_per_hour_usd, 2) << "/hour, TPOT " << dur(d.tpot_s)
      << ") against the cheapest aggregated (#" << v.aggregated + 1 << ", " << a.gpus << " GPUs, $"
      << fixed(a.cost_per_hour_usd, 2) << "/hour, TPOT " << dur(a.tpot_s) << "): disaggregation " << verdict_text(r, v)
      << " at this load.\n";
}

/// The cheapest candidate in words.
void table_cheapest(std::ostream& out, const SizingCandidate& b, bool open, bool lockstep) {
  if (b.prefill) {
    const auto& p = *b.prefill;
    out << "\nCheapest: disaggregated " << xpyd(b) << ", " << p.replicas << " prefill x "
        << escape::terminal_text(p.gpu) << " TP" << p.tp << " + " << b.replicas << " decode x "
        << escape::terminal_text(b.gpu) << " TP" << b.tp << (b.pp > 1 ? " PP" + std::to_string(b.pp) : "") << " ("
        << name(b.weight_dtype) << " weights, " << name(b.kv_dtype)
        << " KV): " << grouped(static_cast<std::uint64_t>(b.gpus)) << " GPUs, $" << fixed(b.cost_per_hour_usd, 2)
        << "/hour, $" << amount(b.cost_per_million_output_tokens_usd, 3) << " per million output tokens at "
        << amount(b.output_tokens_per_s, 0) << " output tok/s.\n"
        << "  TTFT = prefill queue " << dur(p.ttft_wait_s) << " + prefill " << dur(p.prefill_s) << " + KV transfer "
        << dur(p.kv_transfer_s) << " + two decode steps of " << dur(b.decode_step_s) << "; " << b.batch
        << " requests decoding per decode worker; docs/sizing.md.\n";
    return;
  }
  out << "\nCheapest: " << b.replicas << " x " << escape::terminal_text(b.gpu) << " TP" << b.tp
      << (b.pp > 1 ? " PP" + std::to_string(b.pp) : "") << ep_text(b) << " (" << name(b.weight_dtype) << " weights, "
      << name(b.kv_dtype) << " KV): " << grouped(static_cast<std::uint64_t>(b.gpus))
      << (b.gpus == 1 ? " GPU, $" : " GPUs, $") << fixed(b.cost_per_hour_usd, 2) << "/hour, $"
      << amount(b.cost_per_million_output_tokens_usd, 3) << " per million output tokens at "
      << amount(b.output_tokens_per_s, 0) << " output tok/s.\n"
      << "  per replica: " << (open ? amount(b.rate_per_replica_per_s, 2) + " req/s, " : "") << b.batch
      << " requests decoding (at most " << b.max_batch_memory << ": KV cache, max_num_seqs), prefill "
      << dur(b.prefill_s) << " alone, " << fixed(b.prefill_utilization * 100, 0)
      << "% of GPU time on prefill, decode step " << dur(b.decode_step_s) << " (" << to_string(b.decode_bound)
      << "-bound)\n"
      << ep_groups_text(b) << kv_burst_text(b, open)
      << (lockstep ? "batch: the users per replica, in lockstep (a prefill-first engine): TTFT is a prompt's place in "
                     "their prefill wave; docs/sizing.md.\n"
                   : "batch: requests decoding at once per replica (Little's law); TTFT includes the prefill queue "
                     "(Kingman); docs/sizing.md.\n");
}

}  // namespace

void report_sizing_table(std::ostream& out, const SizingRequest& q, const SizingResult& r,
                         const SizingReportOptions& o) {
  table_header(out, q, r, o);
  if (r.feasible > 0) {
    table_rows(out, q, r, o);
    table_cheapest(out, r.candidates.front(), q.workload.open_loop(),
                   !q.workload.open_loop() && q.space.speed.prefill_first);
    if (q.space.disaggregated) table_disagg_verdict(out, r);
    if (!o.verified.empty()) table_verified(out, q, r, o);
    if (o.emit) table_launch(out, q, r, *o.emit, o);
  }
  if (!o.explain || r.feasible >= r.candidates.size()) return;
  out << "\nRejected:\n";
  for (std::size_t i = r.feasible; i < r.candidates.size(); ++i) {
    const auto& c = r.candidates[i];
    out << "  " << pad_right(escape::terminal_text(c.gpu), 10) << " TP" << pad_right(std::to_string(c.tp), 2) << " PP"
        << pad_right(std::to_string(c.pp), 2) << pad_right(ep_text(c), 12) << " "
        << pad_right(std::string(name(c.weight_dtype)) + "/" + std::string(name(c.kv_dtype)), 10) << " "
        << (c.prefill ? "xPyD " : "") << to_string(c.status) << ": " << escape::terminal_text(c.reason) << "\n";
  }
}

}  // namespace kvcap::cli
