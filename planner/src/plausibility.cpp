#include "kvcap/planner/plausibility.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "kvcap/planner/text.hpp"

namespace kvcap {

namespace {
Finding error(const std::string& code, std::string msg, int exit = kExitWouldNotStart) {
  return {code, Finding::Level::error, std::move(msg), exit};
}
Finding warning(const std::string& code, std::string msg) {
  return {code, Finding::Level::warning, std::move(msg), kExitOk};
}
/// An error about the plan itself: what it leaves meaningful, and whether the input is impossible.
Finding plan_error(const std::string& code, std::string msg, Finding::Leaves leaves, bool impossible) {
  Finding f = error(code, std::move(msg));
  f.leaves = leaves;
  f.impossible_input = impossible;
  return f;
}

std::string stage_name(const MemoryPlan& p, const StagePlan& st) {
  return p.stages.size() > 1 ? "pipeline stage " + std::to_string(st.stage) + ": " : "";
}
}  // namespace

std::string layer_sharing_source(const Deployment::LayerSharing& s) {
  return s.kind == Deployment::LayerSharing::Kind::cla
             ? "CLA: Brandon et al., \"Reducing Transformer Key-Value Cache Size with Cross-Layer Attention\", 2024"
             : "MiniCache: Liu et al., \"MiniCache: KV Cache Compression in Depth Dimension\", NeurIPS 2024";
}

std::string eviction_source(const Deployment::Eviction& e) {
  return e.kind == Deployment::Eviction::Kind::streaming
             ? "StreamingLLM: Xiao et al., \"Efficient Streaming Language Models with Attention Sinks\", ICLR 2024"
             : "H2O: Zhang et al., \"H2O: Heavy-Hitter Oracle for Efficient Generative Inference of Large Language "
               "Models\", NeurIPS 2023";
}

i64 kv_quant_group(const ResolvedDeployment& d) {
  return d.d.kv_quant_group_size > 0 ? d.d.kv_quant_group_size : static_cast<i64>(info(d.kv_dtype).kv_group);
}

std::string to_string(const Finding& f) {
  return std::string(f.level == Finding::Level::error ? "error " : "warning ") + f.code + ": " + f.message;
}

bool has_errors(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.level == Finding::Level::error; });
}

int exit_code(const std::vector<Finding>& findings) {
  int rc = kExitOk;
  for (const auto& f : findings)
    if (f.level == Finding::Level::error) rc = std::max(rc, f.exit_code);
  return rc;
}

