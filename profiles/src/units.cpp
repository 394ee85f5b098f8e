#include "kvcap/profiles/units.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "kvcap/planner/error.hpp"
#include "kvcap/planner/text.hpp"

namespace kvcap::profiles {

std::optional<std::pair<double, std::string>> split_number_unit(std::string_view text) {
  const std::string s(trim(text));
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.')) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = strtod_decimal(s.c_str(), &end);
  if (end == s.c_str() || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  return std::make_pair(v, std::string(trim(end)));
}

std::optional<double> token_unit_multiplier(std::string_view unit) {
  if (unit.empty()) return 1.0;
  if (unit == "k") return 1e3;
  if (unit == "m") return 1e6;
  if (unit == "g") return 1e9;
  if (unit == "K") return 1024.0;
  if (unit == "M") return 1024.0 * 1024;
  if (unit == "G") return 1024.0 * 1024 * 1024;
  return std::nullopt;
}

std::optional<double> byte_unit_multiplier(std::string_view unit) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"", 1},     {"B", 1},     {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"KB", 1e3}, {"MB", 1e6},  {"GB", 1e9},     {"TB", 1e12}};
  for (const auto& [name, m] : kUnits)
    if (unit == name) return m;
  return std::nullopt;
}

std::optional<double> seconds_unit_multiplier(std::string_view unit) {
  if (unit.empty() || unit == "s") return 1.0;
  if (unit == "ms") return 1e-3;
  if (unit == "us") return 1e-6;
  if (unit == "min") return 60.0;
  return std::nullopt;
}

std::optional<std::int64_t> parse_token_text(std::string_view text) {
  const auto nu = split_number_unit(text);
  if (!nu) return std::nullopt;
  const auto mult = token_unit_multiplier(nu->second);
  if (!mult) return std::nullopt;
  const double t = nu->first * *mult;
  if (t != std::floor(t) || t > 9.0e15) return std::nullopt;
  return static_cast<std::int64_t>(t);
}

std::optional<double> parse_seconds_text(std::string_view text) {
  const auto nu = split_number_unit(text);
  if (!nu) return std::nullopt;
  const auto mult = seconds_unit_multiplier(nu->second);
  if (!mult) return std::nullopt;
  return nu->first * *mult;
}

namespace {

// Splits "12.5GiB" into number and suffix (a sign allowed, so that "-5" is out of range, not malformed).
std::pair<double, std::string> number_and_unit(const std::string& in, const std::string& what, const char* expected) {
  const std::string s(trim(in));
  errno = 0;
  char* end = nullptr;
  const double v = strtod_decimal(s.c_str(), &end);  // decimal only: no vLLM flag takes "0x1000"
  const bool hex = looks_hexadecimal(s);
  if (s.empty() || end == s.c_str() || errno == ERANGE || !std::isfinite(v) || hex)
    throw InputError(what + ": expected " + expected + (hex ? " in decimal" : "") + ", got '" + in + "'");
  return {v, std::string(trim(end))};
}

const char* const kLengthForms =
    " (forms: 512 | uniform:128-2K | lognormal:mean=1K,sigma=0.9[,min=16,max=8K] | empirical:128@0.5,1K@0.5)";

InputError unknown_parameter(const std::string& what, const std::string& k, const std::string& spec) {
  return InputError(what + ": unknown lognormal parameter '" + k + "' in '" + spec + "'" + kLengthForms);
}

LengthDistribution lognormal_from(const std::string& rest, const std::string& spec, const std::string& what) {
  LengthDistribution d = LengthDistribution::lognormal_tokens(0, -1);
  for (const auto& kv : split_list(rest, ',', true)) {
    const auto eq = kv.find('=');
    const std::string k = kv.substr(0, eq), v = eq == std::string::npos ? "" : kv.substr(eq + 1);
    if (k == "mean")
      d.lognormal_mean_tokens = static_cast<double>(parse_tokens(v, what + " mean"));
    else if (k == "sigma")
      d.sigma = parse_real(v, what + " sigma", "a number >= 0 such as 0.9", 0);
    else if (k == "min")
      d.min_tokens = parse_tokens(v, what + " min");
    else if (k == "max")
      d.max_tokens = parse_tokens(v, what + " max");
    else
      throw unknown_parameter(what, k, spec);
  }
  if (d.lognormal_mean_tokens <= 0 || d.sigma < 0)
    throw InputError(what + ": lognormal needs mean= and sigma=" + kLengthForms);
  return d;
}

LengthDistribution empirical_from(const std::string& rest, const std::string& spec, const std::string& what) {
  std::vector<i64> values;
  std::vector<double> weights;
  for (const auto& item : split_list(rest, ',', true)) {
    const auto at = item.find('@');
    values.push_back(parse_tokens(item.substr(0, at), what));
    if (at != std::string::npos) weights.push_back(parse_real(item.substr(at + 1), what, "a weight such as 0.3"));
  }
  if (!weights.empty() && weights.size() != values.size())
    throw InputError(what + ": give a weight for every value or for none, in '" + spec + "'" + kLengthForms);
  return LengthDistribution::empirical_tokens(values, weights);
}

}  // namespace

std::int64_t parse_tokens(const std::string& in, const std::string& what) {
  auto [v, unit] = number_and_unit(in, what, "a token count such as 4096, 32K or 1M");
  const auto mult = token_unit_multiplier(unit);
  if (!mult) throw InputError(what + ": unknown unit '" + unit + "' in '" + in + "'; " + kTokenUnitsHelp);
  const double t = v * *mult;
  if (t > 9.0e15) throw InputError(what + ": expected a token count of at most 9e15, got '" + in + "'");
  if (t < 1 || t != std::floor(t))
    throw InputError(what + ": expected a whole number of tokens >= 1, got '" + in + "'");
  return static_cast<std::int64_t>(t);
}

