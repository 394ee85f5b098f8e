#pragma once
// Memory per GPU (one rank of each pipeline stage) as stacked horizontal bars: weights, activation peak,
// non-torch runtime memory (CUDA context, NCCL), KV cache, and what gpu_memory_utilization leaves unused.
// The bars add up to the device memory as CUDA reports it; the axis is in GiB (2^30 bytes). Vertical lines mark the
// device's memory and what gpu_memory_utilization lets vLLM request; a deployment that needs far more than the device
// is cut at 1.5x the device (up to a whole tick), its label ending in \u25b8, so the others stay readable.
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChartView>
#include <QHorizontalStackedBarSeries>
#include <QLineSeries>
#include <QValueAxis>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kvcap/planner/gpu.hpp"

namespace kvcap::gui {

class DashboardModel;
struct ModelResult;

class MemoryBreakdownChart : public QChartView {
  Q_OBJECT
 public:
  explicit MemoryBreakdownChart(QWidget* parent = nullptr);
  void refresh(const DashboardModel& model);

  /// Bar sets in stacking order: weights, activation peak, non-torch, KV cache, unused.
  const std::vector<QBarSet*>& sets() const { return sets_; }
  const QStringList& categories() const { return categories_; }

  /// The vertical lines at the device memory and at gpu_memory_utilization x memory (x = GiB).
  const QLineSeries* device_line() const { return device_line_; }
  const QLineSeries* requested_line() const { return requested_line_; }
  /// The axis's upper end (GiB): a bar far beyond the device is cut there, its label ends in \u25b8 and its tooltip
  /// gives the total.
  double axis_top_gib() const { return x_->max(); }
  double tick_interval_gib() const { return x_->tickInterval(); }

 protected:
  void resizeEvent(QResizeEvent* e) override;

 private:
  /// The categories elided in the middle to the width the axis has (two models never read the same).
  void elide_categories();
  /// The GiB axis for the rows and the width: its range, ticks (as many as the plot's width holds labels, at most
  /// four intervals) and the categories of bars cut at its end.
  void layout_axis();
  struct Row {
    QString category;
    std::vector<double> bytes;  ///< one per set
    bool does_not_fit = false;
    bool baseline = false;    ///< the pinned baseline's, drawn faint
    double device_bytes = 0;  ///< memory of this row's GPU (0: unknown)
  };
  void add_rows(const ModelResult& r, const std::optional<GpuSpec>& gpu, bool baseline);
  QChart* chart_;
  QHorizontalStackedBarSeries* series_;
  QBarCategoryAxis* y_;
  QValueAxis* x_;
  QLineSeries* device_line_;
  QLineSeries* requested_line_;
  std::vector<QBarSet*> sets_;
  std::vector<Row> rows_;
  double span_gib_ = 1;              ///< what the axis must show: the bars (up to 1.5x the device) and the device
  QStringList full_categories_;      ///< unelided: "deepseek-v3 \u25b8" for a bar cut at the axis's end
  QStringList categories_;           ///< as shown
  std::pair<int, int> tip_{-1, -1};  ///< (set, bar) whose tooltip is shown
};

}  // namespace kvcap::gui