namespace {
// Per pipeline stage: no KV memory at all (E101), or KV memory given beyond the device (E103).
void check_stages(const GpuSpec& g, const MemoryPlan& p, std::vector<Finding>& r) {
  for (const auto& st : p.stages) {
    // vLLM v1/core/kv_cache_utils.py check_enough_kv_cache_memory: "No available memory for the cache blocks".
    if (st.available_kv_bytes <= 0) {
      r.push_back(plan_error("KVCAP-E101",
                             stage_name(p, st) + budget_engine(p) +
                                 " would not start: no memory left for the KV cache (" +
                                 "weights, activation peak and non-torch memory exceed " + budget_text(p, st) + ")",
                             Finding::Leaves::only_fits, false));
      continue;
    }
    // --kv-cache-memory is used as given by vLLM (it skips the profiling run), so it must fit in the device
    // beside the weights, the activation peak and the non-torch memory, or the allocation fails (CUDA OOM).
    const double held = static_cast<double>(st.available_kv_bytes) + static_cast<double>(st.weights_bytes) +
                        static_cast<double>(st.activation_peak_bytes) + static_cast<double>(st.non_torch_bytes);
    if (st.kv_memory_given && held > static_cast<double>(g.memory_bytes))
      r.push_back(plan_error("KVCAP-E103",
                             stage_name(p, st) + "KV cache memory (--kv-cache-memory, kv_cache_memory_bytes) " +
                                 gib_text(static_cast<double>(st.available_kv_bytes)) +
                                 " plus weights, activation peak and non-torch memory (" + gib_text(held) +
                                 " in all) exceeds the " + gib_text(static_cast<double>(g.memory_bytes)) + " of one " +
                                 g.display_name,
                             Finding::Leaves::nothing, true));
  }
}

// A shared prefix longer than max_model_len (E106) or larger than the KV cache (E107).
void check_shared_prefix(const MemoryPlan& p, std::vector<Finding>& r) {
  const auto& d = p.dep;
  // A shared prefix is part of every request's prompt: longer than max_model_len, no request can carry it
  // (vLLM rejects the prompt); larger than the KV cache, it cannot be held even once.
  // A prefix of max_model_len tokens leaves no room for a single output token (prompt + output <= max_model_len).
  if (d.d.shared_prefix_tokens > 0 && d.d.shared_prefix_tokens >= d.max_model_len)
    r.push_back(plan_error("KVCAP-E106",
                           "the shared prefix of " + std::to_string(d.d.shared_prefix_tokens) +
                               " tokens is not shorter than max_model_len " + std::to_string(d.max_model_len) +
                               ": no request can carry it and an output (vLLM rejects the prompt)",
                           Finding::Leaves::nothing, true));
  else if (!has_errors(r) && static_cast<u64>(d.d.shared_prefix_tokens) > p.kv_capacity_tokens)
    r.push_back(plan_error("KVCAP-E107",
                           "the shared prefix of " + std::to_string(d.d.shared_prefix_tokens) +
                               " tokens does not fit in the KV cache (" + std::to_string(p.kv_capacity_tokens) +
                               " tokens per replica)",
                           Finding::Leaves::only_fits, true));
  // Curve points shorter than the prefix: there a request is a part of the prefix (every whole block of it is
  // shared, only the last is its own), a figure of the cache's arithmetic rather than of any workload.
  if (has_errors(r)) return;
  std::string below;
  std::size_t n = 0;
  for (const auto& c : p.curve)
    if (c.context_tokens <= d.d.shared_prefix_tokens) below += (n++ ? ", " : "") + human_tokens(c.context_tokens);
  if (n > 0)
    r.push_back(warning("KVCAP-W203", (n > 1 ? "contexts " : "context ") + below + (n > 1 ? " are" : " is") +
                                          " not longer than the shared prefix of " +
                                          std::to_string(d.d.shared_prefix_tokens) +
                                          " tokens: a request there is part of the prefix, so its concurrency counts "
                                          "only its last block (give contexts of at least the prefix)"));
}
}  // namespace

std::vector<Finding> check_what_ifs(const MemoryPlan& p) {
  std::vector<Finding> r;
  const auto& d = p.dep;
  // What-ifs change the model, not the deployment: every front end that reports a memory plan says so (W207).
  if (const auto& s = d.d.kv_layer_sharing; s.on()) {
    const i64 layers = static_cast<i64>(p.kv_layers.size());
    i64 decoder_layers = 0;
    for (const auto& st : p.stages) decoder_layers += st.num_layers;
    r.push_back(warning("KVCAP-W207", "what-if --kv-layer-sharing " + s.describe() + ": " + std::to_string(layers) +
                                          " of " + std::to_string(decoder_layers) + " layers hold a KV cache (" +
                                          layer_sharing_source(s) +
                                          "); not a vLLM option, and kvcap does not model its effect on quality"));
  }
  if (const auto& e = d.d.kv_eviction; e.on())
    r.push_back(warning("KVCAP-W207", "what-if --kv-eviction " + e.describe() +
                                          ": full-attention layers keep only those tokens of each request (" +
                                          eviction_source(e) +
                                          "); not a vLLM option, and kvcap does not model its effect on quality"));
  if (kv_group_size_settable(d.kv_dtype))
    r.push_back(warning("KVCAP-W207", "what-if --kv-cache-dtype " + std::string(name(d.kv_dtype)) + ": groups of " +
                                          std::to_string(kv_quant_group(d)) +
                                          " values with an fp16 scale and an fp16 zero point (" + kKiviSource +
                                          "); not a vLLM KV format, and kvcap does not model its effect on quality"));
  return r;
}

