#pragma once
// The differences between the pinned baseline and the current deployment, as the comparison table shows them: the
// settings that differ (GPU type, then every vLLM flag of `kvcap plan` whose value changed), then per model present
// in both the KV cache, the concurrency at max_model_len and the decode throughput at the largest batch, each with its
// change in percent. Pure: reads two snapshots of planner results.
#include <QString>
#include <QTableWidget>
#include <vector>

namespace kvcap::gui {

class DashboardModel;

struct ComparisonRow {
  QString what;      ///< "--kv-cache-dtype", "llama-3.1-8b: KV cache tokens"
  QString baseline;  ///< the baseline's value ("auto", "868,544")
  QString now;       ///< the current value
  QString change;    ///< "+100.0%" for numbers, empty for settings
};

/// Empty when no baseline is pinned.
std::vector<ComparisonRow> comparison_rows(const DashboardModel& model);

/// The rows in a small table (what, baseline, now, change), hidden when there is no baseline.
class ComparisonTable : public QTableWidget {
  Q_OBJECT
 public:
  explicit ComparisonTable(QWidget* parent = nullptr);
  void refresh(const DashboardModel& model);
};

}  // namespace kvcap::gui
