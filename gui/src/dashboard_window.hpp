#pragma once
// The dashboard: controls on the left; on the right the problems panel (when there are any), the main
// chart (concurrency vs context) with KV bytes per token beside it, and below them the memory
// breakdown, decode speed and KV utilisation views. Every control change recomputes at once. A second tab holds the
// sizing view, which sizes the first selected model and loads a chosen deployment back into the controls.
#include <QLabel>
#include <QMainWindow>
#include <QProgressBar>
#include <QTabWidget>
#include <QToolButton>
#include <utility>
#include <vector>

#include "comparison.hpp"
#include "concurrency_chart.hpp"
#include "controls_panel.hpp"
#include "dashboard_model.hpp"
#include "decode_speed_chart.hpp"
#include "error_panel.hpp"
#include "kv_bytes_chart.hpp"
#include "kv_utilization_chart.hpp"
#include "memory_breakdown_chart.hpp"
#include "model_legend.hpp"
#include "profile_library.hpp"
#include "simulation_runner.hpp"
#include "sizing_panel.hpp"

namespace kvcap::gui {

class DashboardWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit DashboardWindow(QWidget* parent = nullptr);

  ProfileLibrary& library() { return library_; }
  DashboardModel& model() { return model_; }
  ControlsPanel* controls() const { return controls_; }
  ErrorPanel* error_panel() const { return errors_; }
  ConcurrencyChart* concurrency_chart() const { return concurrency_; }
  MemoryBreakdownChart* memory_chart() const { return memory_; }
  DecodeSpeedChart* decode_chart() const { return decode_; }
  KvBytesChart* kv_bytes_chart() const { return kv_bytes_; }
  KvUtilizationChart* kv_utilization_chart() const { return kv_util_; }
  /// The models' legend above the charts: a click hides a model in every chart.
  ModelLegend* model_legend() const { return legend_; }
  /// Baseline against now, shown while a baseline is pinned (toolbar: Pin baseline).
  ComparisonTable* comparison_table() const { return comparison_; }
  /// The sizing view (its own tab): workload and targets in, the Pareto chart and best per GPU type out.
  SizingPanel* sizing_panel() const { return sizing_; }
  QTabWidget* views() const { return views_; }
  QString status_text() const { return status_->text(); }
  /// The status bar's passing message (an export's confirmation, a copy).
  QString status_message() const;

  void add_profile_folder(const QString& dir);
  bool load_calibration(const QString& path);
  bool load_timeline(const QString& path);
  /// What Export writes: the whole dashboard window or one chart.
  enum class ExportView { dashboard, concurrency, memory, decode, kv_bytes, kv_utilization };
  /// Every view with its name in the export dialog.
  static const std::vector<std::pair<ExportView, QString>>& export_views();
  /// Writes `view` as .png or .svg (by the suffix) at `size` pixels: a chart is drawn afresh at that size from the
  /// current results (hidden models stay hidden), the dashboard is laid out at it. Returns the confirmation the
  /// status bar shows ("Wrote /path/c.png: main chart, 1920x1080 PNG"); throws on failure.
  QString export_view(ExportView view, const QString& path, QSize size);
  /// The main chart as .png or .svg at its current size; throws on failure.
  void export_main_chart(const QString& path);
  /// The main chart's data as CSV; throws on failure.
  void export_main_csv(const QString& path);
  /// Simulates the dashboard's deployment off the GUI thread (simulation_request); progress and a Cancel button
  /// show in the status bar, the run's timeline replaces the shown one (which stays as the previous run). Returns
  /// false, with the reason in the status bar, when the run cannot start.
  bool start_simulation(const SimulationSpec& spec);
  SimulationRunner* simulation_runner() { return &runner_; }
  /// `kvcap plan` lines equivalent to the current settings (one per model), newline-separated.
  QString plan_command_text() const;
  /// Copies plan_command_text() to the clipboard.
  void copy_plan_command();
  /// The whole window rendered at `size` (offscreen-friendly).
  QImage screenshot(QSize size);

 private:
  void redraw();
  void build_actions();
  void ask_export();
  void ask_simulation();
  void ask_calibration();  ///< the file dialog behind the toolbar's and the controls' "load calibration"
  template <class F>
  void guarded(const QString& what, F f);

  ProfileLibrary library_;
  DashboardModel model_;
  ControlsPanel* controls_;
  ErrorPanel* errors_;
  ConcurrencyChart* concurrency_;
  MemoryBreakdownChart* memory_;
  DecodeSpeedChart* decode_;
  KvBytesChart* kv_bytes_;
  KvUtilizationChart* kv_util_;
  ModelLegend* legend_;
  ComparisonTable* comparison_;
  QWidget* controls_area_ = nullptr;  ///< the controls' scroll area (the Controls action hides it)
  QAction* pin_ = nullptr;            ///< Pin baseline (checked while one is pinned)
  SimulationRunner runner_;
  SimulationSpec last_simulation_;
  SizingPanel* sizing_;
  QTabWidget* views_;
  QLabel* status_;
  QLabel* rates_;
  QProgressBar* sim_progress_;
  QToolButton* sim_cancel_;
};

}  // namespace kvcap::gui