std::vector<Finding> check_memory_plan(const GpuSpec& g, const MemoryPlan& p) {
  std::vector<Finding> r;
  const auto& d = p.dep;
  check_stages(g, p, r);
  check_shared_prefix(p, r);
  if (!has_errors(r) && p.override_pool_too_small())
    r.push_back(plan_error("KVCAP-E102", override_pool_text(p), Finding::Leaves::only_fits, false));
  else if (!has_errors(r) && !p.fits())
    // vLLM kv_cache_utils.py check_enough_kv_cache_memory: "To serve at least one request with the models's max
    // seq len (...), (... GiB KV cache is needed, which is larger than the available KV cache memory".
    r.push_back(plan_error("KVCAP-E102",
                           std::string(budget_engine(p)) + " would not start: one request of max_model_len " +
                               std::to_string(d.max_model_len) + " tokens does not fit in the KV cache (" +
                               fixed_down(p.startup_concurrency, 2) + "x); the longest that fits is " +
                               std::to_string(p.max_model_len_that_fits) +
                               " tokens: lower --max-model-len or add memory",
                           Finding::Leaves::only_fits, false));
  // E102 and E110 are engines that do not start: only `fits` (false) stays meaningful, as for E101 and E111.
  if (!has_errors(r) && p.seqs_exceed_state_blocks())
    r.push_back(plan_error("KVCAP-E110", seqs_limit_text(p), Finding::Leaves::only_fits, false));
  // After the memory checks, which it does not change (a length the memory cannot hold is E102 as well).
  if (auto beyond = check_model_max_len(d.max_model_len, p.model_max_len)) r.push_back(*beyond);
  if (auto lowered = check_lowered_length(p)) r.push_back(*lowered);
  const auto what_ifs = check_what_ifs(p);
  r.insert(r.end(), what_ifs.begin(), what_ifs.end());
  return r;
}

std::vector<Finding> check_batch(const MemoryPlan& p, i64 batch, i64 prompt_tokens, i64 output_tokens) {
  std::vector<Finding> r;
  const auto& d = p.dep;
  const i64 context = prompt_tokens + output_tokens;
  // vLLM rejects such a request: "This model's maximum context length is N tokens. However, you requested ..."
  // (entrypoints/openai serving); the engine checks the prompt (v1/engine/processor.py _validate_model_input).
  if (context > d.max_model_len)
    r.push_back(error("KVCAP-E104", "prompt + output = " + std::to_string(context) + " tokens exceeds max_model_len " +
                                        std::to_string(d.max_model_len) + ": " + longer_requests_text(p)));
  // Every request's prompt begins with the shared prefix (--shared-prefix-tokens): a shorter prompt cannot carry it.
  if (d.d.shared_prefix_tokens > prompt_tokens)
    r.push_back(
        error("KVCAP-E108",
              "the shared prefix of " + std::to_string(d.d.shared_prefix_tokens) +
                  " tokens is longer than the prompt of " + std::to_string(prompt_tokens) +
                  " tokens: every prompt begins with the shared prefix (--shared-prefix-tokens <= --prompt-tokens)",
              kExitUsage));
  // What decodes at once (sliding windows hold their window: running_concurrency_at), as size and simulate count it.
  const double fit = context > 0 ? running_concurrency_at(p, context, prompt_tokens) : 0;
  if (static_cast<double>(batch) > fit)
    r.push_back(error("KVCAP-E105", "a batch of " + std::to_string(batch) + " requests of " + std::to_string(context) +
                                        " tokens does not fit in the KV cache (at most " + fixed(std::floor(fit), 0) +
                                        " per replica); " + budget_engine(p) +
                                        " would queue or preempt the rest, so the speed shown is not reachable"));
  if (batch > d.max_num_seqs)
    r.push_back(warning("KVCAP-W201", "a batch of " + std::to_string(batch) + " exceeds max_num_seqs " +
                                          std::to_string(d.max_num_seqs) + ": " + budget_engine(p) +
                                          " schedules at most " + std::to_string(d.max_num_seqs) +
                                          " sequences per step"));
  return r;
}

