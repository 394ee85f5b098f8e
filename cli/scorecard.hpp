#pragma once
// The accuracy scorecard (kvcap accuracy): published serving measurements (serving_measurements.json: vLLM, SGLang,
// TensorRT-LLM, NIM; fields documented in the file's "about") run through the simulator with the load their source
// describes: closed-loop clients as `simulate --max-concurrency N` (num_requests = 10 x N, AIPerf's default in the
// sources), open-loop Poisson arrivals at the rate, offline as `--rate inf`. MAPE per engine and metric, and the
// fit of the engine profiles (planner/engine.hpp) with leave-one-out errors. docs/accuracy.md.
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kvcap/planner/engine.hpp"

namespace kvcap::cli {

struct Point {
  std::string id, model_hf, gpu, engine, weight_dtype, kv_dtype, note;
  std::string engine_version;  ///< as the source states it ("0.6.0"); "" when not stated
  i64 tp = 1, pp = 1, isl = 0, osl = 0;
  /// Expert parallelism over `ep` GPUs (0: none); attention_dp: each of the TP ranks attends to its own requests
  /// (TensorRT-LLM enable_attention_dp, SGLang --enable-dp-attention): kvcap's TP 1 x data-parallel TP replicas.
  i64 ep = 0;
  bool attention_dp = false;
  std::optional<i64> num_requests;  ///< the source's request count (default: 10 x concurrency, AIPerf's)
  std::optional<i64> concurrency;
  std::optional<double> rate_per_s;
  std::optional<double> tpot_s, ttft_s, output_tokens_per_s;  ///< measured
  bool medians = false;                                       ///< the source reports medians of TPOT/TTFT, not means
  /// Its TPOT is the median inter-token latency (sglang.bench_serving's median_itl_ms: every gap between two tokens,
  /// pooled), not a per-request time per output token.
  bool median_itl = false;
  /// kind static_batch: the batch prefills together, then decodes (one wave of batch_or_concurrency requests).
  bool static_batch = false;
};

struct Outcome {
  std::string model, load, skipped;  ///< skipped: why the point could not be run ("" when it ran)
  double tpot_s = 0, ttft_s = 0, output_tokens_per_s = 0;
};

/// The points of serving_measurements.json; UsageError naming the file when it cannot be read.
std::vector<Point> read_points(const std::string& path);
/// The point simulated with `engine`'s profile.
Outcome run_point(const Point& p, const EngineProfile& engine);

/// Signed relative error of a prediction, when the point has a measurement.
std::optional<double> rel_err(double predicted, const std::optional<double>& measured);

struct Mape {
  double sum = 0;
  int n = 0;
  void add(const std::optional<double>& e) {
    if (e) sum += std::abs(*e), ++n;
  }
  double value() const { return n ? 100 * sum / n : 0; }
};

/// Per engine (and "all"), per metric: tpot, ttft, throughput.
using Scores = std::map<std::string, std::map<std::string, Mape>>;
void score(Scores& s, const Point& p, const Outcome& o);

/// One engine profile fitted to its points (kvcap accuracy --fit).
struct EngineFit {
  std::string name;  ///< vllm | sglang | trtllm
  std::size_t points = 0;
  double mape_datasheet = 0, mape_fitted = 0;  ///< mean of the metrics' MAPEs
  EngineProfile profile;
  Mape loo_tpot, loo_ttft, loo_throughput;  ///< leave-one-out: each point predicted by a fit without it
};
/// Fits vllm, sglang and trtllm (NIM's points count as trtllm's) from the datasheet profile; takes minutes.
std::vector<EngineFit> fit_engines(const std::vector<Point>& all);

}  // namespace kvcap::cli
