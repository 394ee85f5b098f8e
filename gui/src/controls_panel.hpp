#pragma once
// The dashboard's controls: models (checkable list of built-in and folder profiles), GPU type, data / tensor /
// pipeline / decode-context parallel size (the GPU count is their product, shown, never changed behind the user's
// back), expert parallelism, weight format, KV dtype, gpu_memory_utilization, --kv-cache-memory, block size,
// max_model_len, max_num_seqs, max_num_batched_tokens, shared prefix, the context of the decode-speed view and the
// calibration file. Every change emits settings_changed() at once. Values are not clamped: what the planner refuses
// is marked on its control with the reason (mark_problems). Widgets carry object names (e.g. "kvCacheDtype") for tests.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QSpinBox>
#include <QToolButton>
#include <QWidget>
#include <map>
#include <optional>

#include "settings.hpp"

namespace kvcap::gui {

class ProfileLibrary;

class ControlsPanel : public QWidget {
  Q_OBJECT
 public:
  ControlsPanel(const ProfileLibrary& library, QWidget* parent = nullptr);

  DashboardSettings settings() const;
  /// Sets every control (one settings_changed() at the end). Unknown model keys stay selected, so
  /// a profile that vanished keeps showing its error.
  void set_settings(const DashboardSettings& s);
  /// Re-lists the profiles (after the library changed), keeping the selection.
  void refresh_profiles();
  /// Marks the controls of these deployment fields (SpecError::field() names: "tensor_parallel_size", ...) as the
  /// cause of a problem, with the reason as their tooltip; every other control is unmarked.
  void mark_problems(const std::map<std::string, QString>& reason_by_field);
  /// The control a deployment field is set with (nullptr when none).
  QWidget* control_for(const std::string& field) const;
  /// Shows the loaded calibration file (empty: none).
  void set_calibration_text(const QString& path);

 signals:
  void settings_changed();
  void calibration_load_requested();
  void calibration_clear_requested();

 private:
  void changed();
  void parallelism_changed();
  void build_form(QFormLayout* form);
  void update_gpu_count();
  /// The gpu_memory_utilization control's tooltip for the budget base_ holds (vLLM's, or TensorRT-LLM's fraction).
  void show_budget_tip();
  i64 num_gpus() const;
  /// Checks exactly `keys`, moved to the top of the list in that order (the order decides colours).
  void check_in_order(const std::vector<std::string>& keys);
  /// `d` with the what-if controls' values read through the one flag reader (profiles/flags.hpp); a text it refuses
  /// leaves the field as it was in `d`, its reason in `problems` (by deployment field) when given.
  Deployment with_what_ifs(Deployment d, std::map<std::string, QString>* problems) const;

  const ProfileLibrary& library_;
  QListWidget* models_;
  QComboBox* gpu_;
  QLabel* num_gpus_;  ///< data x tensor x pipeline parallel, derived
  QSpinBox* dp_;
  QSpinBox* tp_;
  QSpinBox* pp_;
  QSpinBox* dcp_;
  QCheckBox* expert_parallel_;
  QComboBox* all2all_;   ///< --all2all-backend (Deployment::All2All as the item data)
  QSpinBox* redundant_;  ///< EPLB's redundant experts (--eplb-config num_redundant_experts); > 0 turns EPLB on
  QComboBox* quantization_;
  QComboBox* kv_dtype_;
  QDoubleSpinBox* utilization_;
  QDoubleSpinBox* kv_memory_;  ///< --kv-cache-memory in GiB; 0 = profiled
  QComboBox* block_size_;
  QSpinBox* max_model_len_;  ///< 0 = the model's
  QSpinBox* max_seqs_;       ///< 0 = vLLM's default
  QSpinBox* max_batched_;
  QSpinBox* shared_prefix_;
  QLineEdit* kv_eviction_;  ///< what-if --kv-eviction text ("" = none)
  QLineEdit* kv_sharing_;   ///< what-if --kv-layer-sharing text ("" = none)
  QComboBox* kv_group_;     ///< what-if --kv-quant-group-size: auto (0, KIVI's 32) or a power of two
  QComboBox* speed_context_;
  QLabel* calibration_;
  QToolButton* load_calibration_;
  QToolButton* clear_calibration_;
  std::map<QWidget*, QString> tooltips_;  ///< each control's own tooltip, restored when its problem goes
  /// A GPU count given with the settings that is not a multiple of TP x PP: kept (the planner reports it) until the
  /// user changes DP, TP or PP.
  std::optional<i64> gpus_given_;
  double kv_memory_shown_gib_ = 0;  ///< what kv_memory_ was set to from base_ (untouched: base_'s bytes are kept)
  std::vector<std::string> extra_model_keys_;  ///< selected keys the library does not list (yet)
  /// The last deployment set: fields no control shows (--max-model-len, --kv-cache-memory, ...) are kept from it.
  Deployment base_;
  bool quiet_ = false;
};

}  // namespace kvcap::gui
