#include "kvcap/planner/text.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kvcap {

std::string fixed(double v, int decimals) {
  if (std::isinf(v)) return "unbounded";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string fixed_down(double v, int decimals) {
  if (!std::isfinite(v)) return fixed(v, decimals);
  // Six digits more than asked, then cut: 2.3 stays "2.30" (floor(2.3 x 100) is 229 in binary), 0.99984 is "0.99".
  std::string s = fixed(v, decimals + 6);
  s.resize(s.size() - 6);
  if (decimals == 0) s.pop_back();  // the '.' left by "%.6f"
  return s;
}

std::string amount(double v, int decimals) {
  const double a = std::fabs(v);
  if (!std::isfinite(v) || (a < 1e5 && (a == 0 || a >= 0.5 * std::pow(10.0, -decimals)))) return fixed(v, decimals);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string human_seconds(double s) {
  if (s == 0) return "0";
  if (s < 1e-3) return fixed(s * 1e6, 0) + " us";
  if (s < 1) return fixed(s * 1e3, s < 0.01 ? 2 : 1) + " ms";
  return amount(s, s < 100 ? 2 : 1) + " s";
}

std::string gib(double bytes, int decimals) {
  return fixed(bytes / 1073741824.0, decimals);
}

std::string gib_text(double bytes, int decimals) {
  return gib(bytes, decimals) + " GiB";
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (std::fabs(b) >= 1024.0 && u < 6) b /= 1024.0, ++u;
  return u == 0 ? fixed(b, 0) + " B" : fixed(b, b < 10 ? 2 : 1) + " " + units[u];
}

std::string human_tokens(std::int64_t t) {
  if (t >= (1 << 20) && t % (1 << 20) == 0) return std::to_string(t >> 20) + "M";
  if (t >= 1024 && t % 1024 == 0) return std::to_string(t >> 10) + "K";
  return std::to_string(t);
}

std::string grouped(std::uint64_t v) {
  const std::string s = std::to_string(v);
  std::string r;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) r += ',';
    r += s[i];
  }
  return r;
}

std::string billions(double v) {
  return fixed(v / 1e9, 2) + "B";
}

double strtod_decimal(const char* s, char** end) {
  const double v = std::strtod(s, end);
  if (std::string_view(s, static_cast<std::size_t>(*end - s)).find_first_of("xX") != std::string_view::npos) {
    *end = const_cast<char*>(s);  // NOLINT(cppcoreguidelines-pro-type-const-cast): strtod's own contract
    return 0;
  }
  return v;
}

bool looks_hexadecimal(std::string_view s) {
  s = trim(s);
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  return s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

std::string lowercase(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

}  // namespace kvcap
