#include "report/junit.hpp"

#include <cstdio>

#include "kvcap/escape.hpp"

namespace kvcap::cli {

namespace {
std::string seconds(double t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", t < 0 ? 0.0 : t);
  return buf;
}
}  // namespace

std::string xml_escape(std::string_view s) { return escape::xml_text(s); }

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
