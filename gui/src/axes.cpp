#include "axes.hpp"

#include <QPen>
#include <cmath>

#include "style.hpp"

namespace kvcap::gui {

void set_log2_axis(QCategoryAxis* axis, int min_exp, int max_exp, const std::function<QString(long long)>& label,
                   int label_every, double pad) {
  for (const QString& l : axis->categoriesLabels()) axis->remove(l);
  axis->setStartValue(min_exp - 0.5 - pad);
  axis->setRange(min_exp - pad, max_exp + pad);
  // One category per labelled doubling: Qt elides a label wider than its category.
  for (int e = min_exp; e <= max_exp; e += label_every) axis->append(label(1LL << e), e);
  axis->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
}

void set_log10_axis(QLogValueAxis* axis, double lo, double hi) {
  axis->setBase(10);
  // Qt's log domain recurses without end on a non-finite range; fall back to a harmless one.
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo > 0) || !(hi > 0)) lo = 1, hi = 10;
  // Pad by a third of a decade (ticks stay at powers of ten), but span at least one power of ten.
  double a = lo / 2.2, b = hi * 2.2;
  const double pa = std::pow(10.0, std::floor(std::log10(a))), pb = std::pow(10.0, std::ceil(std::log10(b)));
  if (std::floor(std::log10(b)) < std::ceil(std::log10(a))) a = pa, b = pb;  // no power of ten inside: whole decade
  axis->setRange(a, b);
  axis->setLabelFormat(QStringLiteral("%g"));
  axis->setMinorTickCount(8);
}

double nice_tick_interval(double top, int max_ticks) {
  if (!(top > 0) || !std::isfinite(top) || max_ticks < 1) return 1;
  const double raw = top / max_ticks;
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * decade >= raw * (1 - 1e-12)) return m * decade;
  return 10 * decade;
}

void style_axis(QAbstractAxis* axis, const QString& title) {
  axis->setTitleText(title);
  axis->setTitleFont(axis_title_font());
  axis->setLabelsFont(axis_label_font());
  axis->setGridLinePen(QPen(QColor(0xD0D0D0), 1));
  axis->setMinorGridLinePen(QPen(QColor(0xEDEDED), 1));
  axis->setLinePen(QPen(QColor(0x808080), 1));
}

}  // namespace kvcap::gui
