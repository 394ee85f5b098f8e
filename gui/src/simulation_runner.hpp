#pragma once
// A simulation of the dashboard's deployment, run off the GUI thread: the first selected model that starts, on its
// GPU and parallel layout, fed a Poisson workload (rate, prompt and output tokens, duration) or a CSV trace, through
// the same sim::run_simulation as `kvcap simulate`. Progress is reported as the simulated time advances; cancel()
// stops the run at the simulator's next progress report (every 2^16 events). The result is a Timeline named by
// the run's deployment and workload, which the KV-utilisation chart draws beside the previous run.
#include <QObject>
#include <QString>
#include <QThread>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "kvcap/gui/timeline.hpp"
#include "kvcap/simulator/run.hpp"

namespace kvcap::gui {

class DashboardModel;

/// What the Simulate dialog asks.
struct SimulationSpec {
  double rate_per_s = 4;     ///< Poisson arrivals
  i64 prompt_tokens = 1024;  ///< every request's prompt
  i64 output_tokens = 256;   ///< and output
  double duration_s = 60;    ///< arrivals end after this (a trace is cut there too)
  std::string trace_path;    ///< non-empty: replay this CSV trace instead of the Poisson workload
  std::uint64_t seed = 1;
};

/// "rate=4,prompt=4K,output=512,duration=120s,seed=1" or "trace=FILE,duration=300s" (kvcap-gui --simulate; the
/// CLI's value grammar); keys not given keep `base`'s. profiles::InputError naming the key otherwise.
SimulationSpec parse_simulation_spec(const std::string& text, SimulationSpec base = {});

/// The request for the dashboard's first model that starts, and its label ("llama-3.1-8b on 1x h100-sxm, TP 1 ·
/// Poisson 4 req/s, 1,024 / 256 tokens, 60 s"). Throws std::runtime_error (no model starts) or the planner's and
/// the trace reader's errors, each naming what is wrong.
sim::SimulationRequest simulation_request(const DashboardModel& model, const SimulationSpec& spec, QString* label);

class SimulationRunner : public QObject {
  Q_OBJECT
 public:
  explicit SimulationRunner(QObject* parent = nullptr);
  ~SimulationRunner() override;  ///< cancels a run and waits for its thread

  /// Starts `request` on a worker thread (refused while one runs: returns false).
  bool start(sim::SimulationRequest request, const QString& label);
  void cancel() { cancel_ = true; }
  bool running() const { return thread_ != nullptr; }

 signals:
  /// Percent of the arrivals' span simulated (0-100), and a line to show ("12.5 s of 60 s simulated, 48 done").
  void progress(int percent, const QString& text);
  /// The run's timeline and the plausibility policy's warnings on it (KVCAP-W202: fed beyond what it serves).
  void finished(const kvcap::gui::Timeline& timeline, const QString& warnings);
  void failed(const QString& error);
  void cancelled();

 private:
  void done();
  std::unique_ptr<QThread> thread_;
  std::atomic<bool> cancel_{false};
  // Written by the worker before it ends, read on the GUI thread after (QThread::finished orders them).
  Timeline result_;
  QString error_;
  QString findings_;
  bool was_cancelled_ = false;
};

}  // namespace kvcap::gui
