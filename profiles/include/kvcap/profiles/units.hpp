#pragma once
// Numbers with units, as people type them in profiles and on the command line. One owner for the unit
// tables: the YAML reader (profiles/src/reader.cpp) and the CLI flag parsers (cli/common.cpp) both use these.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

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

inline constexpr const char* kTokenUnitsHelp = "use K/M/G (x1024, as vLLM) or k/m/g (x1000)";
inline constexpr const char* kByteUnitsHelp = "use B, KiB, MiB, GiB, TiB (binary) or KB, MB, GB, TB (decimal)";
inline constexpr const char* kSecondsUnitsHelp = "use s, ms, us or min";

}  // namespace kvcap::profiles
