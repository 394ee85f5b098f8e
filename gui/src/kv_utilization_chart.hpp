#pragma once
// KV-cache utilisation over simulated time, one line per replica, from a simulator timeline (kvcap simulate
// --timeline out.csv, or a run started in the dashboard); the requests waiting (all replicas, right axis) and each
// preemption (a cross on its replica's line). The previous run's mean utilisation stays drawn faint beside it. The
// title names the run (its deployment and workload, or the file). Empty, with a hint, until a timeline is loaded.
#include <QChartView>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>
#include <vector>

#include "kvcap/gui/timeline.hpp"

namespace kvcap::gui {

class DashboardModel;

class KvUtilizationChart : public QChartView {
  Q_OBJECT
 public:
  explicit KvUtilizationChart(QWidget* parent = nullptr);
  void refresh(const DashboardModel& model);
  const std::vector<QLineSeries*>& replica_series() const { return series_; }
  QString title() const;
  /// Requests waiting, summed over the replicas, at each sample (right axis).
  const QLineSeries* waiting_series() const { return waiting_; }
  /// One point per preemption interval: where a replica's preemption count rose.
  const QScatterSeries* preemption_series() const { return preemptions_; }
  /// The previous run's mean utilisation over the replicas (empty when there was none).
  const QLineSeries* previous_series() const { return previous_; }
  /// What the shown run was: its label, or the file it was read from.
  const QString& run_label() const { return run_label_; }
  /// What the previous run was, as far as it differs from the shown one (its tooltip).
  const QString& previous_label() const { return previous_label_; }

 private:
  void draw_replicas(const Timeline& tl, double& t_max);
  void draw_waiting_and_preemptions(const Timeline& tl);
  void draw_previous(const DashboardModel& model, double& t_max);

  QChart* chart_;
  QValueAxis* x_;
  QValueAxis* y_;
  QValueAxis* y_waiting_;
  QLineSeries* waiting_;
  QScatterSeries* preemptions_;
  QLineSeries* previous_;
  QString run_label_;
  QString previous_label_;
  std::vector<QLineSeries*> series_;
  std::vector<std::vector<TimelineSample>> samples_;  ///< per replica, for tooltips
  std::uint64_t shown_generation_ = 0;                ///< the model's timeline_generation() drawn (0: none)
};

}  // namespace kvcap::gui
