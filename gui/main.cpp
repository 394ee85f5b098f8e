// kvcap-gui: the capacity dashboard. With --screenshot it renders itself offscreen to a PNG and exits.
#include <QApplication>
#include <QCommandLineParser>
#include <QEventLoop>
#include <QFileInfo>
#include <QRegularExpression>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "dashboard_window.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/profiles/flags.hpp"
#include "kvcap/profiles/units.hpp"

namespace {

using kvcap::gui::DashboardSettings;

[[noreturn]] void usage_error(const QString& msg) {
  std::fprintf(stderr, "kvcap-gui: error: %s\n(see: kvcap-gui --help)\n",
               kvcap::escape::terminal_text(msg.toStdString()).c_str());
  std::exit(2);
}

bool has_flag(int argc, char** argv, const char* flag) {
  const std::size_t n = std::strlen(flag);
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0 || (std::strncmp(argv[i], flag, n) == 0 && argv[i][n] == '=')) return true;
  return false;
}

// Whether this run needs no window: a screenshot, or only text (help, version).
bool needs_no_window(int argc, char** argv) {
  return has_flag(argc, argv, "--screenshot") || has_flag(argc, argv, "--help") || has_flag(argc, argv, "-h") ||
         has_flag(argc, argv, "--help-all") || has_flag(argc, argv, "--version") || has_flag(argc, argv, "-v");
}

// `base` with the vLLM flags in `text` applied ("--kv-cache-dtype fp8 --gpu h200"): the deployment flags through the
// one reader every front end uses, the replicas kept when TP or PP change. InputError for anything else.
DashboardSettings settings_with(DashboardSettings base, const QString& text) {
  kvcap::profiles::FlagTexts flags = kvcap::profiles::flag_texts_from_line(text.toStdString(), {"gpu"});
  if (const auto gpu = flags.find("gpu"); gpu != flags.end()) {
    // a profile path keyed by its absolute path, as --gpu itself
    const QString value = QString::fromStdString(gpu->second);
    base.gpu = QFileInfo(value).exists() ? QFileInfo(value).absoluteFilePath().toStdString() : gpu->second;
    flags.erase(gpu);
  }
  kvcap::Deployment& d = base.deployment;
  const std::int64_t replicas = std::max<std::int64_t>(
      1, d.num_gpus / std::max<std::int64_t>(1, d.tensor_parallel_size * d.pipeline_parallel_size));
  d = kvcap::profiles::deployment_from_flags(flags, d);
  if (!flags.count("num-gpus") && !flags.count("data-parallel-size"))
    d.num_gpus = replicas * d.tensor_parallel_size * d.pipeline_parallel_size;
  return base;
}

