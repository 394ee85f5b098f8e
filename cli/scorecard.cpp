// kvcap accuracy's scorecard (scorecard.hpp). Every published serving measurement of serving_measurements.json (vLLM,
// SGLang, TensorRT-LLM, NIM; fields documented in the file's "about") runs through the simulator with the load its
// source describes: closed-loop clients as `simulate --max-concurrency N` (num_requests = 10 x N, AIPerf's default in
// the sources), open-loop Poisson arrivals at the rate, offline as `--rate inf`. It prints predicted vs measured TPOT,
// TTFT and output throughput per point, and the mean absolute percentage error per engine and metric.
// `--max-mape` turns it into a regression gate for CI (docs/accuracy.md).
#include "scorecard.hpp"

#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>
#include <tuple>
#include <utility>

#include "common.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/simulator/run.hpp"

namespace kvcap::cli {

namespace {

std::optional<double> opt_number(const nlohmann::json& j, const char* k) {
  if (!j.contains(k) || j.at(k).is_null()) return std::nullopt;
  return j.at(k).get<double>();
}
/// A whole-number field; absent or null: none (a key missing from a const object is never read with operator[]).
std::optional<i64> opt_integer(const nlohmann::json& j, const char* k) {
  if (!j.contains(k) || j.at(k).is_null()) return std::nullopt;
  if (!j.at(k).is_number_integer()) throw UsageError(std::string(k) + " must be a whole number, got " + j.at(k).dump());
  return j.at(k).get<i64>();
}

/// A Hugging Face repository name reduced to what tells architectures apart: lower case, no organisation, no
/// "meta-" prefix, no checkpoint-format or tuning suffix ("-instruct", "-fp8", "-nvfp4", "-hf", "-it"), so that
/// nvidia/Llama-3.1-8B-Instruct-FP8 and meta-llama/Llama-3.1-8B name the same architecture.
std::string architecture_key(std::string_view hf) {
  std::string s = lowercase(hf.substr(hf.rfind('/') == std::string_view::npos ? 0 : hf.rfind('/') + 1));
  if (s.starts_with("meta-")) s.erase(0, 5);
  for (bool cut = true; cut;) {
    cut = false;
    for (const std::string_view suffix : {"-instruct", "-fp8", "-nvfp4", "-fp4", "-hf", "-it"})
      if (s.ends_with(suffix)) {
        s.resize(s.size() - suffix.size());
        cut = true;
      }
  }
  return s;
}

/// The built-in profile of a published model: the one whose source config.json names the same architecture
/// (architecture_key); Llama 3.3 70B has Llama 3.1 70B's architecture. "" when none.
std::string builtin_model(const std::string& hf) {
  std::string key = architecture_key(hf);
  if (key == "llama-3.3-70b") key = "llama-3.1-70b";
  static const std::map<std::string, std::string> by_key = [] {
    std::map<std::string, std::string> m;
    for (const std::string& name : profiles::builtin_model_names()) {
      const std::string src = profiles::resolve_model(name).source;  // https://huggingface.co/ORG/NAME/blob/...
      const auto at = src.find("huggingface.co/");
      if (at == std::string::npos) continue;
      const auto repo_end = src.find("/blob/", at);
      m.emplace(
          architecture_key(src.substr(at + 15, repo_end == std::string::npos ? std::string::npos : repo_end - at - 15)),
          name);
    }
    return m;
  }();
  const auto it = by_key.find(key);
  return it == by_key.end() ? "" : it->second;
}

/// The first whole number after `key` in `text`: 0 when absent, -1 above 10^15 (no count or length in a note reaches
/// it; the callers refuse what they cannot take).
i64 number_after(const std::string& text, const std::string& key, std::size_t from = 0) {
  const auto at = text.find(key, from);
  if (at == std::string::npos) return 0;
  i64 n = 0;
  for (std::size_t i = at + key.size(); i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    n = n * 10 + (text[i] - '0');
    if (n > 1'000'000'000'000'000) return -1;
  }
  return n;
}

/// The whole number that ends at `at` in `text` ("3000" in "3000 requests"), as number_after reads it.
i64 number_before(const std::string& text, std::size_t at) {
  std::size_t b = at;
  while (b > 0 && std::isdigit(static_cast<unsigned char>(text[b - 1]))) --b;
  return number_after(text, "", b);
}

Deployment deployment_for(const Point& p) {
  Deployment d;
  d.tensor_parallel_size = p.attention_dp ? 1 : p.tp;
  d.pipeline_parallel_size = p.pp;
  d.num_gpus = p.tp * p.pp;
  d.enable_expert_parallel = p.ep > 1;
  const bool fp8 = p.weight_dtype == "fp8" || p.model_hf.find("FP8") != std::string::npos;
  if (fp8) d.quantization = DType::fp8;
  if (p.weight_dtype == "nvfp4") d.quantization = DType::nvfp4;  // ModelOpt NVFP4 checkpoints (nvidia/*-FP4)
  // TensorRT-LLM (and NIM on it) serves ModelOpt FP8 checkpoints with an FP8 KV cache (the fixtures' note on S2-076).
  const bool trtllm = p.engine.find("TensorRT") != std::string::npos;
  if (p.kv_dtype == "fp8" || (p.kv_dtype.empty() && trtllm && fp8)) d.kv_cache_dtype = DType::fp8;
  // The engine's own KV budget (TensorRT-LLM: a fraction of the memory left free), whichever profile times the steps.
  d.free_gpu_memory_fraction = engine_profile_for(p.engine).free_gpu_memory_fraction;
  // The server's scheduler limits, where the source gives them (vLLM flag names in the note).
  if (const i64 n = number_after(p.note, "max-num-seqs ")) d.max_num_seqs = n;
  if (const i64 n = number_after(p.note, "max-num-batched-tokens ")) d.max_num_batched_tokens = n;
  return d;
}

/// inference-perf's shared_prefix data with enable_multi_turn_chat (the note says so): users with one turn in flight
/// each, system prompts shared by the users of a group, the rate phases of the note ("arrival 5 rps x600 s then 10
/// rps x600 s"). Each user resends the same prompt (history: repeat): the source's real runs sent constant input
/// tokens (inference-sim's H30 finding, sim/workload/inference_perf.go: "real inference-perf sends constant input
/// tokens, not accumulated context"). The numbers of system prompts and users per prompt are not in the fixture;
/// they are those of the workload spec the point cites (inference-sim testdata/roofline_goldendataset.json,
/// experiment 61: num_unique_system_prompts 11, num_users_per_system_prompt 4).
std::string inference_perf_multi_turn(const Point& p, sim::SimulationRequest& r) {
  auto& w = r.workload;
  constexpr i64 kSystemPrompts = 11, kUsersPerPrompt = 4;
  w.shared_prefix.num_groups = kSystemPrompts;
  w.shared_prefix.tokens = number_after(p.note, "system prompt ");
  w.conversation.users = kSystemPrompts * kUsersPerPrompt;
  w.conversation.history = ConversationSpec::History::repeat;
  w.arrival.kind = ArrivalProcess::Kind::poisson;
  double requests = 0;
  for (std::size_t at = p.note.find(" rps x"); at != std::string::npos; at = p.note.find(" rps x", at + 1)) {
    RatePhase ph;
    ph.rate_per_s = static_cast<double>(number_before(p.note, at));
    ph.duration_s = static_cast<double>(number_after(p.note, " rps x", at));
    requests += ph.rate_per_s * ph.duration_s;
    w.arrival.phases.push_back(ph);
    w.arrival.rate_per_s = std::max(w.arrival.rate_per_s, ph.rate_per_s);
  }
  r.limits.num_requests = static_cast<std::uint64_t>(requests);
  return std::to_string(w.conversation.users) + " users, " + std::to_string(w.arrival.phases.size()) + " ph";
}

/// The decimal number after `key` in `text` (nullopt when absent or not a number).
std::optional<double> decimal_after(const std::string& text, const std::string& key) {
  const auto at = text.find(key);
  if (at == std::string::npos) return std::nullopt;
  const char* begin = text.c_str() + at + key.size();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v)) return std::nullopt;
  return v;
}

/// The lengths as the source drew them. sglang.bench_serving's random dataset (`--random-input N --random-output M`
/// with `--random-range-ratio R`, or the note's "max N/M, uniform") draws each prompt uniformly from
/// [max(floor(N x R), 1), N] and each output from [floor(M x R), M] (sample_random_requests, python/sglang/
/// bench_serving.py; an output of 0 tokens is taken as 1, the least a request generates); else the point's isl/osl,
/// fixed (AIPerf and trtllm-bench runs; ShareGPT points, whose spread the fixtures do not give, at their means).
void lengths_of(const Point& p, WorkloadSpec& w) {
  i64 in = number_after(p.note, "--random-input "), out = number_after(p.note, "--random-output ");
  double ratio = 0;
  for (const char* key : {"--random-range-ratio ", "range_ratio "})
    if (p.note.find(key) != std::string::npos) {
      const auto r = decimal_after(p.note, key);
      if (!r || *r < 0 || *r >= 1)
        throw UsageError("point " + p.id + ": its note's " + std::string(key) +
                         "is not a ratio in [0, 1) (sglang.bench_serving's random-dataset range ratio)");
      ratio = *r;
      break;
    }
  if (in <= 0 || out <= 0) {
    const auto at = p.note.find("max ");
    const auto slash = at == std::string::npos ? at : p.note.find('/', at);
    if (slash != std::string::npos && p.note.find(", uniform", slash) != std::string::npos) {
      in = number_after(p.note, "max ");
      out = number_after(p.note, "/", slash);
      ratio = 0;
    }
  }
  constexpr i64 kMaxNoteTokens = 10'000'000;
  if (in < 0 || out < 0 || in > kMaxNoteTokens || out > kMaxNoteTokens)
    throw UsageError("point " + p.id + ": its note's random lengths exceed 10,000,000 tokens");
  if (in > 0 && out > 0) {
    w.prompt = LengthDistribution::uniform_tokens(
        std::max<i64>(static_cast<i64>(std::floor(static_cast<double>(in) * ratio)), 1), in);
    w.output = LengthDistribution::uniform_tokens(
        std::max<i64>(static_cast<i64>(std::floor(static_cast<double>(out) * ratio)), 1), out);
    return;
  }
  w.prompt = LengthDistribution::fixed_tokens(p.isl);
  w.output = LengthDistribution::fixed_tokens(p.osl);
}

/// The load of a point as `kvcap simulate` options: closed loop, Poisson at a rate, all at once, or inference-perf's
/// multi-turn users.
std::string load_of(const Point& p, sim::SimulationRequest& r) {
  auto& w = r.workload;
  lengths_of(p, w);
  if (p.note.find("inference-perf shared_prefix multi-turn") != std::string::npos)
    return inference_perf_multi_turn(p, r);
  if (p.static_batch) {  // the batch at once, one wave: every sequence prefills, then they decode together
    r.max_concurrency = static_cast<std::uint32_t>(*p.concurrency);
    w.arrival.rate_per_s = std::numeric_limits<double>::infinity();
    r.limits.num_requests = static_cast<std::uint64_t>(*p.concurrency);
    return "static " + std::to_string(*p.concurrency);
  }
  if (p.concurrency) {
    r.max_concurrency = static_cast<std::uint32_t>(*p.concurrency);
    w.arrival.rate_per_s = std::numeric_limits<double>::infinity();
    r.limits.num_requests = static_cast<std::uint64_t>(p.num_requests.value_or(std::max<i64>(10 * *p.concurrency, 40)));
    return "closed " + std::to_string(*p.concurrency);
  }
  if (p.rate_per_s) {
    w.arrival.rate_per_s = *p.rate_per_s;
    r.limits.num_requests = static_cast<std::uint64_t>(std::max(300.0, std::round(*p.rate_per_s * 300)));
    return "poisson " + fixed(*p.rate_per_s, 1) + "/s";
  }
  w.arrival.rate_per_s = std::numeric_limits<double>::infinity();
  // The source's count ("offline: 3000 random prompts", trtllm-bench's "3000 requests all queued at once"), else 2,000.
  i64 stated = number_after(p.note, "offline: ");
  if (const auto at = p.note.find(" requests all queued at once"); stated == 0 && at != std::string::npos)
    stated = number_before(p.note, at);
  if (stated < 0 || stated > 10'000'000)
    throw UsageError("point " + p.id + ": its note states more requests than the 10,000,000 kvcap simulates");
  r.limits.num_requests = static_cast<std::uint64_t>(p.num_requests.value_or(stated > 0 ? stated : 2000));
  return "offline";
}

/// The source's multi-step scheduling (vLLM 0.6 "--num-scheduler-steps N" in the point's server flags), else 1.
/// A vLLM point whose stated version ran the V0 engine by default (0.7 and earlier; V1 became the default in 0.8.0).
bool vllm_v0(const Point& p) {
  const std::string& v = p.engine_version;
  if (v.rfind("0.", 0) != 0) return false;
  const std::size_t dot = v.find('.', 2);
  const std::string minor = v.substr(2, dot == std::string::npos ? std::string::npos : dot - 2);
  return !minor.empty() && minor.size() <= 2 && minor.find_first_not_of("0123456789") == std::string::npos &&
         std::stoi(minor) < 8;
}

i64 scheduler_steps(const Point& p) {
  return std::max<i64>(1, number_after(p.note, "--num-scheduler-steps "));
}

/// "point ID: what", unless `what` names a point already.
std::string naming_point(const std::string& id, const std::string& what) {
  return what.starts_with("point ") ? what : "point " + id + ": " + what;
}

/// A point's fields within what kvcap can run and score (a field out of range: UsageError naming it). The bounds
/// keep the load within simulate's 10,000,000 requests: at most 1,000,000 clients (10 x N requests), rates of 1e-9 to
/// 33,333 requests/s (300 s at the rate).
void check_point(const Point& p, const std::string& kind) {
  const auto bad = [&](const std::string& field, const std::string& expected, const std::string& got) {
    return UsageError("point " + p.id + ": " + field + " must be " + expected + ", got " + got);
  };
  if (kind != "serving" && kind != "offline" && kind != "static_batch")
    throw bad("kind", "serving, offline or static_batch", "'" + kind + "'");
  const std::string l = engine_profile_for(p.engine).name;
  if (l == "datasheet")
    throw bad("engine", "one kvcap has a profile for (a name containing vLLM, SGLang, TensorRT or NIM)",
              "'" + p.engine + "'");
  constexpr i64 kMaxTokens = 10'000'000, kMaxGpus = 4096;
  if (p.isl < 1 || p.isl > kMaxTokens) throw bad("isl", "1 ... 10,000,000 tokens", std::to_string(p.isl));
  if (p.osl < 1 || p.osl > kMaxTokens) throw bad("osl", "1 ... 10,000,000 tokens", std::to_string(p.osl));
  if (p.tp < 1 || p.tp > kMaxGpus) throw bad("tp", "1 ... 4,096", std::to_string(p.tp));
  if (p.pp < 1 || p.pp > kMaxGpus) throw bad("pp", "1 ... 4,096", std::to_string(p.pp));
  if (p.concurrency && (*p.concurrency < 1 || *p.concurrency > 1'000'000))  // its 10 x N requests within 10,000,000
    throw bad("batch_or_concurrency", "1 ... 1,000,000 clients (or null)", std::to_string(*p.concurrency));
  if (p.rate_per_s && !(*p.rate_per_s >= 1e-9 && *p.rate_per_s <= 33'333))
    throw bad("request_rate", "1e-9 ... 33,333 requests/s (or null)", fixed(*p.rate_per_s, 3));
  if (p.concurrency && p.rate_per_s)
    throw bad("batch_or_concurrency", "null when request_rate is given (a closed loop or an open one, not both)",
              std::to_string(*p.concurrency));
  if (p.static_batch && !p.concurrency) throw bad("batch_or_concurrency", "the batch of a static_batch point", "null");
  // tpot_s and ttft_s hold the file's milliseconds / 1000.
  for (const auto& [field, v, scale] :
       {std::tuple{"tpot_ms", p.tpot_s, 1000.0}, std::tuple{"ttft_ms", p.ttft_s, 1000.0},
        std::tuple{"output_tok_s", p.output_tokens_per_s, 1.0}})
    if (v && !(*v > 0 && std::isfinite(*v))) throw bad(field, "a positive measurement (or null)", fixed(*v * scale, 3));
}

/// One point of a points file, its fields checked (UsageError naming the point and field).
Point point_of(const nlohmann::json& j) {
  Point p;
  p.id = j.at("id").get<std::string>();
  p.model_hf = j.at("model_hf").get<std::string>();
  p.gpu = j.at("gpu").get<std::string>();
  p.engine = j.at("engine").get<std::string>();
  p.weight_dtype = j.value("weight_dtype", "");
  p.kv_dtype = j.contains("kv_dtype") && j.at("kv_dtype").is_string() ? j.at("kv_dtype").get<std::string>() : "";
  p.note = j.value("note", "");
  p.engine_version = j.contains("engine_version") && j.at("engine_version").is_string()
                         ? j.at("engine_version").get<std::string>()
                         : "";
  p.tp = opt_integer(j, "tp").value_or(1);
  p.pp = opt_integer(j, "pp").value_or(1);
  p.ep = opt_integer(j, "ep").value_or(0);
  p.attention_dp = j.value("attention_dp", false);
  // Expert parallelism is modelled over every GPU of the point (vLLM's EP = data-parallel x TP ranks).
  if (p.ep > 1 && p.ep != p.tp * p.pp)
    throw UsageError("point " + p.id + ": ep " + std::to_string(p.ep) +
                     " must be 0, 1 or the point's tp x pp (experts over every GPU; a TP x EP hybrid is not modelled)");
  if (p.attention_dp && p.ep != p.tp * p.pp)
    throw UsageError("point " + p.id +
                     ": attention_dp is modelled with the experts over every GPU (ep = tp x pp), as kvcap's "
                     "--enable-expert-parallel at TP 1");
  if (const auto n = opt_integer(j, "num_requests")) {
    p.num_requests = *n;
    if (*p.num_requests < 1 || *p.num_requests > 10'000'000)
      throw UsageError("point " + p.id + ": num_requests must be 1 ... 10,000,000, got " +
                       std::to_string(*p.num_requests));
  }
  p.isl = opt_integer(j, "isl").value_or(0);  // required: check_point refuses 0
  p.osl = opt_integer(j, "osl").value_or(0);
  p.concurrency = opt_integer(j, "batch_or_concurrency");
  p.rate_per_s = opt_number(j, "request_rate");
  if (auto v = opt_number(j, "tpot_ms")) p.tpot_s = *v / 1000;
  if (auto v = opt_number(j, "ttft_ms")) p.ttft_s = *v / 1000;
  p.output_tokens_per_s = opt_number(j, "output_tok_s");
  p.medians = p.note.find("median") != std::string::npos;
  const std::string note = lowercase(p.note);
  p.median_itl =
      note.find("tpot_ms = median itl") != std::string::npos || note.find("tpot = median itl") != std::string::npos;
  const std::string kind = j.value("kind", "serving");
  p.static_batch = kind == "static_batch";
  check_point(p, kind);
  return p;
}

}  // namespace

std::vector<Point> read_points(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read the points file " + path + " (--fixtures, --points)");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(path + ": not valid JSON: " + e.what());
  }
  if (!doc.is_object() || !doc.contains("points") || !doc.at("points").is_array())
    throw UsageError(path + ": expected an object with a \"points\" array");
  std::vector<Point> pts;
  for (const auto& j : doc.at("points")) try {
      pts.push_back(point_of(j));
    } catch (const nlohmann::json::exception& e) {
      throw UsageError(path + ": point " + std::to_string(pts.size() + 1) + ": " + e.what());
    } catch (const UsageError& e) {
      const std::string id = j.is_object() && j.contains("id") && j.at("id").is_string()
                                 ? j.at("id").get<std::string>()
                                 : std::to_string(pts.size() + 1);
      throw UsageError(path + ": " + naming_point(id, e.what()));
    }
  return pts;
}

namespace {

Outcome simulate_point(const Point& p, const EngineProfile& engine) {
  Outcome o;
  o.model = builtin_model(p.model_hf);
  if (o.model.empty()) {
    o.skipped = "no built-in profile for " + p.model_hf;
    return o;
  }
  const ModelSpec model = profiles::resolve_model(o.model);
  if (p.attention_dp && !model.moe.enabled()) {
    o.skipped = "attention_dp of a dense model (its MLPs stay tensor-parallel) is not modelled";
    return o;
  }
  const GpuSpec gpu = profiles::resolve_gpu(p.gpu);
  Deployment d = deployment_for(p);
  MemoryPlan plan = plan_memory(model, gpu, d, {});
  if (!plan.fits()) {  // a benchmarker sets --max-model-len to what the run needs when the default does not fit
    d.max_model_len = p.isl + p.osl;
    plan = plan_memory(model, gpu, d, {});
  }
  if (!plan.fits()) {
    o.skipped = "does not fit in memory";
    return o;
  }
  sim::SimulationRequest request;
  o.load = load_of(p, request);
  SpeedOptions speed = engine.speed;
  // vLLM before 0.8 ran its V0 engine by default: CUDA graphs for decode-only steps of up to 256 sequences.
  speed.cuda_graph_decode_only = speed.cuda_graph_padding && vllm_v0(p);
  // V0 scheduled prompts in steps of their own (Scheduler._schedule_default) unless chunked prefill was on, which it
  // was by default only for max_model_len above 32K and never with multi-step (vllm/config.py of 0.6.0).
  if (vllm_v0(p) && (scheduler_steps(p) > 1 || plan.dep.max_model_len <= 32768)) speed.prefill_first = true;
  request.speed = make_speed_context(model, gpu, plan, speed);
  request.num_scheduler_steps = scheduler_steps(p);
  const sim::SimResult r = sim::run_simulation(request).result;
  if (r.requests_completed == 0) {
    o.skipped = "no request completed (" + std::to_string(r.requests_rejected) + " rejected: prompt >= max_model_len)";
    return o;
  }
  // A closed loop's published means are a benchmark's, first wave included (sim::benchmark_mean); medians and the
  // open loop are the run's own.
  const auto bench = p.medians ? std::nullopt : sim::benchmark_mean(request, r);
  // A metric without samples (no request generated two tokens) is not predicted: NaN, left out of the MAPE.
  const auto pick = [](const sim::LatencySummary& s, double v) {
    return s.count ? v : std::numeric_limits<double>::quiet_NaN();
  };
  o.tpot_s = p.median_itl ? pick(r.itl_s, r.itl_s.p50)
                          : pick(r.tpot_s, p.medians ? r.tpot_s.p50 : (bench ? bench->tpot_s : r.tpot_s.mean));
  o.ttft_s = p.medians ? r.ttft_s.p50 : (bench ? bench->ttft_s : r.ttft_s.mean);
  o.output_tokens_per_s = r.output_tokens_per_s;
  return o;
}

}  // namespace

Outcome run_point(const Point& p, const EngineProfile& engine) {
  // A profile or layout the point names that kvcap refuses: the point's id with the reason.
  const auto named = [&](const std::string& what) { return UsageError(naming_point(p.id, what)); };
  try {
    return simulate_point(p, engine);
  } catch (const profiles::ProfileError& e) {
    std::string why;
    for (const auto& d : e.diagnostics()) why += (why.empty() ? "" : "; ") + d.message;
    throw named("model_hf '" + p.model_hf + "' / gpu '" + p.gpu + "': " + (why.empty() ? e.what() : why));
  } catch (const SpecError& e) {
    throw named(e.what());
  } catch (const UsageError& e) {
    throw named(e.what());
  }
}

/// Signed relative error of a prediction, when the point has a measurement.
std::optional<double> rel_err(double predicted, const std::optional<double>& measured) {
  if (!measured || !(*measured > 0) || !std::isfinite(predicted)) return std::nullopt;
  return (predicted - *measured) / *measured;
}

void score(Scores& s, const Point& p, const Outcome& o) {
  for (const std::string& key : {p.engine, std::string("all")}) {
    s[key]["tpot"].add(rel_err(o.tpot_s, p.tpot_s));
    s[key]["ttft"].add(rel_err(o.ttft_s, p.ttft_s));
    s[key]["throughput"].add(rel_err(o.output_tokens_per_s, p.output_tokens_per_s));
  }
}

namespace {

/// The mean of the MAPEs (TPOT, TTFT, throughput: those with measurements) over `pts` with `e`; +inf when none ran.
double objective(const std::vector<const Point*>& pts, const EngineProfile& e) {
  Mape tpot, ttft, thr;
  for (const Point* p : pts) {
    const Outcome o = run_point(*p, e);
    if (!o.skipped.empty()) continue;
    tpot.add(rel_err(o.tpot_s, p->tpot_s));
    ttft.add(rel_err(o.ttft_s, p->ttft_s));
    thr.add(rel_err(o.output_tokens_per_s, p->output_tokens_per_s));
  }
  double sum = 0;
  int n = 0;
  for (const Mape* m : {&tpot, &ttft, &thr})
    if (m->n) sum += m->value(), ++n;
  return n ? sum / n : std::numeric_limits<double>::infinity();
}

}  // namespace

std::vector<EngineFit> fit_engines(const std::vector<Point>& all) {
  std::vector<EngineFit> fits;
  for (const std::string name : {"vllm", "sglang", "trtllm"}) {
    std::vector<const Point*> pts;
    for (const auto& p : all)
      if (engine_profile_for(p.engine).name == name && run_point(p, engine_profile("datasheet")).skipped.empty())
        pts.push_back(&p);
    EngineProfile start = engine_profile("datasheet");
    start.name = name;
    EngineFit f;
    f.name = name;
    f.points = pts.size();
    f.mape_datasheet = objective(pts, start);
    f.profile = fit_engine_profile(
        start, [&](const EngineProfile& e) { return objective(pts, e); }, 4);
    f.mape_fitted = objective(pts, f.profile);
    // Leave one out: refit without each point (2 rounds from the full fit), predict it.
    for (std::size_t i = 0; i < pts.size(); ++i) {
      std::vector<const Point*> rest;
      for (std::size_t j = 0; j < pts.size(); ++j)
        if (j != i) rest.push_back(pts[j]);
      const EngineProfile e = fit_engine_profile(
          f.profile, [&](const EngineProfile& x) { return objective(rest, x); }, 2);
      const Outcome o = run_point(*pts[i], e);
      f.loo_tpot.add(rel_err(o.tpot_s, pts[i]->tpot_s));
      f.loo_ttft.add(rel_err(o.ttft_s, pts[i]->ttft_s));
      f.loo_throughput.add(rel_err(o.output_tokens_per_s, pts[i]->output_tokens_per_s));
    }
    fits.push_back(std::move(f));
  }
  return fits;
}

}  // namespace kvcap::cli
