// Reporters of `kvcap check` (report/check.hpp).
#include "report/check.hpp"

#include <chrono>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

#include "kvcap/escape.hpp"
#include "kvcap/planner/text.hpp"

namespace kvcap::cli {

namespace {
// A value in its unit, for people.
std::string show(double v, const std::string& unit) {
  if (unit == "s") {
    if (std::fabs(v) < 1.0) return fixed(v * 1e3, std::fabs(v) < 0.01 ? 3 : 2) + " ms";
    return fixed(v, 3) + " s";
  }
  if (unit == "tokens" || unit == "sequences") {
    const double a = std::fabs(v);
    std::string s = a < 1.8e19 ? grouped(static_cast<std::uint64_t>(std::llround(a))) : fixed(a, 0);
    return (v < 0 ? "-" : "") + s + " " + unit;
  }
  if (unit == "tokens/s") return fixed(v, 1) + " tokens/s";
  return fixed(v, 2) + " " + unit;
}
std::string signed_show(double v, const std::string& unit) {
  return (v >= 0 ? "+" : "") + show(v, unit);
}

std::string location(const profiles::SourcePos& p) {
  return p.file + (p.line > 0 ? ":" + std::to_string(p.line) + ":" + std::to_string(p.column > 0 ? p.column : 1) : "");
}

std::string verdict(const PromiseOutcome& r) {
  if (r.error) return "could not be evaluated: " + r.detail;
  std::string s = "measured " + show(r.measured, r.unit) + ", target " + r.comparison + " " + show(r.target, r.unit) +
                  ", margin " + signed_show(r.margin, r.unit);
  if (r.margin_relative != 0)
    s += " (" + std::string(r.margin_relative >= 0 ? "+" : "") + fixed(r.margin_relative * 100, 1) + "%)";
  return s;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

}  // namespace

std::string summary_line(std::size_t passed, std::size_t failed, std::size_t errors, std::size_t invalid_files) {
  const std::size_t n = passed + failed + errors;
  std::string s = "kvcap check: " + std::to_string(n) + " promise" + (n == 1 ? "" : "s") + ", " +
                  std::to_string(passed) + " passed, " + std::to_string(failed) + " failed";
  if (errors) s += ", " + std::to_string(errors) + " could not be evaluated";
  if (invalid_files)
    s += "; " + std::to_string(invalid_files) + " requirements file" + (invalid_files == 1 ? " is" : "s are") +
         " invalid";
  return s;
}

// People: every text that came from a file (names, paths, messages) goes through escape::terminal_*, so a
// name cannot move the cursor, recolour the terminal or start a line with a CI workflow command.
void report_table(std::ostream& o, const std::vector<FileResult>& files, const std::string& summary) {
  using escape::terminal_lines;
  using escape::terminal_text;
  for (const auto& fr : files) {
    o << "kvcap check " << terminal_text(fr.file) << (fr.name != fr.file ? " (" + terminal_text(fr.name) + ")" : "")
      << "\n";
    if (!fr.load_error.empty()) {
      o << terminal_lines(fr.load_error) << "\n";
      continue;
    }
    for (const auto& r : fr.results) {
      o << "  "
        << (r.passed  ? "PASS "
            : r.error ? "ERROR"
                      : "FAIL ")
        << "  " << terminal_text(r.name) << "\n"
        << "         " << terminal_text(r.deployment) << "\n"
        << "         " << terminal_text(r.metric) << ": " << terminal_text(verdict(r)) << "\n";
      if (!r.error && !r.detail.empty()) o << "         (" << terminal_text(r.detail) << ")\n";
    }
  }
  // Broken promises again in the compiler format, so CI annotators point at the line.
  for (const auto& fr : files)
    for (const auto& r : fr.results)
      if (!r.passed)
        o << terminal_text(location(r.at)) << ": error: promise '" << terminal_text(r.name) << "' "
          << (r.error ? "" : "broken: ") << terminal_text(verdict(r)) << "\n";
  o << summary << "\n";
}

// GitHub Actions annotations, as kvcap validate --format github: one ::error per broken promise or invalid file.
void report_github(std::ostream& o, const std::vector<FileResult>& files, const std::string& summary) {
  using escape::gh_data;
  using escape::gh_property;
  for (const auto& fr : files) {
    if (!fr.load_error.empty())
      o << "::error file=" << gh_property(fr.file) << ",title=" << gh_property("kvcap check")
        << "::" << gh_data(fr.load_error) << "\n";
    for (const auto& r : fr.results) {
      if (r.passed) continue;
      o << "::error file=" << gh_property(r.at.file);
      if (r.at.line > 0) o << ",line=" << r.at.line << ",col=" << (r.at.column > 0 ? r.at.column : 1);
      o << ",title=" << gh_property("kvcap check: promise '" + r.name + "'")
        << "::" << gh_data(std::string(r.error ? "" : "broken: ") + verdict(r) + "; deployment: " + r.deployment)
        << "\n";
    }
  }
  o << escape::terminal_text(summary) << "\n";
}
void report_check_json(std::ostream& out, const std::vector<FileResult>& files, bool ok, std::size_t passed,
                       std::size_t failed, std::size_t errors, std::size_t invalid_files) {
  nlohmann::ordered_json j;
  j["ok"] = ok;
  j["passed"] = passed;
  j["failed"] = failed;
  j["errors"] = errors;
  j["invalid_files"] = invalid_files;
  j["files"] = nlohmann::ordered_json::array();
  for (const auto& fr : files) {
    nlohmann::ordered_json jf;
    jf["file"] = fr.file;
    jf["name"] = fr.name;
    if (!fr.load_error.empty()) jf["error"] = fr.load_error;
    jf["promises"] = nlohmann::ordered_json::array();
    for (const auto& r : fr.results) {
      // A promise that could not be evaluated has no measurement: null, not 0.
      const auto figure = [&](double v) {
        return r.error ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v);
      };
      jf["promises"].push_back({{"name", r.name},
                                {"deployment", r.deployment},
                                {"metric", r.metric},
                                {"unit", r.unit},
                                {"comparison", r.comparison},
                                {"target", r.target},
                                {"measured", figure(r.measured)},
                                {"margin", figure(r.margin)},
                                {"margin_relative", figure(r.margin_relative)},
                                {"passed", r.passed},
                                {"error", r.error},
                                {"detail", r.detail},
                                {"file", r.at.file},
                                {"line", r.at.line},
                                {"column", r.at.column}});
    }
    j["files"].push_back(jf);
  }
  out << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
}

std::vector<JUnitSuite> junit_suites(const std::vector<FileResult>& files) {
  std::vector<JUnitSuite> suites;
  const std::string now = utc_now();
  for (const auto& fr : files) {
    JUnitSuite s;
    s.name = fr.name;
    s.timestamp = now;
    s.properties = {{"file", fr.file}, {"tool", "kvcap " KVCAP_VERSION}};
    const std::string classname = "kvcap.check." + fr.name;
    if (!fr.load_error.empty()) {
      JUnitCase c{
          classname, "load " + fr.file, 0, JUnitCase::Outcome::error, "the requirements file is invalid", fr.load_error,
          ""};
      s.cases.push_back(std::move(c));
    }
    for (const auto& r : fr.results) {
      JUnitCase c;
      c.classname = classname;
      c.name = r.name;
      c.time_s = r.time_s;
      c.outcome = r.passed  ? JUnitCase::Outcome::passed
                  : r.error ? JUnitCase::Outcome::error
                            : JUnitCase::Outcome::failure;
      const std::string v = verdict(r);
      c.message = r.passed ? "" : v;
      c.text = r.passed
                   ? ""
                   : location(r.at) + ": " + v + "\ndeployment: " + r.deployment + (r.error ? "" : "\n" + r.detail);
      c.system_out = location(r.at) + "\ndeployment: " + r.deployment + "\n" + r.metric + ": " + v +
                     (r.error || r.detail.empty() ? "" : "\n" + r.detail);
      s.cases.push_back(std::move(c));
    }
    suites.push_back(std::move(s));
  }
  return suites;
}

}  // namespace kvcap::cli
