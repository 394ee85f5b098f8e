#pragma once
// The dashboard's data: settings in, planner results out. Data flows planner -> DashboardModel ->
// charts; the charts read a snapshot and bulk-replace their series. No formula lives here: every number
// comes from plan_memory / concurrency_at / make_speed_context / throughput_latency_curve.
#include <QObject>
#include <QStringList>
#include <exception>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kvcap/gui/timeline.hpp"
#include "kvcap/planner/calibration.hpp"
#include "kvcap/planner/fit.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/plausibility.hpp"
#include "kvcap/planner/speed.hpp"
#include "settings.hpp"

namespace kvcap::gui {

class ProfileLibrary;

/// One selected model on the current deployment.
struct ModelResult {
  std::string key;               ///< profile key (built-in name or path)
  std::string label;             ///< legend text: the model's name
  std::size_t colour_index = 0;  ///< position in the selection: the same colour in every chart
  std::optional<ModelSpec> model;
  std::optional<MemoryPlan> plan;  ///< curve over concurrency_contexts() plus max_model_len
  std::string error;               ///< profile or deployment error (then plan is empty)
  std::string error_field;         ///< the deployment field a SpecError names ("tensor_parallel_size"), else empty
  std::exception_ptr exception;
  std::vector<DecodeStep> decode;  ///< throughput_latency_curve at the speed context
  std::string speed_error;
  std::vector<Finding> findings;   ///< the plausibility policy's (planner/plausibility.hpp), as kvcap plan's
  std::optional<FitAdvice> fit;    ///< why vLLM would not start it, and the smallest fixes (planner/fit.hpp)
  bool starts() const { return plan && !has_errors(findings); }
};

/// A pinned deployment: its settings and results as they were, drawn dimmed beside the current ones.
struct Baseline {
  DashboardSettings settings;
  std::optional<GpuSpec> gpu;
  std::vector<ModelResult> results;
  /// "1\u00d7 H200 \u00b7 TP 4 \u00b7 KV fp8": what the charts and the comparison call it.
  QString description;
};

/// One line of the problems panel, and the deployment field (SpecError::field() name) whose control causes it.
struct Problem {
  QString text;
  std::string field;
};

class DashboardModel : public QObject {
  Q_OBJECT
 public:
  explicit DashboardModel(const ProfileLibrary& library, QObject* parent = nullptr);

  const DashboardSettings& settings() const { return settings_; }
  /// Replaces the settings and recomputes at once.
  void set_settings(const DashboardSettings& s);
  /// Recomputes from the current settings and profiles, then emits updated().
  void recompute();

  /// Contexts of the main chart: 1K to 1M, four points per doubling (2^(10 + k/4)), whole doublings exact.
  static std::vector<i64> concurrency_contexts();

  const std::vector<ModelResult>& results() const { return results_; }
  const std::optional<GpuSpec>& gpu() const { return gpu_; }
  std::int64_t replicas() const;  ///< data-parallel replicas of the deployment (1 when it does not resolve)
  double last_recompute_ms() const { return last_ms_; }

  /// Loads a calibration.yaml for the speed view; on failure keeps the previous one and records the error.
  bool load_calibration(const std::string& path);
  void clear_calibration();
  const std::optional<Calibration>& calibration() const { return calibration_; }
  const std::string& calibration_path() const { return calibration_path_; }
  /// The calibration the speeds use: the loaded one when it was measured on the selected GPU (check_calibration
  /// finds no error), else none (kvcap plan refuses it; the panel says why). The speed view, the simulation and the
  /// copied plan command all read this.
  const std::optional<Calibration>& calibration_in_use() const { return calibration_in_use_; }
  /// "calibrated (device)" or "datasheet x default efficiency", as the speed model reports its rate source.
  QString rate_source_text() const;

  /// Loads a simulator timeline CSV; on failure keeps the previous one and records the error.
  bool load_timeline(const std::string& path);
  const std::optional<Timeline>& timeline() const { return timeline_; }
  /// A run's timeline (a simulation run in the dashboard); the one shown before stays as previous_timeline().
  void set_timeline(Timeline t);
  /// The run shown before the current one (drawn faint beside it), if any.
  const std::optional<Timeline>& previous_timeline() const { return previous_timeline_; }
  /// Increases on every successful timeline load (charts redraw the timeline only when it changes).
  std::uint64_t timeline_generation() const { return timeline_generation_; }

  /// Pins the current settings and results as the baseline (replacing any), then emits updated().
  void pin_baseline();
  void clear_baseline();
  const std::optional<Baseline>& baseline() const { return baseline_; }
  /// The baseline's result for a model key (nullptr when not pinned or not in it).
  const ModelResult* baseline_result(const std::string& key) const;

  /// Models the user switched off in the legend: every chart leaves them out (view state, kept across recomputes).
  const std::set<std::string>& hidden() const { return hidden_; }
  bool is_hidden(const std::string& key) const { return hidden_.count(key) > 0; }
  /// Switches a model off or back on, then emits updated() (nothing is recomputed).
  void toggle_hidden(const std::string& key);

  /// Everything the error panel lists, each problem once: profile files, GPU, per-model (a problem several models
  /// share is one line naming them), why a model does not fit with the smallest fix, calibration and timeline.
  std::vector<Problem> problems() const;
  /// The problems' texts.
  QStringList errors() const;

 signals:
  void updated();

 private:
  const ProfileLibrary& library_;
  DashboardSettings settings_ = default_settings();
  std::vector<ModelResult> results_;
  std::set<std::string> hidden_;
  std::optional<Baseline> baseline_;
  std::optional<GpuSpec> gpu_;
  std::string gpu_error_;
  std::optional<Calibration> calibration_, calibration_in_use_;
  std::string calibration_path_, calibration_error_;
  std::optional<Timeline> timeline_;
  std::optional<Timeline> previous_timeline_;
  std::string timeline_error_;
  std::uint64_t timeline_generation_ = 0;
  double last_ms_ = 0;
};

}  // namespace kvcap::gui
