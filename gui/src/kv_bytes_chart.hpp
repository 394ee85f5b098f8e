#pragma once
// KV-cache bytes per token on one GPU, one bar per model in the model's colour (GQA replication under
// TP, MLA latents and quantised KV all carry over from the memory model), in KiB (1,024 B). The exact
// value is part of each bar's label.
#include <QBarCategoryAxis>
#include <QChartView>
#include <QHorizontalStackedBarSeries>
#include <QValueAxis>

namespace kvcap::gui {

class DashboardModel;

class KvBytesChart : public QChartView {
  Q_OBJECT
 public:
  explicit KvBytesChart(QWidget* parent = nullptr);
  void refresh(const DashboardModel& model);
  /// One set per model (value only in its own category, so stacking leaves one bar per category).
  QHorizontalStackedBarSeries* series() const { return series_; }
  QStringList categories() const { return x_->categories(); }

 protected:
  void resizeEvent(QResizeEvent* e) override;

 private:
  void elide_categories();
  const QBarSet* tip_ = nullptr;  ///< the bar whose tooltip is shown
  QStringList full_categories_;   ///< "model  128.0 KiB", unelided
  QChart* chart_;
  QHorizontalStackedBarSeries* series_;
  QBarCategoryAxis* x_;  ///< the model axis (vertical, on the left)
  QValueAxis* y_;        ///< KiB (horizontal, at the bottom)
};

}  // namespace kvcap::gui
