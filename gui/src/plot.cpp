// kvcap plot: the dashboard's main chart, rendered to a file by the same ConcurrencyChart.
#include "kvcap/gui/plot.hpp"

#include <QFileInfo>
#include <stdexcept>

#include "concurrency_chart.hpp"
#include "dashboard_model.hpp"
#include "export.hpp"
#include "pareto_chart.hpp"
#include "profile_library.hpp"

namespace kvcap::gui {

void render_main_chart(const PlotRequest& request, const std::string& out_path, int width_px, int height_px) {
  const QString path = QString::fromStdString(out_path);
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix != QLatin1String("png") && suffix != QLatin1String("svg"))
    throw std::invalid_argument(out_path + ": expected a file name ending in .png or .svg");
  if (request.models.empty()) throw std::invalid_argument("no models to plot");

  EnsureApplication app;
  ProfileLibrary library;
  DashboardModel model(library);
  DashboardSettings s;
  s.models = request.models;
  s.gpu = request.gpu;
  s.deployment = request.deployment;
  model.set_settings(s);
  // The dashboard shows problems in its panel; a command line fails with the first one, located.
  for (const auto& r : model.results())
    if (r.exception) std::rethrow_exception(r.exception);

  ConcurrencyChart view;
  view.set_model_markers(true);  // no model legend beside it
  if (!request.title.empty()) view.set_title_override(QString::fromStdString(request.title));
  view.refresh(model);
  save_chart(&view, path, QSize(width_px, height_px));
}

void render_pareto_chart(const SizingRequest& q, const SizingResult& r, const std::string& out_path, int width_px,
                         int height_px, const std::string& title) {
  const QString path = QString::fromStdString(out_path);
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix != QLatin1String("png") && suffix != QLatin1String("svg"))
    throw std::invalid_argument(out_path + ": expected a file name ending in .png or .svg");
  EnsureApplication app;
  ParetoChart view;
  view.show_result(q, r, QString::fromStdString(title));
  save_chart(&view, path, QSize(width_px, height_px));
}

}  // namespace kvcap::gui
