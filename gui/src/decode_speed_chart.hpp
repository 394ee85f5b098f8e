#pragma once
// Decode throughput (thousands of tokens/s per replica, solid) and time per output token (TPOT, dashed) against batch
// size at one context length, from the roofline speed model (throughput_latency_curve, up to the memory
// limit). Each point is marked by what binds the step: open circle = memory-bound, filled square =
// compute-bound. The title says whether the rates are calibrated or datasheet x default efficiency.
#include <QCategoryAxis>
#include <QChartView>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QValueAxis>
#include <set>
#include <string>
#include <vector>

#include "kvcap/planner/speed.hpp"

namespace kvcap::gui {

class DashboardModel;

class DecodeSpeedChart : public QChartView {
  Q_OBJECT
 public:
  explicit DecodeSpeedChart(QWidget* parent = nullptr);
  void refresh(const DashboardModel& model);

  QLineSeries* throughput_series_for(const std::string& key) const;
  QLineSeries* tpot_series_for(const std::string& key) const;
  QScatterSeries* memory_bound_markers() const { return memory_bound_; }
  QScatterSeries* compute_bound_markers() const { return compute_bound_; }
  QString title() const;
  /// The pinned baseline's throughput curves (dimmed), one per model in both.
  const std::vector<QLineSeries*>& baseline_series() const { return baseline_; }
  /// Whether the legend lists the models too (a chart exported alone; on screen the model legend names them).
  void set_model_markers(bool on) { show_model_markers_ = on; }
  /// Hides the curves (and bound markers) of these model keys (the main chart's legend toggles).
  void set_hidden(const std::set<std::string>& keys);

 private:
  struct Curve {
    std::string key, label;
    QLineSeries* throughput = nullptr;
    QLineSeries* tpot = nullptr;
    std::vector<DecodeStep> steps;
  };
  void rebuild(const DashboardModel& model);
  void draw_baseline(const DashboardModel& model);
  void show_tooltip(const Curve& c, const QPointF& at, bool tpot_axis);

  QChart* chart_;
  QCategoryAxis* x_;
  QLogValueAxis* y_tokens_;
  QValueAxis* y_tpot_;  ///< linear: TPOT moves within a decade, a log axis would show one label
  QScatterSeries* memory_bound_;
  QScatterSeries* compute_bound_;
  std::vector<Curve> curves_;
  std::vector<QLineSeries*> baseline_;  ///< the pinned baseline's throughput curves, dimmed
  std::set<std::string> hidden_;
  bool show_model_markers_ = false;
};

}  // namespace kvcap::gui
