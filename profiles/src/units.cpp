#include "kvcap/profiles/units.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace kvcap::profiles {

namespace {
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}
}  // namespace

std::optional<std::pair<double, std::string>> split_number_unit(std::string_view text) {
  const std::string s(trim(text));
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.')) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
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

}  // namespace kvcap::profiles
