// kvcap::gui::render_main_chart: the CLI's path to the main chart, without Qt in its header.
#include <QImage>
#include <QTemporaryDir>
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "kvcap/gui/plot.hpp"
#include "kvcap/planner/error.hpp"
#include "kvcap/profiles/diagnostics.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;
using namespace kvcap::gui;

TEST_CASE("render_main_chart writes PNG and SVG of the requested size", "[gui][plot]") {
  QTemporaryDir dir;
  PlotRequest r;
  const std::string png = dir.filePath("c.png").toStdString();
  render_main_chart(r, png, 640, 400);
  const QImage img(QString::fromStdString(png));
  CHECK(img.size() == QSize(640, 400));
  const std::string svg = dir.filePath("c.svg").toStdString();
  r.title = "My title";
  render_main_chart(r, svg, 800, 500);
  std::ifstream in(svg);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK_THAT(ss.str(), Catch::Contains("<svg"));
  CHECK_THAT(ss.str(), Catch::Contains("viewBox=\"0 0 800 500\""));  // width/height are in mm
  CHECK_THAT(ss.str(), Catch::Contains("<title>My title</title>"));
}

TEST_CASE("render_main_chart reports bad input clearly", "[gui][plot]") {
  QTemporaryDir dir;
  PlotRequest r;
  CHECK_THROWS_AS(render_main_chart(r, dir.filePath("c.jpg").toStdString(), 640, 400), std::invalid_argument);
  CHECK_THROWS_AS(render_main_chart(r, dir.filePath("c.png").toStdString(), 10, 400), std::invalid_argument);
  r.models = {"llama-3.1-8", "mistral-7b-v0.1"};
  CHECK_THROWS_WITH(render_main_chart(r, dir.filePath("c.png").toStdString(), 640, 400),
                    Catch::Contains("did you mean 'llama-3.1-8b'"));
  r.models = {KVCAP_TEST_DATA "/bad_fields.yaml"};
  CHECK_THROWS_AS(render_main_chart(r, dir.filePath("c.png").toStdString(), 640, 400), profiles::ProfileError);
  r.models = {"llama-3.1-8b"};
  r.deployment.tensor_parallel_size = 3;
  CHECK_THROWS_AS(render_main_chart(r, dir.filePath("c.png").toStdString(), 640, 400), SpecError);
  r.deployment.tensor_parallel_size = 1;
  CHECK_THROWS_AS(render_main_chart(r, "/nonexistent-dir/c.png", 640, 400), std::runtime_error);
}

TEST_CASE("names with control characters reach the SVG legend and title as visible escapes", "[gui][plot][escape]") {
  // A model profile whose name carries ESC, BEL and a line break, and a GPU profile whose display name does:
  // Qt's SVG generator writes legend text as it is, so an unescaped name made the file ill-formed XML.
  QTemporaryDir dir;
  const auto slurp = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  std::string model = slurp(std::string(KVCAP_TEST_DATA) + "/../../profiles/models/llama-3.1-8b.yaml");
  std::string gpu = slurp(std::string(KVCAP_TEST_DATA) + "/../../profiles/gpus/h100-sxm.yaml");
  const auto replace_line = [](std::string& yaml, const std::string& key, const std::string& line) {
    const auto at = yaml.find("\n" + key + ": ");
    REQUIRE(at != std::string::npos);
    yaml.replace(at + 1, yaml.find('\n', at + 1) - at - 1, line);
  };
  replace_line(model, "name", "name: \"evil\\x1b[31m\\u0007\\nname\"");
  replace_line(gpu, "display_name", "display_name: \"Odd\\x1b[0m\\u0001 GPU\"");
  PlotRequest r;
  r.models = {dir.filePath("evil.yaml").toStdString()};
  r.gpu = dir.filePath("gpu.yaml").toStdString();
  std::ofstream(r.models[0]) << model;
  std::ofstream(r.gpu) << gpu;
  const std::string svg = dir.filePath("c.svg").toStdString();
  render_main_chart(r, svg, 800, 500);
  const std::string out = slurp(svg);
  CHECK(std::none_of(out.begin(), out.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 && u != '\t' && u != '\n' && u != '\r';
  }));
  CHECK_THAT(out, Catch::Contains("evil\\x1b[31m\\x07\\nname"));
  CHECK_THAT(out, Catch::Contains("Odd\\x1b[0m\\x01 GPU"));
  // A --title with control characters (drawn as the chart's title, and the SVG's <title>).
  r.title = "a\x01b\x1b[31m";
  render_main_chart(r, svg, 800, 500);
  const std::string titled = slurp(svg);
  CHECK(std::none_of(titled.begin(), titled.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 && u != '\t' && u != '\n' && u != '\r';
  }));
}

TEST_CASE("render_pareto_chart draws every feasible deployment and marks the frontier", "[gui][plot][pareto]") {
  SizingRequest q;
  q.model = profiles::resolve_model("qwen3-32b");
  q.workload.prompt_tokens = 1024;
  q.workload.output_tokens = 512;
  q.workload.concurrent_users = 300;
  q.targets.ttft_s = 1.5;
  q.targets.ttft_percentile = 0.99;
  q.targets.tpot_s = 0.04;
  q.space.gpus = {profiles::resolve_gpu("h100-sxm"), profiles::resolve_gpu("b200")};
  const auto r = size_cluster(q);
  REQUIRE(r.feasible > 0);
  QTemporaryDir dir;
  const std::string svg = dir.filePath("p.svg").toStdString();
  render_pareto_chart(q, r, svg, 900, 560, "Frontier <b>x</b>");
  std::ifstream in(svg);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK_THAT(ss.str(), Catch::Contains("viewBox=\"0 0 900 560\""));
  CHECK_THAT(ss.str(), Catch::Contains("Pareto frontier"));
  CHECK_THAT(ss.str(), !Catch::Contains("<b>x</b>"));  // the title is text, not markup
  CHECK_THROWS_AS(render_pareto_chart(q, r, dir.filePath("p.jpg").toStdString(), 900, 560), std::invalid_argument);
}
