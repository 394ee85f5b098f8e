#pragma once
// Shared pieces of the subcommands: the deployment flags (vLLM names and semantics), value parsers
// with clear errors, and the subcommand table.
#include <boost/program_options.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvcap/planner/deployment.hpp"
#include "kvcap/planner/plausibility.hpp"
#include "kvcap/planner/speed.hpp"

namespace kvcap::cli {

namespace po = boost::program_options;

/// A bad command line: printed with the subcommand's usage hint, exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// `s` without leading and trailing blanks and tabs.
std::string trim(const std::string& s);
/// "a, b,,c" -> {"a", "b", "c"}: items trimmed; empty items dropped unless keep_empty.
std::vector<std::string> split_list(const std::string& s, char sep = ',', bool keep_empty = false);
/// A comma-separated list of names (models, GPUs); UsageError naming `flag` when it has none.
std::vector<std::string> parse_name_list(const std::string& s, const std::string& flag);
/// Token counts as vLLM reads them (--max-model-len): lowercase k/m/g are decimal (1k = 1000),
/// uppercase K/M/G binary (1K = 1024).
std::int64_t parse_tokens(const std::string& s, const std::string& flag);
/// Byte sizes: plain bytes, or with a unit: KiB/MiB/GiB/TiB (2^10...) or KB/MB/GB/TB (10^3...).
std::uint64_t parse_bytes(const std::string& s, const std::string& flag);
/// A comma-separated list of token counts, e.g. "1K,4K,32K,128K".
std::vector<std::int64_t> parse_token_list(const std::string& s, const std::string& flag);
/// A finite real number in [lo, hi]; otherwise UsageError "flag: expected <expected>, got 's'".
double parse_real(const std::string& s, const std::string& flag, const std::string& expected,
                  double lo = -1.7976931348623157e308, double hi = 1.7976931348623157e308);
/// Smallest positive double, for "> 0" ranges of parse_real.
inline constexpr double kPositive = 4.9406564584124654e-324;
/// A plain integer in [min, max] (counts of GPUs, requests); UsageError naming `flag` otherwise.
std::int64_t parse_int(const std::string& s, const std::string& flag, std::int64_t min,
                       std::int64_t max = std::numeric_limits<std::int64_t>::max());
/// The most GPUs any flag may name (a bound on work, far above any real cluster).
inline constexpr std::int64_t kMaxGpuCount = 100000;
/// A duration with its unit: "2s", "50ms", "800us", "1.5min"; a bare number is a UsageError (ambiguous).
double parse_seconds(const std::string& s, const std::string& flag);
DType parse_dtype_flag(const std::string& s, const std::string& flag, bool (*accept)(const DTypeInfo&));

/// --model/--gpu and the deployment flags shared by plan, compare, size, simulate, sweep.
po::options_description deployment_options(bool with_model_gpu = true);
Deployment deployment_from(const po::variables_map& vm);

/// A plausibility error (planner/plausibility.hpp) that stops the command: printed as "kvcap CMD: error CODE: ...",
/// exit code f.exit_code.
class FindingError : public std::runtime_error {
 public:
  explicit FindingError(Finding f) : std::runtime_error(f.message), finding(std::move(f)) {}
  Finding finding;
};

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

/// Parses `args` against `desc` (+ positional), turning Boost errors into UsageError.
po::variables_map parse(const std::vector<std::string>& args, const po::options_description& desc,
                        const po::positional_options_description* pos = nullptr);

/// Prints "--help" text: usage line, description, options, examples.
void print_help(const std::string& usage, const std::string& about, const po::options_description& desc,
                const std::string& examples);

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