std::uint64_t parse_bytes(const std::string& in, const std::string& what) {
  auto [v, unit] = number_and_unit(in, what, "a size such as 40GiB, 80GB or 42949672960");
  const auto mult = byte_unit_multiplier(unit);
  if (!mult) throw InputError(what + ": unknown unit '" + unit + "'; " + kByteUnitsHelp);
  const double b = std::floor(v * *mult);
  if (v < 0 || b > 1.8e19) throw InputError(what + ": expected a size between 0 and 2^64 bytes, got '" + in + "'");
  return static_cast<std::uint64_t>(b);
}

std::vector<std::string> split_list(const std::string& s, char sep, bool keep_empty) {
  std::vector<std::string> r;
  std::size_t start = 0;
  while (true) {
    const auto p = s.find(sep, start);
    std::string item(trim(std::string_view(s).substr(start, p == std::string::npos ? std::string::npos : p - start)));
    if (keep_empty || !item.empty()) r.push_back(std::move(item));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return r;
}

std::vector<std::int64_t> parse_token_list(const std::string& s, const std::string& what) {
  std::vector<std::int64_t> r;
  for (const auto& item : split_list(s, ',', true)) {
    if (item.empty()) {
      std::string msg = what;
      msg.append(": an empty item in '").append(s).append("' (expected token counts such as 1K,32K)");
      throw InputError(msg);
    }
    r.push_back(parse_tokens(item, what));
    // A value twice would print the same rows twice (or, in a grid, every combination with it twice).
    if (std::find(r.begin(), r.end() - 1, r.back()) == r.end() - 1) continue;
    std::string msg = what;
    msg.append(": ").append(std::to_string(r.back())).append(" tokens given twice in '").append(s).append("'");
    throw InputError(msg);
  }
  if (r.empty()) throw InputError(what + ": expected a comma-separated list of token counts, e.g. 1K,32K,128K");
  return r;
}

double parse_seconds(const std::string& in, const std::string& what) {
  auto [v, unit] = number_and_unit(in, what, "a duration with a unit such as 2s, 50ms or 800us");
  // Not positive: no unit would help (a bare 0 was told to write 0ms, which is refused next).
  if (!(v > 0))
    throw InputError(what + ": expected a positive duration with a unit such as 2s or 50ms, got '" + in + "'");
  // A bare number is ambiguous (is --tpot 40 forty seconds or forty milliseconds?): a unit is required.
  if (unit.empty())
    throw InputError(what + ": '" + in + "' has no unit; write " + std::string(trim(in)) + "ms or " +
                     std::string(trim(in)) + "s (a bare number is ambiguous)");
  const auto mult = seconds_unit_multiplier(unit);
  if (!mult) throw InputError(what + ": unknown unit '" + unit + "'; " + kSecondsUnitsHelp);
  const double s = v * *mult;
  if (!(s <= 3.2e9)) throw InputError(what + ": at most 100 years, got '" + in + "'");
  return s;
}

double parse_real(const std::string& text, const std::string& what, const std::string& expected, double lo, double hi) {
  const std::string s(trim(text));  // blanks around the number, on either side (' 0.9' and '0.9 ')
  errno = 0;
  char* end = nullptr;
  const double v = strtod_decimal(s.c_str(), &end);
  const bool hex = looks_hexadecimal(s);
  if (s.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v < lo || v > hi || hex)
    throw InputError(what + ": expected " + expected + (hex ? " in decimal" : "") + ", got '" + s + "'");
  return v;
}

std::int64_t parse_int(const std::string& s, const std::string& what, std::int64_t min, std::int64_t max) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  const std::string range = max == std::numeric_limits<std::int64_t>::max()
                                ? ">= " + std::to_string(min)
                                : "between " + std::to_string(min) + " and " + std::to_string(max);
  if (s.empty() || *end != '\0' || errno == ERANGE || v < min || v > max)
    throw InputError(what + ": expected an integer " + range + ", got '" + s + "'");
  return v;
}

LengthDistribution parse_length(const std::string& spec, const std::string& what) {
  const auto colon = spec.find(':');
  const std::string kind = colon == std::string::npos ? "" : spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  LengthDistribution d;
  if (colon == std::string::npos) {
    d = LengthDistribution::fixed_tokens(parse_tokens(spec, what));
  } else if (kind == "uniform") {
    const auto dash = rest.find('-');
    if (dash == std::string::npos)
      throw InputError(what + ": expected uniform:MIN-MAX, got '" + spec + "'" + kLengthForms);
    d = LengthDistribution::uniform_tokens(parse_tokens(rest.substr(0, dash), what),
                                           parse_tokens(rest.substr(dash + 1), what));
  } else if (kind == "lognormal") {
    d = lognormal_from(rest, spec, what);
  } else if (kind == "empirical") {
    d = empirical_from(rest, spec, what);
  } else {
    throw InputError(what + ": unknown distribution '" + kind + "'" + kLengthForms);
  }
  try {
    validate(d, what);
  } catch (const SpecError& e) {
    // A single length is the flag itself ("--prompt-tokens: must be ..."), not the file's "tokens" key under it.
    throw InputError(d.kind == LengthDistribution::Kind::fixed ? what + ": " + e.reason() : e.what());
  }
  return d;
}

}  // namespace kvcap::profiles
