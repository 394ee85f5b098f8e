#include "memory_breakdown_chart.hpp"

#include <QCursor>
#include <QLegend>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "axes.hpp"
#include "dashboard_model.hpp"
#include "model_legend.hpp"
#include "style.hpp"

namespace kvcap::gui {

namespace {
constexpr double kGiB = 1073741824.0;
}

MemoryBreakdownChart::MemoryBreakdownChart(QWidget* parent)
    : QChartView(parent),
      chart_(new QChart),
      series_(new QHorizontalStackedBarSeries),
      y_(new QBarCategoryAxis),
      x_(new QValueAxis),
      device_line_(new QLineSeries),
      requested_line_(new QLineSeries) {
  setObjectName(QStringLiteral("memoryBreakdownChart"));
  setChart(chart_);
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(220, 160);
  chart_->setTitle(QStringLiteral("Memory per GPU"));
  chart_->setTitleFont(chart_title_font());
  chart_->legend()->setAlignment(Qt::AlignRight);  // one entry per line: readable at any width
  chart_->legend()->setFont(axis_label_font());
  chart_->setMargins(QMargins(4, 4, 8, 4));
  // Short legend names (the chart is a third of the window); tooltips give the full story.
  const std::pair<const char*, QColor> kinds[] = {{"weights", memory_colours::weights()},
                                                  {"activations", memory_colours::activation()},
                                                  {"non-torch", memory_colours::non_torch()},
                                                  {"KV cache", memory_colours::kv_cache()},
                                                  {"unused", memory_colours::unused()}};
  for (const auto& [label, colour] : kinds) {
    auto* set = new QBarSet(QString::fromUtf8(label));
    set->setColor(colour);
    set->setBorderColor(QColor(0x606060));
    series_->append(set);
    sets_.push_back(set);
    const std::size_t which = sets_.size() - 1;
    connect(set, &QBarSet::hovered, this, [this, which](bool on, int index) {
      // Moving between two segments may report the new one before leaving the old: only the segment whose
      // tooltip is shown hides it.
      const std::pair<int, int> segment{int(which), index};
      if (!on || index < 0 || std::size_t(index) >= rows_.size()) {
        if (tip_ == segment) QToolTip::hideText(), tip_ = {-1, -1};
        return;
      }
      tip_ = segment;
      const Row& r = rows_[std::size_t(index)];
      QString text = QStringLiteral("<b>%1</b><br>%2: <b>%3</b> (%4 GB)")
                         .arg(r.category.toHtmlEscaped(), sets_[which]->label(), gib_text(r.bytes[which]),
                              QString::number(r.bytes[which] / 1e9, 'f', 2));
      double total = 0;
      for (std::size_t k = 0; k + 1 < r.bytes.size(); ++k) total += r.bytes[k];  // all but "unused"
      // A baseline's bar against its own GPU (the pinned deployment's may be another type).
      const double device = r.device_bytes;
      text += device > 0 ? QStringLiteral("<br>held: %1 of the device's %2").arg(gib_text(total), gib_text(device))
                         : QStringLiteral("<br>held: %1").arg(gib_text(total));
      if (r.does_not_fit) text += QStringLiteral("<br><b>no memory left for the KV cache</b>");
      if (device > 0 && total > device)
        text += QStringLiteral("<br>needs %1\u00d7 the device's %2")
                    .arg(QString::number(total / device, 'f', 1), gib_text(device));
      QToolTip::showText(QCursor::pos(), text, this);
    });
  }
  series_->setBarWidth(0.6);
  chart_->addSeries(series_);
  chart_->addAxis(y_, Qt::AlignLeft);
  chart_->addAxis(x_, Qt::AlignBottom);
  series_->attachAxis(y_);
  series_->attachAxis(x_);
  device_line_->setName(QStringLiteral("device"));
  device_line_->setPen(QPen(QColor(0x202020), 1.5, Qt::SolidLine));
  requested_line_->setName(QStringLiteral("requested"));
  requested_line_->setPen(QPen(QColor(0xB00020), 1.5, Qt::DashLine));
  for (auto* line : {device_line_, requested_line_}) {
    chart_->addSeries(line);
    line->attachAxis(x_);
    line->attachAxis(y_);
  }
  style_axis(x_, QStringLiteral("GiB (2\u00b3\u2070 B)"));
  style_axis(y_, QString());
  y_->setTruncateLabels(false);  // elided in the middle here instead (elide_categories)
  y_->setGridLineVisible(false);
}

void MemoryBreakdownChart::elide_categories() {
  // What the legend on the right leaves of the width, 40% of it for the labels (model_legend.hpp).
  const QFontMetrics fm(axis_label_font());
  const int legend_px = fm.horizontalAdvance(QStringLiteral("activations")) + 40;
  const int px = vertical_axis_label_px(std::max(100, width() - legend_px));
  QStringList shown;
  for (const QString& full : full_categories_) {
    // Axis labels are rich text: a model's name is escaped after eliding.
    QString c = elide_middle_px(full, axis_label_font(), px).toHtmlEscaped();
    while (shown.contains(c)) c += QChar(0x200B);  // categories must be unique
    shown << c;
  }
  if (shown == categories_ && y_->categories() == shown) return;
  categories_ = shown;
  y_->clear();
  y_->append(categories_);
}

void MemoryBreakdownChart::resizeEvent(QResizeEvent* e) {
  QChartView::resizeEvent(e);
  layout_axis();
}

void MemoryBreakdownChart::layout_axis() {
  // The plot's width: the chart less the legend on the right and the category labels on the left (elide_categories).
  const QFontMetrics fm(axis_label_font());
  const int legend_px = fm.horizontalAdvance(QStringLiteral("activations")) + 40;
  const int chart_px = std::max(100, width() - legend_px);
  const int plot_px = chart_px - vertical_axis_label_px(chart_px) - 30;
  // A label such as "120" and a gap between two: at 1280x720 the plot is ~80 px, and 0..100 in steps of 20 ran its
  // last label into the frame ("1...").
  const int label_px = fm.horizontalAdvance(QStringLiteral("0000")) + 6;
  const int max_ticks = std::clamp(plot_px / std::max(1, label_px), 1, 4);
  const double interval = nice_tick_interval(span_gib_, max_ticks);
  const double top = std::ceil(span_gib_ * 1.02 / interval) * interval;
  full_categories_.clear();
  for (const Row& r : rows_) {
    double t = 0;
    for (double b : r.bytes) t += b;
    // A bar cut at the axis's end points on; its tooltip gives the total.
    full_categories_ << (t / kGiB > top ? r.category + QStringLiteral(" \u25b8") : r.category);
  }
  elide_categories();
  x_->setRange(0, top);
  x_->setTickType(QValueAxis::TicksDynamic);
  x_->setTickAnchor(0);
  x_->setTickInterval(interval);
  x_->setLabelFormat(interval < 1 ? QStringLiteral("%.1f") : QStringLiteral("%.0f"));
}

void MemoryBreakdownChart::add_rows(const ModelResult& r, const std::optional<GpuSpec>& gpu, bool baseline) {
  if (!r.plan) return;
  const auto& p = *r.plan;
  for (const StagePlan& st : p.stages) {
    Row row;
    // "base: " first, so that eliding the middle keeps both it and the name's end.
    row.category = (baseline ? QStringLiteral("base: ") : QString()) + QString::fromStdString(r.label);
    if (p.stages.size() > 1) row.category += QStringLiteral(" \u00b7 stage %1").arg(st.stage);
    row.baseline = baseline;
    const double device = gpu ? double(gpu->memory_bytes) : double(st.requested_bytes);
    row.device_bytes = gpu ? device : 0;
    double kv = std::max<double>(0, double(st.available_kv_bytes));
    row.does_not_fit = st.available_kv_bytes <= 0;
    double unused = std::max(0.0, device - double(st.requested_bytes));
    // TensorRT-LLM's budget requests the whole device and gives the KV cache its fraction of what the profiling run
    // left free: the rest of that is unused (planner/src/memory.cpp, budgeted_kv_bytes).
    if (p.dep.d.free_gpu_memory_fraction && kv > 0) unused += std::max(0.0, double(unreserved_bytes(st)) - kv);
    if (p.dep.d.num_gpu_blocks_override && kv > 0) {
      // vLLM allocates the override's pool, not the memory it measured: what it leaves is unused, what it takes
      // beyond draws past the device line.
      const double pool = double(st.num_blocks) * double(st.layout.block_bytes);
      unused += std::max(0.0, kv - pool);
      kv = pool;
    }
    row.bytes = {double(st.weights_bytes), double(st.activation_peak_bytes), double(st.non_torch_bytes), kv, unused};
    rows_.push_back(std::move(row));
  }
}

void MemoryBreakdownChart::refresh(const DashboardModel& model) {
  rows_.clear();
  for (const auto& r : model.results()) {
    if (model.is_hidden(r.key)) continue;
    add_rows(r, model.gpu(), false);
    // The pinned baseline's bars under the model's own, dimmed.
    if (const ModelResult* b = model.baseline_result(r.key)) add_rows(*b, model.baseline()->gpu, true);
  }
  // A horizontal bar chart lists its first category at the bottom; show the first model on top.
  std::reverse(rows_.begin(), rows_.end());
  const double device_gib = model.gpu() ? double(model.gpu()->memory_bytes) / kGiB : 0;
  double max_total = 0;
  for (const Row& r : rows_) {
    double t = 0;
    for (double b : r.bytes) t += b;
    max_total = std::max(max_total, t / kGiB);
  }
  // Up to 1.5x the device; a bar beyond is cut and says its total.
  const double shown = device_gib > 0 ? std::min(max_total, 1.5 * device_gib) : max_total;
  span_gib_ = std::max({shown, device_gib, 1.0});
  layout_axis();
  for (std::size_t k = 0; k < sets_.size(); ++k) {
    QList<qreal> values;
    for (const Row& r : rows_) values << r.bytes[k] / kGiB;
    sets_[k]->remove(0, sets_[k]->count());
    sets_[k]->append(values);
    // Baseline bars are drawn "selected", in a faint version of the set's colour.
    QColor faint = sets_[k]->color();
    faint.setAlphaF(0.3f);
    sets_[k]->setSelectedColor(faint);
    sets_[k]->deselectAllBars();
    for (std::size_t i = 0; i < rows_.size(); ++i)
      if (rows_[i].baseline) sets_[k]->selectBar(int(i));
  }
  // The lines span every bar (category i is centred on i).
  const double lo = -0.5, hi = std::max<double>(0.5, double(rows_.size()) - 0.5);
  // vLLM's budget is one line, gpu_memory_utilization x the device; TensorRT-LLM's (free_gpu_memory_fraction of what
  // each bar leaves free) has none: its held-back share is the bar's "unused".
  const auto& dep = model.settings().deployment;
  const double requested_gib = device_gib * dep.gpu_memory_utilization;
  device_line_->replace(QList<QPointF>{{device_gib, lo}, {device_gib, hi}});
  requested_line_->replace(QList<QPointF>{{requested_gib, lo}, {requested_gib, hi}});
  device_line_->setName(QStringLiteral("device %1").arg(gib_text(device_gib * kGiB, 1)));
  requested_line_->setName(QStringLiteral("\u00d7 %1").arg(dep.gpu_memory_utilization, 0, 'f', 2));
  device_line_->setVisible(device_gib > 0 && !rows_.empty());
  requested_line_->setVisible(device_gib > 0 && !rows_.empty() && !dep.free_gpu_memory_fraction);
  QString title = QStringLiteral("Memory per GPU");
  if (model.gpu()) title += QStringLiteral(" \u2014 %1").arg(display_text(model.gpu()->name));
  if (dep.free_gpu_memory_fraction)
    title +=
        QStringLiteral(" \u00b7 TensorRT-LLM's KV budget (%1 of free)").arg(*dep.free_gpu_memory_fraction, 0, 'f', 2);
  chart_->setTitle(title);
}

}  // namespace kvcap::gui
