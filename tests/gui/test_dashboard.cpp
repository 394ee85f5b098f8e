// The dashboard driven offscreen: controls change, charts follow the planner's numbers; bad profiles
// and files show their located errors in the window.
#include <QAction>
#include <QApplication>
#include <QBarSet>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineEdit>
#include <QListWidget>
#include <QMouseEvent>
#include <QRegularExpression>
#include <QScatterSeries>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QToolTip>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <iomanip>
#include <sstream>

#include "common.hpp"  // cli: deployment_options / deployment_from, to check the copied command line
#include "dashboard_model.hpp"
#include "dashboard_window.hpp"
#include "kvcap/planner/fit.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/speed.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "pareto_chart.hpp"
#include "profile_library.hpp"
#include "style.hpp"

using namespace kvcap;
using namespace kvcap::gui;

namespace {

bool wait_for(const std::function<bool()>& done, int timeout_ms = 5000) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > timeout_ms) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
  }
  return true;
}

void write_file(const QString& path, const std::string& text) {
  QFile f(path);
  REQUIRE(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
  f.write(text.data(), qint64(text.size()));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every drawn point of a model's curve against concurrency_at computed directly from the planner.
// Returns the number of points compared.
int check_series_against_planner(const ConcurrencyChart& chart, const std::string& key, const ModelSpec& m,
                                 const GpuSpec& g, const Deployment& d) {
  const MemoryPlan plan = plan_memory(m, g, d);
  int n = 0;
  for (auto* s : {chart.series_for(key), chart.beyond_series_for(key)}) {
    REQUIRE(s != nullptr);
    for (const QPointF& p : s->points()) {
      const auto tokens = static_cast<i64>(std::llround(std::exp2(p.x())));
      INFO(key << " at " << tokens << " tokens");
      CHECK(p.y() == Approx(concurrency_at(m, plan, tokens) * double(plan.dep.replicas)).epsilon(1e-12));
      ++n;
    }
  }
  return n;
}

double y_at(const QLineSeries* s, i64 tokens) {
  for (const QPointF& p : s->points())
    if (std::llround(std::exp2(p.x())) == tokens) return p.y();
  FAIL("no point at " << tokens << " tokens");
  return 0;
}

template <class W>
W* child(DashboardWindow& w, const char* name) {
  auto* c = w.findChild<W*>(QString::fromLatin1(name));
  REQUIRE(c != nullptr);
  return c;
}

void select_combo_data(QComboBox* box, const QString& data) {
  const int i = box->findData(data);
  REQUIRE(i >= 0);
  box->setCurrentIndex(i);
}

}  // namespace

TEST_CASE("main chart draws the default models with the planner's numbers", "[gui][dashboard]") {
  DashboardWindow w;
  const auto& results = w.model().results();
  REQUIRE(results.size() == 3);
  CHECK(results[0].key == "llama-3.1-8b");
  CHECK(results[1].key == "mistral-7b-v0.1");
  CHECK(results[2].key == "deepseek-v2-lite");
  const GpuSpec g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.num_gpus = 1;
  for (const auto& r : results) {
    CHECK(r.error.empty());
    CHECK(check_series_against_planner(*w.concurrency_chart(), r.key, profiles::resolve_model(r.key), g, d) >= 41);
  }
  // Mistral v0.1's sliding window: flat past its window. DeepSeek's MLA: far above LLaMA.
  const auto* mistral = w.concurrency_chart()->beyond_series_for("mistral-7b-v0.1");
  CHECK(y_at(mistral, 64 * 1024) == Approx(y_at(mistral, 1024 * 1024)));
  CHECK(y_at(w.concurrency_chart()->series_for("deepseek-v2-lite"), 32768) >
        2.5 * y_at(w.concurrency_chart()->series_for("llama-3.1-8b"), 32768));
  // Beyond max_model_len (Mistral v0.1: 32K) the curve is the dashed series.
  CHECK(w.concurrency_chart()->series_for("mistral-7b-v0.1")->points().back().x() == Approx(15.0));
  CHECK(w.error_panel()->count() == 0);
}

TEST_CASE("changing a control redraws the series as the planner says", "[gui][dashboard]") {
  DashboardWindow w;
  const GpuSpec g = profiles::resolve_gpu("h100-sxm");
  const ModelSpec llama = profiles::resolve_model("llama-3.1-8b");
  const double bf16 = y_at(w.concurrency_chart()->series_for("llama-3.1-8b"), 32768);

  SECTION("KV cache dtype fp8") {
    select_combo_data(child<QComboBox>(w, "kvCacheDtype"), "fp8");
    Deployment d;
    d.num_gpus = 1;
    d.kv_cache_dtype = DType::fp8;
    check_series_against_planner(*w.concurrency_chart(), "llama-3.1-8b", llama, g, d);
    const double fp8 = y_at(w.concurrency_chart()->series_for("llama-3.1-8b"), 32768);
    CHECK(fp8 == Approx(2 * bf16).epsilon(0.01));  // half the bytes per token, same memory
    CHECK(fp8 != bf16);
  }
  SECTION("tensor parallel 2: the GPU count is DP x TP x PP, and comes back with PP") {
    child<QSpinBox>(w, "tensorParallelSize")->setValue(2);
    CHECK(child<QLabel>(w, "numGpus")->text().contains("<b>2</b> = DP 1"));
    CHECK(w.controls()->settings().deployment.num_gpus == 2);
    child<QSpinBox>(w, "pipelineParallelSize")->setValue(2);
    CHECK(w.controls()->settings().deployment.num_gpus == 4);
    child<QSpinBox>(w, "pipelineParallelSize")->setValue(1);
    CHECK(w.controls()->settings().deployment.num_gpus == 2);  // not left doubled
    Deployment d;
    d.num_gpus = 2;
    d.tensor_parallel_size = 2;
    check_series_against_planner(*w.concurrency_chart(), "llama-3.1-8b", llama, g, d);
    CHECK(y_at(w.concurrency_chart()->series_for("llama-3.1-8b"), 32768) > 2 * bf16);
  }
  SECTION("more GPUs are data-parallel replicas: the chart shows all of them") {
    child<QSpinBox>(w, "dataParallelSize")->setValue(4);
    CHECK(w.controls()->settings().deployment.num_gpus == 4);
    CHECK(y_at(w.concurrency_chart()->series_for("llama-3.1-8b"), 32768) == Approx(4 * bf16));
  }
  SECTION("gpu_memory_utilization, block size, batched tokens and shared prefix") {
    child<QDoubleSpinBox>(w, "gpuMemoryUtilization")->setValue(0.8);
    select_combo_data(child<QComboBox>(w, "blockSize"), "32");
    child<QSpinBox>(w, "maxNumBatchedTokens")->setValue(2048);
    child<QSpinBox>(w, "sharedPrefixTokens")->setValue(1024);
    Deployment d;
    d.num_gpus = 1;
    d.gpu_memory_utilization = 0.8;
    d.block_size = 32;
    d.max_num_batched_tokens = 2048;
    d.shared_prefix_tokens = 1024;
    for (const auto& key : {"llama-3.1-8b", "mistral-7b-v0.1", "deepseek-v2-lite"})
      check_series_against_planner(*w.concurrency_chart(), key, profiles::resolve_model(key), g, d);
  }
  SECTION("GPU type") {
    select_combo_data(child<QComboBox>(w, "gpu"), "h200");
    Deployment d;
    d.num_gpus = 1;
    check_series_against_planner(*w.concurrency_chart(), "llama-3.1-8b", llama, profiles::resolve_gpu("h200"), d);
  }
  SECTION("models: unchecking one removes its curve") {
    auto* list = child<QListWidget>(w, "models");
    for (int i = 0; i < list->count(); ++i)
      if (list->item(i)->data(Qt::UserRole).toString() == "mistral-7b-v0.1")
        list->item(i)->setCheckState(Qt::Unchecked);
    CHECK(w.concurrency_chart()->series_for("mistral-7b-v0.1") == nullptr);
    CHECK(w.model().results().size() == 2);
  }
  SECTION("an impossible deployment shows its error, naming the field") {
    child<QSpinBox>(w, "tensorParallelSize")->setValue(3);
    CHECK(w.error_panel()->isVisibleTo(&w));
    CHECK_THAT(w.error_panel()->text().toStdString(), Catch::Contains("tensor_parallel_size"));
    CHECK(w.concurrency_chart()->series_for("llama-3.1-8b")->points().isEmpty());
    child<QSpinBox>(w, "tensorParallelSize")->setValue(1);
    CHECK(w.error_panel()->count() == 0);
  }
}

TEST_CASE("companion views follow the planner", "[gui][dashboard]") {
  DashboardWindow w;
  w.resize(1600, 1000);  // wide enough that no name is elided
  w.show();
  QCoreApplication::processEvents();
  const GpuSpec g = profiles::resolve_gpu("h100-sxm");
  const ModelSpec llama = profiles::resolve_model("llama-3.1-8b");
  Deployment d;
  d.num_gpus = 1;
  const MemoryPlan plan = plan_memory(llama, g, d);

  // Memory per GPU: first model on top, i.e. the last category of the horizontal bars.
  const auto& sets = w.memory_chart()->sets();
  REQUIRE(sets.size() == 5);
  const int last = int(w.memory_chart()->categories().size()) - 1;
  CHECK(w.memory_chart()->categories().at(last) == "llama-3.1-8b");
  CHECK(sets[0]->at(last) == Approx(double(plan.stages[0].weights_bytes) / 1073741824.0));
  CHECK(sets[1]->at(last) == Approx(double(plan.stages[0].activation_peak_bytes) / 1073741824.0));
  CHECK(sets[2]->at(last) == Approx(double(plan.stages[0].non_torch_bytes) / 1073741824.0));
  CHECK(sets[3]->at(last) == Approx(double(plan.stages[0].available_kv_bytes) / 1073741824.0));
  double total = 0;
  for (auto* s : sets) total += s->at(last);
  CHECK(total == Approx(double(g.memory_bytes) / 1073741824.0));

  // KV bytes per token: one set per model, its value in its own category.
  auto* kv = w.kv_bytes_chart()->series();
  REQUIRE(kv->count() == 3);
  CHECK(kv->barSets().at(2)->sum() == Approx(double(plan.kv_bytes_per_token_per_rank) / 1024.0));
  CHECK(w.kv_bytes_chart()->categories().at(2).startsWith("llama-3.1-8b"));

  // Decode throughput and TPOT against batch, and the bound of each point.
  const auto steps = throughput_latency_curve(make_speed_context(llama, g, plan), 4096);
  const auto tput = w.decode_chart()->throughput_series_for("llama-3.1-8b")->points();
  const auto tpot = w.decode_chart()->tpot_series_for("llama-3.1-8b")->points();
  REQUIRE(tput.size() == qsizetype(steps.size()));
  for (std::size_t i = 0; i < steps.size(); ++i) {
    CHECK(tput[qsizetype(i)].x() == Approx(std::log2(double(steps[i].batch))));
    CHECK(tput[qsizetype(i)].y() == Approx(steps[i].tokens_per_s / 1e3));  // drawn in thousands
    CHECK(tpot[qsizetype(i)].y() == Approx(steps[i].tpot_s * 1e3));
  }
  const auto marked =
      w.decode_chart()->memory_bound_markers()->count() + w.decode_chart()->compute_bound_markers()->count();
  std::size_t all_steps = 0;
  for (const auto& r : w.model().results()) all_steps += r.decode.size();
  CHECK(std::size_t(marked) == all_steps);
  CHECK(w.decode_chart()->memory_bound_markers()->count() > 0);  // batch 1 decode is memory-bound
  CHECK_THAT(w.decode_chart()->title().toStdString(), Catch::Contains("datasheet"));

  // Speed context control.
  select_combo_data(child<QComboBox>(w, "speedContext"), QString::number(32768));
  const auto steps32 = throughput_latency_curve(make_speed_context(llama, g, plan), 32768);
  CHECK(w.decode_chart()->throughput_series_for("llama-3.1-8b")->points().back().y() ==
        Approx(steps32.back().tokens_per_s / 1e3));
}

TEST_CASE("the memory bar draws the pool of --num-gpu-blocks-override, which vLLM allocates", "[gui][dashboard]") {
  DashboardWindow w;
  DashboardSettings s = w.controls()->settings();
  s.models = {"llama-3.1-8b"};
  s.deployment.kv_cache_memory_bytes = {8ull << 30};  // 4,096 blocks of 2 MiB
  s.deployment.num_gpu_blocks_override = 1000;
  w.controls()->set_settings(s);
  const auto& sets = w.memory_chart()->sets();
  REQUIRE(sets.size() == 5);
  const int last = int(w.memory_chart()->categories().size()) - 1;
  const double block_gib = 16.0 * 128 * 1024 / 1073741824.0;
  CHECK(sets[3]->at(last) == Approx(1000 * block_gib));  // KV cache: the pool, not the 8 GiB measured
  const double unused = sets[4]->at(last);
  s.deployment.num_gpu_blocks_override.reset();
  w.controls()->set_settings(s);
  CHECK(sets[3]->at(last) == Approx(8.0));
  CHECK(unused == Approx(sets[4]->at(last) + 8.0 - 1000 * block_gib));  // the rest of the 8 GiB is unused
}

TEST_CASE("a calibration file switches the speed view to calibrated, a bad one is shown", "[gui][dashboard]") {
  DashboardWindow w;
  CHECK_THAT(w.status_text().toStdString(), Catch::Contains("recomputed in"));
  // Measured on an H200: on the default H100 it is not used (kvcap plan refuses it, E302), and the panel says so.
  REQUIRE(w.load_calibration(KVCAP_TEST_DATA "/calibration-example.yaml"));
  CHECK_THAT(w.decode_chart()->title().toStdString(), Catch::Contains("datasheet"));
  CHECK_THAT(w.error_panel()->text().toStdString(), Catch::Contains("KVCAP-W302") &&
                                                        Catch::Contains("not used: the speeds are the datasheet's") &&
                                                        !Catch::Contains("--calibration-force"));
  CHECK_FALSE(w.model().calibration_in_use());  // the simulation and the speed view read this
  CHECK_THAT(w.plan_command_text().toStdString(), !Catch::Contains("--calibration"));
  auto s = w.controls()->settings();
  s.gpu = "h200";
  w.controls()->set_settings(s);
  CHECK(w.model().calibration_in_use());
  CHECK_THAT(w.decode_chart()->title().toStdString(), Catch::Contains("calibrated"));
  CHECK_THAT(w.decode_chart()->title().toStdString(), !Catch::Contains("datasheet"));
  CHECK_THAT(w.plan_command_text().toStdString(), Catch::Contains("--calibration"));
  CHECK_FALSE(w.load_calibration(KVCAP_TEST_DATA "/bad_syntax.yaml"));
  CHECK_THAT(w.error_panel()->text().toStdString(), Catch::Contains("bad_syntax.yaml:5:16"));
  CHECK_THAT(w.decode_chart()->title().toStdString(), Catch::Contains("calibrated"));  // the good one stays
}

TEST_CASE("a simulation timeline draws KV utilisation per replica", "[gui][dashboard]") {
  DashboardWindow w;
  CHECK(w.kv_utilization_chart()->replica_series().empty());
  REQUIRE(w.load_timeline(KVCAP_TEST_DATA "/timeline_small.csv"));
  const auto& series = w.kv_utilization_chart()->replica_series();
  REQUIRE(series.size() == 2);
  REQUIRE(series[1]->count() == 4);
  CHECK(series[1]->at(2) == QPointF(1.0, 100.0));
  CHECK(series[0]->at(1).y() == Approx(24.0));
  QTemporaryDir dir;
  const QString bad = dir.filePath("bad.csv");
  write_file(
      bad,
      "time_s,replica,running,waiting,kv_used_blocks,kv_total_blocks,kv_utilization,preemptions\n0,0,1,0,1,1,2,0\n");
  CHECK_FALSE(w.load_timeline(bad));
  CHECK_THAT(w.error_panel()->text().toStdString(), Catch::Contains("bad.csv:2: error: kv_utilization"));
  CHECK(w.kv_utilization_chart()->replica_series().size() == 2);  // the good one stays
}

TEST_CASE("watched profile folder: a bad file shows file:line, an edit redraws", "[gui][dashboard]") {
  DashboardWindow w;
  QTemporaryDir dir;
  REQUIRE(dir.isValid());
  QFile::copy(KVCAP_TEST_DATA "/bad_fields.yaml", dir.filePath("bad_fields.yaml"));
  std::string llama = profiles::builtin_text("models/llama-3.1-8b.yaml");
  REQUIRE(!llama.empty());
  auto replace = [](std::string s, const std::string& from, const std::string& to) {
    const auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  llama = replace(llama, "name: \"llama-3.1-8b\"", "name: \"my-llama\"");
  const QString mine = dir.filePath("my-llama.yaml");
  write_file(mine, llama);

  w.add_profile_folder(dir.path());
  CHECK(w.error_panel()->isVisibleTo(&w));
  CHECK_THAT(w.error_panel()->text().toStdString(), Catch::Contains("bad_fields.yaml:6:13: error: vocab_size"));
  CHECK_THAT(w.error_panel()->text().toStdString(), Catch::Contains("bad_fields.yaml:10:3"));

  // Select the folder's profile (keyed by its absolute path).
  const std::string key = QFileInfo(mine).absoluteFilePath().toStdString();
  DashboardSettings s = w.controls()->settings();
  s.models = {key};
  w.controls()->set_settings(s);
  REQUIRE(w.concurrency_chart()->series_for(key) != nullptr);
  const GpuSpec g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.num_gpus = 1;
  check_series_against_planner(*w.concurrency_chart(), key, profiles::parse_model(llama, "x"), g, d);
  const double before = y_at(w.concurrency_chart()->series_for(key), 32768);

  // Edit: half the KV heads. The watcher re-reads the file and the chart follows the planner.
  const std::string edited = replace(llama, "num_kv_heads: 8", "num_kv_heads: 4");
  write_file(mine, edited);
  REQUIRE(wait_for([&] { return y_at(w.concurrency_chart()->series_for(key), 32768) != before; }));
  check_series_against_planner(*w.concurrency_chart(), key, profiles::parse_model(edited, "x"), g, d);
  CHECK(y_at(w.concurrency_chart()->series_for(key), 32768) > 1.9 * before);

  // Break it: the error appears with file:line, the curve empties, nothing crashes.
  write_file(mine, replace(edited, "hidden_size: 4096", "hidden_size: [4096"));
  REQUIRE(wait_for([&] { return w.error_panel()->text().contains("my-llama.yaml:"); }));
  CHECK(w.concurrency_chart()->series_for(key)->points().isEmpty());
  // Fix it again.
  write_file(mine, edited);
  REQUIRE(wait_for([&] { return !w.error_panel()->text().contains("my-llama.yaml:"); }));
  CHECK(!w.concurrency_chart()->series_for(key)->points().isEmpty());
}

TEST_CASE("the model legend hides a model in every chart, and shows it again", "[gui][dashboard]") {
  DashboardWindow w;
  w.resize(1600, 1000);
  w.show();
  QCoreApplication::processEvents();
  const std::string key = "mistral-7b-v0.1";
  QLineSeries* s = w.concurrency_chart()->series_for(key);
  QLineSeries* beyond = w.concurrency_chart()->beyond_series_for(key);
  auto has = [](const QStringList& l, const char* prefix) {
    for (const QString& c : l)
      if (c.startsWith(QString::fromLatin1(prefix))) return true;
    return false;
  };
  REQUIRE(has(w.memory_chart()->categories(), "mistral-7b-v0.1"));
  REQUIRE(has(w.kv_bytes_chart()->categories(), "mistral-7b-v0.1"));
  // The legend names the model by its display name, with the id.
  REQUIRE(w.model_legend()->entries().size() == 3);
  CHECK(w.model_legend()->entries()[1] == "Mistral 7B v0.1");
  CHECK(w.model_legend()->toolTip().contains("Mistral 7B v0.1: <tt>mistral-7b-v0.1</tt>"));
  emit w.model_legend()->linkActivated(QString::fromStdString("toggle:" + key));
  CHECK_FALSE(s->isVisible());
  CHECK_FALSE(beyond->isVisible());
  CHECK_FALSE(w.decode_chart()->throughput_series_for(key)->isVisible());
  CHECK_FALSE(w.decode_chart()->tpot_series_for(key)->isVisible());
  CHECK_FALSE(has(w.memory_chart()->categories(), "mistral-7b-v0.1"));
  CHECK_FALSE(has(w.kv_bytes_chart()->categories(), "mistral-7b-v0.1"));
  CHECK(w.memory_chart()->categories().size() == 2);
  CHECK(w.model_legend()->text().contains("<s>"));  // still listed, struck through, to switch it back on
  // A recompute keeps the user's choice.
  child<QDoubleSpinBox>(w, "gpuMemoryUtilization")->setValue(0.85);
  CHECK_FALSE(w.concurrency_chart()->series_for(key)->isVisible());
  CHECK_FALSE(has(w.memory_chart()->categories(), "mistral-7b-v0.1"));
  emit w.model_legend()->linkActivated(QString::fromStdString("toggle:" + key));
  CHECK(s->isVisible());
  CHECK(beyond->isVisible());
  CHECK(w.decode_chart()->throughput_series_for(key)->isVisible());
  CHECK(has(w.memory_chart()->categories(), "mistral-7b-v0.1"));
  CHECK(has(w.kv_bytes_chart()->categories(), "mistral-7b-v0.1"));
}

TEST_CASE("hovering a curve or a bar shows the exact planner values", "[gui][dashboard]") {
  DashboardWindow w;
  w.resize(1400, 900);
  w.show();
  QCoreApplication::processEvents();
  const ModelSpec llama = profiles::resolve_model("llama-3.1-8b");
  Deployment d;
  d.num_gpus = 1;
  const MemoryPlan plan = plan_memory(llama, profiles::resolve_gpu("h100-sxm"), d);
  // Near 8K on the line: the tooltip snaps to the computed point.
  emit w.concurrency_chart()->series_for("llama-3.1-8b")->hovered(QPointF(13.04, 60.0), true);
  QCoreApplication::processEvents();
  const std::string tip = QToolTip::text().toStdString();
  CHECK_THAT(tip, Catch::Contains("llama-3.1-8b"));
  CHECK_THAT(tip, Catch::Contains("8,192 tokens (8K)"));
  CHECK_THAT(tip, Catch::Contains(QString::number(concurrency_at(llama, plan, 8192), 'f', 2).toStdString()));
  emit w.concurrency_chart()->series_for("llama-3.1-8b")->hovered(QPointF(13.04, 60.0), false);
  // The weights of the first model (top bar: last category).
  const int last = int(w.memory_chart()->categories().size()) - 1;
  emit w.memory_chart()->sets()[0]->hovered(true, last);
  QCoreApplication::processEvents();
  CHECK_THAT(
      QToolTip::text().toStdString(),
      Catch::Contains("weights: <b>" +
                      QString::number(double(plan.stages[0].weights_bytes) / 1073741824.0, 'f', 2).toStdString() +
                      " GiB</b>"));
}

TEST_CASE("the dashboard keeps EP, DCP and the flags it has no control for", "[gui][dashboard]") {
  DashboardWindow w;
  DashboardSettings s = w.controls()->settings();
  s.models = {"deepseek-v2-lite"};
  s.deployment.tensor_parallel_size = 2;
  s.deployment.num_gpus = 8;
  s.deployment.enable_expert_parallel = true;
  s.deployment.all2all_backend = Deployment::All2All::deepep_low_latency;
  s.deployment.enable_eplb = true;
  s.deployment.num_redundant_experts = 8;
  s.deployment.decode_context_parallel_size = 2;
  s.deployment.max_model_len = 32768;
  s.deployment.vllm_version = "0.10";
  s.deployment.mamba_cache_mode = Deployment::MambaCache::none;
  s.deployment.language_model_only = true;
  w.controls()->set_settings(s);
  CHECK(child<QCheckBox>(w, "enableExpertParallel")->isChecked());
  CHECK(child<QSpinBox>(w, "decodeContextParallelSize")->value() == 2);
  CHECK(child<QComboBox>(w, "all2allBackend")->currentText() == "deepep_low_latency");
  CHECK(child<QSpinBox>(w, "numRedundantExperts")->value() == 8);
  // A control change rebuilds the deployment from the controls, keeping what no control shows.
  child<QDoubleSpinBox>(w, "gpuMemoryUtilization")->setValue(0.8);
  const Deployment d = w.controls()->settings().deployment;
  CHECK(d.enable_expert_parallel);
  CHECK(d.all2all_backend == Deployment::All2All::deepep_low_latency);
  CHECK(d.enable_eplb);
  CHECK(d.num_redundant_experts == 8);
  CHECK(d.decode_context_parallel_size == 2);
  CHECK(d.max_model_len == 32768);
  CHECK(d.vllm_version == "0.10");
  CHECK(d.language_model_only);
  CHECK(d.gpu_memory_utilization == Approx(0.8));
  const std::string cmd = w.plan_command_text().toStdString();
  CHECK_THAT(cmd, Catch::Contains("--enable-expert-parallel"));
  CHECK_THAT(cmd, Catch::Contains("--all2all-backend deepep_low_latency"));
  CHECK_THAT(cmd, Catch::Contains("--enable-eplb"));
  CHECK_THAT(cmd, Catch::Contains("num_redundant_experts"));
  // The spin turns EPLB on with its copies and off at 0.
  child<QSpinBox>(w, "numRedundantExperts")->setValue(16);
  CHECK(w.controls()->settings().deployment.enable_eplb);
  CHECK(w.controls()->settings().deployment.num_redundant_experts == 16);
  child<QSpinBox>(w, "numRedundantExperts")->setValue(0);
  CHECK_FALSE(w.controls()->settings().deployment.enable_eplb);
  CHECK_THAT(w.plan_command_text().toStdString(), !Catch::Contains("--enable-eplb"));
  child<QSpinBox>(w, "numRedundantExperts")->setValue(8);
  CHECK_THAT(cmd, Catch::Contains("--decode-context-parallel-size 2"));
  CHECK_THAT(cmd, Catch::Contains("--max-model-len 32768"));
  CHECK_THAT(cmd, Catch::Contains("--vllm-version 0.10"));
  CHECK_THAT(cmd, Catch::Contains("--mamba-cache-mode none"));
  CHECK_THAT(cmd, Catch::Contains("--language-model-only"));
  // The planner's answer for the EP deployment: each of the 4 data-parallel replicas keeps its own KV.
  const auto plan = plan_memory(profiles::resolve_model("deepseek-v2-lite"), profiles::resolve_gpu("h100-sxm"), d);
  CHECK(plan.dep.expert_parallel_size == 8);
  // A what-if (no control for it) is kept, named in the command and marked in the chart's title.
  s = w.controls()->settings();
  s.models = {"llama-3.1-8b"};
  s.deployment = Deployment{};
  s.deployment.kv_layer_sharing.kind = Deployment::LayerSharing::Kind::cla;
  w.controls()->set_settings(s);
  CHECK_THAT(w.plan_command_text().toStdString(), Catch::Contains("--kv-layer-sharing cla:2"));
  CHECK_THAT(w.concurrency_chart()->chart()->title().toStdString(), Catch::Contains("what-if KV sharing cla:2"));
  // Only vLLM's block sizes are offered.
  CHECK(child<QComboBox>(w, "blockSize")->findData(256) < 0);
  CHECK(child<QComboBox>(w, "blockSize")->findData(128) >= 0);
}

TEST_CASE("copied kvcap plan command lines parse back to the same deployment", "[gui][dashboard]") {
  DashboardWindow w;
  child<QSpinBox>(w, "tensorParallelSize")->setValue(2);
  child<QSpinBox>(w, "dataParallelSize")->setValue(4);
  select_combo_data(child<QComboBox>(w, "kvCacheDtype"), "fp8");
  select_combo_data(child<QComboBox>(w, "quantization"), "fp8");
  child<QDoubleSpinBox>(w, "gpuMemoryUtilization")->setValue(0.85);
  select_combo_data(child<QComboBox>(w, "blockSize"), "32");
  child<QSpinBox>(w, "maxNumBatchedTokens")->setValue(4096);
  child<QSpinBox>(w, "sharedPrefixTokens")->setValue(512);
  select_combo_data(child<QComboBox>(w, "gpu"), "h200");
  w.copy_plan_command();
  const QString text = QApplication::clipboard()->text();
  CHECK(text == w.plan_command_text());
  const QStringList lines = text.split('\n');
  REQUIRE(lines.size() == 3);
  const Deployment want = w.controls()->settings().deployment;
  for (const QString& line : lines) {
    INFO(line.toStdString());
    std::vector<std::string> args;
    for (const QString& a : line.split(' ', Qt::SkipEmptyParts)) args.push_back(a.toStdString());
    REQUIRE(args.size() > 2);
    CHECK(args[0] == "kvcap");
    CHECK(args[1] == "plan");
    args.erase(args.begin(), args.begin() + 2);
    const auto vm = cli::parse(args, cli::deployment_options());
    CHECK(vm["gpu"].as<std::string>() == "h200");
    const Deployment got = cli::deployment_from(vm);
    CHECK(plan_memory(profiles::resolve_model(vm["model"].as<std::string>()), profiles::resolve_gpu("h200"), got)
              .cluster_kv_capacity_tokens ==
          plan_memory(profiles::resolve_model(vm["model"].as<std::string>()), profiles::resolve_gpu("h200"), want)
              .cluster_kv_capacity_tokens);
    CHECK(got.num_gpus == want.num_gpus);
    CHECK(got.tensor_parallel_size == want.tensor_parallel_size);
    CHECK(got.pipeline_parallel_size == want.pipeline_parallel_size);
    CHECK(got.gpu_memory_utilization == want.gpu_memory_utilization);
    CHECK(got.quantization == want.quantization);
    CHECK(got.kv_cache_dtype == want.kv_cache_dtype);
    CHECK(got.block_size == want.block_size);
    CHECK(got.max_num_batched_tokens == want.max_num_batched_tokens);
    CHECK(got.shared_prefix_tokens == want.shared_prefix_tokens);
  }
  CHECK(
      lines[0].toStdString() ==
      "kvcap plan --model llama-3.1-8b --gpu h200 --num-gpus 8 --tensor-parallel-size 2 --gpu-memory-utilization 0.85 "
      "--quantization fp8 --kv-cache-dtype fp8 --block-size 32 --max-num-batched-tokens 4096 --shared-prefix-tokens "
      "512");
}

TEST_CASE("exports: PNG and SVG of the main chart, CSV of its data, a screenshot of the window", "[gui][export]") {
  DashboardWindow w;
  QTemporaryDir dir;
  const QImage shot = w.screenshot(QSize(1000, 640));
  CHECK(shot.size() == QSize(1000, 640));
  int non_white = 0;
  for (int y = 0; y < shot.height(); y += 4)
    for (int x = 0; x < shot.width(); x += 4) non_white += shot.pixel(x, y) != qRgb(255, 255, 255);
  CHECK(non_white > 1000);

  w.export_main_chart(dir.filePath("c.png"));
  const QImage png(dir.filePath("c.png"));
  CHECK(!png.isNull());
  CHECK(png.size() == w.concurrency_chart()->size());
  w.export_main_chart(dir.filePath("c.svg"));
  const std::string svg = read_file(dir.filePath("c.svg").toStdString());
  CHECK_THAT(svg, Catch::Contains("<svg"));
  CHECK_THAT(svg, Catch::Contains("</svg>"));
  CHECK_THROWS_AS(w.export_main_chart(dir.filePath("c.jpg")), std::invalid_argument);

  w.export_main_csv(dir.filePath("c.csv"));
  const std::string csv = read_file(dir.filePath("c.csv").toStdString());
  // Every setting the planner used, resolved: formats, memory utilisation, block, limits.
  CHECK(
      csv.rfind(
          "model,gpu,num_gpus,tensor_parallel_size,pipeline_parallel_size,replicas,"
          "decode_context_parallel_size,enable_expert_parallel,dtype,quantization,kv_cache_dtype,"
          "gpu_memory_utilization,kv_cache_memory_bytes,num_gpu_blocks_override,block_size,max_model_len,max_num_seqs,"
          "max_num_batched_tokens,shared_prefix_tokens,vllm_version,context_tokens,"
          "max_concurrency_per_replica,max_concurrency_total,beyond_max_model_len\n",
          0) == 0);
  const ModelSpec llama = profiles::resolve_model("llama-3.1-8b");
  Deployment d;
  d.num_gpus = 1;
  const double want = concurrency_at(llama, plan_memory(llama, profiles::resolve_gpu("h100-sxm"), d), 32768);
  std::ostringstream row;
  row << std::setprecision(10);  // the export's 10 significant digits (kvcap plan's CSV)
  const ResolvedDeployment r = resolve(llama, profiles::resolve_gpu("h100-sxm"), d);
  row << "llama-3.1-8b,h100-sxm,1,1,1,1,1,0,bf16,bf16,bf16,0.9,,,16,131072,1024,8192,0," << r.d.vllm_version
      << ",32768," << want << "," << want << ",0\n";
  CHECK_THAT(csv, Catch::Contains(row.str()));
}

TEST_CASE("recomputing the dashboard takes milliseconds", "[gui][timing]") {
  DashboardWindow w;
  const int n = 20;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) w.model().recompute();  // planner + every chart redraw
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / n;
  WARN("recompute + redraw of 3 models: " << ms << " ms (planner alone: " << w.model().last_recompute_ms() << " ms)");
  CHECK(ms < 500);  // generous: shared CI cores; measured a few ms
}

TEST_CASE("the dashboard applies the plausibility policy as kvcap plan does", "[gui][dashboard][plausibility]") {
  ProfileLibrary library;
  DashboardModel model(library);
  DashboardSettings s;
  s.models = {"llama-3.1-8b", "llama-3.1-70b"};
  s.gpu = "h100-sxm";
  model.set_settings(s);
  const auto errors = model.errors().join("\n").toStdString();
  // 70B in bf16 on one 80 GB H100: vLLM would not start; 8B fits and says nothing.
  CHECK_THAT(errors, Catch::Contains("llama-3.1-70b: error KVCAP-E101"));
  CHECK_THAT(errors, !Catch::Contains("llama-3.1-8b:"));
}

TEST_CASE("the Pareto chart shows every feasible deployment once, one series per GPU type", "[gui][pareto]") {
  SizingRequest q;
  q.model = profiles::resolve_model("llama-3.1-70b");
  q.workload.prompt_tokens = 2048;
  q.workload.output_tokens = 256;
  q.workload.arrival_rate_per_s = 10;
  q.targets.ttft_s = 2;
  q.targets.tpot_s = 0.05;
  q.space.gpus = {profiles::resolve_gpu("h100-sxm"), profiles::resolve_gpu("h200"), profiles::resolve_gpu("l40s")};
  q.space.max_pp = 2;
  const auto r = size_cluster(q);
  REQUIRE(r.feasible > 0);
  ParetoChart chart;
  chart.show_result(q, r);
  CHECK(chart.series_count() == r.best_per_gpu.size() + 2);  // the types, the frontier's line and its rings
  const std::string& csv = chart.csv();
  CHECK(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')) == r.feasible + 1);
  std::size_t on_front = 0;
  for (auto p = csv.find(",true\n"); p != std::string::npos; p = csv.find(",true\n", p + 1)) ++on_front;
  CHECK(on_front == r.pareto.size());
}

TEST_CASE("the sizing view sizes the first model and loads a chosen deployment into the capacity view",
          "[gui][sizing]") {
  DashboardWindow w;
  auto* panel = w.sizing_panel();
  w.views()->setCurrentWidget(panel);
  child<QSpinBox>(w, "sizingPromptTokens")->setValue(2048);
  child<QSpinBox>(w, "sizingOutputTokens")->setValue(256);
  child<QDoubleSpinBox>(w, "sizingLoad")->setValue(20);
  child<QDoubleSpinBox>(w, "sizingTpotMs")->setValue(40);
  REQUIRE(panel->search());
  // The same search as `kvcap size` over every built-in GPU for the first selected model (Llama 3.1 8B).
  SizingRequest q;
  q.model = profiles::resolve_model("llama-3.1-8b");
  q.workload.prompt_tokens = 2048;
  q.workload.output_tokens = 256;
  q.workload.arrival_rate_per_s = 20;
  q.targets.ttft_s = 2;
  q.targets.ttft_percentile = 0.9;
  q.targets.tpot_s = 0.04;
  for (const auto& n : profiles::builtin_gpu_names()) q.space.gpus.push_back(profiles::resolve_gpu(n));
  const auto r = size_cluster(q);
  REQUIRE(panel->result().feasible == r.feasible);
  REQUIRE(panel->best_table()->rowCount() == static_cast<int>(r.best_per_gpu.size()));
  CHECK(panel->best_table()->item(0, 1)->text().toStdString() == r.candidates[r.best_per_gpu[0]].gpu);
  CHECK(panel->chart()->series_count() == r.best_per_gpu.size() + 2);
  // Past the palette's 8 colours, a GPU type of a colour already used has another marker shape.
  std::vector<std::pair<QRgb, int>> looks;
  for (QAbstractSeries* s : panel->chart()->chart()->series())
    if (auto* sc = qobject_cast<QScatterSeries*>(s); sc && sc->markerSize() == 7)
      looks.emplace_back(sc->color().rgb(), int(sc->markerShape()));
  REQUIRE(looks.size() > 8);
  for (std::size_t i = 0; i < looks.size(); ++i)
    for (std::size_t j = i + 1; j < looks.size(); ++j) CHECK(looks[i] != looks[j]);
  // Clicking the second row loads that GPU type's best into the controls, and the capacity view shows its plan.
  REQUIRE(r.best_per_gpu.size() >= 2);
  const auto& c = r.candidates[r.best_per_gpu[1]];
  panel->best_table()->cellClicked(1, 0);
  CHECK(w.views()->currentIndex() == 0);
  const auto s = w.controls()->settings();
  CHECK(s.gpu == c.gpu);
  CHECK(s.deployment.tensor_parallel_size == c.tp);
  CHECK(s.deployment.pipeline_parallel_size == c.pp);
  CHECK(s.deployment.num_gpus == c.gpus);
  CHECK(s.deployment.kv_cache_dtype == c.kv_dtype);
  const auto& first = w.model().results().front();
  REQUIRE(first.plan);
  CHECK(static_cast<i64>(first.plan->kv_capacity_tokens) == c.kv_capacity_tokens);
}

TEST_CASE("TensorRT-LLM's budget: the memory bars hold back its share, the utilization control gives it up",
          "[gui][dashboard][memory]") {
  DashboardWindow w;
  w.resize(1600, 1000);
  w.show();
  QCoreApplication::processEvents();
  DashboardSettings s = w.controls()->settings();
  s.models = {"llama-3.1-8b"};
  s.gpu = "h100-sxm";
  s.deployment.free_gpu_memory_fraction = 0.9;  // as --free-gpu-memory-fraction 0.9 (or --engine trtllm) sets it
  w.controls()->set_settings(s);
  const GpuSpec g = profiles::resolve_gpu("h100-sxm");
  const ModelSpec llama = profiles::resolve_model("llama-3.1-8b");
  Deployment d;
  d.num_gpus = 1;
  d.free_gpu_memory_fraction = 0.9;
  const StagePlan st = plan_memory(llama, g, d).stages.at(0);
  constexpr double kGiB = 1073741824.0;
  const auto& sets = w.memory_chart()->sets();
  REQUIRE(w.memory_chart()->categories().size() == 1);
  // KV = 0.9 x what the profiling run leaves free; the other tenth is drawn unused, the bar ends at the device.
  CHECK(sets[3]->at(0) == Approx(double(st.available_kv_bytes) / kGiB));
  CHECK(sets[3]->at(0) == Approx(0.9 * double(unreserved_bytes(st)) / kGiB));
  CHECK(sets[4]->at(0) == Approx(0.1 * double(unreserved_bytes(st)) / kGiB).epsilon(1e-6));
  double total = 0;
  for (auto* set : sets) total += set->at(0);
  CHECK(total == Approx(double(g.memory_bytes) / kGiB));
  // No gpu_memory_utilization line: that budget is not in use, and the control says so.
  CHECK_FALSE(w.memory_chart()->requested_line()->isVisible());
  CHECK(w.memory_chart()->chart()->title().contains(QStringLiteral("TensorRT-LLM's KV budget (0.90 of free)")));
  auto* util = child<QDoubleSpinBox>(w, "gpuMemoryUtilization");
  CHECK(util->toolTip().contains("free_gpu_memory_fraction 0.9"));
  // Changing gpu_memory_utilization returns to vLLM's budget, as a later --gpu-memory-utilization flag does.
  util->setValue(0.85);
  CHECK_FALSE(w.controls()->settings().deployment.free_gpu_memory_fraction);
  Deployment v = d;
  v.free_gpu_memory_fraction.reset();
  v.gpu_memory_utilization = 0.85;
  const StagePlan vs = plan_memory(llama, g, v).stages.at(0);
  CHECK(sets[3]->at(0) == Approx(double(vs.available_kv_bytes) / kGiB));
  CHECK(sets[4]->at(0) == Approx(double(g.memory_bytes - vs.requested_bytes) / kGiB));
  CHECK(w.memory_chart()->requested_line()->isVisible());
  CHECK(w.memory_chart()->requested_line()->at(0).x() == Approx(0.85 * double(g.memory_bytes) / kGiB));
  CHECK_FALSE(w.memory_chart()->chart()->title().contains(QStringLiteral("TensorRT-LLM")));
  CHECK_FALSE(util->toolTip().contains("TensorRT-LLM"));
  // For good: setting the control back to 0.90 is vLLM's budget at 0.90, not TensorRT-LLM's again.
  util->setValue(0.9);
  CHECK_FALSE(w.controls()->settings().deployment.free_gpu_memory_fraction);
  CHECK(w.memory_chart()->requested_line()->isVisible());
  // A new deployment given whole (a profile, the command line) brings its own budget back.
  w.controls()->set_settings(s);
  CHECK(w.controls()->settings().deployment.free_gpu_memory_fraction == 0.9);
  CHECK(util->toolTip().contains("free_gpu_memory_fraction 0.9"));
}

TEST_CASE("a model that does not fit is explained with the planner's numbers and its smallest fix",
          "[gui][dashboard][fit]") {
  DashboardWindow w;
  w.resize(1280, 720);
  w.show();
  QCoreApplication::processEvents();
  DashboardSettings s = w.controls()->settings();
  s.models = {"llama-3.1-8b", "llama-3.1-70b", "deepseek-v3"};
  w.controls()->set_settings(s);
  const GpuSpec g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.num_gpus = 1;
  const auto advice = fit_advice(profiles::resolve_model("llama-3.1-70b"), g, d);
  REQUIRE(advice);
  const std::string panel = w.error_panel()->text().toStdString();
  // The panel's line is the planner's advice, once per model, with the finding's code.
  CHECK_THAT(panel, Catch::Contains("llama-3.1-70b: error KVCAP-E101: does not fit on 1\u00d7 NVIDIA H100"));
  CHECK_THAT(panel, Catch::Contains(advice->text()));
  CHECK_THAT(panel, Catch::Contains("smallest fix: TP >= 4 fits (4 GPUs)"));
  CHECK(w.error_panel()->count() == 2);  // 70B and V3: no E101 line repeated beside the explanation
  // The control the fix changes is marked, with the reason.
  auto* tp = child<QSpinBox>(w, "tensorParallelSize");
  CHECK(tp->property("problem").toBool());
  CHECK(tp->toolTip().contains("does not fit"));
  // The main chart draws the gap as a note naming both models and their fixes.
  const std::string note = w.concurrency_chart()->gap_note().toStdString();
  CHECK_THAT(note, Catch::Contains("llama-3.1-70b (fits with TP \u2265 4)"));
  CHECK_THAT(note, Catch::Contains("deepseek-v3 (fits with TP \u2265 16)"));
  CHECK(w.concurrency_chart()->series_for("llama-3.1-70b")->name().contains("does not fit: TP \u2265 4"));
  // The memory chart: lines at the device and at gpu_memory_utilization x memory, at most 5 ticks, and the
  // 630 GiB bar cut at 1.5x the device so the others stay readable.
  const double device_gib = double(g.memory_bytes) / 1073741824.0;
  const auto* dev = w.memory_chart()->device_line();
  const auto* req = w.memory_chart()->requested_line();
  REQUIRE(dev->count() == 2);
  CHECK(dev->at(0).x() == Approx(device_gib));
  CHECK(req->at(0).x() == Approx(0.9 * device_gib));
  CHECK(w.memory_chart()->axis_top_gib() <= 2 * device_gib);  // 1.5x, up to a whole tick
  CHECK(w.memory_chart()->axis_top_gib() >= device_gib);
  CHECK(w.memory_chart()->axis_top_gib() / w.memory_chart()->tick_interval_gib() <= 5.0);
  CHECK(w.memory_chart()->categories().front().endsWith(QStringLiteral("\u25b8")));  // deepseek-v3, bottom bar
  // The fix applied: TP 4 starts the 70B model; its problem, mark and note go.
  tp->setValue(4);
  CHECK_THAT(w.error_panel()->text().toStdString(), !Catch::Contains("llama-3.1-70b"));
  CHECK_THAT(w.concurrency_chart()->gap_note().toStdString(), !Catch::Contains("llama-3.1-70b"));
  CHECK(tp->property("problem").toBool());  // DeepSeek-V3 still needs TP 16
  CHECK_FALSE(w.concurrency_chart()->series_for("llama-3.1-70b")->points().isEmpty());
}

TEST_CASE("one problem of several models is listed once, marked on its control", "[gui][dashboard][fit]") {
  DashboardWindow w;
  child<QSpinBox>(w, "tensorParallelSize")->setValue(3);
  // Llama 3.1 8B and Mistral 7B share 32 heads (one message naming both); DeepSeek-V2-Lite has 16.
  const QStringList lines = w.error_panel()->text().split('\n');
  CHECK(w.error_panel()->count() == 2);
  CHECK(lines.filter(QStringLiteral("llama-3.1-8b, mistral-7b-v0.1: tensor_parallel_size")).size() == 1);
  CHECK(lines.filter(QStringLiteral("deepseek-v2-lite: tensor_parallel_size")).size() == 1);
  CHECK(child<QSpinBox>(w, "tensorParallelSize")->property("problem").toBool());
  child<QSpinBox>(w, "tensorParallelSize")->setValue(1);
  CHECK(w.error_panel()->count() == 0);
  CHECK_FALSE(child<QSpinBox>(w, "tensorParallelSize")->property("problem").toBool());
}

TEST_CASE("out-of-range input is refused in place with the reason, never clamped", "[gui][dashboard]") {
  DashboardWindow w;
  SECTION("gpu_memory_utilization 1.5 stays 1.5 and is refused") {
    auto* util = child<QDoubleSpinBox>(w, "gpuMemoryUtilization");
    util->setValue(1.5);
    CHECK(util->value() == 1.5);
    CHECK(w.controls()->settings().deployment.gpu_memory_utilization == 1.5);
    CHECK_THAT(w.error_panel()->text().toStdString(), Catch::Contains("gpu_memory_utilization: must be in (0, 1]"));
    CHECK(util->property("problem").toBool());
    CHECK(w.concurrency_chart()->series_for("llama-3.1-8b")->points().isEmpty());
    util->setValue(0.9);
    CHECK(w.error_panel()->count() == 0);
    CHECK_FALSE(util->property("problem").toBool());
  }
  SECTION("max_num_seqs above max_num_batched_tokens is refused as vLLM does; the default is capped and said") {
    child<QSpinBox>(w, "maxNumBatchedTokens")->setValue(16);
    // vLLM caps its default max_num_seqs at the token budget: the decode chart stops at 16 and says why.
    REQUIRE(!w.model().results().front().decode.empty());
    CHECK(w.model().results().front().decode.back().batch == 16);
    child<QSpinBox>(w, "maxNumSeqs")->setValue(256);
    CHECK_THAT(w.error_panel()->text().toStdString(),
               Catch::Contains("max_num_batched_tokens: must be greater than or equal to max_num_seqs 256 (got 16)"));
    CHECK(child<QSpinBox>(w, "maxNumBatchedTokens")->property("problem").toBool());
  }
  SECTION("a GPU count that is not a multiple of TP x PP is kept, shown and reported until DP, TP or PP change") {
    DashboardSettings s = w.controls()->settings();
    s.deployment.tensor_parallel_size = 2;
    s.deployment.num_gpus = 3;
    w.controls()->set_settings(s);
    CHECK(w.controls()->settings().deployment.num_gpus == 3);
    CHECK(child<QLabel>(w, "numGpus")->text().contains("not a multiple of TP \u00d7 PP = 2"));
    CHECK_THAT(w.error_panel()->text().toStdString(), Catch::Contains("num_gpus: must be a multiple"));
    CHECK(child<QLabel>(w, "numGpus")->property("problem").toBool());
    child<QSpinBox>(w, "dataParallelSize")->setValue(2);
    CHECK(w.controls()->settings().deployment.num_gpus == 4);
    CHECK(w.error_panel()->count() == 0);
  }
}

TEST_CASE("max_model_len, max_num_seqs and --kv-cache-memory controls reach the planner", "[gui][dashboard]") {
  DashboardWindow w;
  child<QSpinBox>(w, "maxModelLen")->setValue(32768);
  child<QSpinBox>(w, "maxNumSeqs")->setValue(128);
  child<QDoubleSpinBox>(w, "kvCacheMemory")->setValue(20.0);
  const Deployment got = w.controls()->settings().deployment;
  CHECK(got.max_model_len == 32768);
  CHECK(got.max_num_seqs == 128);
  REQUIRE(got.kv_cache_memory_bytes.size() == 1);
  CHECK(got.kv_cache_memory_bytes[0] == 20ull << 30);
  Deployment d;
  d.num_gpus = 1;
  d.max_model_len = 32768;
  d.max_num_seqs = 128;
  d.kv_cache_memory_bytes = {20ull << 30};
  check_series_against_planner(*w.concurrency_chart(), "llama-3.1-8b", profiles::resolve_model("llama-3.1-8b"),
                               profiles::resolve_gpu("h100-sxm"), d);
  CHECK(w.plan_command_text().contains("--max-model-len 32768 --max-num-seqs 128 --kv-cache-memory 21474836480"));
  // Back to automatic: the model's max_model_len, vLLM's max_num_seqs, the profiled KV memory.
  child<QSpinBox>(w, "maxModelLen")->setValue(0);
  child<QSpinBox>(w, "maxNumSeqs")->setValue(0);
  child<QDoubleSpinBox>(w, "kvCacheMemory")->setValue(0);
  const Deployment back = w.controls()->settings().deployment;
  CHECK_FALSE(back.max_model_len.has_value());
  CHECK_FALSE(back.max_num_seqs.has_value());
  CHECK(back.kv_cache_memory_bytes.empty());
}

TEST_CASE("the what-if controls (eviction, layer sharing, KV group) reach the planner and mark what it refuses",
          "[gui][dashboard][what_if]") {
  DashboardWindow w;
  auto* eviction = child<QLineEdit>(w, "kvEviction");
  auto* sharing = child<QLineEdit>(w, "kvLayerSharing");
  eviction->setText(QStringLiteral("h2o:budget=0.2"));
  emit eviction->editingFinished();
  sharing->setText(QStringLiteral("cla:2"));
  emit sharing->editingFinished();
  auto* kv = child<QComboBox>(w, "kvCacheDtype");
  kv->setCurrentIndex(kv->findData(QStringLiteral("int4")));
  auto* group = child<QComboBox>(w, "kvQuantGroupSize");
  group->setCurrentIndex(group->findData(64));
  const Deployment got = w.controls()->settings().deployment;
  CHECK(got.kv_eviction.describe() == "h2o:budget=0.2");
  CHECK(got.kv_layer_sharing.describe() == "cla:2");
  CHECK(got.kv_quant_group_size == 64);
  // The curves are the planner's for that deployment, and the plan line carries every what-if flag.
  Deployment d;
  d.num_gpus = 1;
  d.kv_cache_dtype = DType::int4;
  d.kv_quant_group_size = 64;
  d.kv_eviction = got.kv_eviction;
  d.kv_layer_sharing = got.kv_layer_sharing;
  check_series_against_planner(*w.concurrency_chart(), "llama-3.1-8b", profiles::resolve_model("llama-3.1-8b"),
                               profiles::resolve_gpu("h100-sxm"), d);
  CHECK(
      w.plan_command_text().contains("--kv-layer-sharing cla:2 --kv-eviction h2o:budget=0.2 --kv-quant-group-size 64"));
  // A text the flag reader refuses keeps the last value taken (h2o:budget=0.2) and is marked with the reader's reason.
  eviction->setText(QStringLiteral("h2o:budget=2"));
  emit eviction->editingFinished();
  CHECK(w.controls()->settings().deployment.kv_eviction.describe() == "h2o:budget=0.2");
  CHECK(eviction->property("problem").toBool());
  CHECK(eviction->toolTip().contains("budget"));
  // Back to none.
  eviction->clear();
  emit eviction->editingFinished();
  CHECK_FALSE(w.controls()->settings().deployment.kv_eviction.on());
  eviction->clear();
  emit eviction->editingFinished();
  CHECK_FALSE(eviction->property("problem").toBool());
}

TEST_CASE("the crosshair snaps to round contexts and reads every visible model there", "[gui][dashboard][crosshair]") {
  CHECK(ConcurrencyChart::snap_context(13.04) == 8192);
  CHECK(ConcurrencyChart::snap_context(14.6) == 32768);
  CHECK(ConcurrencyChart::snap_context(3.0) == 1024);      // clamped to the chart's 1K ..
  CHECK(ConcurrencyChart::snap_context(25.0) == 1 << 20);  // .. 1M
  DashboardWindow w;
  w.resize(1600, 1000);
  w.show();
  QCoreApplication::processEvents();
  const GpuSpec g = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.num_gpus = 1;
  const QString text = w.concurrency_chart()->readout(32768);
  for (const char* key : {"llama-3.1-8b", "mistral-7b-v0.1", "deepseek-v2-lite"}) {
    const ModelSpec m = profiles::resolve_model(key);
    const MemoryPlan plan = plan_memory(m, g, d);
    INFO(key);
    CHECK(text.contains(QStringLiteral("%1</td><td align=right><b>%2</b>")
                            .arg(QString::fromLatin1(key), QString::number(concurrency_at(m, plan, 32768), 'f', 2))));
  }
  CHECK(text.contains(QStringLiteral("<b>32K</b> tokens per request (32,768)")));
  // vLLM's scheduler cap is drawn and read: max_num_seqs 1,024 on an 80 GiB GPU (vllm serve's default).
  CHECK(w.concurrency_chart()->running_cap() == 1024);
  CHECK(text.contains(QStringLiteral("max_num_seqs \u00d7 replicas = 1,024")));
  // A hidden model leaves the readout.
  emit w.model_legend()->linkActivated(QStringLiteral("toggle:mistral-7b-v0.1"));
  CHECK_FALSE(w.concurrency_chart()->readout(32768).contains(QStringLiteral("mistral-7b-v0.1")));
  // A mouse move over the plot near 32K draws the line at exactly 32K and shows the readout.
  auto* chart = w.concurrency_chart()->chart();
  const QPointF at_chart = chart->mapToPosition(QPointF(15.3, 10.0), chart->series().front());
  const QPoint at_view = w.concurrency_chart()->mapFromScene(chart->mapToScene(at_chart));
  QMouseEvent move(QEvent::MouseMove, QPointF(at_view),
                   QPointF(w.concurrency_chart()->viewport()->mapToGlobal(at_view)), Qt::NoButton, Qt::NoButton,
                   Qt::NoModifier);
  QApplication::sendEvent(w.concurrency_chart()->viewport(), &move);
  REQUIRE(w.concurrency_chart()->crosshair()->isVisible());
  CHECK(w.concurrency_chart()->crosshair()->at(0).x() == Approx(15.0));
  CHECK(QToolTip::text().contains(QStringLiteral("<b>32K</b>")));
  CHECK(QToolTip::text().contains(QStringLiteral("llama-3.1-8b")));
}

TEST_CASE("at 1280x720 no elided name makes two models read the same", "[gui][dashboard][layout]") {
  DashboardWindow w;
  w.resize(1280, 720);
  w.show();
  DashboardSettings s = w.controls()->settings();
  s.models = {"llama-3.1-8b",  "llama-3.1-70b", "llama-3.1-405b", "deepseek-v3",
              "deepseek-v3.2", "deepseek-r1",   "qwen3-30b-a3b",  "qwen3-235b-a22b"};
  s.deployment.tensor_parallel_size = 8;
  s.deployment.num_gpus = 8;
  w.controls()->set_settings(s);
  QCoreApplication::processEvents();
  // Labels are made unique for Qt with zero-width spaces; what a reader sees must differ without them.
  auto distinct = [](const QStringList& shown, qsizetype expected) {
    QStringList seen;
    for (QString t : shown) {
      t.remove(QChar(0x200B));
      INFO(t.toStdString());
      CHECK_FALSE(seen.contains(t));
      seen << t;
    }
    CHECK(seen.size() == expected);
  };
  QStringList legend;
  for (const QString& e : w.model_legend()->entries()) legend << e;
  distinct(legend, 8);
  distinct(w.kv_bytes_chart()->categories(), 8);
  // The memory chart has a bar per model that starts (405B and V3 on 8 H100s do not).
  distinct(w.memory_chart()->categories(), qsizetype(w.memory_chart()->categories().size()));
  CHECK(w.memory_chart()->categories().size() >= 6);
}

TEST_CASE("Export writes the dashboard or any chart at the chosen resolution and says where", "[gui][export]") {
  QTemporaryDir dir;
  REQUIRE(dir.isValid());
  DashboardWindow w;
  w.resize(1400, 900);
  w.show();
  QCoreApplication::processEvents();
  const QSize on_screen = w.concurrency_chart()->size();
  using V = DashboardWindow::ExportView;
  const QString whole = dir.filePath("dashboard.png");
  const QString msg = w.export_view(V::dashboard, whole, QSize(1920, 1080));
  CHECK(QImage(whole).size() == QSize(1920, 1080));
  CHECK(msg ==
        QStringLiteral("Wrote %1: the whole dashboard, 1920\u00d71080 PNG").arg(QFileInfo(whole).absoluteFilePath()));
  CHECK(w.status_message() == msg);
  CHECK(w.size() == QSize(1400, 900));  // the window is back at its own size
  for (const auto& [view, name] : DashboardWindow::export_views()) {
    if (view == V::dashboard) continue;
    INFO(name.toStdString());
    const QString png = dir.filePath(QStringLiteral("chart%1.png").arg(int(view)));
    w.export_view(view, png, QSize(2400, 1500));
    const QImage img(png);
    CHECK(img.size() == QSize(2400, 1500));
    int non_white = 0;
    for (int y = 0; y < img.height(); y += 8)
      for (int x = 0; x < img.width(); x += 8) non_white += img.pixel(x, y) != qRgb(255, 255, 255);
    CHECK(non_white > 500);  // a chart, not a blank page
    const QString svg = dir.filePath(QStringLiteral("chart%1.svg").arg(int(view)));
    w.export_view(view, svg, QSize(1280, 720));
    const std::string text = read_file(svg.toStdString());
    CHECK_THAT(text, Catch::Contains("<svg"));
    CHECK_THAT(text, Catch::Contains("width=\"1280\""));
  }
  CHECK(w.concurrency_chart()->size() == on_screen);  // drawn afresh: the chart on screen keeps its size
  // Alone in a file, a chart names its models in its own legend (on screen the model legend does).
  ConcurrencyChart alone;
  alone.set_model_markers(true);
  alone.refresh(w.model());
  alone.resize(800, 600);
  alone.show();
  QCoreApplication::processEvents();
  const auto markers = alone.chart()->legend()->markers(alone.series_for("llama-3.1-8b"));
  REQUIRE(markers.size() == 1);
  CHECK(markers[0]->isVisible());
  CHECK_THROWS_AS(w.export_view(V::memory, dir.filePath("m.jpg"), QSize(800, 600)), std::invalid_argument);
  CHECK_THROWS_AS(w.export_view(V::memory, dir.filePath("m.png"), QSize(50, 600)), std::invalid_argument);
  CHECK_THROWS(w.export_view(V::memory, dir.filePath("no/such/folder/m.png"), QSize(800, 600)));
}

TEST_CASE("a pinned baseline stays drawn, dimmed, in every chart, with the differences in a table",
          "[gui][dashboard][compare]") {
  DashboardWindow w;
  w.resize(1600, 1000);
  w.show();
  QCoreApplication::processEvents();
  const GpuSpec h100 = profiles::resolve_gpu("h100-sxm");
  const ModelSpec llama = profiles::resolve_model("llama-3.1-8b");
  Deployment d;
  d.num_gpus = 1;
  const MemoryPlan bf16 = plan_memory(llama, h100, d);
  d.kv_cache_dtype = DType::fp8;
  const MemoryPlan fp8 = plan_memory(llama, h100, d);

  w.model().pin_baseline();
  select_combo_data(child<QComboBox>(w, "kvCacheDtype"), "fp8");
  // Main chart: the baseline curve is the bf16 plan, the current one the fp8 plan.
  const QLineSeries* base = w.concurrency_chart()->baseline_series_for("llama-3.1-8b");
  REQUIRE(base != nullptr);
  for (const QPointF& p : base->points()) {
    const auto tokens = static_cast<i64>(std::llround(std::exp2(p.x())));
    CHECK(p.y() == Approx(concurrency_at(llama, bf16, tokens)));
  }
  CHECK(y_at(w.concurrency_chart()->series_for("llama-3.1-8b"), 32768) == Approx(concurrency_at(llama, fp8, 32768)));
  CHECK(w.concurrency_chart()->readout(32768).contains(
      QStringLiteral("(baseline %1)").arg(QString::number(concurrency_at(llama, bf16, 32768), 'f', 2))));
  // The other charts: a faint baseline bar or curve beside each model.
  CHECK(w.memory_chart()->categories().contains(QStringLiteral("base: llama-3.1-8b")));
  // (names elided in the middle to the chart's width; the bytes are kept whole)
  const QStringList kv = w.kv_bytes_chart()->categories();
  CHECK(kv.filter(QRegularExpression(QStringLiteral("^base: .*8b  128\\.0 KiB$"))).size() == 1);
  CHECK(kv.filter(QRegularExpression(QStringLiteral("^ll.*8b  64\\.0 KiB$"))).size() == 1);
  CHECK(w.decode_chart()->baseline_series().size() == 3);
  // The table: the flag that changed, then the planner's numbers with their change.
  const auto rows = comparison_rows(w.model());
  REQUIRE(!rows.empty());
  CHECK(rows[0].what == "--kv-cache-dtype");
  CHECK(rows[0].baseline == "default");
  CHECK(rows[0].now == "fp8");
  bool kv_row = false;
  for (const auto& r : rows)
    if (r.what == "llama-3.1-8b: KV cache tokens, all replicas") {
      kv_row = true;
      CHECK(r.baseline == kvcap::gui::grouped(i64(bf16.kv_capacity_tokens)));
      CHECK(r.now == kvcap::gui::grouped(i64(fp8.kv_capacity_tokens)));
      const double pct = (double(fp8.kv_capacity_tokens) / double(bf16.kv_capacity_tokens) - 1) * 100;
      CHECK(r.change == QStringLiteral("+%1%").arg(pct, 0, 'f', 1));
    }
  CHECK(kv_row);
  CHECK(w.comparison_table()->isVisible());
  CHECK(w.comparison_table()->rowCount() == int(rows.size()));
  // Another GPU type: named first.
  select_combo_data(child<QComboBox>(w, "gpu"), "a100-80gb");
  CHECK(comparison_rows(w.model()).front().what == "GPU");
  // Unpinned: nothing of it remains.
  w.model().clear_baseline();
  CHECK(w.concurrency_chart()->baseline_series_for("llama-3.1-8b") == nullptr);
  CHECK(w.decode_chart()->baseline_series().empty());
  CHECK_FALSE(w.memory_chart()->categories().contains(QStringLiteral("base: llama-3.1-8b")));
  CHECK_FALSE(w.comparison_table()->isVisible());
  CHECK(comparison_rows(w.model()).empty());
}

TEST_CASE("a simulation runs off the GUI thread, draws its run beside the previous one, and can be cancelled",
          "[gui][simulation]") {
  SECTION("the spec's grammar") {
    const SimulationSpec s = parse_simulation_spec("rate=2.5,prompt=4K,output=512,duration=2min,seed=7");
    CHECK(s.rate_per_s == 2.5);
    CHECK(s.prompt_tokens == 4096);
    CHECK(s.output_tokens == 512);
    CHECK(s.duration_s == 120);
    CHECK(s.seed == 7);
    CHECK_THROWS_WITH(parse_simulation_spec("rate=0"), Catch::Contains("rate"));
    CHECK_THROWS_WITH(parse_simulation_spec("rte=2"), Catch::Contains("unknown key 'rte'"));
    CHECK_THROWS_WITH(parse_simulation_spec("prompt"), Catch::Contains("expected key=value"));
    CHECK_THROWS_WITH(parse_simulation_spec("rate=2,rate=3"), Catch::Contains("rate given twice"));
    CHECK_THROWS_WITH(parse_simulation_spec("trace=t.csv,rate=3"), Catch::Contains("leave out rate"));
  }
  DashboardWindow w;
  DashboardSettings s = w.controls()->settings();
  s.models = {"llama-3.1-8b"};
  w.controls()->set_settings(s);
  auto wait_idle = [&] { return wait_for([&] { return !w.simulation_runner()->running(); }, 60000); };
  SECTION("the run is the simulator's own, named by its deployment and workload") {
    SimulationSpec spec;
    spec.rate_per_s = 2;
    spec.duration_s = 20;
    REQUIRE(w.start_simulation(spec));
    REQUIRE(wait_idle());
    REQUIRE(w.model().timeline().has_value());
    const Timeline& tl = *w.model().timeline();
    CHECK(tl.file == "llama-3.1-8b on 1\u00d7 h100-sxm, TP 1 \u00b7 Poisson 2 req/s, 1,024 / 256 tokens, 20 s");
    CHECK(w.kv_utilization_chart()->run_label().toStdString() == tl.file);
    CHECK(w.status_message().startsWith(QStringLiteral("Simulated: ")));
    // The same request run directly gives the same samples.
    QString label;
    sim::SimulationRequest q = simulation_request(w.model(), spec, &label);
    struct Samples : sim::Observer {
      std::vector<TimelineSample> v;
      void on_sample(const TimelineSample& x) override { v.push_back(x); }
    } direct;
    q.observer = &direct;
    sim::run_simulation(q);
    REQUIRE(direct.v.size() == tl.samples.size());
    REQUIRE(!direct.v.empty());
    CHECK(direct.v.back().time_s == tl.samples.back().time_s);
    CHECK(direct.v.back().kv_used_blocks == tl.samples.back().kv_used_blocks);
    CHECK(w.kv_utilization_chart()->waiting_series()->count() > 0);
    CHECK(w.kv_utilization_chart()->previous_series()->count() == 0);
    // A second run: drawn, with the first faint beside it.
    spec.rate_per_s = 4;
    REQUIRE(w.start_simulation(spec));
    REQUIRE(wait_idle());
    CHECK_THAT(w.model().timeline()->file, Catch::Contains("Poisson 4 req/s"));
    CHECK(w.kv_utilization_chart()->previous_series()->count() > 0);
    CHECK(w.kv_utilization_chart()->previous_label() ==
          QStringLiteral("Poisson 2 req/s, 1,024 / 256 tokens, 20 s"));  // what differs from the shown run
  }
  SECTION("cancel stops a long run and keeps what was shown") {
    SimulationSpec spec;
    spec.rate_per_s = 200;
    spec.duration_s = 3600;  // 720,000 requests: minutes of work if it were not cancelled
    REQUIRE(w.start_simulation(spec));
    CHECK(w.simulation_runner()->running());
    CHECK_FALSE(w.start_simulation(spec));  // one at a time
    w.simulation_runner()->cancel();
    REQUIRE(wait_idle());
    CHECK(w.status_message() == QStringLiteral("Simulation cancelled"));
    CHECK_FALSE(w.model().timeline().has_value());
  }
  SECTION("nothing to simulate is said, not crashed") {
    child<QSpinBox>(w, "tensorParallelSize")->setValue(3);  // 32 heads: vLLM refuses TP 3
    CHECK_FALSE(w.start_simulation(SimulationSpec{}));
    CHECK(w.status_message().contains(QStringLiteral("no selected model starts")));
  }
}

TEST_CASE("the controls column collapses for a small window", "[gui][layout]") {
  DashboardWindow w;
  w.resize(1280, 720);
  w.show();
  QCoreApplication::processEvents();
  auto* toggle = w.findChild<QAction*>(QStringLiteral("toggleControls"));
  REQUIRE(toggle != nullptr);
  const int before = w.concurrency_chart()->width();
  toggle->trigger();
  QCoreApplication::processEvents();
  CHECK_FALSE(w.controls()->isVisible());
  CHECK(w.concurrency_chart()->width() > before);
  toggle->trigger();
  QCoreApplication::processEvents();
  CHECK(w.controls()->isVisible());
}
