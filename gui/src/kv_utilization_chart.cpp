#include "kv_utilization_chart.hpp"

#include <QCursor>
#include <QFileInfo>
#include <QLegend>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "axes.hpp"
#include "dashboard_model.hpp"
#include "style.hpp"

namespace kvcap::gui {

KvUtilizationChart::KvUtilizationChart(QWidget* parent)
    : QChartView(parent), chart_(new QChart), x_(new QValueAxis), y_(new QValueAxis) {
  setObjectName(QStringLiteral("kvUtilizationChart"));
  setChart(chart_);
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(200, 160);
  chart_->setTitleFont(chart_title_font());
  chart_->legend()->setAlignment(Qt::AlignBottom);
  chart_->legend()->setMarkerShape(QLegend::MarkerShapeFromSeries);
  chart_->legend()->setFont(axis_label_font());
  chart_->setMargins(QMargins(4, 4, 8, 4));
  chart_->addAxis(x_, Qt::AlignBottom);
  chart_->addAxis(y_, Qt::AlignLeft);
  style_axis(x_, QStringLiteral("simulated time (s)"));
  style_axis(y_, QStringLiteral("KV blocks in use (%)"));
  x_->setRange(0, 60);
  y_->setRange(0, 100);
  y_->setTickCount(6);
  y_->setLabelFormat(QStringLiteral("%.0f"));
  x_->setLabelFormat(QStringLiteral("%g"));
  chart_->setTitle(QStringLiteral("KV utilisation over time \u2014 no simulation loaded"));
}

QString KvUtilizationChart::title() const {
  return chart_->title();
}

void KvUtilizationChart::refresh(const DashboardModel& model) {
  const auto& tl = model.timeline();
  const std::uint64_t generation = tl ? model.timeline_generation() : 0;
  if (generation == shown_generation_) return;  // unchanged: a timeline only changes when one is loaded
  for (auto* s : series_) {
    chart_->removeSeries(s);
    delete s;
  }
  series_.clear();
  samples_.clear();
  shown_generation_ = generation;
  if (!tl) {
    chart_->setTitle(QStringLiteral("KV utilisation over time \u2014 no simulation loaded"));
    return;
  }
  samples_.resize(std::size_t(tl->num_replicas));
  for (const auto& s : tl->samples) samples_[std::size_t(s.replica)].push_back(s);
  double t_max = 0;
  for (std::size_t r = 0; r < samples_.size(); ++r) {
    auto* series = new QLineSeries;
    series->setName(QStringLiteral("replica %1").arg(r));
    series->setPen(QPen(model_colour(r), 1.6, model_pen_style(r)));
    QList<QPointF> pts;
    pts.reserve(qsizetype(samples_[r].size()));
    for (const auto& s : samples_[r]) {
      pts.append({s.time_s, s.kv_utilization * 100.0});
      t_max = std::max(t_max, s.time_s);
    }
    series->replace(pts);
    chart_->addSeries(series);
    series->attachAxis(x_);
    series->attachAxis(y_);
    connect(series, &QXYSeries::hovered, this, [this, r](const QPointF& p, bool on) {
      if (!on || samples_[r].empty()) return QToolTip::hideText();
      const auto& v = samples_[r];
      const auto it = std::min_element(v.begin(), v.end(), [&](const TimelineSample& a, const TimelineSample& b) {
        return std::fabs(a.time_s - p.x()) < std::fabs(b.time_s - p.x());
      });
      QToolTip::showText(QCursor::pos(),
                         QStringLiteral("<b>replica %1</b> at %2 s<br>KV %3% (%4 / %5 blocks)<br>running %6, waiting "
                                        "%7, preemptions %8")
                             .arg(r)
                             .arg(it->time_s, 0, 'f', 3)
                             .arg(it->kv_utilization * 100.0, 0, 'f', 1)
                             .arg(grouped(static_cast<std::int64_t>(it->kv_used_blocks)),
                                  grouped(static_cast<std::int64_t>(it->kv_total_blocks)))
                             .arg(it->running)
                             .arg(it->waiting)
                             .arg(it->preemptions),
                         this);
    });
    series_.push_back(series);
  }
  chart_->legend()->setVisible(series_.size() > 1);
  x_->setRange(0, t_max > 0 ? t_max : 1);
  x_->applyNiceNumbers();
  chart_->setTitle(
      QStringLiteral("KV utilisation \u2014 %1").arg(QFileInfo(QString::fromStdString(tl->file)).fileName()));
}

}  // namespace kvcap::gui
