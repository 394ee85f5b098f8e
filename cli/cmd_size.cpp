// kvcap size: the cheapest deployments that serve a workload within TTFT and TPOT targets.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "common.hpp"
#include "format.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/planner/sizing.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "report.hpp"

namespace kvcap::cli {

namespace {

/// "90", "p90", "99.9" -> 0.90, 0.90, 0.999.
double parse_percentile(const std::string& in, const std::string& flag) {
  std::string s = in;
  if (!s.empty() && (s[0] == 'p' || s[0] == 'P')) s = s.substr(1);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno == ERANGE || !(v > 0 && v < 100))
    throw UsageError(flag + ": expected a percentile strictly between 0 and 100 such as 90, p90 or 99.9, got '" + in + "'");
  return v / 100;
}

std::string dur(double s) {
  if (!std::isfinite(s)) return "unbounded";
  if (s >= 1) return fixed(s, 2) + " s";
  return fixed(s * 1e3, s >= 0.1 ? 0 : 1) + " ms";
}

std::string pct_name(double p) {
  std::string s = fixed(p * 100, 1);
  if (s.size() > 2 && s.substr(s.size() - 2) == ".0") s.resize(s.size() - 2);
  return "p" + s;
}

std::string pad_left(const std::string& s, std::size_t w) { return s.size() >= w ? s : std::string(w - s.size(), ' ') + s; }
std::string pad_right(const std::string& s, std::size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }

nlohmann::ordered_json candidate_json(const SizingCandidate& c, bool open_loop) {
  nlohmann::ordered_json j;
  j["gpu"] = c.gpu;
  j["tensor_parallel_size"] = c.tp;
  j["pipeline_parallel_size"] = c.pp;
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
  j["cost_per_hour_usd"] = c.cost_per_hour_usd;
  j["cost_per_million_output_tokens_usd"] = c.cost_per_million_output_tokens_usd;
  return j;
}

/// Finite doubles for JSON (nlohmann writes inf as null; say so explicitly).
void sanitize(nlohmann::ordered_json& j) {
  for (auto& [k, v] : j.items())
    if (v.is_number_float() && !std::isfinite(v.get<double>())) v = nullptr;
}

const char* kCsvHeader =
    "rank,gpu,tensor_parallel_size,pipeline_parallel_size,weight_dtype,kv_cache_dtype,status,reason,gpus_per_replica,"
    "replicas,gpus,kv_capacity_tokens_per_replica,max_batch_memory,max_batch_targets,max_rate_per_replica_per_s,"
    "rate_per_replica_per_s,batch_per_replica,prefill_s,prefill_utilization,decode_step_s,decode_bound,ttft_s,tpot_s,"
    "e2e_s,output_tokens_per_s,cost_per_hour_usd,cost_per_million_output_tokens_usd\n";

std::string csv_num(double v) {
  if (!std::isfinite(v)) return "";
  std::ostringstream o;
  o.precision(6);
  o << v;
  return o.str();
}

}  // namespace

