#include "pareto_chart.hpp"

#include <QCursor>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QScatterSeries>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "axes.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/planner/text.hpp"
#include "style.hpp"

namespace kvcap::gui {

namespace {
QString deployment_text(const SizingCandidate& c, std::size_t rank) {
  return QStringLiteral("#%1  %2 x %3 TP%4%5 (%6 weights, %7 KV)\n%8 tok/s/GPU, %9 tok/s/user, TTFT %10 ms, $%11/hour")
      .arg(rank)
      .arg(c.replicas)
      .arg(display_text(c.gpu))
      .arg(c.tp)
      .arg((c.pp > 1 ? QStringLiteral(" PP%1").arg(c.pp) : QString()) + QString::fromStdString(ep_text(c)))
      .arg(QString::fromStdString(std::string(name(c.weight_dtype))))
      .arg(QString::fromStdString(std::string(name(c.kv_dtype))))
      .arg(c.tokens_per_s_per_gpu, 0, 'f', 0)
      .arg(c.tokens_per_s_per_user, 0, 'f', 1)
      .arg(c.ttft_s * 1e3, 0, 'f', 0)
      .arg(c.priced ? QString::number(c.cost_per_hour_usd, 'f', 2) : QStringLiteral("n/a"));
}
}  // namespace

ParetoChart::ParetoChart(QWidget* parent)
    : QChartView(parent), chart_(new QChart), x_(new QLogValueAxis), y_(new QValueAxis) {
  setObjectName(QStringLiteral("paretoChart"));
  setChart(chart_);
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(240, 180);
  chart_->setTitleFont(chart_title_font());
  chart_->legend()->setAlignment(Qt::AlignBottom);
  chart_->legend()->setMarkerShape(QLegend::MarkerShapeFromSeries);  // past 8 colours, the shape tells types apart
  chart_->legend()->setFont(axis_label_font());
  chart_->setMargins(QMargins(4, 4, 8, 4));
  chart_->addAxis(x_, Qt::AlignBottom);
  chart_->addAxis(y_, Qt::AlignLeft);
  style_axis(x_, QStringLiteral("output tokens/s per GPU at the load (log scale)"));
  style_axis(y_, QStringLiteral("tokens/s per user (1 / TPOT)"));
  x_->setLabelFormat(QStringLiteral("%g"));
  y_->setLabelFormat(QStringLiteral("%.0f"));
}

std::size_t ParetoChart::series_count() const {
  return static_cast<std::size_t>(chart_->series().size());
}

void ParetoChart::show_result(const SizingRequest& q, const SizingResult& r, const QString& title) {
  chart_->removeAllSeries();
  std::ostringstream csv;
  csv << "rank,gpu,tokens_per_s_per_gpu,tokens_per_s_per_user,cost_per_hour_usd,pareto\n";
  // One scatter per GPU type, in rank order of the type's best (the cheapest type first in the legend).
  std::vector<std::string> types;
  std::map<std::string, QScatterSeries*> by_type;
  std::map<std::string, std::vector<QString>> tips;         // per type, in the order of its points
  std::map<std::string, std::vector<std::size_t>> indices;  // the candidates behind those points
  double lo_x = INFINITY, hi_x = 0, hi_y = 0;
  std::vector<bool> on_front(r.feasible, false);
  for (const auto i : r.pareto) on_front[i] = true;
  for (std::size_t i = 0; i < r.feasible; ++i) {
    const auto& c = r.candidates[i];
    if (!by_type.count(c.gpu)) {
      auto* s = new QScatterSeries;
      s->setName(display_text(c.gpu));
      s->setMarkerSize(7);
      s->setColor(model_colour(types.size()));
      // Past the palette's colours, the shape tells two GPU types of one colour apart.
      constexpr QScatterSeries::MarkerShape kShapes[] = {
          QScatterSeries::MarkerShapeCircle, QScatterSeries::MarkerShapeRectangle, QScatterSeries::MarkerShapeTriangle};
      s->setMarkerShape(kShapes[(types.size() / palette_size()) % 3]);
      s->setBorderColor(Qt::transparent);
      by_type[c.gpu] = s;
      types.push_back(c.gpu);
    }
    by_type[c.gpu]->append(c.tokens_per_s_per_gpu,
                           std::isfinite(c.tokens_per_s_per_user) ? c.tokens_per_s_per_user : 0);
    tips[c.gpu].push_back(deployment_text(c, i + 1));
    indices[c.gpu].push_back(i);
    lo_x = std::min(lo_x, c.tokens_per_s_per_gpu);
    hi_x = std::max(hi_x, c.tokens_per_s_per_gpu);
    if (std::isfinite(c.tokens_per_s_per_user)) hi_y = std::max(hi_y, c.tokens_per_s_per_user);
    csv << i + 1 << "," << escape::csv_field(c.gpu) << "," << c.tokens_per_s_per_gpu << "," << c.tokens_per_s_per_user
        << "," << (c.priced ? std::to_string(c.cost_per_hour_usd) : "") << "," << (on_front[i] ? "true" : "false")
        << "\n";
  }
  for (const auto& t : types) {
    chart_->addSeries(by_type[t]);
    by_type[t]->attachAxis(x_);
    by_type[t]->attachAxis(y_);
    QScatterSeries* series = by_type[t];
    connect(series, &QScatterSeries::clicked, this, [this, series, which = indices[t]](const QPointF& p) {
      const auto points = series->points();
      for (qsizetype k = 0; k < points.size() && k < static_cast<qsizetype>(which.size()); ++k)
        if (points[k] == p) return emit candidate_clicked(which[static_cast<std::size_t>(k)]);
    });
    connect(series, &QScatterSeries::hovered, this, [this, series, texts = tips[t]](const QPointF& p, bool on) {
      if (!on) return QToolTip::hideText();
      const auto points = series->points();
      for (qsizetype k = 0; k < points.size() && k < static_cast<qsizetype>(texts.size()); ++k)
        if (points[k] == p) return QToolTip::showText(QCursor::pos(), texts[static_cast<std::size_t>(k)], this);
    });
  }
  // The frontier: a line through its points by tokens/s per GPU, and the points ringed.
  auto* line = new QLineSeries;
  auto* ring = new QScatterSeries;
  line->setName(QStringLiteral("Pareto frontier (tokens/s per GPU, per user, $ per token)"));
  line->setPen(QPen(QColor(0x202020), 1.6, Qt::DashLine));
  ring->setMarkerSize(14);
  ring->setColor(Qt::transparent);
  ring->setBorderColor(QColor(0x202020));
  for (const auto i : r.pareto) {
    const auto& c = r.candidates[i];
    const double y = std::isfinite(c.tokens_per_s_per_user) ? c.tokens_per_s_per_user : 0;
    line->append(c.tokens_per_s_per_gpu, y);
    ring->append(c.tokens_per_s_per_gpu, y);
  }
  for (auto* s : std::initializer_list<QXYSeries*>{line, ring}) {
    chart_->addSeries(s);
    s->attachAxis(x_);
    s->attachAxis(y_);
  }
  chart_->legend()->markers(ring).front()->setVisible(false);
  if (r.feasible > 0) {
    set_log10_axis(x_, lo_x, hi_x);
    y_->setRange(0, hi_y * 1.08);
    y_->applyNiceNumbers();
  }
  const auto& w = q.workload;
  const QString load = w.open_loop() ? QStringLiteral("%1 req/s").arg(w.arrival_rate_per_s, 0, 'g', 4)
                                     : QStringLiteral("%1 users").arg(w.concurrent_users);
  // A chart title is rich text: "<" would open a tag, so the text is HTML-escaped (a profile's name included); the
  // generated title breaks into two lines so that a narrow chart does not cut it.
  const QString first =
      QStringLiteral("%1: %2 deployments meeting").arg(display_text(q.model.display_name)).arg(r.feasible);
  const QString second = QStringLiteral("TTFT p%1 <= %2 ms and TPOT <= %3 ms at %4, %5 / %6 tokens")
                             .arg(q.targets.ttft_percentile * 100, 0, 'g', 4)
                             .arg(q.targets.ttft_s * 1e3, 0, 'f', 0)
                             .arg(q.targets.tpot_s * 1e3, 0, 'g', 4)
                             .arg(load)
                             .arg(w.prompt_tokens, 0, 'f', 0)
                             .arg(w.output_tokens, 0, 'f', 0);
  chart_->setTitle(!title.isEmpty() ? title.toHtmlEscaped()
                                    : first.toHtmlEscaped() + QStringLiteral("<br>") + second.toHtmlEscaped());
  csv_ = csv.str();
}

}  // namespace kvcap::gui
