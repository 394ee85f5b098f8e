#pragma once
// The profiles the dashboard can pick from: the built-in models and GPUs, plus every *.yaml / *.yml /
// *.json file in user profile folders. The folders are watched: an edited, added or removed file is
// re-read (debounced), and a file that does not load keeps its located diagnostics (file:line:col)
// for the error panel instead of disappearing or crashing anything.
#include <QFileSystemWatcher>
#include <QObject>
#include <QStringList>
#include <QTimer>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "kvcap/planner/gpu.hpp"
#include "kvcap/planner/model.hpp"

namespace kvcap::gui {

struct ProfileEntry {
  std::string key;    ///< built-in name, or the file's absolute path
  std::string label;  ///< what lists and legends show: the profile's name (file name when it does not load), control
                      ///< characters escaped
  bool builtin = false;
  std::string error;             ///< the loader's message, "file:line:col: error: key: message" (empty when it loads)
  std::exception_ptr exception;  ///< the loader's exception, rethrown to callers that need the spec
  std::optional<ModelSpec> model;
  std::optional<GpuSpec> gpu;
};

class ProfileLibrary : public QObject {
  Q_OBJECT
 public:
  explicit ProfileLibrary(QObject* parent = nullptr);

  /// Adds a folder of profile files and watches it; returns false (and records an error) when it is not a folder.
  bool add_folder(const QString& dir);
  QStringList folders() const { return folders_; }

  /// Built-in models first, then folder files that are models (or fail to load as anything).
  const std::vector<ProfileEntry>& models() const { return models_; }
  const std::vector<ProfileEntry>& gpus() const { return gpus_; }
  /// Every file that failed to load, and every folder that could not be read: one message each.
  QStringList errors() const;

  /// The spec behind a key: a folder entry (rethrowing its load error), else profiles::resolve_model.
  ModelSpec model(const std::string& key) const;
  GpuSpec gpu(const std::string& key) const;
  /// The entry with this key, or nullptr.
  const ProfileEntry* find_model(const std::string& key) const;

  /// Re-reads every folder now (the watcher calls it after a short quiet period).
  void rescan();

 signals:
  /// Profiles were re-read (a watched file or folder changed).
  void changed();

 private:
  void schedule_rescan();

  QStringList folders_;
  QStringList folder_errors_;
  std::vector<ProfileEntry> builtin_models_, builtin_gpus_;
  std::vector<ProfileEntry> models_, gpus_;
  QFileSystemWatcher watcher_;
  QTimer debounce_;
};

}  // namespace kvcap::gui
