// kvcap::gui::render_main_chart: the CLI's path to the main chart, without Qt in its header.
#include <QImage>
#include <QTemporaryDir>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "kvcap/gui/plot.hpp"
#include "kvcap/planner/error.hpp"
#include "kvcap/profiles/diagnostics.hpp"

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