std::string device_product(const std::string& device_name) {
  std::vector<std::string> tokens;
  std::string cur;
  for (char ch : device_name + " ") {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      cur += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    } else if (!cur.empty()) {
      tokens.push_back(cur);
      cur.clear();
    }
  }
  // A product id is letters then digits, optionally letters (H100, L40S, MI300X); memory sizes ("80GB") start
  // with a digit and memory types (HBM3) are skipped by name.
  for (const auto& t : tokens) {
    std::size_t i = 0;
    while (i < t.size() && std::isalpha(static_cast<unsigned char>(t[i]))) ++i;
    if (i == 0 || i > 3 || i == t.size() || !std::isdigit(static_cast<unsigned char>(t[i]))) continue;
    if (t.rfind("HBM", 0) == 0 || t.rfind("GDDR", 0) == 0 || t.rfind("SXM", 0) == 0 || t.rfind("PCIE", 0) == 0)
      continue;
    return t;
  }
  for (const auto& t : tokens)  // "RTX 4090": the model number alone
    if (t.size() >= 3 && t.size() <= 5 &&
        std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return t;
  return "";
}

std::vector<Finding> check_calibration(const Calibration& c, const GpuSpec& g, bool force) {
  std::vector<Finding> r;
  const auto mismatch = [&](const char* number, const std::string& msg) {
    if (force)
      r.push_back(warning(std::string("KVCAP-W") + number, msg + " (used anyway: --calibration-force)"));
    else
      r.push_back(error(std::string("KVCAP-E") + number, msg + "; --calibration-force uses it anyway", kExitUsage));
  };
  if (!c.selftests_passed)
    r.push_back(warning("KVCAP-W304",
                        "the calibration records no kernel self-tests (written before kvcap recorded "
                        "them): nothing shows its kernels computed correctly on the measured device"));
  const std::string want = device_product(g.display_name);
  if (c.device_kind == "cpu") {
    mismatch("301", "the calibration was measured on a CPU ('" + c.device + "'), the plan is for a " + g.display_name);
    return r;
  }
  const std::string have = device_product(c.device);
  if (have.empty() || want.empty()) {
    r.push_back(warning("KVCAP-W303", "cannot tell whether the calibration's device '" + c.device + "' is a " +
                                          g.display_name + "; its rates are used as measured"));
    return r;
  }
  if (have != want) {
    mismatch("302", "the calibration was measured on '" + c.device + "' (" + have + "), the plan is for a " +
                        g.display_name + " (" + want + ")");
    return r;
  }
  // Same product, another form factor: CUDA names a PCIe or NVL card so ("NVIDIA H100 PCIe", "NVIDIA H100 NVL") and
  // an SXM module without either ("NVIDIA H100 80GB HBM3"); H100 PCIe and SXM have the same memory, not the same
  // bandwidth (2.0 vs 3.35 TB/s).
  const auto form = [](const std::string& name) -> std::string {
    std::string tok;  // whole words only: GB200's "NVL72" is a rack, not an NVL card
    for (char ch : name + " ") {
      if (std::isalnum(static_cast<unsigned char>(ch))) {
        tok += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        continue;
      }
      if (tok == "PCIE" || tok == "NVL") return tok;
      tok.clear();
    }
    return "SXM";
  };
  if (form(c.device) != form(g.display_name)) {
    mismatch("302", "the calibration was measured on '" + c.device + "' (" + form(c.device) + "), the plan is for a " +
                        g.display_name + " (" + form(g.display_name) + "): another variant of the " + want);
    return r;
  }
  // A measured read rate above the profile's datasheet peak: not this device (10% for the datasheet's rounding).
  if (c.stream.read_bytes_per_s > 1.1 * g.memory_bandwidth_bytes_per_s && g.memory_bandwidth_bytes_per_s > 0) {
    mismatch("302", "the calibration's device '" + c.device + "' read " + fixed(c.stream.read_bytes_per_s / 1e12, 2) +
                        " TB/s, above the " + fixed(g.memory_bandwidth_bytes_per_s / 1e12, 2) + " TB/s peak of the " +
                        g.display_name + " profile: another device");
    return r;
  }
  // Same product, different memory (H100 SXM 80 GB vs H100 NVL 94 GB): different bandwidth too.
  if (c.device_memory_bytes > 0 && g.memory_bytes > 0) {
    const double ratio = static_cast<double>(c.device_memory_bytes) / static_cast<double>(g.memory_bytes);
    if (ratio < 0.95 || ratio > 1.05)
      mismatch("302", "the calibration's device '" + c.device + "' has " +
                          gib_text(static_cast<double>(c.device_memory_bytes)) + ", the " + g.display_name +
                          " profile " + gib_text(static_cast<double>(g.memory_bytes)) + ": another variant of the " +
                          want);
  }
  return r;
}

