#include "simulation_runner.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "dashboard_model.hpp"
#include "kvcap/planner/error.hpp"
#include "kvcap/profiles/units.hpp"
#include "kvcap/simulator/trace.hpp"
#include "style.hpp"

namespace kvcap::gui {

namespace {
// Thrown from the progress callback to end a cancelled run (the simulator unwinds; nothing is half-written).
struct Cancelled {};

// Bounds that keep a run to minutes and its timeline to megabytes (as kvcap simulate's without --force).
constexpr double kMaxRequests = 2'000'000;
constexpr double kMaxDurationS = 24 * 3600;
constexpr double kTimelineSamples = 2000;         ///< per replica over the arrivals: the interval is duration / this
constexpr std::size_t kMaxKeptSamples = 400'000;  ///< all replicas, the drain included (about 25 MB)

// The samples as `kvcap simulate --timeline` writes them, thinned to every 2nd, 4th, ... instant when a long drain
// or many replicas would pass kMaxKeptSamples (an instant's samples, one per replica, stay together).
class TimelineCollector : public sim::Observer {
 public:
  void on_sample(const TimelineSample& s) override {
    if (instants_ == 0 || s.time_s != last_time_) ++instants_, last_time_ = s.time_s;
    if ((instants_ - 1) % stride_ != 0) return;
    samples.push_back(s);
    instant_of_.push_back(instants_ - 1);
    if (samples.size() <= kMaxKeptSamples) return;
    stride_ *= 2;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < samples.size(); ++i)
      if (instant_of_[i] % stride_ == 0) samples[kept] = samples[i], instant_of_[kept++] = instant_of_[i];
    samples.resize(kept);
    instant_of_.resize(kept);
  }
  std::vector<TimelineSample> samples;

 private:
  std::vector<std::uint64_t> instant_of_;
  std::uint64_t instants_ = 0, stride_ = 1;
  double last_time_ = 0;
};
}  // namespace

SimulationSpec parse_simulation_spec(const std::string& text, SimulationSpec s) {
  using profiles::InputError;
  std::vector<std::string> seen;
  for (const std::string& item : profiles::split_list(text)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw InputError("'" + item + "': expected key=value (rate, prompt, output, duration, trace, seed)");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) throw InputError(key + " given twice");
    seen.push_back(key);
    if (key == "rate")
      s.rate_per_s = profiles::parse_real(value, "rate", "requests per second > 0", profiles::kPositive, 1e6);
    else if (key == "prompt")
      s.prompt_tokens = profiles::parse_tokens(value, "prompt");
    else if (key == "output")
      s.output_tokens = profiles::parse_tokens(value, "output");
    else if (key == "duration")
      s.duration_s = profiles::parse_seconds(value, "duration");
    else if (key == "trace")
      s.trace_path = value;
    else if (key == "seed")
      s.seed = std::uint64_t(profiles::parse_int(value, "seed", 0));
    else
      throw InputError("unknown key '" + key + "'; expected rate, prompt, output, duration, trace or seed");
  }
  const bool poisson = std::any_of(seen.begin(), seen.end(),
                                   [](const std::string& k) { return k == "rate" || k == "prompt" || k == "output"; });
  if (!s.trace_path.empty() && poisson)
    throw InputError("trace replays its own arrivals and lengths: leave out rate, prompt and output");
  return s;
}

