// kvcap accuracy: the scorecard. Every published serving measurement of serving_measurements.json (vLLM, SGLang,
// TensorRT-LLM, NIM; fields documented in the file's "about") runs through the simulator with the load its source
// describes: closed-loop clients as `simulate --max-concurrency N` (num_requests = 10 x N, AIPerf's default in the
// sources), open-loop Poisson arrivals at the rate, offline as `--rate inf`. It prints predicted vs measured TPOT,
// TTFT and output throughput per point, and the mean absolute percentage error per engine and metric.
// `--max-mape` turns it into a regression gate for CI (docs/accuracy.md).
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "common.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/planner/engine.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/simulator/run.hpp"

namespace kvcap::cli {

namespace {

using escape::terminal_text;

struct Point {
  std::string id, model_hf, gpu, engine, weight_dtype, kv_dtype, note;
  i64 tp = 1, pp = 1, isl = 0, osl = 0;
  std::optional<i64> concurrency;
  std::optional<double> rate_per_s;
  std::optional<double> tpot_s, ttft_s, output_tokens_per_s;  ///< measured
  bool medians = false;  ///< the source reports medians of TPOT/TTFT, not means
};

struct Outcome {
  std::string model, load, skipped;  ///< skipped: why the point could not be run ("" when it ran)
  double tpot_s = 0, ttft_s = 0, output_tokens_per_s = 0;
};

std::optional<double> opt_number(const nlohmann::json& j, const char* k) {
  if (!j.contains(k) || j[k].is_null()) return std::nullopt;
  return j[k].get<double>();
}

std::vector<Point> read_points(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("--fixtures: cannot read " + path);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(path + ": not valid JSON: " + e.what());
  }
  std::vector<Point> pts;
  for (const auto& j : doc.at("points")) {
    Point p;
    p.id = j.at("id").get<std::string>();
    p.model_hf = j.at("model_hf").get<std::string>();
    p.gpu = j.at("gpu").get<std::string>();
    p.engine = j.at("engine").get<std::string>();
    p.weight_dtype = j.value("weight_dtype", "");
    p.kv_dtype = j["kv_dtype"].is_string() ? j["kv_dtype"].get<std::string>() : "";
    p.note = j.value("note", "");
    p.tp = j.value("tp", 1);
    p.pp = j["pp"].is_number() ? j["pp"].get<i64>() : 1;
    p.isl = j.at("isl").get<i64>();
    p.osl = j.at("osl").get<i64>();
    if (j["batch_or_concurrency"].is_number()) p.concurrency = j["batch_or_concurrency"].get<i64>();
    p.rate_per_s = opt_number(j, "request_rate");
    if (auto v = opt_number(j, "tpot_ms")) p.tpot_s = *v / 1000;
    if (auto v = opt_number(j, "ttft_ms")) p.ttft_s = *v / 1000;
    p.output_tokens_per_s = opt_number(j, "output_tok_s");
    p.medians = p.note.find("median") != std::string::npos;
    pts.push_back(p);
  }
  return pts;
}

/// The built-in profile of a published model (Llama 3.3 70B has Llama 3.1 70B's architecture); "" when none.
std::string builtin_model(const std::string& hf) {
  std::string s;
  for (char c : hf) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.find("llama-3.1-8b") != std::string::npos) return "llama-3.1-8b";
  if (s.find("llama-3.1-70b") != std::string::npos || s.find("llama-3.3-70b") != std::string::npos)
    return "llama-3.1-70b";
  return "";
}

Deployment deployment_for(const Point& p) {
  Deployment d;
  d.tensor_parallel_size = p.tp;
  d.pipeline_parallel_size = p.pp;
  d.num_gpus = p.tp * p.pp;
  const bool fp8 = p.weight_dtype == "fp8" || p.model_hf.find("FP8") != std::string::npos;
  if (fp8) d.quantization = DType::fp8;
  // TensorRT-LLM (and NIM on it) serves ModelOpt FP8 checkpoints with an FP8 KV cache (the fixtures' note on S2-076).
  const bool trtllm = p.engine.find("TensorRT") != std::string::npos;
  if (p.kv_dtype == "fp8" || (p.kv_dtype.empty() && trtllm && fp8)) d.kv_cache_dtype = DType::fp8;
  return d;
}

