#pragma once
// The dashboard's one legend for the models: every selected model in its colour and line style, by the profile's
// display name (its id added when two share one; every id in the tooltip), elided in the middle so that two models
// sharing a prefix stay distinguishable, wrapping onto more lines in a narrow window. A click switches the model off
// (or back on) in every chart (DashboardModel::toggle_hidden). The charts' own legends keep only what is theirs
// (reference lines, memory kinds, bound markers).
#include <QLabel>
#include <string>
#include <vector>

namespace kvcap::gui {

class DashboardModel;

class ModelLegend : public QLabel {
  Q_OBJECT
 public:
  explicit ModelLegend(QWidget* parent = nullptr);
  void refresh(const DashboardModel& model);
  /// The entries' texts as shown (after eliding), in selection order.
  const std::vector<QString>& entries() const { return entries_; }
  /// Longest entry text in characters; longer names are elided in the middle.
  static constexpr int kMaxChars = 34;

 signals:
  void toggled(const std::string& key);

 private:
  std::vector<QString> entries_;
};

/// `s` cut to at most `max_chars` characters by replacing its middle with an ellipsis ("Meta Llam…3.1 70B").
QString elide_middle(const QString& s, int max_chars);
/// `s` elided in the middle to `px` pixels of `font` (at least 3 characters kept).
QString elide_middle_px(const QString& s, const QFont& font, int px);
/// The width a vertical axis's labels may take in a chart `chart_px` wide (40% of it, less the tick and the padding,
/// about what Qt Charts' layout allows). Category labels are elided to it in the middle, with Qt's own truncation
/// (at the end, where two model names often differ) switched off.
int vertical_axis_label_px(int chart_px);

}  // namespace kvcap::gui