std::optional<Finding> check_offered_load(double offered_per_s, double capacity_per_s) {
  if (!(offered_per_s > capacity_per_s) || !(capacity_per_s > 0)) return std::nullopt;
  return warning("KVCAP-W202", "offered load " + fixed(offered_per_s, 2) + " req/s exceeds the capacity of about " +
                                   fixed(capacity_per_s, 2) + " req/s (" + fixed(offered_per_s / capacity_per_s, 2) +
                                   "x): queues grow without bound and latency percentiles depend on the run's length");
}

std::vector<Finding> check_request_lengths(double prompt_mean_tokens, double output_mean_tokens, i64 max_context_tokens,
                                           i64 max_model_len, const char* engine) {
  std::vector<Finding> r;
  const double mean = prompt_mean_tokens + output_mean_tokens;
  if (mean > static_cast<double>(max_model_len))
    r.push_back(error("KVCAP-E104", "the mean request (prompt " + fixed(prompt_mean_tokens, 0) + " + output " +
                                        fixed(output_mean_tokens, 0) + " tokens) exceeds max_model_len " +
                                        std::to_string(max_model_len) + ": " + engine +
                                        " rejects such requests, so no deployment serves this workload"));
  else if (max_context_tokens > max_model_len)
    r.push_back(warning("KVCAP-W205", "the longest requests (up to " + std::to_string(max_context_tokens) +
                                          " tokens, prompt + output) exceed max_model_len " +
                                          std::to_string(max_model_len) + ": " + engine +
                                          " rejects them, and the sizing still counts every request at the "
                                          "mean lengths (kvcap simulate counts the rejections)"));
  return r;
}

namespace {
/// The KV pool holds fewer tokens than max_model_len (one request of max_model_len fits its memory check, but the
/// pool's null block or a request's sliding-window blocks leave less): the request limit is the pool's.
bool pool_limits(const MemoryPlan& plan, std::int64_t max_request_tokens) {
  return max_request_tokens > 0 && max_request_tokens < plan.dep.max_model_len;
}
std::string pool_limit_text(const MemoryPlan& plan, std::int64_t max_request_tokens) {
  return std::to_string(max_request_tokens) + " tokens, all one replica's KV pool holds of a request (max_model_len " +
         std::to_string(plan.dep.max_model_len) + "; " + budget_engine(plan) + " would stall it)";
}
}  // namespace

