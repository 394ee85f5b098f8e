#pragma once
// Shared pieces of the subcommands: the deployment flags (vLLM names and semantics), value parsers
// with clear errors, and the subcommand table.
#include <boost/program_options.hpp>
#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kvcap/planner/deployment.hpp"
#include "kvcap/planner/host_tier.hpp"
#include "kvcap/planner/plausibility.hpp"
#include "kvcap/planner/speed.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/flags.hpp"
#include "kvcap/profiles/units.hpp"
#include "kvcap/simulator/trace.hpp"

namespace kvcap::cli {

namespace po = boost::program_options;

/// A bad command line: printed with the subcommand's usage hint, exit code 2. The value grammar of the
/// profiles room (units.hpp: tokens, bytes, durations, lengths) throws the same type.
using UsageError = profiles::InputError;

using profiles::kMaxGpuCount;
using profiles::kPositive;
using profiles::parse_bytes;
using profiles::parse_dtype_text;
using profiles::parse_int;
using profiles::parse_length;
using profiles::parse_real;
using profiles::parse_seconds;
using profiles::parse_token_list;
using profiles::parse_tokens;
using profiles::split_list;

/// A comma-separated list of names (models, GPUs); UsageError naming `flag` when it has none.
std::vector<std::string> parse_name_list(const std::string& s, const std::string& flag);

/// --model/--gpu and the deployment flags shared by plan, compare, size, simulate, sweep.
po::options_description deployment_options(bool with_model_gpu = true);
/// The what-if options of the KV cache (--kv-eviction, --kv-quant-group-size, --kv-layer-sharing): not vLLM options;
/// every command that takes a deployment takes them.
void add_what_if_options(po::options_description& d);
/// The host KV tier's options (plan, simulate): vLLM's --kv-offloading-size, or LMCache's local backends
/// (--lmcache-cpu-size, --lmcache-disk-size, --lmcache-chunk-size, --lmcache-disk-read-rate; any of them turns it on).
void add_host_tier_options(po::options_description& d);
struct HostTierFlags {
  double offloading_size_gib = 0;      ///< 0: not given
  std::optional<LmcacheSpec> lmcache;  ///< LMCache's backends when any --lmcache-* flag is given
  bool any() const { return offloading_size_gib > 0 || lmcache.has_value(); }
};
/// UsageError for malformed values, and for both connectors at once.
HostTierFlags host_tier_flags(const po::variables_map& vm);
/// The deployment those flags describe (profiles/flags.hpp: the one reader of them, shared with the dashboard).
Deployment deployment_from(const po::variables_map& vm);
/// The engine's own KV budget (EngineProfile::free_gpu_memory_fraction: TensorRT-LLM's share of the memory left
/// free) for --engine, unless the budget was given (--free-gpu-memory-fraction, --gpu-memory-utilization,
/// --kv-cache-memory).
void apply_engine_memory_rule(const po::variables_map& vm, Deployment& d);
/// --free-gpu-memory-fraction's help (plan, simulate, size and the other deployment commands).
inline constexpr const char* kFreeFractionHelp =
    "TensorRT-LLM's KV budget: this fraction of the memory left free after the weights and the profiling run "
    "(its free_gpu_memory_fraction; 0.9 with --engine trtllm, where a command has it)";
/// The values `vm` holds for the options of `options`, as typed (defaults included; a switch present when on).
profiles::FlagTexts flag_texts(const po::variables_map& vm, const po::options_description& options);

/// A plausibility error (planner/plausibility.hpp) that stops the command: printed as "kvcap CMD: error CODE: ...",
/// exit code f.exit_code.
class FindingError : public std::runtime_error {
 public:
  explicit FindingError(Finding f) : std::runtime_error(f.message), finding(std::move(f)) {}
  Finding finding;
};

/// --trace-columns and --trace-speedup: how simulate and size read a --trace CSV (added to `d`).
void add_trace_read_options(po::options_description& d);
/// The trace reader's options those flags give; UsageError naming the flag when one is bad, or when one is given
/// without --trace.
sim::TraceOptions trace_read_options(const po::variables_map& vm);

/// --calibration FILE and --calibration-force: the speed-model options shared by plan, size, sweep and simulate.
po::options_description speed_options();
/// The calibration named by --calibration (nullopt when absent), checked against `g` (check_calibration):
/// a mismatch throws FindingError unless --calibration-force; warnings go to `findings`, or to stderr when
/// `findings` is null. ProfileError when the file is bad.
std::optional<Calibration> calibration_from(const po::variables_map& vm, const GpuSpec& g,
                                            std::vector<Finding>* findings = nullptr);
/// make_speed_context with the calibration from --calibration when given (datasheet x default efficiency otherwise).
/// The --engine profile's speed options (SpeedOptions defaults when the command has no --engine).
SpeedOptions speed_options_from(const po::variables_map& vm);
SpeedContext speed_context_from(const po::variables_map& vm, const ModelSpec& m, const GpuSpec& g, const MemoryPlan& plan,
                                std::vector<Finding>* findings = nullptr);

/// Prints findings to stderr, one per line: "kvcap CMD: error KVCAP-E101: ..." (terminal-escaped);
/// `context` (e.g. a deployment) goes before the message when not empty.
void print_findings(const std::string& cmd, const std::vector<Finding>& findings, const std::string& context = "");
/// [{"code", "level", "message"}] for JSON reports.
nlohmann::ordered_json findings_json(const std::vector<Finding>& findings);
/// A JSON report's findings as every report carries them: appended to `warnings` as "CODE: message" strings (the
/// array is created when absent), and in full under `findings`.
void add_findings_json(nlohmann::ordered_json& report, const std::vector<Finding>& findings);

/// Parses `args` against `desc` (+ positional), turning Boost errors into UsageError.
po::variables_map parse(const std::vector<std::string>& args, const po::options_description& desc,
                        const po::positional_options_description* pos = nullptr);

/// Prints "--help" text: usage line, description, options, examples.
void print_help(const std::string& usage, const std::string& about, const po::options_description& desc,
                const std::string& examples);

/// A command's --help text: usage line, description, examples (the options come from its description).
struct CommandHelp {
  const char* usage;
  const char* about;
  const char* examples;
};
/// Parses `args` against `desc`; with --help prints `help` and returns nullopt (the command then exits 0).
std::optional<po::variables_map> parse_or_help(const std::vector<std::string>& args,
                                               const po::options_description& desc, const CommandHelp& help);

struct Subcommand {
  std::string name;
  std::string summary;
  std::function<int(const std::vector<std::string>&)> run;
};
const std::vector<Subcommand>& subcommands();

int cmd_plan(const std::vector<std::string>& args);
int cmd_compare(const std::vector<std::string>& args);
int cmd_import_hf(const std::vector<std::string>& args);
int cmd_list(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_check(const std::vector<std::string>& args);
int cmd_calibrate(const std::vector<std::string>& args);
int cmd_size(const std::vector<std::string>& args);
int cmd_sweep(const std::vector<std::string>& args);
int cmd_simulate(const std::vector<std::string>& args);
int cmd_plot(const std::vector<std::string>& args);
int cmd_accuracy(const std::vector<std::string>& args);

/// Runs `run` with the project's error policy (below), `name` naming the command in messages; `args` (the
/// command line) lets an arithmetic overflow name the size flags that caused it.
int run_guarded(const std::string& name, const std::function<int()>& run, const std::vector<std::string>& args = {});

/// Runs a subcommand with the project's error policy: profile errors and spec errors print
/// "error: ..." (located where possible) and return 1; usage errors return 2.
int run_main(int argc, char** argv);

}  // namespace kvcap::cli
