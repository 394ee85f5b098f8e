#pragma once
// One plausibility policy for every front end (plan, compare, size, sweep, simulate, check, validate, the GUI):
// inputs that would give a silent wrong answer - a deployment vLLM would refuse to start, a batch or a context
// that does not fit, KV memory beyond the device, a calibration measured on another device, offered load beyond
// capacity - become findings with a stable code. Pure: no I/O; front ends print them (stderr, JSON `findings`)
// and map them to exit codes. Codes and exit codes: docs/exit-codes-and-warnings.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvcap/planner/calibration.hpp"
#include "kvcap/planner/gpu.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/model.hpp"

namespace kvcap {

/// Documented process exit codes of the kvcap executables.
enum ExitCode : int {
  kExitOk = 0,      ///< fine (warnings allowed)
  kExitFailed = 1,  ///< a promise or target failed; an input file is invalid
  kExitUsage = 2,   ///< bad command line (including a calibration for another device without --calibration-force)
  kExitWouldNotStart = 3,  ///< vLLM would refuse to start, or the requested work does not fit
};

struct Finding {
  enum class Level { warning, error };
  std::string code;  ///< stable, e.g. "KVCAP-E101"; the number never changes meaning, the letter is the level
  Level level = Level::warning;
  std::string message;      ///< one line, no trailing period
  int exit_code = kExitOk;  ///< for errors: kExitWouldNotStart or kExitUsage
  /// What the finding leaves meaningful of the plan it is about, set where it is raised (one classification that
  /// check, sweep and the other front ends read instead of lists of codes): every figure (warnings; most errors
  /// concern a request, not the plan), only `fits` (an engine that does not start: no KV memory, E101; one request
  /// of max_model_len beyond the cache, E102; max_num_seqs beyond the state blocks, E110; a length beyond the
  /// model's, E111; or a shared prefix the cache cannot hold, E107), or nothing (KV memory beyond the device, E103;
  /// a shared prefix no request can carry, E106).
  enum class Leaves : std::uint8_t { everything, only_fits, nothing } leaves = Leaves::everything;
  /// The input contradicts itself or the hardware (E103, E106, E107), as opposed to a deployment that merely does
  /// not fit (E101): a front end that enumerates deployments (sweep) refuses it rather than reporting "does not fit".
  bool impossible_input = false;
};

/// The paper behind a --kv-layer-sharing what-if ("CLA: Brandon et al., ...").
std::string layer_sharing_source(const Deployment::LayerSharing& s);
/// The paper behind the grouped int4/int2 KV formats (KIVI), a what-if: vLLM has no such KV format.
inline constexpr const char* kKiviSource =
    "KIVI: Liu et al., \"KIVI: A Tuning-Free Asymmetric 2bit Quantization for KV Cache\", ICML 2024 (arXiv:2402.02750)";
/// The paper behind a --kv-eviction what-if (StreamingLLM, H2O).
std::string eviction_source(const Deployment::Eviction& e);
/// The KIVI group size a resolved deployment uses (--kv-quant-group-size, else the format's 32).
i64 kv_quant_group(const ResolvedDeployment& d);

/// "error KVCAP-E101: ..." / "warning KVCAP-W201: ..." (the text front ends print after "kvcap <cmd>: ").
std::string to_string(const Finding& f);
/// The exit code for a set of findings: the largest of the errors' codes, kExitOk when there are only warnings.
int exit_code(const std::vector<Finding>& findings);
bool has_errors(const std::vector<Finding>& findings);

/// Whether vLLM would start with this memory plan: KV memory left at all (E101), one request of max_model_len
/// fits (E102), the KV cache plus what else a rank holds fits in the device (E103, for --kv-cache-memory).
std::vector<Finding> check_memory_plan(const GpuSpec& g, const MemoryPlan& p);
/// What-ifs the plan carries (W207: --kv-layer-sharing), part of check_memory_plan; for front ends that do not
/// report the memory plan's other findings (simulate).
std::vector<Finding> check_what_ifs(const MemoryPlan& p);

/// A batch of `batch` requests of prompt + output tokens on this plan: the context within max_model_len (E104),
/// the batch's KV within the cache (E105), the batch within max_num_seqs (W201).
std::vector<Finding> check_batch(const MemoryPlan& p, i64 batch, i64 prompt_tokens, i64 output_tokens);

/// A calibration applied to a plan on `g`: measured on a CPU (E301) or on another GPU model (E302); with
/// `force` the same findings are warnings (W301, W302). W303: the device cannot be identified from the names.
std::vector<Finding> check_calibration(const Calibration& c, const GpuSpec& g, bool force);

/// Offered load above what the deployment can serve (W202): queues grow without bound and latency
/// percentiles depend on the run's length. For simulate and size.
std::optional<Finding> check_offered_load(double offered_per_s, double capacity_per_s);

/// A workload's requests against a max_model_len given by the user (size): the mean request (prompt + output)
/// longer than it is E104 (exit 3: `engine` rejects most requests, no deployment serves the workload); the longest
/// request (`max_context_tokens`, <= 0 when unbounded) longer than it is W205 (those requests are rejected; the
/// sizing counts every request at the mean lengths). `engine`: "vLLM", or "TensorRT-LLM" under its KV budget
/// (budget_engine).
std::vector<Finding> check_request_lengths(double prompt_mean_tokens, double output_mean_tokens, i64 max_context_tokens,
                                           i64 max_model_len, const char* engine);

/// Requests vLLM rejects because their prompt reaches max_model_len: some (W204, goodput counts them as failed),
/// or every one (E109, exit 3: nothing was served, so no latency or throughput means anything). For simulate.
/// The plan gives max_model_len, the engine and, where TensorRT-LLM lowered its length, what serves longer prompts.
/// `max_request_tokens`: the simulator's longest request (SimResult), when the KV pool holds less than max_model_len.
std::optional<Finding> check_rejections(std::uint64_t rejected, std::uint64_t arrived, const MemoryPlan& plan,
                                        std::int64_t max_request_tokens = 0);
/// Where TensorRT-LLM's budget lowered max_model_len to what its KV cache holds (MemoryPlan::max_model_len_asked):
/// W208 (check_memory_plan says it too, for every front end that checks a plan).
std::optional<Finding> check_lowered_length(const MemoryPlan& plan);
/// KVCAP-E111 when `max_model_len` exceeds the model's derived maximum `model_max_len` (vLLM
/// _get_and_verify_max_len refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1); nullopt otherwise or when unknown (0).
std::optional<Finding> check_model_max_len(i64 max_model_len, i64 model_max_len);
/// Requests whose prompt fits but prompt + output exceeds max_model_len: the simulator cuts their outputs (W206),
/// while vLLM's OpenAI server refuses such a request when the client sets max_tokens (plan and size say E104).
std::optional<Finding> check_truncations(std::uint64_t truncated, std::uint64_t arrived, const MemoryPlan& plan,
                                         std::int64_t max_request_tokens = 0);

/// The product identifier in a device name, upper-case: "NVIDIA H100 80GB HBM3" -> "H100",
/// "AMD Instinct MI300X" -> "MI300X", "NVIDIA GeForce RTX 4090" -> "4090"; "" when there is none.
std::string device_product(const std::string& device_name);

}  // namespace kvcap
