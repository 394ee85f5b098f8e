#include "dashboard_model.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "kvcap/escape.hpp"
#include "kvcap/planner/error.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "profile_library.hpp"

namespace kvcap::gui {

DashboardModel::DashboardModel(const ProfileLibrary& library, QObject* parent) : QObject(parent), library_(library) {}

void DashboardModel::set_settings(const DashboardSettings& s) {
  settings_ = s;
  recompute();
}

std::vector<i64> DashboardModel::concurrency_contexts() {
  std::vector<i64> c;
  for (int k = 0; k <= 40; ++k) c.push_back(static_cast<i64>(std::llround(std::exp2(10.0 + k / 4.0))));
  return c;
}

std::int64_t DashboardModel::replicas() const {
  for (const auto& r : results_)
    if (r.plan) return r.plan->dep.replicas;
  return 1;
}

void DashboardModel::recompute() {
  const auto t0 = std::chrono::steady_clock::now();
  results_.clear();
  gpu_.reset();
  gpu_error_.clear();
  try {
    gpu_ = library_.gpu(settings_.gpu);
  } catch (const std::exception& e) {
    gpu_error_ = e.what();
  }
  calibration_in_use_.reset();
  if (calibration_ && gpu_ && !has_errors(check_calibration(*calibration_, *gpu_, false)))
    calibration_in_use_ = calibration_;
  const auto grid = concurrency_contexts();
  std::size_t index = 0;
  for (const auto& key : settings_.models) {
    ModelResult r;
    r.key = key;
    r.colour_index = index++;
    const auto* entry = library_.find_model(key);
    // A path shows as its file name until the profile loads and names itself (a library entry's label is escaped
    // where the library makes it; the fallback here).
    r.label = entry ? entry->label
                    : escape::terminal_text(
                          key.substr(key.find_last_of('/') == std::string::npos ? 0 : key.find_last_of('/') + 1));
    try {
      r.model = library_.model(key);
      // Names reach legends and exported SVG: control characters shown, never passed through.
      if (!r.model->name.empty()) r.label = escape::terminal_text(r.model->name);
      if (!gpu_) throw std::runtime_error("no GPU profile (see the GPU error)");
      // The grid plus max_model_len itself, so the curve changes style exactly where vLLM would stop.
      std::vector<i64> contexts = grid;
      const i64 mml = settings_.deployment.max_model_len.value_or(r.model->max_position_embeddings);
      if (mml > grid.front() && mml < grid.back()) contexts.push_back(mml);
      std::sort(contexts.begin(), contexts.end());
      contexts.erase(std::unique(contexts.begin(), contexts.end()), contexts.end());
      r.plan = plan_memory(*r.model, *gpu_, settings_.deployment, contexts);
    } catch (const std::exception& e) {
      r.error = e.what();
      if (const auto* se = dynamic_cast<const SpecError*>(&e)) r.error_field = se->field();
      r.exception = std::current_exception();
      r.plan.reset();
    }
    if (r.plan) {
      // The same policy as kvcap plan: a deployment vLLM would not start; a calibration from another device is not
      // used (kvcap plan refuses it without --calibration-force, which the dashboard does not have): the speeds are
      // the datasheet's and the panel says why.
      r.findings = check_memory_plan(*gpu_, *r.plan);
      if (calibration_) {
        auto cal = check_calibration(*calibration_, *gpu_, false);
        for (auto& f : cal)
          if (f.level == Finding::Level::error) {  // calibration_in_use_ is none
            f.level = Finding::Level::warning;
            f.code.replace(f.code.find("-E"), 2, "-W");
            const auto force = f.message.find("; --calibration-force");
            if (force != std::string::npos) f.message.resize(force);
            f.message += "; not used: the speeds are the datasheet's";
          }
        r.findings.insert(r.findings.end(), cal.begin(), cal.end());
      }
      if (has_errors(r.findings)) r.fit = fit_advice(*r.model, *gpu_, settings_.deployment);
      try {
        const auto ctx = make_speed_context(*r.model, *gpu_, *r.plan, SpeedOptions{}, calibration_in_use_);
        r.decode = throughput_latency_curve(ctx, settings_.speed_context_tokens);
      } catch (const std::exception& e) {
        r.speed_error = e.what();
      }
    }
    results_.push_back(std::move(r));
  }
  // Two selections with one name (a user copy of a built-in profile): tell them apart by file.
  for (auto& a : results_)
    for (const auto& b : results_)
      if (&a != &b && a.label == b.label && a.key != a.label) {
        a.label +=
            " (" + a.key.substr(a.key.find_last_of('/') == std::string::npos ? 0 : a.key.find_last_of('/') + 1) + ")";
        break;
      }
  last_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  emit updated();
}

void DashboardModel::pin_baseline() {
  Baseline b;
  b.settings = settings_;
  b.gpu = gpu_;
  b.results = results_;
  const Deployment& d = settings_.deployment;
  const std::string kv = d.kv_cache_dtype == DType::auto_ ? "auto" : std::string(name(d.kv_cache_dtype));
  b.description = QStringLiteral("%1\u00d7 %2 \u00b7 TP %3 \u00b7 PP %4 \u00b7 KV %5")
                      .arg(QString::number(d.num_gpus), QString::fromStdString(gpu_ ? gpu_->name : settings_.gpu),
                           QString::number(d.tensor_parallel_size), QString::number(d.pipeline_parallel_size),
                           QString::fromStdString(kv));
  if (d.quantization != DType::auto_)
    b.description +=
        QStringLiteral(" \u00b7 weights %1").arg(QString::fromStdString(std::string(name(d.quantization))));
  baseline_ = std::move(b);
  emit updated();
}

void DashboardModel::clear_baseline() {
  baseline_.reset();
  emit updated();
}

const ModelResult* DashboardModel::baseline_result(const std::string& key) const {
  if (!baseline_) return nullptr;
  for (const auto& r : baseline_->results)
    if (r.key == key) return &r;
  return nullptr;
}

void DashboardModel::toggle_hidden(const std::string& key) {
  if (!hidden_.erase(key)) hidden_.insert(key);
  emit updated();
}

bool DashboardModel::load_calibration(const std::string& path) {
  try {
    Calibration c = profiles::load_calibration_file(path);
    validate(c);
    calibration_ = std::move(c);
    calibration_path_ = path;
    calibration_error_.clear();
  } catch (const std::exception& e) {
    calibration_error_ = e.what();
    recompute();
    return false;
  }
  recompute();
  return true;
}

void DashboardModel::clear_calibration() {
  calibration_.reset();
  calibration_path_.clear();
  calibration_error_.clear();
  recompute();
}

QString DashboardModel::rate_source_text() const {
  for (const auto& r : results_) {
    if (r.decode.empty()) continue;
    const RateSource& s = r.decode.front().source;
    if (s.memory == "calibrated" || s.compute == "calibrated") {
      QString what = s.memory == s.compute
                         ? QStringLiteral("calibrated")
                         : QStringLiteral("memory %1, compute %2")
                               .arg(QString::fromStdString(s.memory), QString::fromStdString(s.compute));
      if (calibration_in_use_ && !calibration_in_use_->device.empty())
        what += " on " + QString::fromStdString(calibration_in_use_->device);
      return what;
    }
    return QStringLiteral("datasheet \u00d7 default efficiency");
  }
  return calibration_in_use_ ? QStringLiteral("calibrated") : QStringLiteral("datasheet \u00d7 default efficiency");
}

void DashboardModel::set_timeline(Timeline t) {
  if (timeline_) previous_timeline_ = std::move(timeline_);
  timeline_ = std::move(t);
  ++timeline_generation_;
  timeline_error_.clear();
  emit updated();
}

bool DashboardModel::load_timeline(const std::string& path) {
  try {
    Timeline t = read_timeline_csv(path);
    if (timeline_) previous_timeline_ = std::move(timeline_);
    timeline_ = std::move(t);
    ++timeline_generation_;
    timeline_error_.clear();
  } catch (const std::exception& e) {
    timeline_error_ = e.what();
    emit updated();
    return false;
  }
  emit updated();
  return true;
}

namespace {
// Problems in order of first appearance, each text once with the models it concerns.
class ProblemList {
 public:
  void add(const std::string& text, const std::string& field, const std::string& who = "") {
    for (auto& e : entries_)
      if (e.text == text) {
        if (!who.empty()) e.who.push_back(who);
        return;
      }
    entries_.push_back({text, field, who.empty() ? std::vector<std::string>{} : std::vector<std::string>{who}});
  }
  std::vector<Problem> take() const {
    std::vector<Problem> r;
    for (const auto& e : entries_) {
      std::string who;
      for (const auto& w : e.who) who += (who.empty() ? "" : ", ") + w;
      r.push_back({QString::fromStdString(who.empty() ? e.text : who + ": " + e.text), e.field});
    }
    return r;
  }

