// kvcap-plot (also run as `kvcap plot`): the dashboard's main chart (maximum concurrency vs context length,
// several models on one deployment) rendered to PNG or SVG without a display, by the same code as kvcap-gui
// (kvcap::charts). A separate executable so that `kvcap` itself links no Qt (issue 12); it shares the CLI's
// option parsing and error policy (kvcap_cli).
#include <cctype>
#include <iostream>

#include "common.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/gui/plot.hpp"
#include "size_request.hpp"

namespace kvcap::cli {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  for (std::size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i]) return false;
  return true;
}
}  // namespace

/// --out, --size and --title: the image's file and pixels (both charts).
struct ImageOptions {
  std::string out;
  std::int64_t width = 0, height = 0;
};

ImageOptions image_options(const po::variables_map& vm) {
  if (!vm.count("out")) throw UsageError("--out is required (a .png or .svg file name)");
  ImageOptions o;
  o.out = vm["out"].as<std::string>();
  if (!ends_with(o.out, ".png") && !ends_with(o.out, ".svg"))
    throw UsageError("--out: expected a file name ending in .png or .svg, got '" + o.out + "'");
  const std::string size = vm["size"].as<std::string>();
  const auto x = size.find('x');
  if (x == std::string::npos) throw UsageError("--size: expected WIDTHxHEIGHT such as 1200x750, got '" + size + "'");
  o.width = parse_int(size.substr(0, x), "--size (width)", 100);
  o.height = parse_int(size.substr(x + 1), "--size (height)", 100);
  if (o.width > 20000 || o.height > 20000)
    throw UsageError(
        "--size: each side at most 20000 pixels and at most 50 million pixels in all (e.g. 8000x6000), got '" + size +
        "'");
  // Bounded work: a PNG is rendered into one 4-byte-per-pixel image in memory (50 Mpx = 200 MB).
  if (o.width * o.height > 50'000'000)
    throw UsageError("--size: at most 50 million pixels (e.g. 8000x6000; a " + size + " image needs " +
                     std::to_string(o.width * o.height * 4 / 1'000'000) + " MB of memory to render), got '" + size +
                     "'");
  return o;
}

po::options_description image_flags() {
  po::options_description own("Image");
  // clang-format off
  own.add_options()
    ("out,o", po::value<std::string>(), "output file: .png or .svg (required)")
    ("size", po::value<std::string>()->default_value("1200x750"), "image size in pixels, WIDTHxHEIGHT")
    ("title", po::value<std::string>(), "chart title (default: names what is drawn)");
  // clang-format on
  return own;
}

/// kvcap plot --pareto: `kvcap size`'s search drawn as the purchase chart.
int pareto_main(const std::vector<std::string>& args) {
  po::options_description desc = size_options();
  desc.add(image_flags());
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    print_help(
        "kvcap-plot --pareto --out frontier.png|.svg (kvcap size's flags)",
        "Every deployment `kvcap size` finds meeting the targets, as tokens/s per GPU (log scale) against\n"
        "tokens/s per user (1 / TPOT), one colour per GPU type, with the Pareto frontier drawn through its\n"
        "points (no other deployment matches or beats it on both and on price; docs/sizing.md).",
        desc,
        "  kvcap plot --pareto --model qwen3-32b --prompt-tokens 1K --output-tokens 512 --concurrent-users 300 \\\n"
        "             --ttft-p 1.5s --ttft-percentile 99 --tpot 40ms --gpus h100-sxm,h200,b200,l40s --out "
        "frontier.png");
    return 0;
  }
  const ImageOptions img = image_options(vm);
  const SizeCommand c = size_command_from(vm);
  if (has_errors(c.report.findings)) throw FindingError(c.report.findings.front());
  print_findings("plot", c.report.findings);
  const SizingResult r = size_cluster(c.request);
  if (r.feasible == 0) throw UsageError("nothing to draw: " + r.diagnosis);
  gui::render_pareto_chart(c.request, r, img.out, static_cast<int>(img.width), static_cast<int>(img.height),
                           vm.count("title") ? vm["title"].as<std::string>() : std::string());
  std::cout << "wrote " << escape::terminal_text(img.out) << " (" << img.width << "x" << img.height
            << "): " << r.feasible << " deployments of " << escape::terminal_text(c.request.model.name) << ", "
            << r.pareto.size() << " on the Pareto frontier\n";
  return 0;
}

int plot_main(const std::vector<std::string>& all_args) {
  std::vector<std::string> args;
  for (const auto& a : all_args)
    if (a != "--pareto") args.push_back(a);
  if (args.size() < all_args.size()) return pareto_main(args);
  auto desc = deployment_options(false);
  po::options_description own("Plot");
  std::string defaults;
  for (const auto& m : gui::default_plot_models()) defaults += (defaults.empty() ? "" : ",") + m;
  // clang-format off
  own.add_options()
    ("models", po::value<std::string>()->default_value(defaults), "comma-separated models: built-in names, YAML profiles or config.json files")
    ("gpu,g", po::value<std::string>()->default_value("h100-sxm"), "GPU: built-in name or YAML profile")
    ("pareto", "draw `kvcap size`'s purchase chart instead (takes size's flags; kvcap plot --pareto --help)")
    ("help,h", "show this help");
  // clang-format on
  desc.add(own).add(image_flags());
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    print_help(
        "kvcap-plot --out chart.png|chart.svg [--models A,B,...] [--gpu G] [options]",
        "Maximum concurrent requests (log scale) against context length (1K..1M, log scale) for several models\n"
        "on one deployment: the main chart of kvcap-gui, rendered without a display. Solid up to each model's\n"
        "max_model_len, dashed beyond; the dotted line is one request. With --pareto: kvcap size's Pareto chart.",
        desc,
        "  kvcap-plot --out concurrency.png        (or: kvcap plot --out concurrency.png)\n"
        "  kvcap-plot --models llama-3.1-70b,mixtral-8x7b,deepseek-v3 --gpu h200 --num-gpus 8 \\\n"
        "             --tensor-parallel-size 8 --kv-cache-dtype fp8 --out h200.svg --size 1600x900");
    return 0;
  }
  const ImageOptions img = image_options(vm);
  const std::string& out = img.out;
  const auto w = img.width, h = img.height;
  gui::PlotRequest req;
  req.models = split_list(vm["models"].as<std::string>());
  if (req.models.empty()) throw UsageError("--models: expected a comma-separated list of models");
  req.gpu = vm["gpu"].as<std::string>();
  req.deployment = deployment_from(vm);
  if (vm.count("title")) req.title = vm["title"].as<std::string>();
  gui::render_main_chart(req, out, static_cast<int>(w), static_cast<int>(h));
  // Paths and names as the user typed them: one line, control characters shown (cli/escape).
  std::cout << "wrote " << escape::terminal_text(out) << " (" << w << "x" << h << "): ";
  for (std::size_t i = 0; i < req.models.size(); ++i)
    std::cout << (i ? ", " : "") << escape::terminal_text(req.models[i]);
  std::cout << " on " << escape::terminal_text(req.gpu) << "\n";
  return 0;
}

}  // namespace kvcap::cli

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return kvcap::cli::run_guarded("plot", [&] { return kvcap::cli::plot_main(args); }, args);
}
