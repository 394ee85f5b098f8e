#pragma once
// Capacity promises and their evaluation: "llama-3.1-70b on 4x H100 with fp8 KV holds >= 24 concurrent requests
// at 32K context". A PromiseQuery names a metric, the metric's parameters and one comparison with a target;
// evaluate() measures the metric on a deployment with the memory model (memory.hpp: vLLM V1's KV budget, blocks
// and concurrency) and the speed model (speed.hpp), and returns the margin. Pure: no files, no YAML. Requirement
// files holding promises are read by profiles/ (kvcap/profiles/requirements.hpp); `kvcap check` resolves the
// deployment each promise names and calls evaluate() (cli/promises.hpp).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvcap/planner/deployment.hpp"
#include "kvcap/planner/gpu.hpp"
#include "kvcap/planner/model.hpp"
#include "kvcap/planner/speed.hpp"

namespace kvcap {

enum class Metric {
  concurrency_at,       ///< requests of `context_tokens` held at once (per replica; scope: cluster x replicas)
  kv_capacity_tokens,   ///< KV-cache tokens (per replica; scope: cluster)
  fits,                 ///< one request of max_model_len fits (vLLM starts); measured: concurrency at max_model_len
  max_model_len,        ///< longest context one request can hold (vLLM estimate_max_model_len), tokens
  tpot_s,               ///< time per output token at `batch` requests of `context_tokens`, seconds
  ttft_s,               ///< time to first token of one `prompt_tokens` prompt, seconds
  decode_tokens_per_s,  ///< decode throughput at `batch` x `context_tokens` (per replica; scope: cluster)
  max_batch_at_tpot,    ///< largest batch at `context_tokens` whose TPOT <= `tpot_target_s` (memory-bounded)
};

enum class Comparison { at_least, at_most };

/// What a metric measures and what a promise of it must give (the loader checks promises against this table).
struct MetricInfo {
  /// How the target is written: a plain number, a token count (32K), a duration (40ms); none: `fits` takes none.
  enum class Threshold { number, tokens, seconds, none };
  Metric metric;
  const char* name;
  const char* unit;                     ///< "requests", "tokens", "s", "tokens/s", "sequences"
  std::vector<std::string> parameters;  ///< the query parameters the metric needs (and the only ones it accepts)
  bool scoped;                          ///< accepts cluster scope (x data-parallel replicas)
  Threshold threshold;
};

/// Every metric, in declaration order.
const std::vector<MetricInfo>& metric_infos();
const MetricInfo& metric_info(Metric m);
std::optional<Metric> metric_from_name(std::string_view name);
std::string_view to_string(Metric m);
/// Metric names in declaration order (for errors, the schema and --help).
const std::vector<std::string>& metric_names();
/// Every parameter a promise may take: context_tokens, batch, prompt_tokens, tpot_target_s.
const std::vector<std::string>& promise_parameters();
std::string_view to_string(Comparison c);  ///< ">=" | "<="

/// One promise as the planner sees it: a metric, its parameters, the scope and the comparison.
struct PromiseQuery {
  Metric metric = Metric::fits;
  std::optional<i64> context_tokens;
  std::optional<i64> batch;
  std::optional<i64> prompt_tokens;
  std::optional<double> tpot_target_s;
  bool cluster = false;                  ///< scope: cluster (x data-parallel replicas)
  std::optional<Comparison> comparison;  ///< absent only for `fits`, which reads as at_least
  double target = 0;                     ///< in the metric's unit (requests, tokens, s, tokens/s); fits: 1 request
};

/// The outcome of one promise. `margin` is how far inside the promise the measurement is, in the metric's
/// unit: measured - target for at_least, target - measured for at_most (negative: broken).
struct PromiseResult {
  std::string metric;
  std::string unit;        ///< "requests", "tokens", "s", "tokens/s", "sequences"
  std::string comparison;  ///< ">=" or "<="
  double target = 0;
  double measured = 0;
  double margin = 0;
  double margin_relative = 0;  ///< margin / |target| (0 when the target is 0, and for fits)
  bool passed = false;
  bool error = false;  ///< could not be evaluated (impossible deployment, batch or context): counts as failed
  std::string detail;  ///< what bounds it, or the error
};

/// Measures the promise on this deployment (memory and speed models; datasheet rates x the efficiencies of
/// `options`). Never throws for a bad promise: a deployment whose KV memory is beyond the device (KVCAP-E103) or
/// absent (KVCAP-E101, except for fits), a context beyond max_model_len, a batch that does not fit, a missing
/// parameter or an overflow gives error = true with the reason in detail.
PromiseResult evaluate(const PromiseQuery& q, const ModelSpec& m, const GpuSpec& g, const Deployment& d,
                       const SpeedOptions& options = {});

/// The result of a promise that could not be evaluated (for callers whose own step failed, e.g. resolving the
/// deployment): metric, unit, comparison and target filled in, error = true, `why` in detail, nothing measured.
PromiseResult unevaluated(const PromiseQuery& q, std::string why);

}  // namespace kvcap