/// The load of a point as `kvcap simulate` options: closed loop, Poisson at a rate, or all at once.
std::string load_of(const Point& p, sim::SimulationRequest& r) {
  auto& w = r.workload;
  w.prompt = LengthDistribution::fixed_tokens(p.isl);
  w.output = LengthDistribution::fixed_tokens(p.osl);
  if (p.concurrency) {
    r.max_concurrency = static_cast<std::uint32_t>(*p.concurrency);
    w.arrival.rate_per_s = std::numeric_limits<double>::infinity();
    r.limits.num_requests = static_cast<std::uint64_t>(std::max<i64>(10 * *p.concurrency, 40));
    return "closed " + std::to_string(*p.concurrency);
  }
  if (p.rate_per_s) {
    w.arrival.rate_per_s = *p.rate_per_s;
    r.limits.num_requests = static_cast<std::uint64_t>(std::max(300.0, std::round(*p.rate_per_s * 300)));
    return "poisson " + fixed(*p.rate_per_s, 1) + "/s";
  }
  w.arrival.rate_per_s = std::numeric_limits<double>::infinity();
  r.limits.num_requests = 2000;
  return "offline";
}

/// The source's multi-step scheduling (vLLM 0.6 "--num-scheduler-steps N" in the point's server flags), else 1.
i64 scheduler_steps(const Point& p) {
  const std::string flag = "--num-scheduler-steps ";
  const auto at = p.note.find(flag);
  if (at == std::string::npos) return 1;
  i64 n = 0;
  for (std::size_t i = at + flag.size(); i < p.note.size() && std::isdigit(static_cast<unsigned char>(p.note[i])); ++i)
    n = n * 10 + (p.note[i] - '0');
  return std::max<i64>(1, n);
}

Outcome run_point(const Point& p, const EngineProfile& engine) {
  Outcome o;
  o.model = builtin_model(p.model_hf);
  if (o.model.empty()) {
    o.skipped = "no built-in profile for " + p.model_hf;
    return o;
  }
  if (p.note.find("multi-turn") != std::string::npos) {
    o.skipped = "multi-turn chat with rate phases: not expressible yet";
    return o;
  }
  const ModelSpec model = profiles::resolve_model(o.model);
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
  request.speed = make_speed_context(model, gpu, plan, engine.speed);
  request.num_scheduler_steps = scheduler_steps(p);
  const sim::SimResult r = sim::run_simulation(request).result;
  o.tpot_s = p.medians ? r.tpot_s.p50 : r.tpot_s.mean;
  o.ttft_s = p.medians ? r.ttft_s.p50 : r.ttft_s.mean;
  o.output_tokens_per_s = r.output_tokens_per_s;
  return o;
}

/// Signed relative error of a prediction, when the point has a measurement.
std::optional<double> rel_err(double predicted, const std::optional<double>& measured) {
  if (!measured || !(*measured > 0)) return std::nullopt;
  return (predicted - *measured) / *measured;
}

struct Mape {
  double sum = 0;
  int n = 0;
  void add(const std::optional<double>& e) {
    if (e) sum += std::abs(*e), ++n;
  }
  double value() const { return n ? 100 * sum / n : 0; }
};

/// Per engine (and "all"), per metric: tpot, ttft, throughput.
using Scores = std::map<std::string, std::map<std::string, Mape>>;

std::string cell(double pred_s, const std::optional<double>& meas_s, double scale, int decimals) {
  if (!meas_s) return "-";
  const auto e = rel_err(pred_s, meas_s);
  std::ostringstream o;
  o << fixed(pred_s * scale, decimals) << "/" << fixed(*meas_s * scale, decimals) << " " << (*e >= 0 ? "+" : "")
    << fixed(100 * *e, 0) << "%";
  return o.str();
}

void score(Scores& s, const Point& p, const Outcome& o) {
  for (const std::string& key : {p.engine, std::string("all")}) {
    s[key]["tpot"].add(rel_err(o.tpot_s, p.tpot_s));
    s[key]["ttft"].add(rel_err(o.ttft_s, p.ttft_s));
    s[key]["throughput"].add(rel_err(o.output_tokens_per_s, p.output_tokens_per_s));
  }
}