// Every option of kvcap-gui.
struct Options {
  const QCommandLineOption screenshot{"screenshot", "render the dashboard to a PNG file offscreen and exit", "out.png"};
  const QCommandLineOption size{"size", "window / screenshot size (default 1600x1000)", "WxH", "1600x1000"};
  const QCommandLineOption models{"models", "comma-separated models: built-in names or profile paths", "list"};
  const QCommandLineOption gpu{"gpu", "GPU: built-in name or YAML profile", "name"};
  const QCommandLineOption num_gpus{"num-gpus", "total GPUs (default TP x PP)", "n"};
  const QCommandLineOption dp{"data-parallel-size", "data-parallel replicas (GPUs = DP x TP x PP)", "n"};
  const QCommandLineOption tp{"tensor-parallel-size", "tensor-parallel size", "n"};
  const QCommandLineOption pp{"pipeline-parallel-size", "pipeline-parallel size", "n"};
  const QCommandLineOption dcp{"decode-context-parallel-size", "split each request's KV over n TP ranks (vLLM DCP)",
                               "n"};
  const QCommandLineOption ep{"enable-expert-parallel", "routed experts split over all GPUs, data-parallel attention"};
  const QCommandLineOption all2all{"all2all-backend",
                                   "expert parallelism's token exchange: allgather_reducescatter, naive, "
                                   "deepep_high_throughput, deepep_low_latency",
                                   "backend"};
  const QCommandLineOption eplb{"enable-eplb", "expert-parallel load balancing (vLLM's flag)"};
  const QCommandLineOption eplb_config{"eplb-config",
                                       "vLLM's EPLBConfig as JSON, e.g. '{\"num_redundant_experts\": 32}'", "json"};
  const QCommandLineOption max_len{"max-model-len", "context limit per request (default: the model's)", "n"};
  const QCommandLineOption quant{"quantization", "weight format: auto, bf16, fp8, int4, mxfp4, ...", "dtype"};
  const QCommandLineOption kv{"kv-cache-dtype", "KV format: auto, bf16, fp8, int8, int4, ...", "dtype"};
  const QCommandLineOption util{"gpu-memory-utilization", "fraction of device memory vLLM may use", "f"};
  const QCommandLineOption free_fraction{"free-gpu-memory-fraction",
                                         "TensorRT-LLM's KV budget instead: this fraction of the memory its profiling "
                                         "run leaves free",
                                         "f"};
  const QCommandLineOption block{"block-size", "tokens per KV block", "n"};
  const QCommandLineOption seqs{"max-num-seqs", "requests running at once per replica", "n"};
  const QCommandLineOption kv_memory{"kv-cache-memory", "KV cache bytes per GPU given outright (e.g. 20GiB)", "bytes"};
  const QCommandLineOption blocks_override{"num-gpu-blocks-override",
                                           "a KV pool of this many blocks per GPU, whatever the memory gives", "n"};
  const QCommandLineOption batched{"max-num-batched-tokens", "token budget per step", "n"};
  const QCommandLineOption prefix{"shared-prefix-tokens", "a common prefix held once", "n"};
  const QCommandLineOption speed_ctx{"speed-context", "context of the decode-speed view (default 4K)", "n"};
  const QCommandLineOption folders{"profiles", "a folder of model / GPU profiles to list and watch (repeatable)",
                                   "dir"};
  const QCommandLineOption calibration{"calibration", "calibration.yaml for the speed view", "file"};
  const QCommandLineOption timeline{"timeline", "simulator timeline CSV (kvcap simulate --timeline)", "file"};
  const QCommandLineOption compare_with{
      "compare-with",
      "pin the deployment the other flags give as the baseline, then apply these flags on top, e.g. "
      "\"--kv-cache-dtype fp8\" or \"--gpu a100-80gb --tensor-parallel-size 8\"",
      "flags"};
  const QCommandLineOption simulate{
      "simulate",
      "simulate the deployment before showing it (repeatable: the last run is drawn, the one before faint beside it): "
      "rate=4,prompt=4K,output=512,duration=120s[,seed=1] or trace=FILE,duration=300s",
      "spec"};
  const QCommandLineOption view{"view",
                                "open on a view: capacity (the charts) or sizing (runs the sizing search for the "
                                "first model with the form's defaults)",
                                "name", "capacity"};

  void add_to(QCommandLineParser& p) const {
    for (const auto* o : {&screenshot,   &size,      &models,  &gpu,         &num_gpus,    &dp,
                          &tp,           &pp,        &dcp,     &ep,          &max_len,     &quant,
                          &kv,           &util,      &block,   &seqs,        &kv_memory,   &batched,
                          &prefix,       &speed_ctx, &folders, &calibration, &timeline,    &compare_with,
                          &simulate,     &view,      &all2all, &eplb,        &eplb_config, &blocks_override,
                          &free_fraction})
      p.addOption(*o);
  }
};

QSize window_size(const QCommandLineParser& p, const Options& o) {
  static const QRegularExpression size_re(QStringLiteral("^(\\d+)x(\\d+)$"));
  const auto sm = size_re.match(p.value(o.size));
  if (!sm.hasMatch())
    usage_error(QStringLiteral("--size: expected WIDTHxHEIGHT such as 1600x1000, got '%1'").arg(p.value(o.size)));
  const QSize size(sm.captured(1).toInt(), sm.captured(2).toInt());
  if (size.width() < 200 || size.height() < 150 || size.width() > 10000 || size.height() > 10000)
    usage_error(QStringLiteral("--size: expected between 200x150 and 10000x10000, got '%1'").arg(p.value(o.size)));
  return size;
}

