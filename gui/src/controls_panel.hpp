#pragma once
// The dashboard's controls: models (checkable list of built-in and folder profiles), GPU type and
// count, tensor / pipeline / decode-context parallel size, expert parallelism, weight format, KV dtype,
// gpu_memory_utilization, block size, max_num_batched_tokens, shared prefix, and the context of the decode-speed view.
// Every change emits settings_changed() at once. Widgets carry object names (e.g. "kvCacheDtype") for tests.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QListWidget>
#include <QSpinBox>
#include <QWidget>

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

 signals:
  void settings_changed();

 private:
  void changed();
  void parallelism_changed();
  /// Checks exactly `keys`, moved to the top of the list in that order (the order decides colours).
  void check_in_order(const std::vector<std::string>& keys);

  const ProfileLibrary& library_;
  QListWidget* models_;
  QComboBox* gpu_;
  QSpinBox* num_gpus_;
  QSpinBox* tp_;
  QSpinBox* pp_;
  QSpinBox* dcp_;
  QCheckBox* expert_parallel_;
  QComboBox* quantization_;
  QComboBox* kv_dtype_;
  QDoubleSpinBox* utilization_;
  QComboBox* block_size_;
  QSpinBox* max_batched_;
  QSpinBox* shared_prefix_;
  QComboBox* speed_context_;
  std::vector<std::string> extra_model_keys_;  ///< selected keys the library does not list (yet)
  /// The last deployment set: fields no control shows (--max-model-len, --kv-cache-memory, ...) are kept from it.
  Deployment base_;
  bool quiet_ = false;
};

}  // namespace kvcap::gui