void print_table(std::ostream& out, const std::vector<Point>& pts, const std::vector<Outcome>& outs, const Scores& s) {
  char line[512];
  std::snprintf(line, sizeof line, "%-7s %-13s %-14s %-9s %4s %-14s %-22s %-24s %-24s\n", "point", "engine", "model",
                "gpu", "TP", "load", "TPOT ms pred/meas", "TTFT ms pred/meas", "output tok/s pred/meas");
  out << line;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const Point& p = pts[i];
    const Outcome& o = outs[i];
    const std::string eng = terminal_text(p.engine.substr(0, 13));
    if (!o.skipped.empty()) {
      std::snprintf(line, sizeof line, "%-7s %-13s skipped: %s\n", p.id.c_str(), eng.c_str(), o.skipped.c_str());
      out << line;
      continue;
    }
    std::snprintf(line, sizeof line, "%-7s %-13s %-14s %-9s %4lld %-14s %-22s %-24s %-24s\n", p.id.c_str(),
                  eng.c_str(), o.model.c_str(), p.gpu.c_str(), static_cast<long long>(p.tp), o.load.c_str(),
                  cell(o.tpot_s, p.tpot_s, 1e3, 1).c_str(), cell(o.ttft_s, p.ttft_s, 1e3, 0).c_str(),
                  cell(o.output_tokens_per_s, p.output_tokens_per_s, 1, 0).c_str());
    out << line;
  }
  out << "\nMean absolute percentage error (points with that measurement)\n";
  auto mape = [](const Mape& m) {
    return m.n ? fixed(m.value(), 1) + "% (" + std::to_string(m.n) + ")" : std::string("- (0)");
  };
  for (const auto& [engine, m] : s) {
    std::snprintf(line, sizeof line, "  %-28s TPOT %-12s TTFT %-12s throughput %s\n", terminal_text(engine).c_str(),
                  mape(m.at("tpot")).c_str(), mape(m.at("ttft")).c_str(), mape(m.at("throughput")).c_str());
    out << line;
  }
}

/// "tpot=40,ttft=80,throughput=30": the largest MAPE (percent) allowed over all engines.
std::map<std::string, double> parse_gate(const std::string& s) {
  std::map<std::string, double> g;
  for (const auto& item : split_list(s)) {
    const auto eq = item.find('=');
    const std::string k = item.substr(0, eq);
    if (eq == std::string::npos || (k != "tpot" && k != "ttft" && k != "throughput"))
      throw UsageError("--max-mape: expected tpot=P,ttft=P,throughput=P (percent), got '" + s + "'");
    g[k] = parse_real(item.substr(eq + 1), "--max-mape " + k, "a percentage such as 25", 0);
  }
  return g;
}

// ---- the fit of the engine profiles (kvcap accuracy --fit) ----------------------------------------------------

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

/// Each constant's grid, within physical bounds: achieved / datasheet HBM bandwidth 0.65-0.90 (decode kernels on
/// A100/H100 reach 65-90% of it; STREAM about 90%), GEMM efficiency 0.45-0.85 (16-bit) and 0.35-0.80 (fp8),
/// overheads in seconds. A constant that settles on a bound says the model misses something there (docs/accuracy.md).
struct Knob {
  const char* name;
  double* (*field)(EngineProfile&);
  std::vector<double> grid;
};
std::vector<Knob> knobs() {
  auto range = [](double lo, double hi, double step) {
    std::vector<double> v;
    for (double x = lo; x <= hi + 1e-9; x += step) v.push_back(std::round(x * 1000) / 1000);
    return v;
  };
  return {
      {"bandwidth_efficiency", [](EngineProfile& e) { return &e.speed.bandwidth_efficiency; }, range(0.65, 0.90, 0.05)},
      {"compute_efficiency_16bit", [](EngineProfile& e) { return &e.speed.compute_efficiency_16bit; }, range(0.45, 0.85, 0.05)},
      {"compute_efficiency_8bit", [](EngineProfile& e) { return &e.speed.compute_efficiency_8bit; }, range(0.35, 0.80, 0.05)},
      {"step_overhead_s", [](EngineProfile& e) { return &e.speed.step_overhead_s; },
       {0, 0.25e-3, 0.5e-3, 1e-3, 1.5e-3, 2e-3, 3e-3, 4e-3, 5e-3, 6e-3, 8e-3}},
      {"layer_overhead_s", [](EngineProfile& e) { return &e.speed.layer_overhead_s; }, {0, 10e-6, 20e-6, 30e-6, 50e-6, 75e-6, 100e-6}},
      {"request_overhead_s", [](EngineProfile& e) { return &e.speed.request_overhead_s; },
       {0, 5e-3, 10e-3, 15e-3, 20e-3, 30e-3, 40e-3, 50e-3, 60e-3, 80e-3, 100e-3, 120e-3}},
  };
}

/// Coordinate descent from `start`: each round sets every constant in turn to its best grid value.
EngineProfile fit(const std::vector<const Point*>& pts, EngineProfile start, int rounds) {
  double best = objective(pts, start);
  for (int r = 0; r < rounds; ++r) {
    bool moved = false;
    for (const auto& k : knobs()) {
      double* f = k.field(start);
      const double keep = *f;
      double best_v = keep;
      for (double v : k.grid) {
        *f = v;
        const double o = objective(pts, start);
        if (o < best - 1e-9) best = o, best_v = v, moved = moved || v != keep;
      }
      *f = best_v;
    }
    if (!moved) break;
  }
  return start;
}

