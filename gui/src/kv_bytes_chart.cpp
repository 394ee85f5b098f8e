#include "kv_bytes_chart.hpp"

#include <QBarSet>
#include <QCursor>
#include <QFontMetrics>
#include <QLegend>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "axes.hpp"
#include "dashboard_model.hpp"
#include "model_legend.hpp"
#include "style.hpp"

namespace kvcap::gui {

KvBytesChart::KvBytesChart(QWidget* parent)
    : QChartView(parent),
      chart_(new QChart),
      series_(new QHorizontalStackedBarSeries),
      x_(new QBarCategoryAxis),
      y_(new QValueAxis) {
  setObjectName(QStringLiteral("kvBytesChart"));
  setChart(chart_);
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(200, 160);
  chart_->setTitle(QStringLiteral("KV cache per token per GPU"));
  chart_->setTitleFont(chart_title_font());
  chart_->legend()->setVisible(false);  // the category labels name the models
  chart_->setMargins(QMargins(4, 4, 12, 4));
  chart_->addSeries(series_);
  chart_->addAxis(x_, Qt::AlignLeft);
  chart_->addAxis(y_, Qt::AlignBottom);
  series_->attachAxis(x_);
  series_->attachAxis(y_);
  series_->setBarWidth(0.5);
  style_axis(x_, QString());
  x_->setTruncateLabels(false);  // elided in the middle here instead (elide_categories)
  style_axis(y_, QStringLiteral("KiB per token per GPU"));
  x_->setGridLineVisible(false);
}

void KvBytesChart::elide_categories() {
  // The model's name elided in the middle, its bytes kept whole: "deepseek-v3.2" and "deepseek-v3" stay apart.
  const int px = vertical_axis_label_px(width());
  QStringList shown;
  for (const QString& full : full_categories_) {
    const QString name = full.section(QStringLiteral("  "), 0, 0), value = full.section(QStringLiteral("  "), 1);
    const int value_px = QFontMetrics(axis_label_font()).horizontalAdvance(QStringLiteral("  ") + value);
    // Axis labels are rich text: a model's name is escaped after eliding.
    QString c = elide_middle_px(name, axis_label_font(), std::max(24, px - value_px)).toHtmlEscaped() +
                QStringLiteral("  ") + value;
    while (shown.contains(c)) c += QChar(0x200B);
    shown << c;
  }
  if (shown == x_->categories()) return;
  x_->clear();
  x_->append(shown);
}

void KvBytesChart::resizeEvent(QResizeEvent* e) {
  QChartView::resizeEvent(e);
  elide_categories();
}

void KvBytesChart::refresh(const DashboardModel& model) {
  series_->clear();  // deletes the old sets
  tip_ = nullptr;
  x_->clear();
  struct Bar {
    QString category;
    double kib;
    QColor colour;
    u64 bytes;
  };
  std::vector<Bar> bars;
  for (const auto& r : model.results()) {
    if (model.is_hidden(r.key)) continue;
    if (r.plan) {
      const u64 b = r.plan->kv_bytes_per_token_per_rank;
      bars.push_back({QString::fromStdString(r.label) + QStringLiteral("  ") + binary_bytes_text(double(b)),
                      double(b) / 1024.0, model_colour(r.colour_index), b});
    }
    // The pinned baseline's bar under the model's own, faint.
    if (const ModelResult* base = model.baseline_result(r.key); base && base->plan) {
      const u64 b = base->plan->kv_bytes_per_token_per_rank;
      QColor faint = model_colour(r.colour_index);
      faint.setAlphaF(0.3f);
      bars.push_back({QStringLiteral("base: ") + QString::fromStdString(r.label) + QStringLiteral("  ") +
                          binary_bytes_text(double(b)),
                      double(b) / 1024.0, faint, b});
    }
  }
  // Horizontal bars list the first category at the bottom; put the first model on top.
  std::reverse(bars.begin(), bars.end());
  QStringList categories;
  double hi = 0;
  for (const Bar& b : bars) {
    QString c = b.category;
    while (categories.contains(c)) c += QChar(0x200B);
    categories << c;
    hi = std::max(hi, b.kib);
  }
  for (std::size_t i = 0; i < bars.size(); ++i) {
    auto* set = new QBarSet(categories[qsizetype(i)]);
    QList<qreal> v;
    for (std::size_t k = 0; k < bars.size(); ++k) v << (k == i ? bars[i].kib : 0.0);
    set->append(v);
    set->setColor(bars[i].colour);
    set->setBorderColor(bars[i].colour.darker(130));
    const QString name = categories[qsizetype(i)];
    const u64 bytes = bars[i].bytes;
    connect(set, &QBarSet::hovered, this, [this, name, bytes, set](bool on, int) {
      // Only the bar whose tooltip is shown hides it (the next bar may report itself first).
      if (!on) {
        if (tip_ == set) QToolTip::hideText(), tip_ = nullptr;
        return;
      }
      tip_ = set;
      QToolTip::showText(QCursor::pos(),
                         QStringLiteral("<b>%1</b><br>%2 B of KV per token on each GPU")
                             .arg(name.section(QStringLiteral("  "), 0, 0).toHtmlEscaped(), grouped(i64(bytes))),
                         this);
    });
    series_->append(set);
  }
  full_categories_ = categories;
  elide_categories();
  y_->setRange(0, hi > 0 ? std::ceil(hi * 1.1 / 16.0) * 16.0 : 16.0);
  y_->setTickType(QValueAxis::TicksDynamic);
  y_->setTickAnchor(0);
  y_->setTickInterval(hi > 400 ? nice_tick_interval(hi, 4) : (hi > 200 ? 64 : (hi > 100 ? 32 : 16)));
  y_->setLabelFormat(QStringLiteral("%.0f"));
}

}  // namespace kvcap::gui