std::optional<Finding> check_rejections(std::uint64_t rejected, std::uint64_t arrived, const MemoryPlan& plan,
                                        std::int64_t max_request_tokens) {
  if (rejected == 0) return std::nullopt;
  // vLLM v1/engine/processor.py _validate_model_input: a prompt longer than max_model_len is refused at once.
  const bool pool = pool_limits(plan, max_request_tokens);
  const std::string why = pool ? "their prompt reaches " + pool_limit_text(plan, max_request_tokens)
                               : "their prompt reaches max_model_len " + std::to_string(plan.dep.max_model_len);
  const std::string fix = pool                           ? std::string("add KV memory")
                          : plan.max_model_len_asked > 0 ? longer_requests_text(plan)
                                                         : std::string("raise --max-model-len");
  if (rejected >= arrived)
    return error("KVCAP-E109", "every one of the " + grouped(arrived) + " requests was rejected: " + why +
                                   "; nothing was served (" + fix + ", or shorten the prompts)");
  return warning("KVCAP-W204", grouped(rejected) + " of " + grouped(arrived) + " requests (" +
                                   fixed(100.0 * static_cast<double>(rejected) / static_cast<double>(arrived), 1) +
                                   "%) were rejected: " + why + "; goodput counts them as failed");
}

std::optional<Finding> check_model_max_len(i64 max_model_len, i64 model_max_len) {
  // vllm/config/model.py _get_and_verify_max_len: "User-specified max_model_len (...) is greater than the derived
  // max_model_len (...)" is a ValueError unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (positions beyond it give NaN).
  if (model_max_len <= 0 || max_model_len <= model_max_len) return std::nullopt;
  // vLLM does not start: only `fits` (false) is meaningful, as for E101; not an impossible input (sweep shows it).
  return plan_error("KVCAP-E111",
                    "max_model_len " + std::to_string(max_model_len) + " exceeds the model's derived maximum " +
                        std::to_string(model_max_len) +
                        ": vLLM refuses to start unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (RoPE positions beyond "
                        "it give NaN); requests and --max-model-len must stay within " +
                        std::to_string(model_max_len) + " tokens",
                    Finding::Leaves::only_fits, false);
}

std::optional<Finding> check_lowered_length(const MemoryPlan& plan) {
  if (plan.max_model_len_asked <= 0) return std::nullopt;
  return warning("KVCAP-W208", lowered_length_text(plan));
}

std::optional<Finding> check_truncations(std::uint64_t truncated, std::uint64_t arrived, const MemoryPlan& plan,
                                         std::int64_t max_request_tokens) {
  if (truncated == 0) return std::nullopt;
  if (pool_limits(plan, max_request_tokens))
    return warning("KVCAP-W206", grouped(truncated) + " of " + grouped(arrived) + " requests (" +
                                     fixed(100.0 * static_cast<double>(truncated) / static_cast<double>(arrived), 1) +
                                     "%) ask for prompt + output beyond " + pool_limit_text(plan, max_request_tokens) +
                                     ": their outputs were cut there");
  // vllm/entrypoints/openai/serving_engine.py _validate_input: prompt + max_tokens > max_model_len is a 400 error
  // ("This model's maximum context length is ... However, you requested ..."); without max_tokens vLLM generates
  // up to max_model_len, which is what the simulator does.
  return warning("KVCAP-W206",
                 grouped(truncated) + " of " + grouped(arrived) + " requests (" +
                     fixed(100.0 * static_cast<double>(truncated) / static_cast<double>(arrived), 1) +
                     "%) ask for prompt + output beyond max_model_len " + std::to_string(plan.dep.max_model_len) +
                     ": their outputs were cut there, as " + budget_engine(plan) +
                     " does without max_tokens; a client that sets max_tokens gets them rejected instead (400, "
                     "maximum context length)");
}

}  // namespace kvcap