 private:
  struct Entry {
    std::string text, field;
    std::vector<std::string> who;
  };
  std::vector<Entry> entries_;
};

bool is_fit_finding(const Finding& f) {
  return f.code == "KVCAP-E101" || f.code == "KVCAP-E102";
}

// The field whose control the first fix changes ("TP >= 8 fits": tensor_parallel_size).
std::string fix_field(const FitAdvice& a) {
  if (a.fixes.empty()) return "gpu_memory_utilization";
  std::string flag = a.fixes.front().flag.substr(2);  // "--tensor-parallel-size" -> "tensor_parallel_size"
  std::replace(flag.begin(), flag.end(), '-', '_');
  return flag;
}
}  // namespace

std::vector<Problem> DashboardModel::problems() const {
  ProblemList list;
  for (const QString& e : library_.errors()) list.add(e.toStdString(), "");
  if (!gpu_error_.empty()) list.add(gpu_error_, "gpu");
  const std::string where = gpu_ ? std::to_string(settings_.deployment.num_gpus) + "\u00d7 " +
                                       (gpu_->display_name.empty() ? gpu_->name : gpu_->display_name)
                                 : settings_.gpu;
  for (const auto& m : results_) {
    // A folder profile's load error is already listed by the library; say which selection it hides.
    if (!m.error.empty() && !library_.errors().contains(QString::fromStdString(m.error)))
      list.add(m.error, m.error_field, m.label);
    if (!m.speed_error.empty()) list.add("speed model: " + m.speed_error, "", m.label);
    for (const auto& f : m.findings) {
      if (!(m.fit && is_fit_finding(f))) {
        list.add(to_string(f), "", m.label);
        continue;
      }
      // The finding with its numbers and the smallest fix, marked on the control the fix changes.
      if (&f == &*std::find_if(m.findings.begin(), m.findings.end(), is_fit_finding))
        list.add("error " + f.code + ": does not fit on " + where + " (" + budget_engine(settings_.deployment) +
                     " would not start): " + m.fit->text(),
                 fix_field(*m.fit), m.label);
    }
  }
  if (!calibration_error_.empty()) list.add(calibration_error_, "");
  if (!timeline_error_.empty()) list.add(timeline_error_, "");
  return list.take();
}

QStringList DashboardModel::errors() const {
  QStringList r;
  for (const auto& p : problems()) r << p.text;
  return r;
}

}  // namespace kvcap::gui
