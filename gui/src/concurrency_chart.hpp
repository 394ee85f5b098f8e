#pragma once
// The main chart: maximum concurrent requests (log scale) against context length per request (log
// scale, 1K..1M), one curve per selected model. Solid up to the model's max_model_len, dashed beyond
// (vLLM would refuse such requests); a dotted line at one request marks where a single request stops
// fitting. A model that does not fit is a labelled gap: a note in the plot area names it with the smallest fix.
// Legend markers toggle their model; hovering shows the exact planner numbers.
#include <QCategoryAxis>
#include <QChartView>
#include <QGraphicsTextItem>
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
  /// The note drawn in the plot area naming the models that do not fit and their smallest fix (empty: all fit).
  QString gap_note() const { return gap_note_->toPlainText(); }
  /// The context a cursor at chart x (log2 tokens) snaps to: the nearest round context, 1K, 2K, 4K, ... 1M.
  static i64 snap_context(double x);
  /// Every visible model's value at a curve context, one row each, as the crosshair's tooltip shows it (HTML):
  /// "<b>1K</b> ... llama-3.1-8b: 848.19 ...". Empty when no visible model has a point there.
  QString readout(i64 context_tokens) const;
  /// The crosshair: a vertical line at `context_tokens` and the readout as a tooltip (what a mouse move does).
  void show_crosshair(i64 context_tokens, const QPoint& global_pos);
  const QLineSeries* crosshair() const { return crosshair_; }
  /// The scheduler's cap on running requests, max_num_seqs x replicas (a horizontal line; 0 when none).
  double running_cap() const { return running_cap_; }
  /// The pinned baseline's curve of a model key (nullptr when there is none).
  const QLineSeries* baseline_series_for(const std::string& key) const;
  /// Whether the chart's own legend lists the models too (kvcap-plot's chart, which has no model legend beside it).
  void set_model_markers(bool on) { show_model_markers_ = on; }

 protected:
  void mouseMoveEvent(QMouseEvent* e) override;
  void leaveEvent(QEvent* e) override;

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
    QColor colour;
  };

  void rebuild_series(const DashboardModel& model);
  void connect_markers();
  void apply_visibility();
  void show_tooltip(const Curve& c, const QPointF& at);
  void place_gap_note();
  void draw_baseline(const DashboardModel& model);

  QChart* chart_;
  QCategoryAxis* x_;
  QLogValueAxis* y_;
  QLineSeries* one_request_;    ///< y = 1
  QLineSeries* beyond_legend_;  ///< legend entry explaining the dashed style
  QGraphicsTextItem* gap_note_;
  QLineSeries* crosshair_;                     ///< vertical line at the snapped context (no legend entry)
  QLineSeries* cap_line_;                      ///< max_num_seqs x replicas
  std::vector<QLineSeries*> baseline_series_;  ///< the pinned baseline's curves, dimmed (no legend entries)
  std::vector<std::pair<std::string, std::vector<Point>>> baseline_points_;  ///< per key, for the readout
  double running_cap_ = 0;  ///< "does not fit: ..." in the plot area, where the missing curves would be
  std::vector<Curve> curves_;
  std::set<std::string> hidden_;  ///< the model's hidden keys at the last refresh
  bool show_model_markers_ = false;
  bool beyond_hidden_ = false;
  std::string csv_;
  QString title_override_;
};

}  // namespace kvcap::gui
