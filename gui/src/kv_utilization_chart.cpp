#include "kv_utilization_chart.hpp"

#include <QCursor>
#include <QFileInfo>
#include <QLegend>
#include <QLegendMarker>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>

#include "axes.hpp"
#include "dashboard_model.hpp"
#include "model_legend.hpp"
#include "style.hpp"

namespace kvcap::gui {

KvUtilizationChart::KvUtilizationChart(QWidget* parent)
    : QChartView(parent),
      chart_(new QChart),
      x_(new QValueAxis),
      y_(new QValueAxis),
      y_waiting_(new QValueAxis),
      waiting_(new QLineSeries),
      preemptions_(new QScatterSeries),
      previous_(new QLineSeries) {
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
  chart_->addAxis(y_waiting_, Qt::AlignRight);
  style_axis(y_waiting_, QStringLiteral("waiting (dashed)"));
  y_waiting_->setGridLineVisible(false);
  y_waiting_->setLabelFormat(QStringLiteral("%.0f"));
  // Whole requests: a range of 0-4 over 5 ticks (the default 0-1 printed "0 0 1 1 1").
  y_waiting_->setRange(0, 4);
  y_waiting_->setTickCount(5);
  waiting_->setName(QStringLiteral("waiting"));
  waiting_->setPen(QPen(QColor(0x505050), 1.2, Qt::DashLine));
  preemptions_->setName(QStringLiteral("preempted"));
  preemptions_->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
  preemptions_->setMarkerSize(6);
  preemptions_->setColor(QColor(0xB00020));
  preemptions_->setBorderColor(QColor(0xB00020));
  QColor faint(0x707070);
  faint.setAlphaF(0.35f);
  previous_->setPen(QPen(faint, 5.0, Qt::SolidLine, Qt::RoundCap));
  connect(previous_, &QXYSeries::hovered, this, [this](const QPointF&, bool on) {
    if (!on) return QToolTip::hideText();
    QToolTip::showText(QCursor::pos(),
                       QStringLiteral("<b>previous run</b> (mean over replicas): ") + previous_label_.toHtmlEscaped(),
                       this);
  });
  for (QXYSeries* s : std::initializer_list<QXYSeries*>{previous_, waiting_, preemptions_}) {
    chart_->addSeries(s);
    s->attachAxis(x_);
    s->attachAxis(s == waiting_ ? y_waiting_ : y_);
    s->setVisible(false);
  }
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
  for (QXYSeries* s : std::initializer_list<QXYSeries*>{previous_, waiting_, preemptions_}) {
    s->clear();
    s->setVisible(false);
  }
  y_waiting_->setVisible(tl.has_value());
  previous_label_.clear();
  if (!tl) {
    run_label_.clear();
    chart_->setTitle(QStringLiteral("KV utilisation over time \u2014 no simulation loaded"));
    return;
  }
  double t_max = 0;
  draw_replicas(*tl, t_max);
  draw_waiting_and_preemptions(*tl);
  draw_previous(model, t_max);
  x_->setRange(0, t_max > 0 ? t_max : 1);
  x_->applyNiceNumbers();
  // A run names its deployment and workload; a file read from disk, its name.
  const QString name = QString::fromStdString(tl->file);
  run_label_ = QFileInfo::exists(name) ? QFileInfo(name).fileName() : display_text(tl->file);
  // Two lines, deployment then workload (a run's label is "deployment \u00b7 workload"), each elided in the middle.
  const QStringList parts = run_label_.split(QStringLiteral(" \u00b7 "));
  QStringList lines;
  for (const QString& part : parts) lines << elide_middle(part, 48).toHtmlEscaped();
  chart_->setTitle(lines.join(QStringLiteral("<br>")));
  // One replica: its line needs no legend entry (the axis names it).
  for (QLineSeries* r : series_)
    for (QLegendMarker* m : chart_->legend()->markers(r)) m->setVisible(series_.size() > 1);
}

void KvUtilizationChart::draw_replicas(const Timeline& tl, double& t_max) {
  samples_.resize(std::size_t(tl.num_replicas));
  for (const auto& s : tl.samples) samples_[std::size_t(s.replica)].push_back(s);
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
}

void KvUtilizationChart::draw_waiting_and_preemptions(const Timeline& tl) {
  // Waiting requests summed over the replicas at each sampled instant (samples of one instant share its time).
  std::map<double, i64> waiting;
  QList<QPointF> crosses;
  for (const auto& per_replica : samples_) {
    std::uint64_t before = 0;
    for (const auto& s : per_replica) {
      waiting[s.time_s] += s.waiting;
      if (s.preemptions > before) crosses.append({s.time_s, s.kv_utilization * 100.0});
      before = s.preemptions;
    }
  }
  QList<QPointF> w;
  i64 w_max = 0;
  for (const auto& [t, n] : waiting) {
    w.append({t, double(n)});
    w_max = std::max(w_max, n);
  }
  waiting_->replace(w);
  preemptions_->replace(crosses);
  waiting_->setVisible(!tl.samples.empty());
  preemptions_->setVisible(!crosses.isEmpty());
  y_waiting_->setRange(0, std::max<double>(4, double(w_max) * 1.1));
  y_waiting_->applyNiceNumbers();
}

void KvUtilizationChart::draw_previous(const DashboardModel& model, double& t_max) {
  const auto& prev = model.previous_timeline();
  if (!prev || prev->samples.empty()) return;
  // The mean over the replicas at each instant.
  std::map<double, std::pair<double, int>> mean;
  for (const auto& s : prev->samples) {
    auto& [sum, n] = mean[s.time_s];
    sum += s.kv_utilization * 100.0;
    ++n;
  }
  QList<QPointF> pts;
  for (const auto& [t, v] : mean) {
    pts.append({t, v.first / v.second});
    t_max = std::max(t_max, t);
  }
  previous_->replace(pts);
  // Named by what differs from the shown run: its deployment, its workload, or both (labels "deployment · workload").
  const QStringList was = display_text(prev->file).split(QStringLiteral(" \u00b7 "));
  const QStringList now =
      model.timeline() ? display_text(model.timeline()->file).split(QStringLiteral(" \u00b7 ")) : QStringList{};
  QStringList differs;
  for (qsizetype i = 0; i < was.size(); ++i)
    if (i >= now.size() || was[i] != now[i]) differs << was[i];
  previous_label_ = differs.isEmpty() ? was.join(QStringLiteral(" \u00b7 ")) : differs.join(QStringLiteral(" \u00b7 "));
  previous_->setName(QStringLiteral("previous"));
  previous_->setVisible(true);
}

}  // namespace kvcap::gui
