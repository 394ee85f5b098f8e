#include "dashboard_window.hpp"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QLineEdit>
#include <QMessageBox>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QToolBar>
#include <QVBoxLayout>
#include <map>

#include "export.hpp"

namespace kvcap::gui {

DashboardWindow::DashboardWindow(QWidget* parent)
    : QMainWindow(parent),
      model_(library_),
      controls_(new ControlsPanel(library_)),
      errors_(new ErrorPanel),
      concurrency_(new ConcurrencyChart),
      memory_(new MemoryBreakdownChart),
      decode_(new DecodeSpeedChart),
      kv_bytes_(new KvBytesChart),
      kv_util_(new KvUtilizationChart),
      legend_(new ModelLegend),
      comparison_(new ComparisonTable),
      sizing_(new SizingPanel),
      views_(new QTabWidget),
      status_(new QLabel),
      rates_(new QLabel),
      sim_progress_(new QProgressBar),
      sim_cancel_(new QToolButton) {
  setWindowTitle(QStringLiteral("kvcap \u2014 LLM serving capacity"));
  setObjectName(QStringLiteral("dashboard"));

  auto* left = new QScrollArea;
  controls_area_ = left;
  left->setWidget(controls_);
  left->setWidgetResizable(true);
  left->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  // As narrow as the controls allow (never clipped: the scroll area is only for height).
  left->setMinimumWidth(controls_->minimumSizeHint().width() + left->verticalScrollBar()->sizeHint().width() + 4);
  left->setMaximumWidth(340);

  auto* right = new QWidget;
  auto* rlay = new QVBoxLayout(right);
  rlay->setContentsMargins(0, 0, 0, 0);
  rlay->setSpacing(4);
  rlay->addWidget(errors_);
  rlay->addWidget(legend_);
  rlay->addWidget(comparison_);
  auto* grid = new QGridLayout;
  grid->setSpacing(4);
  grid->addWidget(concurrency_, 0, 0, 1, 2);
  grid->addWidget(kv_bytes_, 0, 2);
  grid->addWidget(memory_, 1, 0);
  grid->addWidget(decode_, 1, 1);
  grid->addWidget(kv_util_, 1, 2);
  grid->setRowStretch(0, 11);
  grid->setRowStretch(1, 9);
  for (int c = 0; c < 3; ++c) grid->setColumnStretch(c, 1);
  rlay->addLayout(grid, 1);

  views_->setObjectName(QStringLiteral("views"));
  views_->addTab(right, QStringLiteral("Capacity"));
  views_->addTab(sizing_, QStringLiteral("Sizing and cost"));

  auto* split = new QSplitter;
  split->addWidget(left);
  split->addWidget(views_);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setChildrenCollapsible(false);
  setCentralWidget(split);

  status_->setObjectName(QStringLiteral("status"));
  rates_->setObjectName(QStringLiteral("rateSource"));
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(rates_);
  // A passing message (an export's confirmation, a run's end) takes the place of the recompute line.
  connect(statusBar(), &QStatusBar::messageChanged, this,
          [this](const QString& message) { status_->setVisible(message.isEmpty()); });
  sim_progress_->setObjectName(QStringLiteral("simulationProgress"));
  sim_progress_->setRange(0, 100);
  sim_progress_->setMaximumWidth(220);
  sim_cancel_->setObjectName(QStringLiteral("cancelSimulation"));
  sim_cancel_->setText(QStringLiteral("Cancel"));
  statusBar()->addPermanentWidget(sim_progress_);
  statusBar()->addPermanentWidget(sim_cancel_);
  sim_progress_->setVisible(false);
  sim_cancel_->setVisible(false);
  connect(sim_cancel_, &QToolButton::clicked, &runner_, &SimulationRunner::cancel);
  connect(&runner_, &SimulationRunner::progress, this, [this](int percent, const QString& text) {
    sim_progress_->setValue(percent);
    sim_progress_->setToolTip(text);
  });
  auto idle = [this](const QString& message) {
    sim_progress_->setVisible(false);
    sim_cancel_->setVisible(false);
    statusBar()->showMessage(message, 10000);
  };
  connect(&runner_, &SimulationRunner::finished, this, [this, idle](const Timeline& t, const QString& warnings) {
    model_.set_timeline(t);
    idle(QStringLiteral("Simulated: ") + QString::fromStdString(t.file) +
         (warnings.isEmpty() ? QString() : QStringLiteral(" \u2014 ") + warnings));
  });
  connect(&runner_, &SimulationRunner::failed, this,
          [idle](const QString& e) { idle(QStringLiteral("Simulation failed: ") + e); });
  connect(&runner_, &SimulationRunner::cancelled, this, [idle] { idle(QStringLiteral("Simulation cancelled")); });
  build_actions();

  connect(controls_, &ControlsPanel::settings_changed, this, [this] { model_.set_settings(controls_->settings()); });
  connect(&library_, &ProfileLibrary::changed, this, [this] {
    controls_->refresh_profiles();
    model_.set_settings(controls_->settings());
  });
  connect(&model_, &DashboardModel::updated, this, &DashboardWindow::redraw);
  connect(legend_, &ModelLegend::toggled, this, [this](const std::string& key) { model_.toggle_hidden(key); });
  connect(controls_, &ControlsPanel::calibration_load_requested, this, &DashboardWindow::ask_calibration);
  connect(controls_, &ControlsPanel::calibration_clear_requested, this, [this] { model_.clear_calibration(); });
  // The sizing view sizes the first selected model; a chosen deployment comes back into the controls.
  connect(sizing_, &SizingPanel::deployment_chosen, this, [this](const std::string& gpu, const Deployment& d) {
    DashboardSettings s = controls_->settings();
    s.gpu = gpu;
    s.deployment = d;
    controls_->set_settings(s);
    views_->setCurrentIndex(0);
  });
  model_.set_settings(controls_->settings());
}

namespace {
// A message box whose text is shown as given: a path or a profile's name is never read as HTML.
void plain_message(QWidget* parent, QMessageBox::Icon icon, const QString& title, const QString& text) {
  QMessageBox box(icon, title, text, QMessageBox::Ok, parent);
  box.setTextFormat(Qt::PlainText);
  box.exec();
}
}  // namespace

template <class F>
void DashboardWindow::guarded(const QString& what, F f) {
  try {
    f();
  } catch (const std::exception& e) {
    plain_message(this, QMessageBox::Warning, what, QString::fromUtf8(e.what()));
  }
}

void DashboardWindow::build_actions() {
  QToolBar* bar = addToolBar(QStringLiteral("Actions"));
  bar->setObjectName(QStringLiteral("actions"));
  bar->setMovable(false);
  auto add = [&](const QString& text, const QString& tip, auto fn) {
    QAction* a = bar->addAction(text);
    a->setToolTip(tip);
    connect(a, &QAction::triggered, this, fn);
    return a;
  };
  QAction* controls =
      add(QStringLiteral("Controls"),
          QStringLiteral("Show or hide the controls column (more room for the charts in a small window)"),
          [this](bool on) { controls_area_->setVisible(on); });
  controls->setCheckable(true);
  controls->setChecked(true);
  controls->setObjectName(QStringLiteral("toggleControls"));
  controls->setShortcut(QKeySequence(QStringLiteral("Ctrl+B")));
  add(QStringLiteral("Add profile folder\u2026"), QStringLiteral("Watch a folder of model / GPU YAML profiles"),
      [this] {
        const QString d = QFileDialog::getExistingDirectory(this, QStringLiteral("Profile folder"));
        if (!d.isEmpty()) add_profile_folder(d);
      });
  add(QStringLiteral("Load calibration\u2026"), QStringLiteral("calibration.yaml from kvcap calibrate"),
      [this] { ask_calibration(); });
  add(QStringLiteral("Simulate\u2026"),
      QStringLiteral(
          "Simulate this deployment on a workload or a trace (off the GUI thread; cancel in the status bar)"),
      [this] { ask_simulation(); });
  add(QStringLiteral("Load simulation\u2026"), QStringLiteral("timeline CSV from kvcap simulate --timeline"), [this] {
    const QString f =
        QFileDialog::getOpenFileName(this, QStringLiteral("Simulation timeline"), {}, QStringLiteral("CSV (*.csv)"));
    if (!f.isEmpty()) load_timeline(f);
  });
  bar->addSeparator();
  pin_ = add(QStringLiteral("Pin baseline"),
             QStringLiteral("Keep the current deployment drawn, dimmed, in every chart and compare what you "
                            "change against it (again: unpin)"),
             [this](bool on) { on ? model_.pin_baseline() : model_.clear_baseline(); });
  pin_->setCheckable(true);
  pin_->setObjectName(QStringLiteral("pinBaseline"));
  bar->addSeparator();
  add(QStringLiteral("Export\u2026"),
      QStringLiteral("The whole dashboard or one chart as PNG or SVG, at the resolution you choose"),
      [this] { ask_export(); });
  add(QStringLiteral("Export CSV\u2026"), QStringLiteral("The main chart's data as CSV"), [this] {
    const QString f = QFileDialog::getSaveFileName(this, QStringLiteral("Export CSV"),
                                                   QStringLiteral("concurrency.csv"), QStringLiteral("CSV (*.csv)"));
    if (!f.isEmpty())
      guarded(QStringLiteral("Export CSV"), [&] {
        export_main_csv(f);
        statusBar()->showMessage(QStringLiteral("Wrote %1: the main chart's data and every setting, CSV").arg(f),
                                 10000);
      });
  });
  add(QStringLiteral("Copy kvcap plan"), QStringLiteral("Copy the equivalent kvcap plan command lines"), [this] {
    copy_plan_command();
    statusBar()->showMessage(QStringLiteral("Copied: ") + plan_command_text().section(QLatin1Char('\n'), 0, 0), 4000);
  });
}

void DashboardWindow::redraw() {
  for (const auto& r : model_.results())
    if (r.model) {
      sizing_->set_model(*r.model);
      break;
    }
  legend_->refresh(model_);
  comparison_->refresh(model_);
  if (pin_) pin_->setChecked(model_.baseline().has_value());
  concurrency_->refresh(model_);
  memory_->refresh(model_);
  decode_->refresh(model_);
  kv_bytes_->refresh(model_);
  kv_util_->refresh(model_);
  const auto problems = model_.problems();
  QStringList texts;
  std::map<std::string, QString> by_field;
  for (const auto& p : problems) {
    texts << p.text;
    if (!p.field.empty() && !by_field.count(p.field)) by_field[p.field] = p.text;
  }
  errors_->set_errors(texts);
  controls_->mark_problems(by_field);
  controls_->set_calibration_text(model_.calibration() ? QString::fromStdString(model_.calibration_path()) : QString());
  status_->setText(QStringLiteral("%1 model(s) \u00b7 recomputed in %2 ms")
                       .arg(model_.results().size())
                       .arg(model_.last_recompute_ms(), 0, 'f', 1));
  rates_->setText(QStringLiteral("speed rates: ") + model_.rate_source_text() +
                  (model_.calibration_in_use()
                       ? QStringLiteral(" (") + QString::fromStdString(model_.calibration_path()) + ")"
                       : QString()));
}

QString DashboardWindow::status_message() const {
  return statusBar()->currentMessage();
}

void DashboardWindow::add_profile_folder(const QString& dir) {
  library_.add_folder(dir);
}

void DashboardWindow::ask_calibration() {
  const QString f =
      QFileDialog::getOpenFileName(this, QStringLiteral("Calibration"), {}, QStringLiteral("YAML (*.yaml *.yml)"));
  if (!f.isEmpty()) load_calibration(f);
}

bool DashboardWindow::load_calibration(const QString& path) {
  return model_.load_calibration(path.toStdString());
}

bool DashboardWindow::load_timeline(const QString& path) {
  return model_.load_timeline(path.toStdString());
}

const std::vector<std::pair<DashboardWindow::ExportView, QString>>& DashboardWindow::export_views() {
  static const std::vector<std::pair<ExportView, QString>> views = {
      {ExportView::dashboard, QStringLiteral("the whole dashboard")},
      {ExportView::concurrency, QStringLiteral("main chart: concurrency vs context")},
      {ExportView::memory, QStringLiteral("memory per GPU")},
      {ExportView::decode, QStringLiteral("decode speed")},
      {ExportView::kv_bytes, QStringLiteral("KV cache per token")},
      {ExportView::kv_utilization, QStringLiteral("KV utilisation over time")}};
  return views;
}

namespace {
// A chart of type T drawn afresh from the model at the export's size (the one on screen keeps its size).
template <class T>
void save_fresh(const DashboardModel& model, const QString& path, QSize size) {
  T chart;
  // Alone in a file, a chart names its models itself (on screen the model legend above the charts does).
  if constexpr (requires { chart.set_model_markers(true); }) chart.set_model_markers(true);
  chart.refresh(model);
  save_chart(&chart, path, size);
}
}  // namespace

QString DashboardWindow::export_view(ExportView view, const QString& path, QSize size) {
  switch (view) {
    case ExportView::dashboard: {
      const QSize before = this->size();
      struct Restore {
        QWidget* w;
        QSize s;
        ~Restore() { w->resize(s); }
      } restore{this, before};
      save_widget(this, path, size, windowTitle());
      break;
    }
    case ExportView::concurrency:
      save_fresh<ConcurrencyChart>(model_, path, size);
      break;
    case ExportView::memory:
      save_fresh<MemoryBreakdownChart>(model_, path, size);
      break;
    case ExportView::decode:
      save_fresh<DecodeSpeedChart>(model_, path, size);
      break;
    case ExportView::kv_bytes:
      save_fresh<KvBytesChart>(model_, path, size);
      break;
    case ExportView::kv_utilization:
      save_fresh<KvUtilizationChart>(model_, path, size);
      break;
  }
  QString what;
  for (const auto& [v, name] : export_views())
    if (v == view) what = name;
  QString msg = QStringLiteral("Wrote %1: %2, %3\u00d7%4 %5")
                    .arg(QFileInfo(path).absoluteFilePath(), what, QString::number(size.width()),
                         QString::number(size.height()), QFileInfo(path).suffix().toUpper());
  statusBar()->showMessage(msg, 10000);
  return msg;
}

void DashboardWindow::ask_export() {
  QDialog dialog(this);
  dialog.setWindowTitle(QStringLiteral("Export"));
  auto* form = new QFormLayout(&dialog);
  auto* what = new QComboBox;
  for (const auto& [v, name] : export_views()) what->addItem(name, int(v));
  auto* width = new QSpinBox;
  auto* height = new QSpinBox;
  for (auto* s : {width, height}) s->setRange(100, 20000);
  width->setValue(1920);
  height->setValue(1080);
  auto* format = new QComboBox;
  format->addItems({QStringLiteral("PNG"), QStringLiteral("SVG")});
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  form->addRow(QStringLiteral("what"), what);
  form->addRow(QStringLiteral("width (px)"), width);
  form->addRow(QStringLiteral("height (px)"), height);
  form->addRow(QStringLiteral("format"), format);
  form->addRow(buttons);
  if (dialog.exec() != QDialog::Accepted) return;
  const QString ext = format->currentText().toLower();
  const QString f = QFileDialog::getSaveFileName(this, QStringLiteral("Export"), QStringLiteral("kvcap.") + ext,
                                                 format->currentText() + QStringLiteral(" (*.") + ext + ")");
  if (f.isEmpty()) return;
  guarded(QStringLiteral("Export"), [&] {
    const QString msg = export_view(ExportView(what->currentData().toInt()), f, QSize(width->value(), height->value()));
    plain_message(this, QMessageBox::Information, QStringLiteral("Export"), msg);
  });
}

bool DashboardWindow::start_simulation(const SimulationSpec& spec) {
  try {
    QString label;
    sim::SimulationRequest request = simulation_request(model_, spec, &label);
    if (!runner_.start(std::move(request), label)) {
      statusBar()->showMessage(QStringLiteral("A simulation is running: cancel it first"), 10000);
      return false;
    }
    last_simulation_ = spec;
    sim_progress_->setValue(0);
    sim_progress_->setVisible(true);
    sim_cancel_->setVisible(true);
    statusBar()->showMessage(QStringLiteral("Simulating: ") + label);
    return true;
  } catch (const std::exception& e) {
    statusBar()->showMessage(QStringLiteral("Cannot simulate: ") + QString::fromStdString(e.what()), 15000);
    return false;
  }
}

void DashboardWindow::ask_simulation() {
  QDialog dialog(this);
  dialog.setWindowTitle(QStringLiteral("Simulate this deployment"));
  auto* form = new QFormLayout(&dialog);
  const SimulationSpec& s = last_simulation_;
  auto* rate = new QDoubleSpinBox;
  rate->setRange(0.01, 1e6);
  rate->setDecimals(2);
  rate->setValue(s.rate_per_s);
  rate->setSuffix(QStringLiteral(" req/s"));
  auto* prompt = new QSpinBox;
  auto* output = new QSpinBox;
  for (auto* b : {prompt, output}) {
    b->setRange(1, 1 << 24);
    b->setSuffix(QStringLiteral(" tokens"));
  }
  prompt->setValue(int(std::min<i64>(s.prompt_tokens, prompt->maximum())));
  output->setValue(int(std::min<i64>(s.output_tokens, output->maximum())));
  auto* duration = new QDoubleSpinBox;
  duration->setRange(1, 86400);
  duration->setValue(s.duration_s);
  duration->setSuffix(QStringLiteral(" s"));
  auto* trace = new QLineEdit(QString::fromStdString(s.trace_path));
  trace->setPlaceholderText(QStringLiteral("optional: a CSV trace replaces the Poisson workload"));
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  form->addRow(QStringLiteral("Poisson arrivals"), rate);
  form->addRow(QStringLiteral("prompt"), prompt);
  form->addRow(QStringLiteral("output"), output);
  form->addRow(QStringLiteral("duration"), duration);
  form->addRow(QStringLiteral("trace (CSV)"), trace);
  form->addRow(buttons);
  if (dialog.exec() != QDialog::Accepted) return;
  SimulationSpec spec = s;
  spec.rate_per_s = rate->value();
  spec.prompt_tokens = prompt->value();
  spec.output_tokens = output->value();
  spec.duration_s = duration->value();
  spec.trace_path = trace->text().trimmed().toStdString();
  if (!start_simulation(spec)) plain_message(this, QMessageBox::Warning, QStringLiteral("Simulate"), status_message());
}

void DashboardWindow::export_main_chart(const QString& path) {
  const QSize size =
      concurrency_->size().isValid() && concurrency_->width() >= 100 ? concurrency_->size() : QSize(1200, 750);
  save_chart(concurrency_, path, size);
}

void DashboardWindow::export_main_csv(const QString& path) {
  save_text(path, QByteArray::fromStdString(concurrency_->csv()));
}

QString DashboardWindow::plan_command_text() const {
  QStringList lines;
  // The calibration only when the speeds use it: kvcap plan refuses one from another device (E302).
  for (const auto& l :
       plan_command_lines(model_.settings(), model_.calibration_in_use() ? model_.calibration_path() : std::string()))
    lines << QString::fromStdString(l);
  return lines.join(QLatin1Char('\n'));
}

void DashboardWindow::copy_plan_command() {
  QApplication::clipboard()->setText(plan_command_text());
}

QImage DashboardWindow::screenshot(QSize size) {
  return render_image(this, size);
}

}  // namespace kvcap::gui
