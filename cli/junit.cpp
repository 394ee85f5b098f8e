#include "junit.hpp"

#include <cstdio>

namespace kvcap::cli {

namespace {
// Length of the valid UTF-8 sequence starting at s[i], or 0 (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
std::size_t utf8_len(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  if (n == 2 && c < 0xC2) return 0;
  if (n == 3) {
    const unsigned cp = ((c & 0x0Fu) << 12) | ((b(i + 1) & 0x3Fu) << 6) | (b(i + 2) & 0x3Fu);
    if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF) return 0;
  }
  if (n == 4) {
    const unsigned cp = ((c & 0x07u) << 18) | ((b(i + 1) & 0x3Fu) << 12) | ((b(i + 2) & 0x3Fu) << 6) | (b(i + 3) & 0x3Fu);
    if (cp < 0x10000 || cp > 0x10FFFF) return 0;
  }
  return n;
}

std::string seconds(double t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", t < 0 ? 0.0 : t);
  return buf;
}
}  // namespace

std::string xml_escape(std::string_view s) {
  std::string r;
  r.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_len(s, i);
    if (n == 0) {
      r += '?';
      ++i;
      continue;
    }
    if (n > 1) {
      r.append(s.substr(i, n));
      i += n;
      continue;
    }
    switch (c) {
      case '&': r += "&amp;"; break;
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '"': r += "&quot;"; break;
      case '\'': r += "&apos;"; break;
      case '\n': r += "&#10;"; break;  // kept in attributes (a raw newline would be normalised to a space)
      case '\t': r += "&#9;"; break;
      case '\r': r += "&#13;"; break;
      default: r += c < 0x20 ? '?' : static_cast<char>(c);
    }
    ++i;
  }
  return r;
}

void write_junit(std::ostream& o, const std::string& suites_name, const std::vector<JUnitSuite>& suites) {
  std::size_t tests = 0, failures = 0, errors = 0;
  double time = 0;
  for (const auto& s : suites)
    for (const auto& c : s.cases) {
      ++tests;
      failures += c.outcome == JUnitCase::Outcome::failure;
      errors += c.outcome == JUnitCase::Outcome::error;
      time += c.time_s;
    }
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<testsuites name=\"" << xml_escape(suites_name) << "\" tests=\"" << tests << "\" failures=\"" << failures
    << "\" errors=\"" << errors << "\" time=\"" << seconds(time) << "\">\n";
  for (const auto& s : suites) {
    std::size_t f = 0, e = 0;
    double t = 0;
    for (const auto& c : s.cases) {
      f += c.outcome == JUnitCase::Outcome::failure;
      e += c.outcome == JUnitCase::Outcome::error;
      t += c.time_s;
    }
    o << "  <testsuite name=\"" << xml_escape(s.name) << "\" tests=\"" << s.cases.size() << "\" failures=\"" << f
      << "\" errors=\"" << e << "\" skipped=\"0\" time=\"" << seconds(t) << "\"";
    if (!s.timestamp.empty()) o << " timestamp=\"" << xml_escape(s.timestamp) << "\"";
    o << ">\n";
    if (!s.properties.empty()) {
      o << "    <properties>\n";
      for (const auto& [k, v] : s.properties)
        o << "      <property name=\"" << xml_escape(k) << "\" value=\"" << xml_escape(v) << "\"/>\n";
      o << "    </properties>\n";
    }
    for (const auto& c : s.cases) {
      o << "    <testcase name=\"" << xml_escape(c.name) << "\" classname=\"" << xml_escape(c.classname) << "\" time=\""
        << seconds(c.time_s) << "\">\n";
      if (c.outcome != JUnitCase::Outcome::passed) {
        const char* el = c.outcome == JUnitCase::Outcome::failure ? "failure" : "error";
        const char* type = c.outcome == JUnitCase::Outcome::failure ? "PromiseBroken" : "EvaluationError";
        o << "      <" << el << " message=\"" << xml_escape(c.message) << "\" type=\"" << type << "\">"
          << xml_escape(c.text) << "</" << el << ">\n";
      }
      if (!c.system_out.empty()) o << "      <system-out>" << xml_escape(c.system_out) << "</system-out>\n";
      o << "    </testcase>\n";
    }
    o << "  </testsuite>\n";
  }
  o << "</testsuites>\n";
}

}  // namespace kvcap::cli
