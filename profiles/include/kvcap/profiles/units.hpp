#pragma once
// Numbers with units, as people type them in profiles and on the command line. One owner for the unit
// tables: the YAML reader (profiles/src/reader.cpp) and the CLI flag parsers (cli/common.cpp) both use these.
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvcap/planner/workload.hpp"

namespace kvcap::profiles {

/// "12.5GiB" -> {12.5, "GiB"}: a finite number (leading digit or '.') and the rest, blanks trimmed;
/// nullopt when the text does not start with a number.
std::optional<std::pair<double, std::string>> split_number_unit(std::string_view text);

/// Token-count suffixes as vLLM reads --max-model-len: k/m/g decimal (1k = 1000), K/M/G binary
/// (1K = 1024) (vllm/engine/arg_utils.py, human_readable_int); "" = 1. nullopt for anything else.
std::optional<double> token_unit_multiplier(std::string_view unit);
/// Byte suffixes: B, KiB/MiB/GiB/TiB (2^10...), KB/MB/GB/TB (10^3...); "" = 1.
std::optional<double> byte_unit_multiplier(std::string_view unit);
/// Duration suffixes to seconds: s, ms, us, min; "" = seconds.
std::optional<double> seconds_unit_multiplier(std::string_view unit);

/// Token text ("32K") to a whole count in [0, 9e15]; nullopt when malformed or fractional.
std::optional<std::int64_t> parse_token_text(std::string_view text);
/// Duration text ("40ms") to seconds; nullopt when malformed.
std::optional<double> parse_seconds_text(std::string_view text);

/// A value typed as text (a command-line flag, a dashboard field) that does not follow its grammar. The message
/// starts with the flag or field it came from and says what was expected; front ends map it to their usage error
/// (the CLI: exit code 2).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The text grammar of values, one for the CLI, the dashboard and the workload files. Each parser throws
// InputError "WHAT: expected ..., got 'TEXT'" (`what` names the flag or field, e.g. "--max-model-len").

/// Token counts as vLLM reads them (--max-model-len): "32K" = 32768, "32k" = 32000; a whole count >= 1.
std::int64_t parse_tokens(const std::string& text, const std::string& what);
/// Byte sizes: plain bytes, or with a unit: KiB/MiB/GiB/TiB (2^10...) or KB/MB/GB/TB (10^3...).
std::uint64_t parse_bytes(const std::string& text, const std::string& what);
/// A duration with its unit: "2s", "50ms", "800us", "1.5min"; a bare number is an error (ambiguous).
double parse_seconds(const std::string& text, const std::string& what);
/// A finite real number in [lo, hi]; otherwise "what: expected <expected>, got 'text'".
double parse_real(const std::string& text, const std::string& what, const std::string& expected,
                  double lo = -std::numeric_limits<double>::max(), double hi = std::numeric_limits<double>::max());
/// Smallest positive double, for "> 0" ranges of parse_real.
inline constexpr double kPositive = std::numeric_limits<double>::denorm_min();
/// A plain integer in [min, max].
std::int64_t parse_int(const std::string& text, const std::string& what, std::int64_t min,
                       std::int64_t max = std::numeric_limits<std::int64_t>::max());
/// "a, b,,c" -> {"a", "b", "c"}: items trimmed; empty items dropped unless keep_empty.
std::vector<std::string> split_list(const std::string& text, char sep = ',', bool keep_empty = false);
/// A comma-separated list of token counts, e.g. "1K,4K,32K,128K".
std::vector<std::int64_t> parse_token_list(const std::string& text, const std::string& what);
/// A length distribution (prompt or output tokens), validated (planner/workload.hpp):
///   N                                        fixed (N may be 1K, 2k, ...)
///   uniform:MIN-MAX                          integers in [MIN, MAX]
///   lognormal:mean=M,sigma=S[,min=A][,max=B]
///   empirical:V1,V2,...   or   empirical:V1@W1,V2@W2,...
LengthDistribution parse_length(const std::string& text, const std::string& what);

inline constexpr const char* kTokenUnitsHelp = "use K/M/G (x1024, as vLLM) or k/m/g (x1000)";
inline constexpr const char* kByteUnitsHelp = "use B, KiB, MiB, GiB, TiB (binary) or KB, MB, GB, TB (decimal)";
inline constexpr const char* kSecondsUnitsHelp = "use s, ms, us or min";

}  // namespace kvcap::profiles