void print_fit(std::ostream& out, const std::vector<Point>& all) {
  const std::map<std::string, std::string> label = {{"vllm", "vLLM"}, {"sglang", "SGLang"}, {"trtllm", "TensorRT-LLM and NIM"}};
  for (const std::string name : {"vllm", "sglang", "trtllm"}) {
    std::vector<const Point*> pts;
    for (const auto& p : all)
      if (engine_profile_for(p.engine).name == name && run_point(p, engine_profile("datasheet")).skipped.empty()) pts.push_back(&p);
    EngineProfile start = engine_profile("datasheet");
    start.name = name;
    const double before = objective(pts, start);
    const EngineProfile e = fit(pts, start, 4);
    out << label.at(name) << " (" << pts.size() << " points): mean MAPE " << fixed(before, 1) << "% (datasheet) -> "
        << fixed(objective(pts, e), 1) << "% (fitted)\n";
    for (const auto& k : knobs()) {
      EngineProfile c = e;
      out << "  " << k.name << " = " << *k.field(c) << "\n";
    }
    // Leave one out: refit without each point (2 rounds from the full fit), predict it.
    Mape tpot, ttft, thr;
    for (std::size_t i = 0; i < pts.size(); ++i) {
      std::vector<const Point*> rest;
      for (std::size_t j = 0; j < pts.size(); ++j)
        if (j != i) rest.push_back(pts[j]);
      const EngineProfile f = fit(rest, e, 2);
      const Outcome o = run_point(*pts[i], f);
      tpot.add(rel_err(o.tpot_s, pts[i]->tpot_s));
      ttft.add(rel_err(o.ttft_s, pts[i]->ttft_s));
      thr.add(rel_err(o.output_tokens_per_s, pts[i]->output_tokens_per_s));
    }
    auto m = [](const Mape& x) { return x.n ? fixed(x.value(), 1) + "%" : std::string("-"); };
    out << "  leave-one-out MAPE: TPOT " << m(tpot) << ", TTFT " << m(ttft) << ", throughput " << m(thr) << "\n\n";
  }
}

}  // namespace

int cmd_accuracy(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  desc.add_options()("fixtures", po::value<std::string>()->default_value("../shared/fixtures"),
                     "folder holding serving_measurements.json")(
      "max-mape", po::value<std::string>(), "fail (exit 1) when a metric's MAPE over all engines exceeds this, "
                                            "e.g. tpot=40,ttft=80,throughput=30 (percent)")(
      "engine-profile", po::value<std::string>()->default_value("fitted"),
      "fitted: each point with its engine's profile (vllm, sglang, trtllm); datasheet: every point with the plain roofline")(
      "fit", po::bool_switch(), "fit each engine's profile to its points (coordinate descent) and print the constants "
                                "with leave-one-out errors; takes minutes")("help,h", "show this help");
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    print_help("kvcap accuracy [--fixtures DIR] [--max-mape tpot=P,ttft=P,throughput=P]",
               "Runs every published serving measurement through the simulator with the load its source describes\n"
               "and prints predicted vs measured TPOT, TTFT and output throughput, with the MAPE per engine.",
               desc, "  kvcap accuracy --fixtures ../shared/fixtures\n");
    return 0;
  }
  const auto gate = vm.count("max-mape") ? parse_gate(vm["max-mape"].as<std::string>()) : std::map<std::string, double>{};
  const auto pts = read_points(vm["fixtures"].as<std::string>() + "/serving_measurements.json");
  if (vm["fit"].as<bool>()) {
    print_fit(std::cout, pts);
    return 0;
  }
  const std::string profile = vm["engine-profile"].as<std::string>();
  if (profile != "fitted" && profile != "datasheet")
    throw UsageError("--engine-profile: expected fitted or datasheet, got '" + profile + "'");
  std::vector<Outcome> outs;
  Scores s;
  for (const auto& p : pts) {
    outs.push_back(run_point(p, profile == "fitted" ? engine_profile_for(p.engine) : engine_profile("datasheet")));
    if (outs.back().skipped.empty()) score(s, p, outs.back());
  }
  print_table(std::cout, pts, outs, s);
  int rc = 0;
  for (const auto& [metric, limit] : gate) {
    const double v = s["all"][metric].value();
    if (v > limit) {
      std::cerr << "kvcap accuracy: " << metric << " MAPE " << fixed(v, 1) << "% exceeds the gate's " << fixed(limit, 1)
                << "%\n";
      rc = 1;
    }
  }
  return rc;
}

}  // namespace kvcap::cli
