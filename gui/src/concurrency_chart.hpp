#pragma once
// The main chart: maximum concurrent requests (log scale) against context length per request (log
// scale, 1K..1M), one curve per selected model. Solid up to the model's max_model_len, dashed beyond
// (vLLM would refuse such requests); a dotted line at one request marks where a single request stops
// fitting. Legend markers toggle their model; hovering shows the exact planner numbers.
#include <QCategoryAxis>
#include <QChartView>
#include <QLineSeries>
#include <QLogValueAxis>
#include <set>
#include <string>
#include <vector>

#include "kvcap/planner/checked.hpp"

namespace kvcap::gui {

class DashboardModel;

class ConcurrencyChart : public QChartView {
  Q_OBJECT
 public:
  explicit ConcurrencyChart(QWidget* parent = nullptr);

  /// Rebuilds the curves from the model's snapshot (bulk replace(); series are reused while the
  /// selection stays the same).
  void refresh(const DashboardModel& model);
  /// Replaces the generated title (kvcap plot --title).
  void set_title_override(const QString& title) { title_override_ = title; }

  /// The solid (within max_model_len) and dashed (beyond) series of a model key; nullptr when absent.
  QLineSeries* series_for(const std::string& key) const;
  QLineSeries* beyond_series_for(const std::string& key) const;
  /// The data drawn, as CSV (one row per model and context).
  const std::string& csv() const { return csv_; }
  /// x of a context on the chart (log2 of tokens).
  static double x_of(i64 context_tokens);
  /// Model keys switched off in the legend.
  const std::set<std::string>& hidden() const { return hidden_; }

 signals:
  /// A legend click switched a model on or off (companion views follow).
  void hidden_changed();

 private:
  struct Point {
    i64 context_tokens;
    double per_replica;
    u64 kv_bytes_per_request;
  };
  struct Curve {
    std::string key, label;
    QLineSeries* within = nullptr;
    QLineSeries* beyond = nullptr;
    std::vector<Point> points;
    i64 max_model_len = 0;
    i64 replicas = 1;
  };

  void rebuild_series(const DashboardModel& model);
  void connect_markers();
  void toggle(const std::string& key);
  void show_tooltip(const Curve& c, const QPointF& at);

  QChart* chart_;
  QCategoryAxis* x_;
  QLogValueAxis* y_;
  QLineSeries* one_request_;    ///< y = 1
  QLineSeries* beyond_legend_;  ///< legend entry explaining the dashed style
  std::vector<Curve> curves_;
  std::set<std::string> hidden_;  ///< keys the user switched off in the legend
  bool beyond_hidden_ = false;
  std::string csv_;
  QString title_override_;
};

}  // namespace kvcap::gui
