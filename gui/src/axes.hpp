#pragma once
// Axes shared by the charts. Powers of two (tokens, batch sizes) are drawn on a linear axis over
// log2(value) with a label at every doubling ("1K", "2K", ... "1M"): QLogValueAxis can only print its
// ticks through a printf format, which turns 1,048,576 into "1.04858e+06".
#include <QCategoryAxis>
#include <QLogValueAxis>
#include <QString>
#include <functional>

namespace kvcap::gui {

/// A log2 axis from 2^min_exp to 2^max_exp with a labelled grid line every `label_every` doublings;
/// `pad` (in doublings) widens the range on both sides so edge labels fit.
void set_log2_axis(QCategoryAxis* axis, int min_exp, int max_exp, const std::function<QString(long long)>& label,
                   int label_every = 1, double pad = 0);
/// A log10 axis spanning whole decades around [lo, hi] (both > 0), with minor grid lines.
void set_log10_axis(QLogValueAxis* axis, double lo, double hi);
/// The smallest "nice" tick interval (1, 2 or 5 x 10^k) that puts at most `max_ticks` intervals in [0, top].
double nice_tick_interval(double top, int max_ticks);
/// Applies the dashboard's fonts and grid pens to an axis.
void style_axis(QAbstractAxis* axis, const QString& title);

}  // namespace kvcap::gui
