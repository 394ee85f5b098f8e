#include "decode_speed_chart.hpp"

#include <QCursor>
#include <QLegend>
#include <QLegendMarker>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "axes.hpp"
#include "dashboard_model.hpp"
#include "style.hpp"

namespace kvcap::gui {

DecodeSpeedChart::DecodeSpeedChart(QWidget* parent)
    : QChartView(parent),
      chart_(new QChart),
      x_(new QCategoryAxis),
      y_tokens_(new QLogValueAxis),
      y_tpot_(new QValueAxis),
      memory_bound_(new QScatterSeries),
      compute_bound_(new QScatterSeries) {
  setObjectName(QStringLiteral("decodeSpeedChart"));
  setChart(chart_);
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(220, 160);
  chart_->setTitleFont(chart_title_font());
  chart_->legend()->setAlignment(Qt::AlignBottom);
  chart_->legend()->setFont(axis_label_font());
  chart_->setMargins(QMargins(4, 4, 4, 4));
  chart_->addAxis(x_, Qt::AlignBottom);
  chart_->addAxis(y_tokens_, Qt::AlignLeft);
  chart_->addAxis(y_tpot_, Qt::AlignRight);
  style_axis(x_, QStringLiteral("batch (concurrent requests decoding)"));
  // Thousands keep the log labels short ("0.1", "1", "10") in a narrow panel.
  style_axis(y_tokens_, QStringLiteral("k tokens/s per replica (solid)"));
  style_axis(y_tpot_, QStringLiteral("TPOT, ms (dashed)"));
  y_tpot_->setGridLineVisible(false);
  y_tpot_->setMinorGridLineVisible(false);
  set_log2_axis(
      x_, 0, 10, [](long long b) { return QString::number(b); }, 2);
  set_log10_axis(y_tokens_, 0.01, 100);
  y_tpot_->setRange(0, 50);
  y_tpot_->setLabelFormat(QStringLiteral("%g"));

  memory_bound_->setName(QStringLiteral("memory-bound"));
  memory_bound_->setMarkerShape(QScatterSeries::MarkerShapeCircle);
  memory_bound_->setMarkerSize(7);
  memory_bound_->setColor(Qt::white);
  memory_bound_->setBorderColor(QColor(0x202020));
  compute_bound_->setName(QStringLiteral("compute-bound"));
  compute_bound_->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
  compute_bound_->setMarkerSize(7);
  compute_bound_->setColor(QColor(0x202020));
  compute_bound_->setBorderColor(QColor(0x202020));
}

QLineSeries* DecodeSpeedChart::throughput_series_for(const std::string& key) const {
  for (const auto& c : curves_)
    if (c.key == key) return c.throughput;
  return nullptr;
}
QLineSeries* DecodeSpeedChart::tpot_series_for(const std::string& key) const {
  for (const auto& c : curves_)
    if (c.key == key) return c.tpot;
  return nullptr;
}
QString DecodeSpeedChart::title() const {
  return chart_->title();
}

void DecodeSpeedChart::set_hidden(const std::set<std::string>& keys) {
  hidden_ = keys;
  for (const auto& c : curves_) {
    const bool on = !hidden_.count(c.key);
    c.throughput->setVisible(on);
    c.tpot->setVisible(on);
    // Showing a series shows its legend marker again; on screen this legend lists only the bound markers.
    for (QLegendMarker* m : chart_->legend()->markers(c.throughput)) m->setVisible(show_model_markers_ && on);
    for (QLegendMarker* m : chart_->legend()->markers(c.tpot)) m->setVisible(false);
  }
  // What binds each visible point: open circle memory, filled square compute.
  QList<QPointF> mem, comp;
  for (const auto& c : curves_) {
    if (hidden_.count(c.key)) continue;
    for (const DecodeStep& s : c.steps)
      (s.bound == Bound::memory ? mem : comp).append({std::log2(double(s.batch)), s.tokens_per_s / 1e3});
  }
  memory_bound_->replace(mem);
  compute_bound_->replace(comp);
}

void DecodeSpeedChart::draw_baseline(const DashboardModel& model) {
  for (QLineSeries* b : baseline_) {
    chart_->removeSeries(b);
    delete b;
  }
  baseline_.clear();
  if (!model.baseline()) return;
  for (const ModelResult& r : model.results()) {
    const ModelResult* b = model.baseline_result(r.key);
    if (!b || b->decode.empty() || model.is_hidden(r.key)) continue;
    QColor c = model_colour(r.colour_index);
    c.setAlphaF(0.3f);
    auto* s = new QLineSeries;
    s->setPen(QPen(c, 6.0, Qt::SolidLine, Qt::RoundCap));
    QList<QPointF> pts;
    for (const DecodeStep& st : b->decode) pts.append({std::log2(double(st.batch)), st.tokens_per_s / 1e3});
    s->replace(pts);
    chart_->addSeries(s);
    s->attachAxis(x_);
    s->attachAxis(y_tokens_);
    for (QLegendMarker* m : chart_->legend()->markers(s)) m->setVisible(false);
    baseline_.push_back(s);
  }
}

void DecodeSpeedChart::rebuild(const DashboardModel& model) {
  for (auto& c : curves_) {
    chart_->removeSeries(c.throughput);
    chart_->removeSeries(c.tpot);
    delete c.throughput;
    delete c.tpot;
  }
  curves_.clear();
  for (auto* s : {memory_bound_, compute_bound_})
    if (chart_->series().contains(s)) chart_->removeSeries(s);
  for (const auto& r : model.results()) {
    Curve c;
    c.key = r.key;
    c.throughput = new QLineSeries;
    c.tpot = new QLineSeries;
    chart_->addSeries(c.throughput);
    chart_->addSeries(c.tpot);
    c.throughput->attachAxis(x_);
    c.throughput->attachAxis(y_tokens_);
    c.tpot->attachAxis(x_);
    c.tpot->attachAxis(y_tpot_);
    c.throughput->setPen(QPen(model_colour(r.colour_index), 2.2, model_pen_style(r.colour_index)));
    c.tpot->setPen(QPen(model_colour(r.colour_index), 1.6, Qt::DashLine));
    const std::string key = r.key;
    connect(c.throughput, &QXYSeries::hovered, this, [this, key](const QPointF& p, bool on) {
      if (!on) return QToolTip::hideText();
      for (const auto& cc : curves_)
        if (cc.key == key) show_tooltip(cc, p, false);
    });
    connect(c.tpot, &QXYSeries::hovered, this, [this, key](const QPointF& p, bool on) {
      if (!on) return QToolTip::hideText();
      for (const auto& cc : curves_)
        if (cc.key == key) show_tooltip(cc, p, true);
    });
    curves_.push_back(std::move(c));
  }
  for (auto* s : {memory_bound_, compute_bound_}) {
    chart_->addSeries(s);
    s->attachAxis(x_);
    s->attachAxis(y_tokens_);
  }
  for (const auto& c : curves_) {
    // The models' colours are named by the main chart's legend; this one keeps to what binds each point.
    for (QLegendMarker* m : chart_->legend()->markers(c.tpot)) m->setVisible(false);
    for (QLegendMarker* m : chart_->legend()->markers(c.throughput)) m->setVisible(false);
  }
}

void DecodeSpeedChart::show_tooltip(const Curve& c, const QPointF& at, bool tpot_axis) {
  if (c.steps.empty()) return;
  const auto it = std::min_element(c.steps.begin(), c.steps.end(), [&](const DecodeStep& a, const DecodeStep& b) {
    return std::fabs(std::log2(double(a.batch)) - at.x()) < std::fabs(std::log2(double(b.batch)) - at.x());
  });
  QString text = QStringLiteral("<b>%1</b>, batch %2<br>%3 tokens/s per replica (%4 per user)<br>TPOT %5 ms, %6-bound")
                     .arg(QString::fromStdString(c.label))
                     .arg(it->batch)
                     .arg(grouped(std::llround(it->tokens_per_s)))
                     .arg(QString::number(it->tokens_per_s_per_user, 'f', 1))
                     .arg(QString::number(it->tpot_s * 1e3, 'f', 2))
                     .arg(QString::fromUtf8(to_string(it->bound).data(), qsizetype(to_string(it->bound).size())));
  text += QStringLiteral("<br>rates: memory %1, compute %2")
              .arg(QString::fromStdString(it->source.memory), QString::fromStdString(it->source.compute));
  (void)tpot_axis;
  QToolTip::showText(QCursor::pos(), text, this);
}

void DecodeSpeedChart::refresh(const DashboardModel& model) {
  bool same = curves_.size() == model.results().size();
  for (std::size_t i = 0; same && i < curves_.size(); ++i) same = curves_[i].key == model.results()[i].key;
  if (!same || curves_.empty()) rebuild(model);

  double tok_lo = INFINITY, tok_hi = 0, tpot_hi = 0;
  i64 max_batch = 1;
  for (std::size_t i = 0; i < curves_.size(); ++i) {
    const ModelResult& r = model.results()[i];
    Curve& c = curves_[i];
    c.label = r.label;
    c.steps = r.decode;
    QList<QPointF> tput, tpot;
    for (const DecodeStep& s : r.decode) {
      const double x = std::log2(double(s.batch));
      tput.append({x, s.tokens_per_s / 1e3});
      tpot.append({x, s.tpot_s * 1e3});
      tok_lo = std::min(tok_lo, s.tokens_per_s / 1e3);
      tok_hi = std::max(tok_hi, s.tokens_per_s / 1e3);
      tpot_hi = std::max(tpot_hi, s.tpot_s * 1e3);
      max_batch = std::max(max_batch, s.batch);
    }
    c.throughput->replace(tput);
    c.tpot->replace(tpot);
    c.throughput->setName(QString::fromStdString(r.label).toHtmlEscaped());  // legend labels are HTML
    c.tpot->setName(QString::fromStdString(r.label).toHtmlEscaped() + QStringLiteral(" TPOT"));
  }
  set_hidden(model.hidden());
  draw_baseline(model);
  if (model.baseline())
    for (const ModelResult& b : model.baseline()->results)
      for (const DecodeStep& st : b.decode) {
        tok_lo = std::min(tok_lo, st.tokens_per_s / 1e3);
        tok_hi = std::max(tok_hi, st.tokens_per_s / 1e3);
        max_batch = std::max(max_batch, st.batch);
      }
  const int max_exp = std::max(4, int(std::ceil(std::log2(double(max_batch)))));
  set_log2_axis(
      x_, 0, max_exp, [](long long b) { return QString::number(b); }, max_exp > 7 ? 2 : 1, 0.4);
  if (tok_hi > 0) set_log10_axis(y_tokens_, tok_lo, tok_hi);
  if (tpot_hi > 0) {
    y_tpot_->setRange(0, tpot_hi * 1.1);
    y_tpot_->applyNiceNumbers();
  }
  // A batch cut short by the scheduler, not by memory, says so (max_num_seqs, at most max_num_batched_tokens).
  i64 cap = 0;
  for (const ModelResult& r : model.results())
    if (r.plan && !r.decode.empty() && r.decode.back().batch == r.plan->dep.max_num_seqs)
      cap = std::max(cap, r.plan->dep.max_num_seqs);
  x_->setTitleText(cap > 0 ? QStringLiteral("batch (\u2264 max_num_seqs %1)").arg(grouped(cap))
                           : QStringLiteral("batch (concurrent requests decoding)"));
  const QString source = model.calibration_in_use() ? model.rate_source_text() : QStringLiteral("datasheet rates");
  chart_->setTitle(QStringLiteral("Decode at %1 context \u2014 %2")
                       .arg(tokens_label(model.settings().speed_context_tokens), source));
}

}  // namespace kvcap::gui
