#pragma once
// The purchase chart of `kvcap size` (issue 17): every deployment that meets the targets as a point of tokens/s per
// GPU (log scale) against tokens/s per user (1 / TPOT), one colour per GPU type, and the Pareto frontier
// (planner/sizing.hpp: no other deployment matches or beats it on both axes and on price) drawn through its points.
// Hovering a point shows the deployment, its price and rank.
#include <QChartView>
#include <QLogValueAxis>
#include <QValueAxis>
#include <string>
#include <vector>

#include "kvcap/planner/sizing.hpp"

namespace kvcap::gui {

class ParetoChart : public QChartView {
  Q_OBJECT
 public:
  explicit ParetoChart(QWidget* parent = nullptr);

  /// Replaces the points with those of a sizing result (`title`: empty for one naming the model and the load).
  void show_result(const SizingRequest& q, const SizingResult& r, const QString& title = {});
  /// The points drawn, as CSV: rank, gpu, tokens_per_s_per_gpu, tokens_per_s_per_user, cost, pareto.
  const std::string& csv() const { return csv_; }
  /// Series drawn (one per GPU type with a feasible deployment, then the frontier's line and points).
  std::size_t series_count() const;

 signals:
  /// A point was clicked: the candidate's index in the SizingResult shown (rank - 1).
  void candidate_clicked(std::size_t index);

 private:
  QChart* chart_;
  QLogValueAxis* x_;
  QValueAxis* y_;
  std::string csv_;
};

}  // namespace kvcap::gui
