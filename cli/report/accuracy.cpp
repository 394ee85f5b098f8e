// Reporters of `kvcap accuracy`: the per-point table with MAPEs, and the fitted engine profiles.
#include "report/accuracy.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include "kvcap/escape.hpp"
#include "kvcap/planner/text.hpp"

namespace kvcap::cli {

namespace {

using escape::terminal_text;

std::string cell(double pred_s, const std::optional<double>& meas_s, double scale, int decimals) {
  const auto e = rel_err(pred_s, meas_s);
  // Without a measurement the prediction alone ("7.9/-"); without a prediction (NaN) the measurement alone.
  if (!e) {
    const std::string pred = std::isfinite(pred_s) ? fixed(pred_s * scale, decimals) : "-";
    return meas_s ? "-/" + fixed(*meas_s * scale, decimals) : pred + "/-";
  }
  std::ostringstream o;
  o << fixed(pred_s * scale, decimals) << "/" << fixed(*meas_s * scale, decimals) << " " << (*e >= 0 ? "+" : "")
    << fixed(100 * *e, 0) << "%";
  return o.str();
}

}  // namespace

void report_scorecard(std::ostream& out, const std::vector<Point>& pts, const std::vector<Outcome>& outs,
                      const Scores& s) {
  char line[512];
  std::snprintf(line, sizeof line, "%-8s %-13s %-15s %-9s %4s %-14s %-22s %-24s %-24s\n", "point", "engine", "model",
                "gpu", "TP", "load", "TPOT ms pred/meas", "TTFT ms pred/meas", "output tok/s pred/meas");
  out << line;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const Point& p = pts[i];
    const Outcome& o = outs[i];
    const std::string eng = terminal_text(p.engine.substr(0, 13));
    if (!o.skipped.empty()) {
      std::snprintf(line, sizeof line, "%-8s %-13s skipped: %s\n", terminal_text(p.id).c_str(), eng.c_str(),
                    terminal_text(o.skipped).c_str());
      out << line;
      continue;
    }
    // Attention data-parallel points run as TP 1 x tp replicas: "DP8".
    const std::string tp = (p.attention_dp ? "DP" : "") + std::to_string(p.tp);
    std::snprintf(line, sizeof line, "%-8s %-13s %-15s %-9s %4s %-14s %-22s %-24s %-24s\n", terminal_text(p.id).c_str(),
                  eng.c_str(), o.model.c_str(), terminal_text(p.gpu).c_str(), tp.c_str(), o.load.c_str(),
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

void report_fits(std::ostream& out, const std::vector<EngineFit>& fits) {
  const std::map<std::string, std::string> label = {
      {"vllm", "vLLM"}, {"sglang", "SGLang"}, {"trtllm", "TensorRT-LLM and NIM"}};
  for (const auto& f : fits) {
    out << label.at(f.name) << " (" << f.points << " points): mean MAPE " << fixed(f.mape_datasheet, 1)
        << "% (datasheet) -> " << fixed(f.mape_fitted, 1) << "% (fitted)\n";
    for (const auto& k : engine_knobs()) {
      EngineProfile c = f.profile;
      out << "  " << k.name << " = " << *k.field(c) << "\n";
    }
    auto m = [](const Mape& x) { return x.n ? fixed(x.value(), 1) + "%" : std::string("-"); };
    out << "  leave-one-out MAPE: TPOT " << m(f.loo_tpot) << ", TTFT " << m(f.loo_ttft) << ", throughput "
        << m(f.loo_throughput) << "\n\n";
  }
}

}  // namespace kvcap::cli
