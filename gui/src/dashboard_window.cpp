#include "dashboard_window.hpp"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QFileDialog>
#include <QGridLayout>
#include <QMessageBox>
#include <QScrollArea>
#include <QScrollBar>
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
      sizing_(new SizingPanel),
      views_(new QTabWidget),
      status_(new QLabel),
      rates_(new QLabel) {
  setWindowTitle(QStringLiteral("kvcap \u2014 LLM serving capacity"));
  setObjectName(QStringLiteral("dashboard"));

  auto* left = new QScrollArea;
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
  build_actions();

  connect(controls_, &ControlsPanel::settings_changed, this, [this] { model_.set_settings(controls_->settings()); });
  connect(&library_, &ProfileLibrary::changed, this, [this] {
    controls_->refresh_profiles();
    model_.set_settings(controls_->settings());
  });
  connect(&model_, &DashboardModel::updated, this, &DashboardWindow::redraw);
  connect(legend_, &ModelLegend::toggled, this, [this](const std::string& key) { model_.toggle_hidden(key); });
  connect(controls_, &ControlsPanel::calibration_load_requested, this, [this] {
    const QString f =
        QFileDialog::getOpenFileName(this, QStringLiteral("Calibration"), {}, QStringLiteral("YAML (*.yaml *.yml)"));
    if (!f.isEmpty()) load_calibration(f);
  });
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

template <class F>
void DashboardWindow::guarded(const QString& what, F f) {
  try {
    f();
  } catch (const std::exception& e) {
    QMessageBox::warning(this, what, QString::fromUtf8(e.what()));
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
  add(QStringLiteral("Add profile folder\u2026"), QStringLiteral("Watch a folder of model / GPU YAML profiles"),
      [this] {
        const QString d = QFileDialog::getExistingDirectory(this, QStringLiteral("Profile folder"));
        if (!d.isEmpty()) add_profile_folder(d);
      });
  add(QStringLiteral("Load calibration\u2026"), QStringLiteral("calibration.yaml from kvcap calibrate"), [this] {
    const QString f =
        QFileDialog::getOpenFileName(this, QStringLiteral("Calibration"), {}, QStringLiteral("YAML (*.yaml *.yml)"));
    if (!f.isEmpty()) load_calibration(f);
  });
  add(QStringLiteral("Load simulation\u2026"), QStringLiteral("timeline CSV from kvcap simulate --timeline"), [this] {
    const QString f =
        QFileDialog::getOpenFileName(this, QStringLiteral("Simulation timeline"), {}, QStringLiteral("CSV (*.csv)"));
    if (!f.isEmpty()) load_timeline(f);
  });
  bar->addSeparator();
  add(QStringLiteral("Export PNG\u2026"), QStringLiteral("The main chart as PNG"), [this] {
    const QString f = QFileDialog::getSaveFileName(this, QStringLiteral("Export PNG"),
                                                   QStringLiteral("concurrency.png"), QStringLiteral("PNG (*.png)"));
    if (!f.isEmpty()) guarded(QStringLiteral("Export PNG"), [&] { export_main_chart(f); });
  });
  add(QStringLiteral("Export SVG\u2026"), QStringLiteral("The main chart as SVG"), [this] {
    const QString f = QFileDialog::getSaveFileName(this, QStringLiteral("Export SVG"),
                                                   QStringLiteral("concurrency.svg"), QStringLiteral("SVG (*.svg)"));
    if (!f.isEmpty()) guarded(QStringLiteral("Export SVG"), [&] { export_main_chart(f); });
  });
  add(QStringLiteral("Export CSV\u2026"), QStringLiteral("The main chart's data as CSV"), [this] {
    const QString f = QFileDialog::getSaveFileName(this, QStringLiteral("Export CSV"),
                                                   QStringLiteral("concurrency.csv"), QStringLiteral("CSV (*.csv)"));
    if (!f.isEmpty()) guarded(QStringLiteral("Export CSV"), [&] { export_main_csv(f); });
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
                  (model_.calibration() ? QStringLiteral(" (") + QString::fromStdString(model_.calibration_path()) + ")"
                                        : QString()));
}

void DashboardWindow::add_profile_folder(const QString& dir) {
  library_.add_folder(dir);
}

bool DashboardWindow::load_calibration(const QString& path) {
  return model_.load_calibration(path.toStdString());
}

bool DashboardWindow::load_timeline(const QString& path) {
  return model_.load_timeline(path.toStdString());
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
  for (const auto& l : plan_command_lines(model_.settings(), model_.calibration_path()))
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