int cmd_size(const std::vector<std::string>& args) {
  po::options_description work("Workload (a file, or mean lengths with a rate or a number of users)");
  work.add_options()
    ("model,m", po::value<std::string>(), "model: built-in name, YAML profile, or Hugging Face config.json")
    ("workload,w", po::value<std::string>(), "workload YAML (kind: workload): arrival rate, length distributions, slo")
    ("prompt-tokens", po::value<std::string>(), "mean prompt tokens per request (e.g. 2K)")
    ("output-tokens", po::value<std::string>(), "mean output tokens per request")
    ("rate", po::value<std::string>(), "open loop: requests per second over the whole cluster (overrides the file's)")
    ("concurrent-users", po::value<std::string>(), "closed loop: users each sending the next request as the last ends")
    ("max-concurrency", po::value<std::string>(), "the same as --concurrent-users, in vllm bench serve's words (no think time; "
                                                  "`kvcap simulate --max-concurrency N --think-time T` runs one)");
  po::options_description targets("Targets");
  targets.add_options()
    ("ttft-p", po::value<std::string>(), "TTFT target at the percentile --ttft-percentile (e.g. 2s, 800ms)")
    ("ttft-percentile", po::value<std::string>()->default_value("90"), "percentile of the TTFT target (90, p99, 99.9)")
    ("tpot", po::value<std::string>(), "mean time per output token target (e.g. 50ms)");
  po::options_description search("Search space");
  search.add_options()
    ("gpus", po::value<std::string>(), "GPU types (built-in names or YAML profiles), comma-separated (default: all built-in)")
    ("quantization,q", po::value<std::string>(), "weight formats to try (default: the checkpoint's, plus fp8 for 16-bit checkpoints); e.g. auto,fp8,int4")
    ("kv-cache-dtype", po::value<std::string>()->default_value("auto,fp8"), "KV formats to try (auto = the model dtype)")
    ("max-tp", po::value<std::string>()->default_value("8"), "largest tensor-parallel size (1, 2, 4, ... are tried)")
    ("max-pp", po::value<std::string>()->default_value("8"), "largest pipeline-parallel size (1, 2, 4, ... are tried)")
    ("max-gpus-per-replica", po::value<std::string>()->default_value("8"), "TP x PP limit: one node")
    ("max-gpus", po::value<std::string>()->default_value("100000"), "reject candidates needing more GPUs in total")
    ("price", po::value<std::string>(), "price per GPU-hour in USD overriding the profiles', e.g. h100-sxm=2.5,h200=3.1");
  po::options_description dep("Deployment (every candidate; vLLM flag names)");
  dep.add_options()
    ("gpu-memory-utilization", po::value<std::string>()->default_value("0.9"), "fraction of device memory vLLM may use")
    ("dtype", po::value<std::string>()->default_value("auto"), "model dtype: auto, bf16, fp16, fp32")
    ("block-size", po::value<std::string>()->default_value("16"), "tokens per KV block")
    ("max-model-len", po::value<std::string>(), "context limit per request (default: prompt + output of the workload)")
    ("max-num-batched-tokens", po::value<std::string>(), "token budget per step (default: vLLM serve's)")
    ("max-num-seqs", po::value<std::string>(), "sequences per step (default: vLLM serve's)");
  po::options_description out("Output");
  out.add_options()
    ("format,f", po::value<std::string>()->default_value("table"), "table (people), json or csv (programs)")
    ("top", po::value<std::string>()->default_value("10"), "rows in the table (0: all that meet the targets)")
    ("explain", "also list every rejected candidate and why it failed")
    ("help,h", "show this help");
  po::options_description desc;
  desc.add(work).add(targets).add(search).add(dep).add(speed_options()).add(out);
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    print_help("kvcap size --model M (--workload FILE | --prompt-tokens P --output-tokens O) (--rate R | --concurrent-users U)\n"
               "                  --ttft-p T --tpot T [options]",
               "The cheapest deployments that serve a workload within a TTFT target (at a percentile) and a TPOT target.\n"
               "Searches GPU type x TP x PP x weight format x KV format x replicas; each candidate must fit in memory\n"
               "(vLLM V1 semantics) and meet the targets under the queueing its share of the load implies (Little's law\n"
               "for the decode batch, an M/G/1 prefill queue with Kingman's formula; docs/sizing.md). Cost = GPUs x price\n"
               "per GPU-hour; cost per million output tokens = cost per hour / output tokens per hour at the load.",
               desc,
               "  kvcap size --model llama-3.1-70b --prompt-tokens 2K --output-tokens 256 --rate 10 --ttft-p 2s --tpot 50ms\n"
               "  kvcap size --model llama-3.1-8b --workload profiles/examples/workload-chat.yaml --gpus h100-sxm,l40s,l4\n"
               "  kvcap size --model mixtral-8x7b --prompt-tokens 1K --output-tokens 512 --concurrent-users 200 \\\n"
               "             --ttft-p 1s --ttft-percentile 99 --tpot 40ms --price h100-sxm=2.2 --explain\n"
               "  kvcap size --model deepseek-v3 --prompt-tokens 4K --output-tokens 1K --rate 2 --ttft-p 5s --tpot 80ms \\\n"
               "             --gpus h200,b200,mi300x --format csv");
    return 0;
  }
  auto str = [&](const char* k) { return vm[k].as<std::string>(); };
  if (!vm.count("model")) throw UsageError("--model is required (a built-in name such as llama-3.1-70b, a YAML profile, or a config.json)");
  const Format fmt = parse_format(str("format"));

  // Workload: a file, or flags; --rate / --concurrent-users override the file's arrivals.
  SizingWorkload w;
  std::optional<WorkloadSpec> spec;
  if (vm.count("workload")) {
    if (vm.count("prompt-tokens") || vm.count("output-tokens"))
      throw UsageError("--workload: give the lengths in the workload file or with --prompt-tokens/--output-tokens, not both");
    spec = profiles::load_workload_file(str("workload"));
    w = sizing_workload(*spec);
  } else {
    if (!vm.count("prompt-tokens") || !vm.count("output-tokens"))
      throw UsageError("give --workload FILE, or --prompt-tokens and --output-tokens (mean tokens per request)");
    w.prompt_tokens = static_cast<double>(parse_tokens(str("prompt-tokens"), "--prompt-tokens"));
    w.output_tokens = static_cast<double>(parse_tokens(str("output-tokens"), "--output-tokens"));
  }
  if (vm.count("concurrent-users") && vm.count("max-concurrency"))
    throw UsageError("--concurrent-users and --max-concurrency name the same thing: give one");
  const char* users_flag = vm.count("max-concurrency") ? "max-concurrency" : "concurrent-users";
  if (vm.count("rate") && vm.count(users_flag))
    throw UsageError(std::string("--rate and --") + users_flag + ": give one (open loop: a rate; closed loop: a number of users)");
  if (vm.count("rate")) {
    w.arrival_rate_per_s = parse_real(str("rate"), "--rate", "a positive number of requests per second such as 10 or 0.5", kPositive);
    w.concurrent_users = 0;
    if (!spec) w.arrival_scv = 1;
  } else if (vm.count(users_flag)) {
    w.concurrent_users = parse_int(str(users_flag), std::string("--") + users_flag, 1);
    w.arrival_rate_per_s = 0;
  } else if (!spec) {
    throw UsageError("give --rate R (requests per second, open loop) or --concurrent-users U (closed loop)");
  } else if (!(w.arrival_rate_per_s > 0) && w.concurrent_users == 0) {
    throw UsageError("--workload: the file has no arrival rate; give --rate or --concurrent-users");
  }
  if (spec && spec->arrival.kind == ArrivalProcess::Kind::closed && spec->arrival.think_time_s > 0 && w.concurrent_users > 0)
    std::cerr << "kvcap size: note: the workload's think time (" << spec->arrival.think_time_s
              << " s) is not in size's queueing model: its " << w.concurrent_users
              << " clients are sized as always busy (conservative); kvcap simulate runs the think time\n";

  SizingTargets t;
  t.ttft_percentile = parse_percentile(str("ttft-percentile"), "--ttft-percentile");
  if (vm.count("ttft-p")) t.ttft_s = parse_seconds(str("ttft-p"), "--ttft-p");
  else if (spec && spec->slo.ttft_s) t.ttft_s = *spec->slo.ttft_s;
  else throw UsageError("--ttft-p is required (the TTFT target at --ttft-percentile, e.g. 2s), or an slo.ttft_s in the workload file");
  if (vm.count("tpot")) t.tpot_s = parse_seconds(str("tpot"), "--tpot");
  else if (spec && spec->slo.tpot_s) t.tpot_s = *spec->slo.tpot_s;
  else throw UsageError("--tpot is required (the mean time per output token target, e.g. 50ms), or an slo.tpot_s in the workload file");

  SizingSpace s;
  const ModelSpec model = profiles::resolve_model(str("model"));
  for (const auto& g : vm.count("gpus") ? split_list(str("gpus")) : profiles::builtin_gpu_names())
    s.gpus.push_back(profiles::resolve_gpu(g));
  if (s.gpus.empty()) throw UsageError("--gpus: expected a comma-separated list of GPU names, e.g. h100-sxm,h200");
  if (vm.count("price")) {
    for (const auto& item : split_list(str("price"))) {
      const auto eq = item.find('=');
      if (eq == std::string::npos || eq == 0)
        throw UsageError("--price: expected GPU=USD_PER_GPU_HOUR items such as h100-sxm=2.5, got '" + item + "'");
      const std::string g = item.substr(0, eq);
      const double usd = parse_real(item.substr(eq + 1), "--price", "a price >= 0 in USD per GPU-hour for '" + g + "'", 0);
      bool found = false;
      for (auto& gs : s.gpus)
        if (gs.name == g) gs.price_per_gpu_hour_usd = usd, found = true;
      if (!found) {
        std::string names;
        for (const auto& gs : s.gpus) names += (names.empty() ? "" : ", ") + gs.name;
        throw UsageError("--price: '" + g + "' is not among the GPUs searched (" + names + ")");
      }
    }
  }
  if (vm.count("quantization"))
    for (const auto& q : split_list(str("quantization")))
      s.weight_dtypes.push_back(parse_dtype_flag(q, "--quantization", [](const DTypeInfo& i) { return i.weights_ok; }));
  for (const auto& k : split_list(str("kv-cache-dtype")))
    s.kv_dtypes.push_back(parse_dtype_flag(k, "--kv-cache-dtype", [](const DTypeInfo& i) { return i.kv_ok; }));
  if (s.kv_dtypes.empty()) throw UsageError("--kv-cache-dtype: expected a comma-separated list such as auto,fp8");
  s.max_tp = parse_int(str("max-tp"), "--max-tp", 1);
  s.max_pp = parse_int(str("max-pp"), "--max-pp", 1);
  s.max_gpus_per_replica = parse_int(str("max-gpus-per-replica"), "--max-gpus-per-replica", 1);
  s.max_gpus = parse_int(str("max-gpus"), "--max-gpus", 1);
  s.base.gpu_memory_utilization = parse_real(str("gpu-memory-utilization"), "--gpu-memory-utilization", "a fraction in (0, 1]", kPositive, 1);
  s.base.dtype = parse_dtype_flag(str("dtype"), "--dtype", [](const DTypeInfo& i) { return i.activation_ok; });
  s.base.block_size = parse_int(str("block-size"), "--block-size", 1);
  if (vm.count("max-model-len")) s.base.max_model_len = parse_tokens(str("max-model-len"), "--max-model-len");
  if (vm.count("max-num-batched-tokens"))
    s.base.max_num_batched_tokens = parse_tokens(str("max-num-batched-tokens"), "--max-num-batched-tokens");
  if (vm.count("max-num-seqs")) s.base.max_num_seqs = parse_int(str("max-num-seqs"), "--max-num-seqs", 1);
  // A calibration measures one device: it applies only when exactly one GPU type is searched.
  if (vm.count("calibration")) {
    if (s.gpus.size() != 1)
      throw UsageError("--calibration: a calibration describes the GPU it was measured on; give exactly one GPU type with --gpus (got " +
                       std::to_string(s.gpus.size()) + ")");
    s.calibration = calibration_from(vm, s.gpus.front());
  }
  s.speed = speed_options_from(vm);
  const i64 top = parse_int(str("top"), "--top", 0);
  const bool explain = vm.count("explain") > 0;

  const SizingResult r = size_cluster(model, w, t, s);
  const bool open = w.open_loop();
  std::size_t counts[6] = {};
  for (const auto& c : r.candidates) ++counts[static_cast<int>(c.status)];
  const std::size_t shown = explain ? r.candidates.size() : r.feasible;

  if (fmt == Format::json) {
    nlohmann::ordered_json j;
    j["model"] = model.name;
    auto& jw = j["workload"];
    jw["prompt_tokens"] = w.prompt_tokens;
    jw["output_tokens"] = w.output_tokens;
    if (open) jw["arrival_rate_per_s"] = w.arrival_rate_per_s, jw["arrival_scv"] = w.arrival_scv;
    else jw["concurrent_users"] = w.concurrent_users;
    jw["prompt_scv"] = w.prompt_scv;
    j["targets"] = {{"ttft_s", t.ttft_s}, {"ttft_percentile", t.ttft_percentile}, {"tpot_s", t.tpot_s}};
    j["candidates_searched"] = r.candidates.size();
    j["feasible"] = r.feasible;
    if (r.feasible == 0) j["diagnosis"] = r.diagnosis;
    j["rates"] = s.calibration ? "calibrated" : "datasheet";
    auto& arr = j["candidates"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < shown; ++i) {
      auto c = candidate_json(r.candidates[i], open);
      sanitize(c);
      if (r.candidates[i].status == CandidateStatus::ok) c["rank"] = i + 1;
      arr.push_back(c);
    }
    std::cout << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  } else if (fmt == Format::csv) {
    std::cout << kCsvHeader;
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& c = r.candidates[i];
      const bool ok = c.status == CandidateStatus::ok;
      std::string reason = c.reason;
      for (auto& ch : reason)
        if (ch == '"') ch = '\'';
      std::cout << (ok ? std::to_string(i + 1) : "") << "," << escape::csv_field(c.gpu) << "," << c.tp << "," << c.pp << ","
                << name(c.weight_dtype) << "," << name(c.kv_dtype) << "," << to_string(c.status) << "," << escape::csv_field(reason, true)
                << "," << c.gpus_per_replica << "," << c.replicas << "," << c.gpus << "," << c.kv_capacity_tokens << ","
                << c.max_batch_memory << "," << c.max_batch_targets << "," << (open ? csv_num(c.max_rate_per_replica_per_s) : "")
                << "," << csv_num(c.rate_per_replica_per_s) << "," << c.batch << "," << csv_num(c.prefill_s) << ","
                << csv_num(c.prefill_utilization) << "," << csv_num(c.decode_step_s) << "," << to_string(c.decode_bound)
                << "," << csv_num(c.ttft_s) << "," << csv_num(c.tpot_s) << "," << csv_num(c.e2e_s) << ","
                << csv_num(c.output_tokens_per_s) << "," << csv_num(c.cost_per_hour_usd) << ","
                << csv_num(c.cost_per_million_output_tokens_usd) << "\n";
    }
  } else {
    std::ostringstream load;
    if (open) load << fixed(w.arrival_rate_per_s, w.arrival_rate_per_s < 10 ? 2 : 1) << " req/s (open loop"
                   << (w.arrival_scv == 1 ? ", Poisson" : ", gap SCV " + fixed(w.arrival_scv, 2)) << ")";
    else load << w.concurrent_users << " concurrent users (closed loop, no think time)";
    std::cout << "Sizing " << escape::terminal_text(model.display_name) << " (" << escape::terminal_text(model.name) << ") for " << load.str() << ", prompt "
              << grouped(static_cast<std::uint64_t>(std::llround(w.prompt_tokens))) << " / output "
              << grouped(static_cast<std::uint64_t>(std::llround(w.output_tokens))) << " tokens (means)";
    if (s.base.max_model_len) std::cout << ", max_model_len " << grouped(static_cast<std::uint64_t>(*s.base.max_model_len));
    else if (w.max_context_tokens > 0) std::cout << ", max_model_len " << grouped(static_cast<std::uint64_t>(w.max_context_tokens));
    else if (w.max_context_tokens == 0)
      std::cout << ", max_model_len " << grouped(static_cast<std::uint64_t>(std::ceil(w.prompt_tokens + w.output_tokens)));
    else std::cout << ", max_model_len: the model's";
    std::cout << "\n";
    std::cout << "Targets: TTFT " << pct_name(t.ttft_percentile) << " <= " << dur(t.ttft_s) << ", TPOT <= " << dur(t.tpot_s)
              << "; rates " << (s.calibration ? "calibrated" : "datasheet x default efficiencies")
              << "; price per GPU-hour from the GPU profiles" << (vm.count("price") ? " and --price" : "") << "\n";
    std::cout << r.candidates.size() << " candidates: " << r.feasible << " meet the targets";
    const std::pair<CandidateStatus, const char*> kinds[] = {
        {CandidateStatus::does_not_fit, "do not fit"},  {CandidateStatus::tpot_too_high, "TPOT too high"},
        {CandidateStatus::ttft_too_high, "TTFT too high"}, {CandidateStatus::too_many_gpus, "too many GPUs"},
        {CandidateStatus::invalid, "invalid for the model"}};
    std::string rej;
    for (const auto& [st, what] : kinds)
      if (counts[static_cast<int>(st)]) rej += (rej.empty() ? "" : ", ") + std::to_string(counts[static_cast<int>(st)]) + " " + what;
    if (!rej.empty()) std::cout << "; rejected: " << rej << (explain ? "" : " (--explain lists them)");
    std::cout << "\n";
    if (r.feasible > 0) {
      const std::string ttft_head = "TTFT " + pct_name(t.ttft_percentile);
      std::cout << "\n    #  GPU        TP  PP  weights  KV        GPUs  replicas  batch  " << pad_left(ttft_head, 10)
                << "      TPOT  " << (open ? "max req/s" : "max users") << "    $/hour  $/M out tok\n";
      const std::size_t n = top == 0 ? r.feasible : std::min<std::size_t>(r.feasible, static_cast<std::size_t>(top));
      for (std::size_t i = 0; i < n; ++i) {
        const auto& c = r.candidates[i];
        const double cap = open ? c.max_rate_per_replica_per_s * static_cast<double>(c.replicas)
                                : static_cast<double>(c.max_batch_targets * c.replicas);
        std::cout << pad_left(std::to_string(i + 1), 5) << "  " << pad_right(escape::terminal_text(c.gpu), 10) << pad_left(std::to_string(c.tp), 3)
                  << pad_left(std::to_string(c.pp), 4) << "  " << pad_right(std::string(name(c.weight_dtype)), 9)
                  << pad_right(std::string(name(c.kv_dtype)), 8) << pad_left(grouped(static_cast<std::uint64_t>(c.gpus)), 6)
                  << pad_left(grouped(static_cast<std::uint64_t>(c.replicas)), 10) << pad_left(std::to_string(c.batch), 7)
                  << pad_left(dur(c.ttft_s), 12) << pad_left(dur(c.tpot_s), 10)
                  << pad_left(open ? fixed(cap, cap < 10 ? 2 : 1) : grouped(static_cast<std::uint64_t>(cap)), 11)
                  << pad_left(c.priced ? fixed(c.cost_per_hour_usd, 2) : "n/a", 10)
                  << pad_left(c.priced ? fixed(c.cost_per_million_output_tokens_usd, 3) : "n/a", 13) << "\n";
      }
      if (n < r.feasible) std::cout << "    ... " << r.feasible - n << " more (--top 0 shows all)\n";
      const auto& b = r.candidates.front();
      std::cout << "\nCheapest: " << b.replicas << " x " << escape::terminal_text(b.gpu) << " TP" << b.tp << (b.pp > 1 ? " PP" + std::to_string(b.pp) : "")
                << " (" << name(b.weight_dtype) << " weights, " << name(b.kv_dtype) << " KV): " << grouped(static_cast<std::uint64_t>(b.gpus))
                << " GPUs, $" << fixed(b.cost_per_hour_usd, 2) << "/hour, $" << fixed(b.cost_per_million_output_tokens_usd, 3)
                << " per million output tokens at " << fixed(b.output_tokens_per_s, 0) << " output tok/s.\n"
                << "  per replica: " << (open ? fixed(b.rate_per_replica_per_s, 2) + " req/s, " : "") << b.batch
                << " requests decoding (at most " << b.max_batch_memory << ": KV cache, max_num_seqs), prefill " << dur(b.prefill_s)
                << " alone, " << fixed(b.prefill_utilization * 100, 0) << "% of GPU time on prefill, decode step "
                << dur(b.decode_step_s) << " (" << to_string(b.decode_bound) << "-bound)\n"
                << "batch: requests decoding at once per replica (Little's law); TTFT includes the prefill queue "
                   "(Kingman); docs/sizing.md.\n";
    }
    if (explain && r.feasible < r.candidates.size()) {
      std::cout << "\nRejected:\n";
      for (std::size_t i = r.feasible; i < r.candidates.size(); ++i) {
        const auto& c = r.candidates[i];
        std::cout << "  " << pad_right(escape::terminal_text(c.gpu), 10) << " TP" << pad_right(std::to_string(c.tp), 2) << " PP"
                  << pad_right(std::to_string(c.pp), 2) << " " << pad_right(std::string(name(c.weight_dtype)) + "/" + std::string(name(c.kv_dtype)), 10)
                  << " " << to_string(c.status) << ": " << escape::terminal_text(c.reason) << "\n";
      }
    }
  }
  if (r.feasible == 0) {
    std::cerr << "kvcap size: error: " << r.diagnosis << "\n";
    return 1;
  }
  return 0;
}

}  // namespace kvcap::cli