// A profile path is keyed by its absolute path, as folder entries are.
std::string profile_key(const QString& text) {
  const QFileInfo fi(text.trimmed());
  return fi.exists() ? fi.absoluteFilePath().toStdString() : text.trimmed().toStdString();
}

DashboardSettings settings_from(const QCommandLineParser& p, const Options& o, DashboardSettings s) {
  if (p.isSet(o.models)) {
    s.models.clear();
    for (const QString& m : p.value(o.models).split(QLatin1Char(','), Qt::SkipEmptyParts))
      s.models.push_back(profile_key(m));
  }
  if (p.isSet(o.gpu)) s.gpu = profile_key(p.value(o.gpu));
  // The deployment flags through the one reader every front end uses (profiles/flags.hpp): "1.5K" means here what
  // it means to `kvcap plan`.
  kvcap::profiles::FlagTexts flags;
  if (p.isSet(o.util) && p.isSet(o.free_fraction))
    usage_error(
        QStringLiteral("--gpu-memory-utilization and --free-gpu-memory-fraction are two KV budgets (vLLM's "
                       "and TensorRT-LLM's): give one"));
  for (const auto* f :
       {&o.num_gpus, &o.dp, &o.tp, &o.pp, &o.dcp, &o.max_len, &o.quant, &o.kv, &o.util, &o.block, &o.seqs, &o.kv_memory,
        &o.blocks_override, &o.batched, &o.prefix, &o.all2all, &o.eplb_config, &o.free_fraction})
    if (p.isSet(*f)) flags[f->names().first().toStdString()] = p.value(*f).toStdString();
  if (p.isSet(o.ep)) flags["enable-expert-parallel"] = "";
  if (p.isSet(o.eplb)) flags["enable-eplb"] = "";
  try {
    kvcap::Deployment& d = s.deployment;
    d = kvcap::profiles::deployment_from_flags(flags, d);
    if (!p.isSet(o.num_gpus) && !p.isSet(o.dp)) d.num_gpus = d.tensor_parallel_size * d.pipeline_parallel_size;
    if (p.isSet(o.speed_ctx))
      s.speed_context_tokens = kvcap::profiles::parse_tokens(p.value(o.speed_ctx).toStdString(), "--speed-context");
  } catch (const kvcap::profiles::InputError& e) {
    usage_error(QString::fromStdString(e.what()));
  }
  return s;
}

// --simulate, each run to its end before the next: false (said on stderr) when one cannot run or ends in an error;
// the plausibility policy's warnings on a run (KVCAP-W202) are said and do not fail it.
bool run_simulations(const QCommandLineParser& p, const Options& o, kvcap::gui::DashboardWindow& w) {
  for (const QString& spec_text : p.values(o.simulate)) {
    kvcap::gui::SimulationSpec spec;
    try {
      spec = kvcap::gui::parse_simulation_spec(spec_text.toStdString());
    } catch (const kvcap::profiles::InputError& e) {
      usage_error(QStringLiteral("--simulate: ") + QString::fromStdString(e.what()));
    }
    bool ok = false;
    QString warnings;
    QEventLoop loop;
    auto* runner = w.simulation_runner();
    QObject::connect(runner, &kvcap::gui::SimulationRunner::finished, &loop,
                     [&](const kvcap::gui::Timeline&, const QString& found) {
                       ok = true;
                       warnings = found;
                       loop.quit();
                     });
    QObject::connect(runner, &kvcap::gui::SimulationRunner::failed, &loop, &QEventLoop::quit);
    QObject::connect(runner, &kvcap::gui::SimulationRunner::cancelled, &loop, &QEventLoop::quit);
    if (w.start_simulation(spec)) loop.exec();
    QCoreApplication::processEvents();  // the window's own handlers of the run's end
    if (!ok) {
      std::fprintf(stderr, "kvcap-gui: error: --simulate: %s\n",
                   kvcap::escape::terminal_text(w.status_message().toStdString()).c_str());
      return false;
    }
    if (!warnings.isEmpty())
      std::fprintf(stderr, "kvcap-gui: --simulate: %s\n", kvcap::escape::terminal_text(warnings.toStdString()).c_str());
  }
  return true;
}

