#include "controls_panel.hpp"

#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QVBoxLayout>
#include <algorithm>

#include "kvcap/planner/dtype.hpp"
#include "profile_library.hpp"
#include "style.hpp"

namespace kvcap::gui {

namespace {
QString qs(std::string_view s) {
  return QString::fromUtf8(s.data(), qsizetype(s.size()));
}

void fill_dtypes(QComboBox* box, bool (*accept)(const DTypeInfo&), const QString& auto_text) {
  box->addItem(auto_text, qs(name(DType::auto_)));
  for (const auto& i : dtype_table())
    if (i.dtype != DType::auto_ && accept(i)) box->addItem(qs(i.name), qs(i.name));
}

DType dtype_of(const QComboBox* box) {
  return parse_dtype(box->currentData().toString().toStdString()).value_or(DType::auto_);
}

void select_data(QComboBox* box, const QVariant& v) {
  const int i = box->findData(v);
  if (i >= 0) box->setCurrentIndex(i);
}
}  // namespace

ControlsPanel::ControlsPanel(const ProfileLibrary& library, QWidget* parent) : QWidget(parent), library_(library) {
  setObjectName(QStringLiteral("controls"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);

  auto* models_box = new QGroupBox(QStringLiteral("Models"));
  auto* mlay = new QVBoxLayout(models_box);
  models_ = new QListWidget;
  models_->setObjectName(QStringLiteral("models"));
  models_->setMinimumHeight(120);
  mlay->addWidget(models_);
  layout->addWidget(models_box, 1);

  auto* dep_box = new QGroupBox(QStringLiteral("Deployment (vLLM flags)"));
  auto* form = new QFormLayout(dep_box);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  gpu_ = new QComboBox;
  gpu_->setObjectName(QStringLiteral("gpu"));
  num_gpus_ = new QSpinBox;
  num_gpus_->setObjectName(QStringLiteral("numGpus"));
  num_gpus_->setRange(1, 4096);
  num_gpus_->setToolTip(QStringLiteral("--num-gpus: total GPUs; beyond TP \u00d7 PP they are data-parallel replicas"));
  tp_ = new QSpinBox;
  tp_->setObjectName(QStringLiteral("tensorParallelSize"));
  tp_->setRange(1, 128);
  pp_ = new QSpinBox;
  pp_->setObjectName(QStringLiteral("pipelineParallelSize"));
  pp_->setRange(1, 64);
  dcp_ = new QSpinBox;
  dcp_->setObjectName(QStringLiteral("decodeContextParallelSize"));
  dcp_->setRange(1, 128);
  dcp_->setToolTip(
      QStringLiteral("--decode-context-parallel-size: split each request's KV over this many TP ranks "
                     "that would otherwise hold the same KV heads"));
  expert_parallel_ = new QCheckBox;
  expert_parallel_->setObjectName(QStringLiteral("enableExpertParallel"));
  expert_parallel_->setToolTip(
      QStringLiteral("--enable-expert-parallel: routed experts split over all GPUs; each "
                     "data-parallel replica keeps its own KV cache (MoE models)"));
  quantization_ = new QComboBox;
  quantization_->setObjectName(QStringLiteral("quantization"));
  fill_dtypes(
      quantization_, [](const DTypeInfo& i) { return i.weights_ok; }, QStringLiteral("auto (checkpoint's)"));
  kv_dtype_ = new QComboBox;
  kv_dtype_->setObjectName(QStringLiteral("kvCacheDtype"));
  fill_dtypes(
      kv_dtype_, [](const DTypeInfo& i) { return i.kv_ok; }, QStringLiteral("auto (model dtype)"));
  utilization_ = new QDoubleSpinBox;
  utilization_->setObjectName(QStringLiteral("gpuMemoryUtilization"));
  utilization_->setRange(0.05, 1.0);
  utilization_->setSingleStep(0.01);
  utilization_->setDecimals(2);
  block_size_ = new QComboBox;
  block_size_->setObjectName(QStringLiteral("blockSize"));
  for (int b : {1, 8, 16, 32, 64, 128}) block_size_->addItem(QString::number(b), b);
  max_batched_ = new QSpinBox;
  max_batched_->setObjectName(QStringLiteral("maxNumBatchedTokens"));
  max_batched_->setRange(0, 1 << 20);
  max_batched_->setSingleStep(1024);
  max_batched_->setSpecialValueText(QStringLiteral("auto"));
  max_batched_->setToolTip(
      QStringLiteral("--max-num-batched-tokens: tokens per step (auto: vLLM serve's default); sets "
                     "the activation peak and how many tokens a sliding-window layer holds"));
  shared_prefix_ = new QSpinBox;
  shared_prefix_->setObjectName(QStringLiteral("sharedPrefixTokens"));
  shared_prefix_->setRange(0, 1 << 20);
  shared_prefix_->setSingleStep(256);
  shared_prefix_->setSuffix(QStringLiteral(" tokens"));
  shared_prefix_->setToolTip(
      QStringLiteral("--shared-prefix-tokens: a common system prompt held once (prefix caching)"));
  speed_context_ = new QComboBox;
  speed_context_->setObjectName(QStringLiteral("speedContext"));
  for (int e = 10; e <= 20; ++e)
    speed_context_->addItem(tokens_label(1LL << e), QVariant::fromValue<qlonglong>(1LL << e));

  // Combos may shrink below their longest entry (the popup still shows it whole).
  for (auto* box : {gpu_, quantization_, kv_dtype_, block_size_, speed_context_}) {
    box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    box->setMinimumContentsLength(6);
  }
  form->addRow(QStringLiteral("GPU"), gpu_);
  form->addRow(QStringLiteral("GPUs"), num_gpus_);
  form->addRow(QStringLiteral("tensor parallel"), tp_);
  form->addRow(QStringLiteral("pipeline parallel"), pp_);
  form->addRow(QStringLiteral("decode context par."), dcp_);
  form->addRow(QStringLiteral("expert parallel"), expert_parallel_);
  form->addRow(QStringLiteral("weights"), quantization_);
  form->addRow(QStringLiteral("KV cache dtype"), kv_dtype_);
  form->addRow(QStringLiteral("gpu_memory_util."), utilization_);
  form->addRow(QStringLiteral("block size"), block_size_);
  form->addRow(QStringLiteral("max batched tokens"), max_batched_);
  form->addRow(QStringLiteral("shared prefix"), shared_prefix_);
  form->addRow(QStringLiteral("speed at context"), speed_context_);
  layout->addWidget(dep_box);

  refresh_profiles();
  set_settings(default_settings());

  connect(models_, &QListWidget::itemChanged, this, &ControlsPanel::changed);
  for (auto* box : {gpu_, quantization_, kv_dtype_, block_size_, speed_context_})
    connect(box, &QComboBox::currentIndexChanged, this, &ControlsPanel::changed);
  connect(expert_parallel_, &QCheckBox::toggled, this, &ControlsPanel::changed);
  for (auto* spin : {num_gpus_, dcp_, max_batched_, shared_prefix_})
    connect(spin, &QSpinBox::valueChanged, this, &ControlsPanel::changed);
  for (auto* spin : {tp_, pp_}) connect(spin, &QSpinBox::valueChanged, this, &ControlsPanel::parallelism_changed);
  connect(utilization_, &QDoubleSpinBox::valueChanged, this, &ControlsPanel::changed);
}

void ControlsPanel::changed() {
  if (!quiet_) emit settings_changed();
}

void ControlsPanel::parallelism_changed() {
  // GPUs come in whole replicas of TP x PP: step by a replica, and grow to one when TP x PP outgrows them.
  const int per_replica = tp_->value() * pp_->value();
  const bool was = quiet_;
  quiet_ = true;
  num_gpus_->setSingleStep(per_replica);
  if (num_gpus_->value() < per_replica) num_gpus_->setValue(per_replica);
  quiet_ = was;
  changed();
}

void ControlsPanel::refresh_profiles() {
  const auto selected = settings().models;
  const QString gpu = gpu_->currentData().toString();
  const bool was = quiet_;
  quiet_ = true;
  models_->clear();
  auto add_item = [&](const std::string& key, const QString& label, const QString& tooltip, bool bad) {
    auto* item = new QListWidgetItem(label, models_);
    item->setData(Qt::UserRole, QString::fromStdString(key));
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable | Qt::ItemIsSelectable);
    item->setCheckState(Qt::Unchecked);
    item->setToolTip(tooltip);
    if (bad) item->setForeground(QColor(0xB00020));
  };
  for (const auto& e : library_.models())
    add_item(e.key, QString::fromStdString(e.error.empty() ? e.label : e.label + "  (does not load)"),
             QString::fromStdString(e.builtin ? "built-in profile" : (e.error.empty() ? e.key : e.error)),
             !e.error.empty());
  // Selected keys the library does not list (a path given on the command line, a deleted file).
  for (const auto& key : selected) {
    bool listed = false;
    for (const auto& e : library_.models()) listed |= e.key == key;
    if (!listed) add_item(key, QString::fromStdString(key), QString::fromStdString(key), false);
  }
  check_in_order(selected);
  gpu_->clear();
  for (const auto& e : library_.gpus())
    gpu_->addItem(QString::fromStdString(e.error.empty() ? e.label : e.label + "  (does not load)"),
                  QString::fromStdString(e.key));
  if (!gpu.isEmpty() && gpu_->findData(gpu) < 0) gpu_->addItem(gpu, gpu);
  select_data(gpu_, gpu);
  quiet_ = was;
}

void ControlsPanel::check_in_order(const std::vector<std::string>& keys) {
  for (int i = 0; i < models_->count(); ++i) models_->item(i)->setCheckState(Qt::Unchecked);
  int row = 0;
  for (const auto& key : keys)
    for (int i = row; i < models_->count(); ++i)
      if (models_->item(i)->data(Qt::UserRole).toString().toStdString() == key) {
        QListWidgetItem* item = models_->takeItem(i);
        item->setCheckState(Qt::Checked);
        models_->insertItem(row++, item);
        break;
      }
}

DashboardSettings ControlsPanel::settings() const {
  DashboardSettings s;
  for (int i = 0; i < models_->count(); ++i)
    if (models_->item(i)->checkState() == Qt::Checked)
      s.models.push_back(models_->item(i)->data(Qt::UserRole).toString().toStdString());
  s.gpu = gpu_->currentData().toString().toStdString();
  Deployment& d = s.deployment;
  d = base_;
  d.num_gpus = num_gpus_->value();
  d.tensor_parallel_size = tp_->value();
  d.pipeline_parallel_size = pp_->value();
  d.decode_context_parallel_size = dcp_->value();
  d.enable_expert_parallel = expert_parallel_->isChecked();
  d.quantization = dtype_of(quantization_);
  d.kv_cache_dtype = dtype_of(kv_dtype_);
  d.gpu_memory_utilization = utilization_->value();
  d.block_size = block_size_->currentData().toInt();
  d.max_num_batched_tokens =
      max_batched_->value() > 0 ? std::optional<i64>(max_batched_->value()) : std::nullopt;  // 0 shows "auto"
  d.shared_prefix_tokens = shared_prefix_->value();
  s.speed_context_tokens = speed_context_->currentData().toLongLong();
  return s;
}

void ControlsPanel::set_settings(const DashboardSettings& s) {
  const bool was = quiet_;
  quiet_ = true;
  // Keys not in the library (paths from the command line) get their own entries.
  for (const auto& key : s.models) {
    bool listed = false;
    for (int i = 0; i < models_->count(); ++i)
      listed |= models_->item(i)->data(Qt::UserRole).toString().toStdString() == key;
    if (!listed) {
      auto* item = new QListWidgetItem(QString::fromStdString(key), models_);
      item->setData(Qt::UserRole, QString::fromStdString(key));
      item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable | Qt::ItemIsSelectable);
    }
  }
  check_in_order(s.models);
  const QString gpu = QString::fromStdString(s.gpu);
  if (gpu_->findData(gpu) < 0) gpu_->addItem(gpu, gpu);
  select_data(gpu_, gpu);
  const Deployment& d = s.deployment;
  base_ = d;
  tp_->setValue(int(d.tensor_parallel_size));
  pp_->setValue(int(d.pipeline_parallel_size));
  dcp_->setValue(int(d.decode_context_parallel_size));
  expert_parallel_->setChecked(d.enable_expert_parallel);
  num_gpus_->setSingleStep(int(d.tensor_parallel_size * d.pipeline_parallel_size));
  num_gpus_->setValue(int(d.num_gpus > 0 ? d.num_gpus : d.tensor_parallel_size * d.pipeline_parallel_size));
  select_data(quantization_, qs(name(d.quantization)));
  select_data(kv_dtype_, qs(name(d.kv_cache_dtype)));
  utilization_->setValue(d.gpu_memory_utilization);
  if (block_size_->findData(int(d.block_size)) < 0)
    block_size_->addItem(QString::number(d.block_size), int(d.block_size));
  select_data(block_size_, int(d.block_size));
  max_batched_->setValue(int(d.max_num_batched_tokens.value_or(0)));
  shared_prefix_->setValue(int(d.shared_prefix_tokens));
  if (speed_context_->findData(QVariant::fromValue<qlonglong>(s.speed_context_tokens)) < 0)
    speed_context_->addItem(tokens_label(s.speed_context_tokens),
                            QVariant::fromValue<qlonglong>(s.speed_context_tokens));
  select_data(speed_context_, QVariant::fromValue<qlonglong>(s.speed_context_tokens));
  quiet_ = was;
  changed();
}

}  // namespace kvcap::gui
