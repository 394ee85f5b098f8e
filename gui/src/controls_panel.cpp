#include "controls_panel.hpp"

#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <tuple>

#include "kvcap/planner/dtype.hpp"
#include "kvcap/profiles/flags.hpp"
#include "kvcap/profiles/units.hpp"
#include "profile_library.hpp"
#include "style.hpp"

namespace kvcap::gui {

namespace {
constexpr const char* kUtilizationTip = "--gpu-memory-utilization: fraction of device memory vLLM may use, (0, 1]";

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
  build_form(form);
  layout->addWidget(dep_box);
  for (QWidget* w : dep_box->findChildren<QWidget*>()) tooltips_[w] = w->toolTip();

  refresh_profiles();
  set_settings(default_settings());

  connect(models_, &QListWidget::itemChanged, this, &ControlsPanel::changed);
  for (auto* box : {gpu_, quantization_, kv_dtype_, block_size_, speed_context_, kv_group_, all2all_})
    connect(box, &QComboBox::currentIndexChanged, this, &ControlsPanel::changed);
  connect(expert_parallel_, &QCheckBox::toggled, this, &ControlsPanel::changed);
  // A what-if text the flag reader takes becomes the value kept; one it refuses leaves the last taken.
  for (auto* edit : {kv_eviction_, kv_sharing_})
    connect(edit, &QLineEdit::editingFinished, this, [this] {
      base_ = with_what_ifs(base_, nullptr);
      changed();
    });
  for (auto* spin : {dcp_, max_model_len_, max_seqs_, max_batched_, shared_prefix_, redundant_})
    connect(spin, &QSpinBox::valueChanged, this, &ControlsPanel::changed);
  for (auto* spin : {dp_, tp_, pp_}) connect(spin, &QSpinBox::valueChanged, this, &ControlsPanel::parallelism_changed);
  connect(kv_memory_, &QDoubleSpinBox::valueChanged, this, &ControlsPanel::changed);
  // TensorRT-LLM's budget (a fraction given on the command line or in a deployment file) holds until this control is
  // changed: then vLLM's budget replaces it for good, as a later --gpu-memory-utilization flag does
  // (profiles/src/flags.cpp), and the tooltip says vLLM's again.
  connect(utilization_, &QDoubleSpinBox::valueChanged, this, [this] {
    if (!quiet_ && base_.free_gpu_memory_fraction) {
      base_.free_gpu_memory_fraction.reset();
      show_budget_tip();
    }
    changed();
  });
  connect(load_calibration_, &QToolButton::clicked, this, &ControlsPanel::calibration_load_requested);
  connect(clear_calibration_, &QToolButton::clicked, this, &ControlsPanel::calibration_clear_requested);
}

namespace {
QSpinBox* spin(const char* object_name, int lo, int hi, int step, const QString& tooltip) {
  auto* s = new QSpinBox;
  s->setObjectName(QString::fromLatin1(object_name));
  s->setRange(lo, hi);
  s->setSingleStep(step);
  s->setToolTip(tooltip);
  return s;
}
}  // namespace

void ControlsPanel::build_form(QFormLayout* form) {
  gpu_ = new QComboBox;
  gpu_->setObjectName(QStringLiteral("gpu"));
  num_gpus_ = new QLabel;
  num_gpus_->setObjectName(QStringLiteral("numGpus"));
  num_gpus_->setToolTip(QStringLiteral("--num-gpus: data parallel \u00d7 tensor parallel \u00d7 pipeline parallel"));
  // As wide as the flags allow (profiles::kMaxGpuCount, int tokens): a value from the command line is never cut.
  constexpr int kGpus = 100000, kTokens = std::numeric_limits<int>::max();
  dp_ = spin("dataParallelSize", 1, kGpus, 1,
             QStringLiteral("--data-parallel-size: replicas of the model, each with its own KV cache"));
  tp_ = spin("tensorParallelSize", 1, kGpus, 1, QStringLiteral("--tensor-parallel-size"));
  pp_ = spin("pipelineParallelSize", 1, kGpus, 1, QStringLiteral("--pipeline-parallel-size"));
  dcp_ = spin("decodeContextParallelSize", 1, kGpus, 1,
              QStringLiteral("--decode-context-parallel-size: split each request's KV over this many TP ranks "
                             "that would otherwise hold the same KV heads"));
  expert_parallel_ = new QCheckBox;
  expert_parallel_->setObjectName(QStringLiteral("enableExpertParallel"));
  expert_parallel_->setToolTip(
      QStringLiteral("--enable-expert-parallel: routed experts split over all GPUs; each "
                     "data-parallel replica keeps its own KV cache (MoE models)"));
  all2all_ = new QComboBox;
  all2all_->setObjectName(QStringLiteral("all2allBackend"));
  all2all_->setToolTip(
      QStringLiteral("--all2all-backend: how expert parallelism exchanges tokens across "
                     "data-parallel replicas; DeepEP's buffers take GPU memory"));
  using A = Deployment::All2All;
  for (const A b : {A::allgather_reducescatter, A::naive, A::deepep_high_throughput, A::deepep_low_latency})
    all2all_->addItem(QString::fromLatin1(all2all_backend_name(b)), int(b));
  redundant_ = spin("numRedundantExperts", 0, std::numeric_limits<int>::max(), 0,
                    QStringLiteral("--enable-eplb --eplb-config '{\"num_redundant_experts\": R}': R extra expert "
                                   "copies, ceil((E + R) / EP) experts per GPU"));
  quantization_ = new QComboBox;
  quantization_->setObjectName(QStringLiteral("quantization"));
  fill_dtypes(
      quantization_, [](const DTypeInfo& i) { return i.weights_ok; }, QStringLiteral("auto (checkpoint's)"));
  kv_dtype_ = new QComboBox;
  kv_dtype_->setObjectName(QStringLiteral("kvCacheDtype"));
  fill_dtypes(
      kv_dtype_, [](const DTypeInfo& i) { return i.kv_ok; }, QStringLiteral("auto (model dtype or checkpoint's)"));
  // Wider than vLLM accepts, so that a value out of range is shown with vLLM's reason instead of clamped.
  utilization_ = new QDoubleSpinBox;
  utilization_->setObjectName(QStringLiteral("gpuMemoryUtilization"));
  utilization_->setRange(0.0, 9.99);
  utilization_->setSingleStep(0.01);
  utilization_->setDecimals(2);
  utilization_->setToolTip(QString::fromUtf8(kUtilizationTip));
  kv_memory_ = new QDoubleSpinBox;
  kv_memory_->setObjectName(QStringLiteral("kvCacheMemory"));
  kv_memory_->setRange(0.0, 1e6);
  kv_memory_->setDecimals(2);
  kv_memory_->setSuffix(QStringLiteral(" GiB"));
  kv_memory_->setSpecialValueText(QStringLiteral("profiled"));
  kv_memory_->setToolTip(
      QStringLiteral("--kv-cache-memory: KV cache bytes per GPU given outright (vLLM skips its profiling); "
                     "profiled: gpu_memory_utilization decides"));
  block_size_ = new QComboBox;
  block_size_->setObjectName(QStringLiteral("blockSize"));
  for (int b : {1, 8, 16, 32, 64, 128}) block_size_->addItem(QString::number(b), b);
  max_model_len_ = spin("maxModelLen", 0, kTokens, 1024, QStringLiteral("--max-model-len: the longest request"));
  max_model_len_->setSpecialValueText(QStringLiteral("model's"));
  max_seqs_ = spin("maxNumSeqs", 0, kTokens, 64,
                   QStringLiteral("--max-num-seqs: requests running at once per replica (auto: vLLM serve's "
                                  "default, at most max_num_batched_tokens)"));
  max_seqs_->setSpecialValueText(QStringLiteral("auto"));
  max_batched_ = spin("maxNumBatchedTokens", 0, kTokens, 1024,
                      QStringLiteral("--max-num-batched-tokens: tokens per step (auto: vLLM serve's default); sets "
                                     "the activation peak and how many tokens a sliding-window layer holds"));
  max_batched_->setSpecialValueText(QStringLiteral("auto"));
  shared_prefix_ = spin("sharedPrefixTokens", 0, kTokens, 256,
                        QStringLiteral("--shared-prefix-tokens: a common system prompt held once (prefix caching)"));
  shared_prefix_->setSuffix(QStringLiteral(" tokens"));
  // What-ifs, not vLLM options (quality not modelled): one control per axis the cache shrinks along beside the KV
  // dtype (fewer bits: int4/int2 with their group): fewer tokens, fewer layers. Texts as the CLI's flags take them.
  kv_eviction_ = new QLineEdit;
  kv_eviction_->setObjectName(QStringLiteral("kvEviction"));
  kv_eviction_->setPlaceholderText(QStringLiteral("none"));
  kv_eviction_->setToolTip(QStringLiteral(
      "--kv-eviction (what-if): streaming:sink=4,window=4092 (StreamingLLM) or h2o:budget=0.2[,recent=R] (H2O); "
      "full-attention layers keep only those tokens"));
  kv_sharing_ = new QLineEdit;
  kv_sharing_->setObjectName(QStringLiteral("kvLayerSharing"));
  kv_sharing_->setPlaceholderText(QStringLiteral("none"));
  kv_sharing_->setToolTip(QStringLiteral(
      "--kv-layer-sharing (what-if): cla:2 (adjacent layers share one cache, CLA) or minicache:from=16 (MiniCache)"));
  kv_group_ = new QComboBox;
  kv_group_->setObjectName(QStringLiteral("kvQuantGroupSize"));
  kv_group_->setToolTip(QStringLiteral(
      "--kv-quant-group-size (what-if): values per fp16 scale + zero point of the int4 / int2 KV formats (KIVI)"));
  kv_group_->addItem(QStringLiteral("auto (32)"), 0);
  for (int g = 8; g <= 1024; g *= 2) kv_group_->addItem(QString::number(g), g);  // the powers of two the flag takes
  speed_context_ = new QComboBox;
  speed_context_->setObjectName(QStringLiteral("speedContext"));
  for (int e = 10; e <= 20; ++e)
    speed_context_->addItem(tokens_label(1LL << e), QVariant::fromValue<qlonglong>(1LL << e));
  calibration_ = new QLabel(QStringLiteral("datasheet"));
  calibration_->setObjectName(QStringLiteral("calibrationFile"));
  calibration_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  load_calibration_ = new QToolButton;
  load_calibration_->setText(QStringLiteral("\u2026"));
  load_calibration_->setObjectName(QStringLiteral("loadCalibration"));
  load_calibration_->setToolTip(
      QStringLiteral("calibration.yaml from kvcap calibrate: measured rates for the speed view"));
  clear_calibration_ = new QToolButton;
  clear_calibration_->setText(QStringLiteral("\u2715"));
  clear_calibration_->setToolTip(QStringLiteral("back to datasheet rates"));
  clear_calibration_->setObjectName(QStringLiteral("clearCalibration"));
  clear_calibration_->setEnabled(false);

  // Combos may shrink below their longest entry (the popup still shows it whole).
  for (auto* box : {gpu_, quantization_, kv_dtype_, block_size_, speed_context_, kv_group_, all2all_}) {
    box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    box->setMinimumContentsLength(6);
  }
  auto* cal_row = new QHBoxLayout;
  cal_row->addWidget(calibration_, 1);
  cal_row->addWidget(load_calibration_);
  cal_row->addWidget(clear_calibration_);
  form->addRow(QStringLiteral("GPU"), gpu_);
  form->addRow(QStringLiteral("GPUs"), num_gpus_);
  form->addRow(QStringLiteral("data parallel"), dp_);
  form->addRow(QStringLiteral("tensor parallel"), tp_);
  form->addRow(QStringLiteral("pipeline parallel"), pp_);
  form->addRow(QStringLiteral("decode context par."), dcp_);
  form->addRow(QStringLiteral("expert parallel"), expert_parallel_);
  form->addRow(QStringLiteral("all-to-all backend"), all2all_);
  form->addRow(QStringLiteral("EPLB redundant exp."), redundant_);
  form->addRow(QStringLiteral("weights"), quantization_);
  form->addRow(QStringLiteral("KV cache dtype"), kv_dtype_);
  form->addRow(QStringLiteral("gpu_memory_util."), utilization_);
  form->addRow(QStringLiteral("KV cache memory"), kv_memory_);
  form->addRow(QStringLiteral("block size"), block_size_);
  form->addRow(QStringLiteral("max_model_len"), max_model_len_);
  form->addRow(QStringLiteral("max_num_seqs"), max_seqs_);
  form->addRow(QStringLiteral("max batched tokens"), max_batched_);
  form->addRow(QStringLiteral("shared prefix"), shared_prefix_);
  form->addRow(QStringLiteral("what-if: eviction"), kv_eviction_);
  form->addRow(QStringLiteral("what-if: sharing"), kv_sharing_);
  form->addRow(QStringLiteral("what-if: KV group"), kv_group_);
  form->addRow(QStringLiteral("speed at context"), speed_context_);
  form->addRow(QStringLiteral("calibration"), cal_row);
}

void ControlsPanel::changed() {
  if (!quiet_) emit settings_changed();
}

void ControlsPanel::parallelism_changed() {
  gpus_given_.reset();  // the user chose the parallel layout: the GPU count is its product again
  update_gpu_count();
  changed();
}

i64 ControlsPanel::num_gpus() const {
  return gpus_given_ ? *gpus_given_ : i64(dp_->value()) * tp_->value() * pp_->value();
}

void ControlsPanel::update_gpu_count() {
  const i64 per_replica = i64(tp_->value()) * pp_->value();
  if (gpus_given_) {
    num_gpus_->setText(QStringLiteral("<span style='color:#B00020'>%1: not a multiple of TP \u00d7 PP = %2</span>")
                           .arg(grouped(*gpus_given_))
                           .arg(per_replica));
    return;
  }
  num_gpus_->setText(QStringLiteral("<b>%1</b> = DP %2 \u00d7 TP %3 \u00d7 PP %4")
                         .arg(grouped(num_gpus()))
                         .arg(dp_->value())
                         .arg(tp_->value())
                         .arg(pp_->value()));
}

QWidget* ControlsPanel::control_for(const std::string& field) const {
  const std::pair<const char*, QWidget*> table[] = {{"num_gpus", num_gpus_},
                                                    {"data_parallel_size", dp_},
                                                    {"tensor_parallel_size", tp_},
                                                    {"pipeline_parallel_size", pp_},
                                                    {"decode_context_parallel_size", dcp_},
                                                    {"enable_expert_parallel", expert_parallel_},
                                                    {"all2all_backend", all2all_},
                                                    {"enable_eplb", redundant_},
                                                    {"num_redundant_experts", redundant_},
                                                    {"quantization", quantization_},
                                                    {"kv_cache_dtype", kv_dtype_},
                                                    {"gpu_memory_utilization", utilization_},
                                                    {"kv_cache_memory", kv_memory_},
                                                    {"block_size", block_size_},
                                                    {"max_model_len", max_model_len_},
                                                    {"max_num_seqs", max_seqs_},
                                                    {"max_num_batched_tokens", max_batched_},
                                                    {"shared_prefix_tokens", shared_prefix_},
                                                    {"kv_eviction", kv_eviction_},
                                                    {"kv_layer_sharing", kv_sharing_},
                                                    {"kv_quant_group_size", kv_group_},
                                                    {"gpu", gpu_}};
  for (const auto& [name, w] : table)
    if (field == name) return w;
  return nullptr;
}

void ControlsPanel::mark_problems(const std::map<std::string, QString>& planner_reasons) {
  // The planner's reasons, and the what-if texts the flag reader refused (the planner never saw them).
  std::map<std::string, QString> reason_by_field = planner_reasons;
  std::map<std::string, QString> input;
  with_what_ifs(Deployment{}, &input);
  reason_by_field.insert(input.begin(), input.end());
  for (auto& [w, tip] : tooltips_) {
    if (w->property("problem").toBool()) {
      w->setProperty("problem", false);
      w->setStyleSheet(QString());
      w->setToolTip(tip);
    }
  }
  for (const auto& [field, reason] : reason_by_field) {
    QWidget* w = control_for(field);
    if (!w) continue;
    w->setProperty("problem", true);
    w->setStyleSheet(QStringLiteral("border: 2px solid #D55E00;"));
    const QString own = tooltips_.count(w) ? tooltips_.at(w) : QString();
    w->setToolTip(QStringLiteral("<b>%1</b>%2")
                      .arg(reason.toHtmlEscaped(), own.isEmpty() ? QString() : "<br>" + own.toHtmlEscaped()));
  }
}

void ControlsPanel::set_calibration_text(const QString& path) {
  calibration_->setText(path.isEmpty() ? QStringLiteral("datasheet") : QFileInfo(path).fileName());
  calibration_->setToolTip(path.isEmpty() ? QStringLiteral("datasheet rates \u00d7 default efficiency") : path);
  clear_calibration_->setEnabled(!path.isEmpty());
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

Deployment ControlsPanel::with_what_ifs(Deployment d, std::map<std::string, QString>* problems) const {
  const std::tuple<const char*, const char*, const QLineEdit*> edits[] = {
      {"kv-eviction", "kv_eviction", kv_eviction_}, {"kv-layer-sharing", "kv_layer_sharing", kv_sharing_}};
  for (const auto& [flag, field, edit] : edits) {
    const std::string text = edit->text().trimmed().toStdString();
    if (text.empty() || text == "none") {
      if (field == std::string_view("kv_eviction"))
        d.kv_eviction = {};
      else
        d.kv_layer_sharing = {};
      continue;
    }
    try {
      d = profiles::deployment_from_flags({{flag, text}}, d);
    } catch (const profiles::InputError& e) {
      if (problems) (*problems)[field] = QString::fromStdString(e.what());
    }
  }
  d.kv_quant_group_size = kv_group_->currentData().toInt();
  return d;
}

DashboardSettings ControlsPanel::settings() const {
  DashboardSettings s;
  for (int i = 0; i < models_->count(); ++i)
    if (models_->item(i)->checkState() == Qt::Checked)
      s.models.push_back(models_->item(i)->data(Qt::UserRole).toString().toStdString());
  s.gpu = gpu_->currentData().toString().toStdString();
  Deployment& d = s.deployment;
  d = base_;
  d.num_gpus = num_gpus();
  d.tensor_parallel_size = tp_->value();
  d.pipeline_parallel_size = pp_->value();
  d.decode_context_parallel_size = dcp_->value();
  d.enable_expert_parallel = expert_parallel_->isChecked();
  d.all2all_backend = static_cast<Deployment::All2All>(all2all_->currentData().toInt());
  // R > 0: EPLB with R copies; 0: EPLB off (without copies it changes no figure of the plan).
  d.num_redundant_experts = redundant_->value();
  d.enable_eplb = d.num_redundant_experts > 0;
  d.quantization = dtype_of(quantization_);
  d.kv_cache_dtype = dtype_of(kv_dtype_);
  d.gpu_memory_utilization = utilization_->value();
  // Untouched, the --kv-cache-memory control keeps the bytes it was given (one value per stage, exact); changed, it
  // gives one value for every stage. 0 shows "profiled".
  if (kv_memory_->value() != kv_memory_shown_gib_)
    d.kv_cache_memory_bytes = kv_memory_->value() > 0
                                  ? std::vector<u64>{u64(std::llround(kv_memory_->value() * 1073741824.0))}
                                  : std::vector<u64>{};
  d.block_size = block_size_->currentData().toInt();
  auto optional = [](const QSpinBox* box) {
    return box->value() > 0 ? std::optional<i64>(box->value()) : std::nullopt;
  };
  d.max_model_len = optional(max_model_len_);  // 0 shows "model's"
  d.max_num_seqs = optional(max_seqs_);        // 0 shows "auto"
  d.max_num_batched_tokens = optional(max_batched_);
  d.shared_prefix_tokens = shared_prefix_->value();
  d = with_what_ifs(d, nullptr);
  s.speed_context_tokens = speed_context_->currentData().toLongLong();
  return s;
}

void ControlsPanel::show_budget_tip() {
  // The control's own tooltip (mark_problems puts it back under a problem's reason) says which budget is in use.
  const auto& f = base_.free_gpu_memory_fraction;
  tooltips_[utilization_] =
      f ? QStringLiteral(
              "TensorRT-LLM's budget is in use: the KV cache takes free_gpu_memory_fraction %1 of the "
              "memory left free after the profiling run. Changing this returns to vLLM's budget (%2).")
              .arg(*f)
              .arg(QString::fromUtf8(kUtilizationTip))
        : QString::fromUtf8(kUtilizationTip);
  if (!utilization_->property("problem").toBool()) utilization_->setToolTip(tooltips_[utilization_]);
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
  const i64 per_replica = std::max<i64>(1, d.tensor_parallel_size * d.pipeline_parallel_size);
  const i64 gpus = d.num_gpus > 0 ? d.num_gpus : per_replica;
  dp_->setValue(int(std::max<i64>(1, gpus / per_replica)));
  gpus_given_.reset();
  if (gpus % per_replica != 0) gpus_given_ = gpus;  // kept as given: the planner says why it is wrong
  update_gpu_count();
  dcp_->setValue(int(d.decode_context_parallel_size));
  expert_parallel_->setChecked(d.enable_expert_parallel);
  select_data(all2all_, int(d.all2all_backend));
  redundant_->setValue(int(std::min<i64>(d.num_redundant_experts, std::numeric_limits<int>::max())));
  select_data(quantization_, qs(name(d.quantization)));
  select_data(kv_dtype_, qs(name(d.kv_cache_dtype)));
  utilization_->setValue(d.gpu_memory_utilization);
  show_budget_tip();
  kv_memory_->setValue(d.kv_cache_memory_bytes.empty() ? 0.0 : double(d.kv_cache_memory_bytes.front()) / 1073741824.0);
  kv_memory_shown_gib_ = kv_memory_->value();
  if (block_size_->findData(int(d.block_size)) < 0)
    block_size_->addItem(QString::number(d.block_size), int(d.block_size));
  select_data(block_size_, int(d.block_size));
  max_model_len_->setValue(int(std::min<i64>(d.max_model_len.value_or(0), max_model_len_->maximum())));
  max_seqs_->setValue(int(std::min<i64>(d.max_num_seqs.value_or(0), max_seqs_->maximum())));
  max_batched_->setValue(int(std::min<i64>(d.max_num_batched_tokens.value_or(0), max_batched_->maximum())));
  shared_prefix_->setValue(int(d.shared_prefix_tokens));
  kv_eviction_->setText(d.kv_eviction.on() ? QString::fromStdString(d.kv_eviction.describe()) : QString());
  kv_sharing_->setText(d.kv_layer_sharing.on() ? QString::fromStdString(d.kv_layer_sharing.describe()) : QString());
  if (kv_group_->findData(int(d.kv_quant_group_size)) < 0)
    kv_group_->addItem(QString::number(d.kv_quant_group_size),
                       int(d.kv_quant_group_size));  // as given: the planner says
  select_data(kv_group_, int(d.kv_quant_group_size));
  if (speed_context_->findData(QVariant::fromValue<qlonglong>(s.speed_context_tokens)) < 0)
    speed_context_->addItem(tokens_label(s.speed_context_tokens),
                            QVariant::fromValue<qlonglong>(s.speed_context_tokens));
  select_data(speed_context_, QVariant::fromValue<qlonglong>(s.speed_context_tokens));
  quiet_ = was;
  changed();
}

}  // namespace kvcap::gui