int save_screenshot(kvcap::gui::DashboardWindow& w, const QString& out, QSize size) {
  const QImage img = w.screenshot(size);
  if (!img.save(out, "PNG")) {
    std::fprintf(stderr, "kvcap-gui: error: %s: cannot write the PNG file\n", qPrintable(out));
    return 1;
  }
  for (const QString& e : w.model().errors())
    std::fprintf(stderr, "kvcap-gui: problem shown in the window: %s\n",
                 kvcap::escape::terminal_text(e.toStdString()).c_str());
  std::printf("%s: %dx%d dashboard (%s)\n", qPrintable(out), img.width(), img.height(), qPrintable(w.status_text()));
  return 0;
}

void open_view(const QCommandLineParser& p, const Options& o, kvcap::gui::DashboardWindow& w) {
  if (p.value(o.view) == QLatin1String("sizing")) {
    w.views()->setCurrentWidget(w.sizing_panel());
    w.sizing_panel()->search();  // a failure is shown in the panel's status line
  } else if (p.value(o.view) != QLatin1String("capacity")) {
    usage_error(QStringLiteral("--view: expected capacity or sizing, got '%1'").arg(p.value(o.view)));
  }
}

}  // namespace

int main(int argc, char** argv) {
  // A screenshot, --help and --version need no display: render offscreen unless the caller chose a platform.
  // A window needs one: say so plainly instead of letting Qt abort.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
    if (needs_no_window(argc, argv)) {
      qputenv("QT_QPA_PLATFORM", "offscreen");
    } else if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
      std::fprintf(stderr,
                   "kvcap-gui: error: no display (neither DISPLAY nor WAYLAND_DISPLAY is set).\n"
                   "  Run it under a virtual display: xvfb-run %s ...   (scripts/install-deps.sh --xvfb)\n"
                   "  or render it offscreen:         %s --screenshot dashboard.png\n",
                   argv[0], argv[0]);
      return 1;
    }
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("kvcap-gui"));
  QApplication::setApplicationVersion(QStringLiteral(KVCAP_VERSION));

  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "kvcap dashboard: maximum concurrency against context length for several models, memory per GPU,\n"
      "decode speed, KV bytes per token and (with a simulation) KV utilisation over time.\n\n"
      "Example: kvcap-gui --models llama-3.1-70b,deepseek-v3 --gpu h200 --num-gpus 8 --tensor-parallel-size 8\n"
      "         kvcap-gui --screenshot dashboard.png --size 1600x1000"));
  p.addHelpOption();
  p.addVersionOption();
  const Options o;
  o.add_to(p);
  p.process(app);
  if (!p.positionalArguments().isEmpty())
    usage_error(QStringLiteral("unexpected argument '%1'").arg(p.positionalArguments().first()));
  const QSize size = window_size(p, o);

  kvcap::gui::DashboardWindow w;
  for (const QString& dir : p.values(o.folders)) w.add_profile_folder(dir);
  w.controls()->set_settings(settings_from(p, o, w.controls()->settings()));
  if (p.isSet(o.calibration)) w.load_calibration(p.value(o.calibration));  // a bad file shows in the panel
  if (p.isSet(o.timeline)) w.load_timeline(p.value(o.timeline));
  if (p.isSet(o.compare_with)) {
    w.model().pin_baseline();
    try {
      w.controls()->set_settings(settings_with(w.controls()->settings(), p.value(o.compare_with)));
    } catch (const kvcap::profiles::InputError& e) {
      usage_error(QStringLiteral("--compare-with: ") + QString::fromStdString(e.what()));
    }
  }
  if (!run_simulations(p, o, w)) return 1;
  open_view(p, o, w);
  if (p.isSet(o.screenshot)) return save_screenshot(w, p.value(o.screenshot), size);
  w.resize(size);
  w.show();
  return app.exec();
}
