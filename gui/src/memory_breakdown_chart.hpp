#pragma once
// Memory per GPU (one rank of each pipeline stage) as stacked horizontal bars: weights, activation peak,
// non-torch runtime memory (CUDA context, NCCL), KV cache, and what gpu_memory_utilization leaves unused.
// The bars add up to the device memory as CUDA reports it; the axis is in GiB (2^30 bytes).
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChartView>
#include <QHorizontalStackedBarSeries>
#include <QValueAxis>
#include <string>
#include <vector>

namespace kvcap::gui {

class DashboardModel;

class MemoryBreakdownChart : public QChartView {
  Q_OBJECT
 public:
  explicit MemoryBreakdownChart(QWidget* parent = nullptr);
  void refresh(const DashboardModel& model);

  /// Bar sets in stacking order: weights, activation peak, non-torch, KV cache, unused.
  const std::vector<QBarSet*>& sets() const { return sets_; }
  const QStringList& categories() const { return categories_; }

 private:
  struct Row {
    QString category;
    std::vector<double> bytes;  ///< one per set
    bool does_not_fit = false;
  };
  QChart* chart_;
  QHorizontalStackedBarSeries* series_;
  QBarCategoryAxis* y_;
  QValueAxis* x_;
  std::vector<QBarSet*> sets_;
  std::vector<Row> rows_;
  QStringList categories_;
};

}  // namespace kvcap::gui
