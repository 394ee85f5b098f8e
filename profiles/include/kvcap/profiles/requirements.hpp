#pragma once
// Requirement files (kind: requirements): capacity promises a CI job checks on every commit, e.g.
// "llama-3.1-70b on 4x H100 with fp8 KV holds >= 24 concurrent requests at 32K context". Each promise names
// a deployment (inline, by name from the file's `deployments:`, by deployment-profile name, or by a path
// relative to the file), a metric and one comparison (at_least / at_most). Example:
// profiles/examples/requirements.yaml; schema: profiles/schema/requirements.schema.json.
#include <optional>
#include <string>
#include <vector>

#include "kvcap/profiles/deployment.hpp"

namespace kvcap::profiles {

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
std::string_view to_string(Metric m);
/// Metric names in declaration order (for errors, the schema and --help).
const std::vector<std::string>& metric_names();

enum class Comparison { at_least, at_most };

struct Promise {
  std::string name;                 ///< given, or made from the metric ("concurrency_at 32768 tokens")
  SourcePos at;                     ///< the promise's mapping
  std::string deployment_ref;       ///< name or path as written ("" when inline)
  SourcePos deployment_at;
  std::optional<DeploymentProfile> inline_deployment;
  Metric metric = Metric::fits;
  std::optional<i64> context_tokens;
  std::optional<i64> batch;
  std::optional<i64> prompt_tokens;
  std::optional<double> tpot_target_s;
  bool cluster = false;             ///< scope: cluster (x data-parallel replicas)
  std::optional<Comparison> comparison;  ///< absent only for `fits`
  double target = 0;                ///< in the metric's unit (requests, tokens, s, tokens/s)
  SourcePos target_at;
};

struct Requirements {
  std::string name;
  std::string description;
  std::string file;
  std::string base_dir;
  std::vector<DeploymentProfile> deployments;  ///< the file's `deployments:` (name -> inline deployment)
  std::vector<Promise> promises;
};

Requirements parse_requirements(const std::string& text, const std::string& file);
Requirements load_requirements_file(const std::string& path);

/// The deployment a promise names: inline, a name from the file's deployments:, a deployment profile name in
/// `index`, or a path relative to the requirements file. ProfileError located at the promise's deployment key.
DeploymentProfile deployment_of(const Requirements& r, const Promise& p, const ProfileIndex* index);

/// Keys the loader accepts: "" (top level), "deployments.*" (a named inline deployment), "promises[]" (a
/// promise), "promises[].deployment" (an inline deployment in a promise).
const std::map<std::string, std::vector<std::string>>& requirements_keys();

/// The outcome of one promise. `margin` is how far inside the promise the measurement is, in the metric's
/// unit: measured - target for at_least, target - measured for at_most (negative: broken).
struct PromiseResult {
  std::string name;
  std::string deployment;   ///< describe() of the deployment
  std::string metric;
  std::string unit;         ///< "requests", "tokens", "s", "tokens/s", "sequences"
  std::string comparison;   ///< ">=" or "<="
  double target = 0;
  double measured = 0;
  double margin = 0;
  double margin_relative = 0;  ///< margin / |target| (0 when the target is 0)
  bool passed = false;
  bool error = false;       ///< could not be evaluated (bad reference, impossible deployment): counts as failed
  std::string detail;       ///< what bounds it, or the error
  double time_s = 0;        ///< wall time of the evaluation
  SourcePos at;
};

/// Evaluates every promise with the planner (memory and speed models; datasheet rates x default
/// efficiencies). Never throws for a bad promise: its result has error = true and the message in detail.
std::vector<PromiseResult> evaluate(const Requirements& r, const ProfileIndex* index = nullptr);

}  // namespace kvcap::profiles
