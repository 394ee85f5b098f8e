#include "sizing_panel.hpp"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QScatterSeries>
#include <QVBoxLayout>
#include <cmath>
#include <exception>

#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "style.hpp"

namespace kvcap::gui {

namespace {
QString ms_text(double s) {
  return QString::number(s * 1e3, 'f', s < 0.1 ? 1 : 0) + QStringLiteral(" ms");
}
}  // namespace

SizingPanel::SizingPanel(QWidget* parent)
    : QWidget(parent),
      prompt_(new QSpinBox),
      output_(new QSpinBox),
      load_kind_(new QComboBox),
      load_(new QDoubleSpinBox),
      ttft_ms_(new QDoubleSpinBox),
      percentile_(new QComboBox),
      tpot_ms_(new QDoubleSpinBox),
      search_(new QPushButton(QStringLiteral("Search"))),
      status_(new QLabel),
      chart_(new ParetoChart),
      best_(new QTableWidget) {
  setObjectName(QStringLiteral("sizingPanel"));
  // One GPU type per line on the right: thirteen types stay readable in a 1280-pixel window.
  chart_->chart()->legend()->setAlignment(Qt::AlignRight);
  prompt_->setObjectName(QStringLiteral("sizingPromptTokens"));
  output_->setObjectName(QStringLiteral("sizingOutputTokens"));
  load_kind_->setObjectName(QStringLiteral("sizingLoadKind"));
  load_->setObjectName(QStringLiteral("sizingLoad"));
  ttft_ms_->setObjectName(QStringLiteral("sizingTtftMs"));
  percentile_->setObjectName(QStringLiteral("sizingTtftPercentile"));
  tpot_ms_->setObjectName(QStringLiteral("sizingTpotMs"));
  search_->setObjectName(QStringLiteral("sizingSearch"));
  status_->setObjectName(QStringLiteral("sizingStatus"));
  best_->setObjectName(QStringLiteral("sizingBestTable"));
  // The ranges are the form's refusal: a value outside cannot be typed (no silent clamp after the fact).
  prompt_->setRange(1, 1'000'000);
  prompt_->setValue(1024);
  output_->setRange(1, 1'000'000);
  output_->setValue(512);
  load_kind_->addItems({QStringLiteral("requests/s (open loop)"), QStringLiteral("concurrent users (closed loop)")});
  load_->setRange(0.01, 1e6);
  load_->setDecimals(2);
  load_->setValue(10);
  ttft_ms_->setRange(1, 600'000);
  ttft_ms_->setValue(2000);
  percentile_->addItems({QStringLiteral("50"), QStringLiteral("90"), QStringLiteral("95"), QStringLiteral("99")});
  percentile_->setCurrentIndex(1);
  tpot_ms_->setRange(0.1, 10'000);
  tpot_ms_->setValue(50);
  status_->setWordWrap(true);

  auto* form = new QFormLayout;
  form->addRow(QStringLiteral("prompt tokens (mean)"), prompt_);
  form->addRow(QStringLiteral("output tokens (mean)"), output_);
  form->addRow(load_kind_, load_);
  form->addRow(QStringLiteral("TTFT target (ms)"), ttft_ms_);
  form->addRow(QStringLiteral("TTFT percentile"), percentile_);
  form->addRow(QStringLiteral("TPOT target (ms)"), tpot_ms_);
  form->addRow(search_);
  auto* left = new QVBoxLayout;
  left->addLayout(form);
  left->addWidget(status_);
  left->addStretch(1);
  auto* right = new QVBoxLayout;
  right->addWidget(chart_, 3);
  right->addWidget(best_, 2);
  auto* lay = new QHBoxLayout(this);
  lay->addLayout(left, 0);
  lay->addLayout(right, 1);

  const QStringList heads = {QStringLiteral("rank"),      QStringLiteral("GPU"),     QStringLiteral("TP"),
                             QStringLiteral("PP"),        QStringLiteral("weights"), QStringLiteral("KV"),
                             QStringLiteral("GPUs"),      QStringLiteral("TTFT"),    QStringLiteral("TPOT"),
                             QStringLiteral("tok/s/GPU"), QStringLiteral("$/hour"),  QStringLiteral("$/M out")};
  best_->setColumnCount(static_cast<int>(heads.size()));
  best_->setHorizontalHeaderLabels(heads);
  best_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  best_->setSelectionBehavior(QAbstractItemView::SelectRows);
  best_->verticalHeader()->setVisible(false);
  best_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  best_->setToolTip(QStringLiteral("The cheapest deployment of each GPU type; click a row to load it"));

  connect(search_, &QPushButton::clicked, this, [this] { search(); });
  connect(best_, &QTableWidget::cellClicked, this, [this](int row, int) {
    if (row >= 0 && static_cast<std::size_t>(row) < result_.best_per_gpu.size())
      choose(result_.best_per_gpu[static_cast<std::size_t>(row)]);
  });
  connect(chart_, &ParetoChart::candidate_clicked, this, &SizingPanel::choose);
}

void SizingPanel::set_model(const ModelSpec& m) {
  request_.model = m;
  have_model_ = true;
}

bool SizingPanel::search() {
  if (!have_model_) {
    status_->setText(QStringLiteral("Select a model in the capacity view first."));
    return false;
  }
  auto& w = request_.workload;
  w = SizingWorkload{};
  w.prompt_tokens = prompt_->value();
  w.output_tokens = output_->value();
  if (load_kind_->currentIndex() == 0)
    w.arrival_rate_per_s = load_->value();
  else
    w.concurrent_users = static_cast<i64>(std::llround(load_->value()));
  request_.targets.ttft_s = ttft_ms_->value() / 1e3;
  request_.targets.ttft_percentile = percentile_->currentText().toDouble() / 100;
  request_.targets.tpot_s = tpot_ms_->value() / 1e3;
  request_.space = SizingSpace{};
  for (const auto& n : profiles::builtin_gpu_names()) request_.space.gpus.push_back(profiles::resolve_gpu(n));
  try {
    result_ = size_cluster(request_);
  } catch (const std::exception& e) {
    result_ = SizingResult{};
    status_->setText(QStringLiteral("Cannot size: ") + display_text(e.what()));
    chart_->show_result(request_, result_);
    fill_table();
    return false;
  }
  chart_->show_result(request_, result_);
  fill_table();
  status_->setText(
      result_.feasible == 0
          ? display_text(result_.diagnosis)
          : QStringLiteral("%1 of %2 deployments meet the targets; %3 on the Pareto frontier. Cheapest: %4 "
                           "GPUs of %5, $%6/hour. Click a row or a point to load it.")
                .arg(result_.feasible)
                .arg(result_.candidates.size())
                .arg(result_.pareto.size())
                .arg(result_.candidates.front().gpus)
                .arg(display_text(result_.candidates.front().gpu))
                .arg(result_.candidates.front().cost_per_hour_usd, 0, 'f', 2));
  return result_.feasible > 0;
}

void SizingPanel::fill_table() {
  best_->setRowCount(static_cast<int>(result_.best_per_gpu.size()));
  int row = 0;
  for (const auto i : result_.best_per_gpu) {
    const auto& c = result_.candidates[i];
    const QStringList cells = {
        QString::number(i + 1),
        display_text(c.gpu),
        QString::number(c.tp) + QString::fromStdString(ep_text(c)),
        QString::number(c.pp),
        QString::fromStdString(std::string(name(c.weight_dtype))),
        QString::fromStdString(std::string(name(c.kv_dtype))),
        QString::number(c.gpus),
        ms_text(c.ttft_s),
        ms_text(c.tpot_s),
        QString::number(c.tokens_per_s_per_gpu, 'f', 0),
        c.priced ? QString::number(c.cost_per_hour_usd, 'f', 2) : QStringLiteral("n/a"),
        c.priced ? QString::number(c.cost_per_million_output_tokens_usd, 'f', 3) : QStringLiteral("n/a")};
    for (int col = 0; col < cells.size(); ++col) best_->setItem(row, col, new QTableWidgetItem(cells[col]));
    ++row;
  }
}

void SizingPanel::choose(std::size_t index) {
  if (index >= result_.feasible || !result_.candidates[index].deployment) return;
  const auto& c = result_.candidates[index];
  status_->setText(
      QStringLiteral("Loaded #%1: %2 x %3 TP%4%5 into the capacity view.")
          .arg(index + 1)
          .arg(c.replicas)
          .arg(display_text(c.gpu))
          .arg(c.tp)
          .arg((c.pp > 1 ? QStringLiteral(" PP%1").arg(c.pp) : QString()) + QString::fromStdString(ep_text(c))));
  emit deployment_chosen(c.gpu, *c.deployment);
}

}  // namespace kvcap::gui
