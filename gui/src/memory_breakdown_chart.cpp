#include "memory_breakdown_chart.hpp"

#include <QCursor>
#include <QLegend>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "axes.hpp"
#include "dashboard_model.hpp"
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
      x_(new QValueAxis) {
  setObjectName(QStringLiteral("memoryBreakdownChart"));
  setChart(chart_);
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(220, 160);
  chart_->setTitle(QStringLiteral("Memory per GPU"));
  chart_->setTitleFont(chart_title_font());
  chart_->legend()->setAlignment(Qt::AlignBottom);
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
      if (!on || index < 0 || std::size_t(index) >= rows_.size()) return QToolTip::hideText();
      const Row& r = rows_[std::size_t(index)];
      QString text = QStringLiteral("<b>%1</b><br>%2: <b>%3</b> (%4 GB)")
                         .arg(r.category, sets_[which]->label(), gib_text(r.bytes[which]),
                              QString::number(r.bytes[which] / 1e9, 'f', 2));
      double total = 0;
      for (double b : r.bytes) total += b;
      text += QStringLiteral("<br>device total %1").arg(gib_text(total));
      if (r.does_not_fit) text += QStringLiteral("<br><b>no memory left for the KV cache</b>");
      QToolTip::showText(QCursor::pos(), text, this);
    });
  }
  series_->setBarWidth(0.6);
  chart_->addSeries(series_);
  chart_->addAxis(y_, Qt::AlignLeft);
  chart_->addAxis(x_, Qt::AlignBottom);
  series_->attachAxis(y_);
  series_->attachAxis(x_);
  style_axis(x_, QStringLiteral("GiB per GPU (1 GiB = 2\u00b3\u2070 B)"));
  style_axis(y_, QString());
  y_->setGridLineVisible(false);
}

void MemoryBreakdownChart::refresh(const DashboardModel& model) {
  rows_.clear();
  for (const auto& r : model.results()) {
    if (!r.plan) continue;
    const auto& p = *r.plan;
    for (const StagePlan& st : p.stages) {
      Row row;
      row.category = QString::fromStdString(r.label);
      if (p.stages.size() > 1) row.category += QStringLiteral(" \u00b7 stage %1").arg(st.stage);
      const double device = model.gpu() ? double(model.gpu()->memory_bytes) : double(st.requested_bytes);
      const double kv = std::max<double>(0, double(st.available_kv_bytes));
      row.does_not_fit = st.available_kv_bytes <= 0;
      row.bytes = {double(st.weights_bytes), double(st.activation_peak_bytes), double(st.non_torch_bytes), kv,
                   std::max(0.0, device - double(st.requested_bytes))};
      rows_.push_back(std::move(row));
    }
  }
  // A horizontal bar chart lists its first category at the bottom; show the first model on top.
  std::reverse(rows_.begin(), rows_.end());
  categories_.clear();
  double max_total = 0;
  for (const Row& r : rows_) {
    QString c = r.category;
    while (categories_.contains(c)) c += QChar(0x200B);  // categories must be unique
    categories_ << c;
    double t = 0;
    for (double b : r.bytes) t += b;
    max_total = std::max(max_total, t);
  }
  for (std::size_t k = 0; k < sets_.size(); ++k) {
    QList<qreal> values;
    for (const Row& r : rows_) values << r.bytes[k] / kGiB;
    sets_[k]->remove(0, sets_[k]->count());
    sets_[k]->append(values);
  }
  y_->clear();
  y_->append(categories_);
  const double top = std::max(10.0, std::ceil(max_total / kGiB / 10.0) * 10.0);
  x_->setRange(0, top);
  x_->setTickType(QValueAxis::TicksDynamic);
  x_->setTickAnchor(0);
  x_->setTickInterval(top > 100 ? 40 : (top > 50 ? 20 : 10));
  x_->setLabelFormat(QStringLiteral("%.0f"));
  QString title = QStringLiteral("Memory per GPU");
  if (model.gpu())
    title += QStringLiteral(" \u2014 %1 of %2")
                 .arg(gib_text(double(model.gpu()->memory_bytes)), display_text(model.gpu()->name));
  chart_->setTitle(title);
}

}  // namespace kvcap::gui
