#pragma once
// KV-cache utilisation over simulated time, one line per replica, from a simulator timeline CSV
// (kvcap simulate --timeline out.csv). Empty, with a hint in the title, until a timeline is loaded.
#include <QChartView>
#include <QLineSeries>
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

 private:
  QChart* chart_;
  QValueAxis* x_;
  QValueAxis* y_;
  std::vector<QLineSeries*> series_;
  std::vector<std::vector<TimelineSample>> samples_;  ///< per replica, for tooltips
  std::uint64_t shown_generation_ = 0;                ///< the model's timeline_generation() drawn (0: none)
};

}  // namespace kvcap::gui