sim::SimulationRequest simulation_request(const DashboardModel& model, const SimulationSpec& spec, QString* label) {
  if (!(spec.duration_s > 0) || spec.duration_s > kMaxDurationS)
    throw std::invalid_argument("duration: expected (0, 86400] seconds, got " + std::to_string(spec.duration_s));
  const ModelResult* m = nullptr;
  for (const auto& r : model.results())
    if (r.starts() && !model.is_hidden(r.key)) {
      m = &r;
      break;
    }
  if (!m || !model.gpu()) throw std::runtime_error("no selected model starts on this deployment: nothing to simulate");
  if (model.settings().deployment.shared_prefix_tokens > 0)
    throw std::runtime_error(
        "the dashboard simulates without a shared prefix: set it to 0, or use kvcap simulate --shared-prefix-tokens");
  sim::SimulationRequest q;
  q.speed = make_speed_context(*m->model, *model.gpu(), *m->plan, SpeedOptions{}, model.calibration_in_use());
  q.limits.duration_s = spec.duration_s;
  q.seed = spec.seed;
  QString workload;
  if (!spec.trace_path.empty()) {
    q.trace = sim::read_trace_csv(spec.trace_path).requests;
    workload =
        QStringLiteral("trace %1, first %2 s").arg(display_text(spec.trace_path), QString::number(spec.duration_s));
  } else {
    if (!(spec.rate_per_s > 0) || spec.rate_per_s * spec.duration_s > kMaxRequests)
      throw std::invalid_argument("rate: expected > 0 requests/s and at most 2,000,000 requests over the duration");
    q.workload.arrival = ArrivalProcess::renewal(ArrivalProcess::Kind::poisson, spec.rate_per_s);
    q.workload.prompt = LengthDistribution::fixed_tokens(spec.prompt_tokens);
    q.workload.output = LengthDistribution::fixed_tokens(spec.output_tokens);
    validate(q.workload);
    workload = QStringLiteral("Poisson %1 req/s, %2 / %3 tokens, %4 s")
                   .arg(QString::number(spec.rate_per_s), grouped(spec.prompt_tokens), grouped(spec.output_tokens),
                        QString::number(spec.duration_s));
  }
  q.timeline_interval_s = std::max(0.01, spec.duration_s / kTimelineSamples);
  const Deployment& d = m->plan->dep.d;
  if (label)
    *label = QStringLiteral("%1 on %2\u00d7 %3, TP %4 \u00b7 %5")
                 .arg(QString::fromStdString(m->label), QString::number(d.num_gpus), display_text(model.gpu()->name),
                      QString::number(d.tensor_parallel_size), workload);
  return q;
}

SimulationRunner::SimulationRunner(QObject* parent) : QObject(parent) {}

SimulationRunner::~SimulationRunner() {
  if (thread_) {
    cancel_ = true;
    thread_->wait();
  }
}

bool SimulationRunner::start(sim::SimulationRequest request, const QString& label) {
  if (thread_) return false;
  cancel_ = false;
  was_cancelled_ = false;
  error_.clear();
  findings_.clear();
  result_ = Timeline{};
  const double span_s = std::max(1e-9, request.limits.duration_s.value_or(1));
  thread_.reset(QThread::create([this, request = std::move(request), label, span_s]() mutable {
    TimelineCollector collector;
    request.observer = &collector;
    request.progress = [this, span_s](const sim::Progress& p) {
      if (cancel_) throw Cancelled{};
      const int percent = int(std::clamp(p.time_s / span_s * 100.0, 0.0, 100.0));
      emit progress(percent, QStringLiteral("%1 s of %2 s simulated, %3 requests done")
                                 .arg(p.time_s, 0, 'f', 1)
                                 .arg(span_s, 0, 'f', 0)
                                 .arg(grouped(std::int64_t(p.completed))));
    };
    try {
      const sim::SimulationRun run = sim::run_simulation(request);
      result_.file = label.toStdString();
      result_.num_replicas = run.config.num_replicas;
      result_.samples = std::move(collector.samples);
      for (const auto& f : run.findings) {
        QString& into = f.level == Finding::Level::error ? error_ : findings_;
        into += (into.isEmpty() ? QString() : QStringLiteral("; ")) + QString::fromStdString(to_string(f));
        if (f.level == Finding::Level::error) return;  // e.g. KVCAP-E109: nothing was served
      }
    } catch (const Cancelled&) {
      was_cancelled_ = true;
    } catch (const std::exception& e) {
      error_ = QString::fromStdString(e.what());
    }
  }));
  connect(thread_.get(), &QThread::finished, this, &SimulationRunner::done);
  thread_->start();
  return true;
}

void SimulationRunner::done() {
  thread_->wait();
  thread_.reset();
  if (was_cancelled_)
    emit cancelled();
  else if (!error_.isEmpty())
    emit failed(error_);
  else {
    const Timeline t = std::move(result_);  // a slot may start the next run, which resets result_
    emit finished(t, findings_);
  }
}

}  // namespace kvcap::gui
