#include "profile_library.hpp"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <algorithm>

#include "kvcap/escape.hpp"
#include "kvcap/profiles/profiles.hpp"

namespace kvcap::gui {

namespace {
// A GPU profile says so at the top level ("kind: gpu"); anything else is read as a model (YAML
// profile or config.json), so a broken file still lands somewhere with its diagnostics.
bool looks_like_gpu(const QString& path) {
  QFile f(path);
  // Only regular files: a link to /dev/zero or a FIFO would be read without end (the loader reports them).
  if (!QFileInfo(path).isFile() || !f.open(QIODevice::ReadOnly)) return false;
  static const QRegularExpression kind(QStringLiteral("^kind:\\s*gpu\\b"), QRegularExpression::MultilineOption);
  return kind.match(QString::fromUtf8(f.readAll())).hasMatch();
}

template <class Load>
ProfileEntry load_entry(const QFileInfo& fi, Load load) {
  ProfileEntry e;
  e.key = fi.absoluteFilePath().toStdString();
  e.label = escape::terminal_text(fi.fileName().toStdString());
  try {
    load(e);
  } catch (const std::exception& ex) {
    e.error = ex.what();
    e.exception = std::current_exception();
  }
  return e;
}
}  // namespace

ProfileLibrary::ProfileLibrary(QObject* parent) : QObject(parent) {
  for (const auto& n : profiles::builtin_model_names()) {
    ProfileEntry e;
    e.key = e.label = n;
    e.builtin = true;
    builtin_models_.push_back(e);
  }
  for (const auto& n : profiles::builtin_gpu_names()) {
    ProfileEntry e;
    e.key = e.label = n;
    e.builtin = true;
    builtin_gpus_.push_back(e);
  }
  models_ = builtin_models_;
  gpus_ = builtin_gpus_;
  // Editors save in several steps (truncate, write, rename); re-read once they are done.
  debounce_.setSingleShot(true);
  debounce_.setInterval(150);
  connect(&debounce_, &QTimer::timeout, this, &ProfileLibrary::rescan);
  connect(&watcher_, &QFileSystemWatcher::fileChanged, this, &ProfileLibrary::schedule_rescan);
  connect(&watcher_, &QFileSystemWatcher::directoryChanged, this, &ProfileLibrary::schedule_rescan);
}

bool ProfileLibrary::add_folder(const QString& dir) {
  const QFileInfo fi(dir);
  const QString abs = fi.absoluteFilePath();
  if (!fi.isDir()) {
    folder_errors_ << QStringLiteral("%1: error: not a folder of profiles").arg(abs);
    emit changed();
    return false;
  }
  if (!folders_.contains(abs)) folders_ << abs;
  rescan();
  return true;
}

void ProfileLibrary::schedule_rescan() {
  debounce_.start();
}

void ProfileLibrary::rescan() {
  models_ = builtin_models_;
  gpus_ = builtin_gpus_;
  folder_errors_.erase(std::remove_if(folder_errors_.begin(), folder_errors_.end(),
                                      [&](const QString& e) { return !e.contains(QLatin1String("not a folder")); }),
                       folder_errors_.end());
  QStringList watch;
  for (const QString& folder : folders_) {
    const QDir d(folder);
    if (!d.exists()) {
      folder_errors_ << QStringLiteral("%1: error: profile folder is gone").arg(folder);
      continue;
    }
    watch << folder;
    const auto files = d.entryInfoList({"*.yaml", "*.yml", "*.json"}, QDir::Files | QDir::Readable, QDir::Name);
    for (const QFileInfo& fi : files) {
      watch << fi.absoluteFilePath();
      if (looks_like_gpu(fi.absoluteFilePath())) {
        gpus_.push_back(load_entry(fi, [&](ProfileEntry& e) {
          e.gpu = profiles::load_gpu_file(e.key);
          e.label = escape::terminal_text(e.gpu->name + " (" + fi.fileName().toStdString() + ")");
        }));
      } else {
        models_.push_back(load_entry(fi, [&](ProfileEntry& e) {
          e.model = profiles::load_model_file(e.key);
          e.label = escape::terminal_text(e.model->name + " (" + fi.fileName().toStdString() + ")");
        }));
      }
    }
  }
  // A file replaced by rename leaves the watch list; watch exactly what exists now.
  const QStringList old = watcher_.files() + watcher_.directories();
  if (!old.isEmpty()) watcher_.removePaths(old);
  if (!watch.isEmpty()) watcher_.addPaths(watch);
  emit changed();
}

QStringList ProfileLibrary::errors() const {
  QStringList r = folder_errors_;
  for (const auto* list : {&models_, &gpus_})
    for (const auto& e : *list)
      if (!e.error.empty()) r << QString::fromStdString(e.error);
  return r;
}

const ProfileEntry* ProfileLibrary::find_model(const std::string& key) const {
  for (const auto& e : models_)
    if (e.key == key) return &e;
  return nullptr;
}

ModelSpec ProfileLibrary::model(const std::string& key) const {
  if (const auto* e = find_model(key); e && !e->builtin) {
    if (e->exception) std::rethrow_exception(e->exception);
    return *e->model;
  }
  return profiles::resolve_model(key);
}

GpuSpec ProfileLibrary::gpu(const std::string& key) const {
  for (const auto& e : gpus_)
    if (e.key == key && !e.builtin) {
      if (e.exception) std::rethrow_exception(e.exception);
      return *e.gpu;
    }
  return profiles::resolve_gpu(key);
}

}  // namespace kvcap::gui
