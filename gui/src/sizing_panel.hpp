#pragma once
// The dashboard's sizing view (issue 19, on issue 17's engine): a workload (prompt and output tokens, a rate or a
// number of concurrent users) and targets (TTFT at a percentile, TPOT) in; `kvcap size`'s search over every built-in
// GPU out, as the Pareto chart and a table of the best deployment per GPU type with its price. Choosing a row or a
// point of the chart emits deployment_chosen, which the window loads into the capacity view. Widgets carry object
// names ("sizingPromptTokens", "sizingSearch", "sizingBestTable", ...) for tests.
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QWidget>
#include <string>

#include "kvcap/planner/sizing.hpp"
#include "pareto_chart.hpp"

namespace kvcap::gui {

class SizingPanel : public QWidget {
  Q_OBJECT
 public:
  explicit SizingPanel(QWidget* parent = nullptr);

  /// The model sized (the capacity view's first selected model); `profile` is its key for the status line.
  void set_model(const ModelSpec& m);
  /// Runs the search with the form's values (also the Search button). False, with the reason shown, on bad input.
  bool search();
  const SizingRequest& request() const { return request_; }
  const SizingResult& result() const { return result_; }
  ParetoChart* chart() const { return chart_; }
  QTableWidget* best_table() const { return best_; }
  QString status_text() const { return status_->text(); }
  /// Chooses candidate `index` of the result (as a click on its row or point does).
  void choose(std::size_t index);

 signals:
  /// The user chose a deployment: its GPU type and its deployment as planned (num_gpus = all its replicas).
  void deployment_chosen(const std::string& gpu, const Deployment& d);

 private:
  void fill_table();

  QSpinBox* prompt_;
  QSpinBox* output_;
  QComboBox* load_kind_;
  QDoubleSpinBox* load_;
  QDoubleSpinBox* ttft_ms_;
  QComboBox* percentile_;
  QDoubleSpinBox* tpot_ms_;
  QPushButton* search_;
  QLabel* status_;
  ParetoChart* chart_;
  QTableWidget* best_;
  bool have_model_ = false;
  SizingRequest request_;
  SizingResult result_;
};

}  // namespace kvcap::gui
