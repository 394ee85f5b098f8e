#include "concurrency_chart.hpp"

#include <QCursor>
#include <QLegend>
#include <QLegendMarker>
#include <QMouseEvent>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "axes.hpp"
#include "dashboard_model.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/planner/text.hpp"
#include "style.hpp"

namespace kvcap::gui {

namespace {
constexpr int kMinExp = 10, kMaxExp = 20;  // 1K .. 1M tokens

// "TP >= 4" as the charts print it: "TP \u2265 4".
QString fix_text(const FitFix& f) {
  return QString::fromStdString(f.change).replace(QStringLiteral(">="), QStringLiteral("\u2265"));
}

// Every setting the planner used, resolved (the formats, block and limits vLLM runs), one CSV field each.
constexpr const char* kSettingsCsvHeader =
    "num_gpus,tensor_parallel_size,pipeline_parallel_size,replicas,decode_context_parallel_size,"
    "enable_expert_parallel,dtype,quantization,kv_cache_dtype,gpu_memory_utilization,kv_cache_memory_bytes,"
    "num_gpu_blocks_override,block_size,"
    "max_model_len,max_num_seqs,max_num_batched_tokens,shared_prefix_tokens,vllm_version";

std::string settings_csv(const ResolvedDeployment& r) {
  const Deployment& d = r.d;
  std::string kv_memory;  // empty: profiled; else one value per stage, ';'-separated
  for (u64 b : d.kv_cache_memory_bytes) (kv_memory += kv_memory.empty() ? "" : ";") += std::to_string(b);
  std::ostringstream o;
  o << d.num_gpus << "," << d.tensor_parallel_size << "," << d.pipeline_parallel_size << "," << r.replicas << ","
    << d.decode_context_parallel_size << "," << (d.enable_expert_parallel ? 1 : 0) << "," << name(r.dtype) << ","
    << name(r.weight_dtype) << "," << name(r.kv_dtype) << "," << d.gpu_memory_utilization << "," << kv_memory << ","
    << (d.num_gpu_blocks_override ? std::to_string(*d.num_gpu_blocks_override) : std::string()) << "," << r.block_size
    << "," << r.max_model_len << "," << r.max_num_seqs << "," << r.max_num_batched_tokens << ","
    << d.shared_prefix_tokens << "," << escape::csv_field(d.vllm_version);
  return o.str();
}

QPen model_pen(std::size_t i, bool beyond) {
  QPen p(model_colour(i), beyond ? 1.6 : 2.4);
  p.setStyle(beyond ? Qt::DashLine : model_pen_style(i));
  return p;
}
}  // namespace

double ConcurrencyChart::x_of(i64 s) {
  return std::log2(static_cast<double>(s));
}

ConcurrencyChart::ConcurrencyChart(QWidget* parent)
    : QChartView(parent),
      chart_(new QChart),
      x_(new QCategoryAxis),
      y_(new QLogValueAxis),
      one_request_(new QLineSeries),
      beyond_legend_(new QLineSeries),
      gap_note_(new QGraphicsTextItem(chart_)),
      crosshair_(new QLineSeries),
      cap_line_(new QLineSeries) {
  setObjectName(QStringLiteral("concurrencyChart"));
  setChart(chart_);
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(240, 180);
  chart_->setTitleFont(chart_title_font());
  chart_->legend()->setAlignment(Qt::AlignBottom);
  chart_->legend()->setMarkerShape(QLegend::MarkerShapeFromSeries);  // dashed / dotted styles show in the legend
  chart_->legend()->setFont(axis_label_font());
  chart_->setMargins(QMargins(4, 4, 8, 4));
  chart_->addAxis(x_, Qt::AlignBottom);
  chart_->addAxis(y_, Qt::AlignLeft);
  set_log2_axis(x_, kMinExp, kMaxExp, [](long long t) { return tokens_label(t); });
  set_log10_axis(y_, 0.1, 1000);
  style_axis(x_, QStringLiteral("context length per request (tokens, log scale; K = 1,024)"));
  style_axis(y_, QStringLiteral("max concurrent requests"));

  gap_note_->setZValue(100);
  gap_note_->setFont(axis_label_font());
  connect(chart_, &QChart::plotAreaChanged, this, [this] { place_gap_note(); });
  one_request_->setName(QStringLiteral("one request"));
  one_request_->setPen(QPen(QColor(0x707070), 1.2, Qt::DotLine));
  one_request_->replace(QList<QPointF>{{double(kMinExp), 1.0}, {double(kMaxExp), 1.0}});
  beyond_legend_->setName(QStringLiteral("beyond max_model_len"));
  beyond_legend_->setPen(QPen(QColor(0x707070), 1.6, Qt::DashLine));
  cap_line_->setName(QStringLiteral("max_num_seqs \u00d7 replicas"));
  cap_line_->setPen(QPen(QColor(0x8E44AD), 1.2, Qt::DashDotLine));
  crosshair_->setPen(QPen(QColor(0x404040), 1.0, Qt::SolidLine));
  for (auto* s : {one_request_, beyond_legend_, cap_line_, crosshair_}) {
    chart_->addSeries(s);
    s->attachAxis(x_);
    s->attachAxis(y_);
  }
  crosshair_->setVisible(false);
  setMouseTracking(true);
}

i64 ConcurrencyChart::snap_context(double x) {
  const double e = std::clamp(std::round(x), double(kMinExp), double(kMaxExp));
  return i64(1) << int(e);
}

QString ConcurrencyChart::readout(i64 context_tokens) const {
  QStringList rows;
  for (const auto& c : curves_) {
    if (hidden_.count(c.key)) continue;
    for (const Point& p : c.points) {
      if (p.context_tokens != context_tokens) continue;
      QString row = QStringLiteral("<tr><td><span style='color:%1'>\u25a0</span> %2</td><td align=right><b>%3</b></td>")
                        .arg(c.colour.name(), QString::fromStdString(c.label).toHtmlEscaped(),
                             QString::number(p.per_replica * double(c.replicas), 'f', 2));
      for (const auto& [key, pts] : baseline_points_)
        if (key == c.key)
          for (const Point& b : pts)
            if (b.context_tokens == context_tokens)
              row += QStringLiteral("<td>(baseline %1)</td>").arg(QString::number(b.per_replica, 'f', 2));
      row += context_tokens > c.max_model_len ? QStringLiteral("<td><i>beyond max_model_len</i></td></tr>")
                                              : QStringLiteral("<td></td></tr>");
      rows << row;
    }
  }
  if (rows.isEmpty()) return {};
  QString text = QStringLiteral("<b>%1</b> tokens per request (%2)<table>%3</table>")
                     .arg(tokens_label(context_tokens), grouped(context_tokens), rows.join(QString()));
  if (running_cap_ > 0)
    text +=
        QStringLiteral("running at once: at most max_num_seqs \u00d7 replicas = %1").arg(grouped(i64(running_cap_)));
  return text;
}

void ConcurrencyChart::show_crosshair(i64 context_tokens, const QPoint& global_pos) {
  const double x = x_of(context_tokens);
  crosshair_->replace(QList<QPointF>{{x, y_->min()}, {x, y_->max()}});
  crosshair_->setVisible(true);
  for (QLegendMarker* m : chart_->legend()->markers(crosshair_)) m->setVisible(false);
  const QString text = readout(context_tokens);
  if (text.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(global_pos, text, this);
}

void ConcurrencyChart::mouseMoveEvent(QMouseEvent* e) {
  QChartView::mouseMoveEvent(e);
  const QPointF scene = mapToScene(e->position().toPoint());
  const QPointF in_chart = chart_->mapFromScene(scene);
  if (!chart_->plotArea().contains(in_chart)) {
    crosshair_->setVisible(false);
    return;
  }
  const QPointF value = chart_->mapToValue(in_chart, one_request_);
  show_crosshair(snap_context(value.x()), e->globalPosition().toPoint());
}

void ConcurrencyChart::leaveEvent(QEvent* e) {
  QChartView::leaveEvent(e);
  crosshair_->setVisible(false);
}

QLineSeries* ConcurrencyChart::series_for(const std::string& key) const {
  for (const auto& c : curves_)
    if (c.key == key) return c.within;
  return nullptr;
}
QLineSeries* ConcurrencyChart::beyond_series_for(const std::string& key) const {
  for (const auto& c : curves_)
    if (c.key == key) return c.beyond;
  return nullptr;
}

void ConcurrencyChart::rebuild_series(const DashboardModel& model) {
  for (auto& c : curves_) {
    chart_->removeSeries(c.within);
    chart_->removeSeries(c.beyond);
    delete c.within;
    delete c.beyond;
  }
  curves_.clear();
  for (const auto& r : model.results()) {
    Curve c;
    c.key = r.key;
    c.within = new QLineSeries;
    c.beyond = new QLineSeries;
    for (auto* s : {c.within, c.beyond}) {
      chart_->addSeries(s);
      s->attachAxis(x_);
      s->attachAxis(y_);
    }
    c.colour = model_colour(r.colour_index);
    c.within->setPen(model_pen(r.colour_index, false));
    c.beyond->setPen(model_pen(r.colour_index, true));
    const std::string key = r.key;
    // Both halves of a curve (within and beyond max_model_len) show the model's tooltip.
    for (QLineSeries* half : {c.within, c.beyond})
      connect(half, &QXYSeries::hovered, this, [this, key](const QPointF& p, bool on) {
        if (!on) return QToolTip::hideText();
        for (const auto& cc : curves_)
          if (cc.key == key) show_tooltip(cc, p);
      });
    curves_.push_back(std::move(c));
  }
  // Reference series last in the legend.
  for (auto* s : {one_request_, beyond_legend_, cap_line_, crosshair_}) {
    chart_->removeSeries(s);
    chart_->addSeries(s);
    s->attachAxis(x_);
    s->attachAxis(y_);
  }
  connect_markers();
}

void ConcurrencyChart::connect_markers() {
  // The models are named by the dashboard's model legend (ModelLegend, which also switches them off in every chart);
  // this legend keeps the reference lines, each a toggle.
  for (QLegendMarker* m : chart_->legend()->markers()) {
    m->disconnect(this);
    QAbstractSeries* s = m->series();
    if (s == crosshair_) {
      m->setVisible(false);
      continue;
    }
    if (s != beyond_legend_ && s != one_request_ && s != cap_line_) {
      m->setVisible(show_model_markers_);
      continue;
    }
    connect(m, &QLegendMarker::clicked, this, [this, s, m] {
      if (s == beyond_legend_)
        beyond_hidden_ = !beyond_hidden_;
      else
        s->setVisible(!s->isVisible());
      apply_visibility();
      const bool off = s == beyond_legend_ ? beyond_hidden_ : !s->isVisible();
      m->setVisible(true);
      QColor lc = m->labelBrush().color();
      lc.setAlphaF(off ? 0.4f : 1.0f);
      m->setLabelBrush(lc);
    });
  }
}

void ConcurrencyChart::apply_visibility() {
  for (const auto& c : curves_) {
    const bool off = hidden_.count(c.key) > 0;
    c.within->setVisible(!off);
    c.beyond->setVisible(!off && !beyond_hidden_);
  }
  for (QLegendMarker* m : chart_->legend()->markers()) {
    QAbstractSeries* s = m->series();
    bool beyond_of_model = false;
    for (const auto& c : curves_) beyond_of_model |= s == c.beyond;
    if (beyond_of_model || s == crosshair_)
      m->setVisible(false);  // the model's own entry stands for both halves; the crosshair has none
    else if (s != beyond_legend_ && s != one_request_ && s != cap_line_)
      m->setVisible(show_model_markers_);
    else
      m->setVisible(s != cap_line_ || running_cap_ > 0);
  }
}

void ConcurrencyChart::show_tooltip(const Curve& c, const QPointF& at) {
  if (c.points.empty()) return;
  // The nearest computed point (the hover position lies anywhere on the line between two).
  const auto it = std::min_element(c.points.begin(), c.points.end(), [&](const Point& a, const Point& b) {
    return std::fabs(x_of(a.context_tokens) - at.x()) < std::fabs(x_of(b.context_tokens) - at.x());
  });
  QString text = QStringLiteral("<b>%1</b><br>context %2 tokens%3<br>max concurrent requests: <b>%4</b>")
                     .arg(QString::fromStdString(c.label).toHtmlEscaped(), grouped(it->context_tokens),
                          tokens_label(it->context_tokens) == grouped(it->context_tokens)
                              ? QString()
                              : QStringLiteral(" (%1)").arg(tokens_label(it->context_tokens)),
                          QString::fromStdString(fixed_down(it->per_replica * double(c.replicas), 2)));
  // Cut, not rounded, as kvcap plan's table: 0.9998 is not "1.00" requests.
  if (c.replicas > 1)
    text += QStringLiteral(" (%1 per replica \u00d7 %2)")
                .arg(QString::fromStdString(fixed_down(it->per_replica, 2)))
                .arg(c.replicas);
  text += QStringLiteral("<br>KV per request: %1 per GPU").arg(binary_bytes_text(double(it->kv_bytes_per_request)));
  if (it->context_tokens > c.max_model_len)
    text += QStringLiteral("<br><i>beyond max_model_len %1</i>").arg(grouped(c.max_model_len));
  QToolTip::showText(QCursor::pos(), text, this);
}

const QLineSeries* ConcurrencyChart::baseline_series_for(const std::string& key) const {
  for (std::size_t i = 0; i < baseline_points_.size(); ++i)
    if (baseline_points_[i].first == key) return baseline_series_[i];
  return nullptr;
}

void ConcurrencyChart::draw_baseline(const DashboardModel& model) {
  for (QLineSeries* b : baseline_series_) {
    chart_->removeSeries(b);
    delete b;
  }
  baseline_series_.clear();
  baseline_points_.clear();
  if (!model.baseline()) return;
  for (const ModelResult& r : model.results()) {
    const ModelResult* b = model.baseline_result(r.key);
    if (!b || !b->plan || model.is_hidden(r.key)) continue;
    // The same colour, wide and faint: the baseline stays readable under the current curve.
    QColor c = model_colour(r.colour_index);
    c.setAlphaF(0.3f);
    auto* s = new QLineSeries;
    s->setName(QStringLiteral("baseline"));
    s->setPen(QPen(c, 6.0, Qt::SolidLine, Qt::RoundCap));
    std::vector<Point> pts;
    QList<QPointF> line;
    for (const CurvePoint& p : b->plan->curve) {
      const double y = p.max_concurrency * double(b->plan->dep.replicas);
      pts.push_back({p.context_tokens, p.max_concurrency * double(b->plan->dep.replicas), p.kv_bytes_per_request});
      if (y > 0 && std::isfinite(y)) line.append({x_of(p.context_tokens), y});
    }
    s->replace(line);
    chart_->addSeries(s);
    s->attachAxis(x_);
    s->attachAxis(y_);
    for (QLegendMarker* m : chart_->legend()->markers(s)) m->setVisible(false);
    baseline_series_.push_back(s);
    baseline_points_.emplace_back(r.key, std::move(pts));
  }
}

void ConcurrencyChart::place_gap_note() {
  const QRectF area = chart_->plotArea();
  gap_note_->setTextWidth(std::max(120.0, area.width() * 0.62));
  gap_note_->setPos(area.right() - gap_note_->textWidth() - 4, area.top() + 4);
}

void ConcurrencyChart::refresh(const DashboardModel& model) {
  bool same = curves_.size() == model.results().size();
  for (std::size_t i = 0; same && i < curves_.size(); ++i) same = curves_[i].key == model.results()[i].key;
  if (!same) rebuild_series(model);

  const i64 replicas = model.replicas();
  const auto& dep = model.settings().deployment;
  double lo = INFINITY, hi = 0;
  std::ostringstream csv;
  csv << std::setprecision(10);  // as kvcap plan's CSV: 1304286, not 1.30429e+06
  csv << "model,gpu," << kSettingsCsvHeader
      << ",context_tokens,max_concurrency_per_replica,max_concurrency_total,beyond_max_model_len\n";
  for (std::size_t i = 0; i < curves_.size(); ++i) {
    const ModelResult& r = model.results()[i];
    Curve& c = curves_[i];
    c.label = r.label;
    c.points.clear();
    QList<QPointF> within, beyond;
    if (r.plan) {
      c.max_model_len = r.plan->dep.max_model_len;
      c.replicas = r.plan->dep.replicas;
      for (const CurvePoint& p : r.plan->curve) {
        c.points.push_back({p.context_tokens, p.max_concurrency, p.kv_bytes_per_request});
        csv << escape::csv_field(r.label) << "," << escape::csv_field(model.settings().gpu) << ","
            << settings_csv(r.plan->dep) << "," << p.context_tokens << "," << p.max_concurrency << ","
            << p.max_concurrency * double(c.replicas) << "," << (p.context_tokens > c.max_model_len ? 1 : 0) << "\n";
        const double y = p.max_concurrency * double(c.replicas);
        // A log axis drops a whole series holding a zero (or a non-finite value, which the planner no longer gives:
        // every request owns at least the block of its last token).
        if (!(y > 0) || !std::isfinite(y)) continue;
        const QPointF pt(x_of(p.context_tokens), y);
        if (p.context_tokens <= c.max_model_len) within.append(pt);
        if (p.context_tokens >= c.max_model_len) beyond.append(pt);
        lo = std::min(lo, y);
        hi = std::max(hi, y);
      }
      // Join the dashed part to the solid one when max_model_len falls between grid points.
      if (!within.isEmpty() && !beyond.isEmpty() && beyond.front().x() > within.back().x())
        beyond.prepend(within.back());
    }
    c.within->replace(within);
    c.beyond->replace(beyond);
    // Qt Charts draws legend labels and titles as HTML: a name with '<' or '&' is escaped, not markup.
    QString name = QString::fromStdString(r.label).toHtmlEscaped();
    if (!r.error.empty())
      name += QStringLiteral(" \u2014 error, see the problems panel");
    else if (r.fit && !r.fit->fixes.empty())
      name += QStringLiteral(" \u2014 does not fit: %1").arg(fix_text(r.fit->fixes.front()).toHtmlEscaped());
    else if (within.isEmpty() && beyond.isEmpty())
      name += QStringLiteral(" \u2014 no KV memory left");
    c.within->setName(name);
    c.beyond->setName(name + QStringLiteral(" (beyond max_model_len)"));
  }
  hidden_ = model.hidden();
  csv_ = csv.str();
  // The labelled gap: every model vLLM would not start, in its colour, with the smallest fix.
  QStringList gaps;
  for (const ModelResult& r : model.results())
    if (r.fit)
      gaps << QStringLiteral("<span style='color:%1'><b>%2</b></span> %3")
                  .arg(model_colour(r.colour_index).name(), QString::fromStdString(r.label).toHtmlEscaped(),
                       r.fit->fixes.empty()
                           ? QStringLiteral("(no single flag fixes it)")
                           : QStringLiteral("(fits with %1)").arg(fix_text(r.fit->fixes.front()).toHtmlEscaped()));
  gap_note_->setHtml(gaps.isEmpty()
                         ? QString()
                         : QStringLiteral("<div style='background:#FFF4F2'>does not fit, vLLM would not start: %1"
                                          "</div>")
                               .arg(gaps.join(QStringLiteral(" \u00b7 "))));
  gap_note_->setVisible(!gaps.isEmpty());
  place_gap_note();
  if (model.baseline())
    for (const ModelResult& b : model.baseline()->results)
      if (b.plan && !model.is_hidden(b.key))
        for (const CurvePoint& p : b.plan->curve)
          if (const double y = p.max_concurrency * double(b.plan->dep.replicas); y > 0 && std::isfinite(y))
            lo = std::min(lo, y), hi = std::max(hi, y);
  // The scheduler's cap: vLLM runs at most max_num_seqs requests per replica, whatever the KV cache holds.
  running_cap_ = 0;
  for (const ModelResult& r : model.results())
    if (r.plan) {
      running_cap_ = double(r.plan->dep.max_num_seqs) * double(r.plan->dep.replicas);
      break;
    }
  if (hi > 0 && running_cap_ > 0 && running_cap_ <= 4 * hi) hi = std::max(hi, running_cap_);
  cap_line_->replace(QList<QPointF>{{double(kMinExp), running_cap_}, {double(kMaxExp), running_cap_}});
  cap_line_->setName(QStringLiteral("max_num_seqs \u00d7 replicas = %1").arg(grouped(i64(running_cap_))));
  if (!(hi > 0)) lo = 0.1, hi = 1000;
  set_log10_axis(y_, std::min(lo, 0.5), hi);
  y_->setTitleText(replicas > 1 ? QStringLiteral("max concurrent requests, all %1 replicas (log scale)").arg(replicas)
                                : QStringLiteral("max concurrent requests per replica (log scale)"));
  draw_baseline(model);
  // Legend markers are recreated by replace()/setName in some Qt versions: set them again.
  apply_visibility();

  if (!title_override_.isEmpty()) {
    // a --title with control characters, or with '<' and '&' (the title is HTML)
    chart_->setTitle(display_text(title_override_.toStdString()).toHtmlEscaped());
  } else {
    QString gpu =
        (model.gpu() ? display_text(model.gpu()->display_name.empty() ? model.gpu()->name : model.gpu()->display_name)
                     : QString::fromStdString(model.settings().gpu))
            .toHtmlEscaped();
    const i64 n = dep.num_gpus > 0 ? dep.num_gpus : dep.tensor_parallel_size * dep.pipeline_parallel_size;
    QString kv = dep.kv_cache_dtype == DType::auto_
                     ? QStringLiteral("auto")
                     : QString::fromUtf8(name(dep.kv_cache_dtype).data(), qsizetype(name(dep.kv_cache_dtype).size()));
    QString extra;
    if (dep.decode_context_parallel_size > 1)
      extra += QStringLiteral(" \u00b7 DCP %1").arg(dep.decode_context_parallel_size);
    if (dep.enable_expert_parallel) extra += QStringLiteral(" \u00b7 EP");
    // A what-if changes the model: the title says so (W207 in the error panel says why).
    if (dep.kv_layer_sharing.on())
      extra +=
          QStringLiteral(" \u00b7 what-if KV sharing %1").arg(QString::fromStdString(dep.kv_layer_sharing.describe()));
    chart_->setTitle(
        QStringLiteral("Max concurrency vs context \u2014 %1\u00d7 %2 \u00b7 TP %3 \u00b7 PP %4%5 \u00b7 KV %6")
            .arg(n)
            .arg(gpu)
            .arg(dep.tensor_parallel_size)
            .arg(dep.pipeline_parallel_size)
            .arg(extra)
            .arg(kv));
  }
}

}  // namespace kvcap::gui
