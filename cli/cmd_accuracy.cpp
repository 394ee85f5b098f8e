// kvcap accuracy: the scorecard of published serving measurements against kvcap's predictions (scorecard.hpp), and
// with --max-mape a regression gate for CI; --fit refits the engine profiles. docs/accuracy.md.
#include <iostream>
#include <map>

#include "common.hpp"
#include "report/accuracy.hpp"
#include "scorecard.hpp"

namespace kvcap::cli {

namespace {

/// "tpot=40,ttft=80,throughput=30": the largest MAPE (percent) allowed over all engines.
std::map<std::string, double> parse_gate(const std::string& s) {
  std::map<std::string, double> g;
  const std::string expected = "--max-mape: expected tpot=P,ttft=P,throughput=P (percent), each metric once, got '";
  for (const auto& item : split_list(s)) {
    const auto eq = item.find('=');
    const std::string k = item.substr(0, eq);
    if (eq == std::string::npos || (k != "tpot" && k != "ttft" && k != "throughput") || g.count(k))
      throw UsageError(expected + s + "'");
    g[k] = parse_real(item.substr(eq + 1), "--max-mape " + k, "a percentage such as 25", 0);
  }
  if (g.empty()) throw UsageError(expected + s + "'");
  return g;
}

}  // namespace

int cmd_accuracy(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  // clang-format off
  desc.add_options()("fixtures", po::value<std::string>()->default_value("../shared/fixtures"),
                     "folder holding serving_measurements.json")(
      "points", po::value<std::string>(), "a points file in serving_measurements.json's format, run instead of the "
                                          "fixtures' (e.g. bench/accuracy/large_models.json: expert-parallel and FP4 runs)")(
      "max-mape", po::value<std::string>(), "fail (exit 1) when a metric's MAPE over all engines exceeds this, "
                                            "e.g. tpot=40,ttft=80,throughput=30 (percent)")(
      "engine-profile", po::value<std::string>()->default_value("fitted"),
      "fitted: each point with its engine's profile (vllm, sglang, trtllm); datasheet: every point with the plain roofline")(
      "fit", po::bool_switch(), "fit each engine's profile to its points (coordinate descent) and print the constants "
                                "with leave-one-out errors; takes minutes")("help,h", "show this help");
  // clang-format on
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    print_help("kvcap accuracy [--fixtures DIR] [--max-mape tpot=P,ttft=P,throughput=P]",
               "Runs every published serving measurement through the simulator with the load its source describes\n"
               "and prints predicted vs measured TPOT, TTFT and output throughput, with the MAPE per engine.",
               desc, "  kvcap accuracy --fixtures ../shared/fixtures\n");
    return 0;
  }
  const auto gate = vm.count("max-mape") ? parse_gate(vm["max-mape"].as<std::string>()) : std::map<std::string, double>{};
  const auto pts = read_points(vm.count("points") ? vm["points"].as<std::string>()
                                                  : vm["fixtures"].as<std::string>() + "/serving_measurements.json");
  if (vm["fit"].as<bool>()) {
    report_fits(std::cout, fit_engines(pts));
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
  report_scorecard(std::cout, pts, outs, s);
  int rc = 0;
  for (const auto& [metric, limit] : gate) {
    // A gate over no measurement proves nothing: it fails (every point skipped, or none measures the metric).
    if (s["all"][metric].n == 0) {
      std::cerr << "kvcap accuracy: no point was scored on " << metric << ", so the gate's " << fixed(limit, 1)
                << "% cannot be checked\n";
      rc = 1;
      continue;
    }
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
