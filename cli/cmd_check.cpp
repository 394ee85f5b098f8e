// kvcap check: evaluates the capacity promises of requirement files; pass/fail with the measured value and
// the margin, exit 1 when any promise fails, and JUnit XML for CI (one testcase per promise). Flags -> files and
// a profile index -> check_requirements (promises.hpp: profiles resolve, the planner evaluates) -> a reporter.
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "common.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/requirements.hpp"
#include "promises.hpp"
#include "report/junit.hpp"

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
std::string signed_show(double v, const std::string& unit) { return (v >= 0 ? "+" : "") + show(v, unit); }

std::string location(const profiles::SourcePos& p) {
  return p.file + (p.line > 0 ? ":" + std::to_string(p.line) + ":" + std::to_string(p.column > 0 ? p.column : 1) : "");
}

std::string verdict(const PromiseOutcome& r) {
  if (r.error) return "could not be evaluated: " + r.detail;
  std::string s = "measured " + show(r.measured, r.unit) + ", target " + r.comparison + " " + show(r.target, r.unit) +
                  ", margin " + signed_show(r.margin, r.unit);
  if (r.margin_relative != 0) s += " (" + std::string(r.margin_relative >= 0 ? "+" : "") + fixed(r.margin_relative * 100, 1) + "%)";
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

struct FileResult {
  std::string file;
  std::string name;
  std::vector<PromiseOutcome> results;
  std::string load_error;  ///< the file itself could not be read (diagnostics, one per line)
};

std::string summary_line(std::size_t passed, std::size_t failed, std::size_t errors, std::size_t invalid_files) {
  const std::size_t n = passed + failed + errors;
  std::string s = "kvcap check: " + std::to_string(n) + " promise" + (n == 1 ? "" : "s") + ", " + std::to_string(passed) +
                  " passed, " + std::to_string(failed) + " failed";
  if (errors) s += ", " + std::to_string(errors) + " could not be evaluated";
  if (invalid_files)
    s += "; " + std::to_string(invalid_files) + " requirements file" + (invalid_files == 1 ? " is" : "s are") + " invalid";
  return s;
}

// People: every text that came from a file (names, paths, messages) goes through escape::terminal_*, so a
// name cannot move the cursor, recolour the terminal or start a line with a CI workflow command.
void report_table(std::ostream& o, const std::vector<FileResult>& files, const std::string& summary) {
  using escape::terminal_lines;
  using escape::terminal_text;
  for (const auto& fr : files) {
    o << "kvcap check " << terminal_text(fr.file) << (fr.name != fr.file ? " (" + terminal_text(fr.name) + ")" : "") << "\n";
    if (!fr.load_error.empty()) {
      o << terminal_lines(fr.load_error) << "\n";
      continue;
    }
    for (const auto& r : fr.results) {
      o << "  " << (r.passed ? "PASS " : r.error ? "ERROR" : "FAIL ") << "  " << terminal_text(r.name) << "\n"
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
      o << "::error file=" << gh_property(fr.file) << ",title=" << gh_property("kvcap check") << "::"
        << gh_data(fr.load_error) << "\n";
    for (const auto& r : fr.results) {
      if (r.passed) continue;
      o << "::error file=" << gh_property(r.at.file);
      if (r.at.line > 0) o << ",line=" << r.at.line << ",col=" << (r.at.column > 0 ? r.at.column : 1);
      o << ",title=" << gh_property("kvcap check: promise '" + r.name + "'") << "::"
        << gh_data(std::string(r.error ? "" : "broken: ") + verdict(r) + "; deployment: " + r.deployment) << "\n";
    }
  }
  o << escape::terminal_text(summary) << "\n";
}
/// Each requirements file loaded and its promises evaluated; a file that does not load keeps its error.
std::vector<FileResult> check_files(const std::vector<std::string>& paths,
                                    const std::optional<profiles::ProfileIndex>& index) {
  std::vector<FileResult> files;
  for (const auto& f : paths) {
    FileResult fr;
    fr.file = f;
    fr.name = f;
    try {
      const auto req = profiles::load_requirements_file(f);
      if (!req.name.empty()) fr.name = req.name;
      fr.results = check_requirements(req, index ? &*index : nullptr);
    } catch (const profiles::ProfileError& e) {
      fr.load_error = e.what();
    }
    files.push_back(std::move(fr));
  }
  return files;
}

/// kvcap check --help.
const CommandHelp kHelp = {
    "kvcap check REQUIREMENTS.yaml... [--junit out.xml] [--format table|json|github] [--profiles DIR]",
    "Evaluates each promise of the requirement files (concurrency_at, kv_capacity_tokens, fits, max_model_len,\n"
    "tpot_s, ttft_s, decode_tokens_per_s, max_batch_at_tpot) with kvcap's memory and speed models and prints\n"
    "pass/fail with the measured value, the target and the margin. Exit code 0: every promise holds; 1: a\n"
    "promise fails or cannot be evaluated, or a file is invalid; 2: bad command line.",
    "  kvcap check profiles/examples/requirements.yaml\n"
    "  kvcap check capacity.yaml --junit kvcap-junit.xml --profiles profiles/\n"
    "  kvcap check capacity.yaml --format json"};

/// --profiles DIR...: the model, GPU and deployment profiles promises may name (nullopt without the flag).
std::optional<profiles::ProfileIndex> index_from(const po::variables_map& vm) {
  if (!vm.count("profiles")) return std::nullopt;
  profiles::ProfileIndex index;
  for (const auto& dir : vm["profiles"].as<std::vector<std::string>>()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) throw UsageError("--profiles: '" + dir + "' is not a folder");
    const auto more = profiles::index_profiles(dir);
    index.models.insert(more.models.begin(), more.models.end());
    index.gpus.insert(more.gpus.begin(), more.gpus.end());
    index.deployments.insert(more.deployments.begin(), more.deployments.end());
  }
  return index;
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
    for (const auto& r : fr.results)
      jf["promises"].push_back({{"name", r.name},
                                {"deployment", r.deployment},
                                {"metric", r.metric},
                                {"unit", r.unit},
                                {"comparison", r.comparison},
                                {"target", r.target},
                                {"measured", r.measured},
                                {"margin", r.margin},
                                {"margin_relative", r.margin_relative},
                                {"passed", r.passed},
                                {"error", r.error},
                                {"detail", r.detail},
                                {"file", r.at.file},
                                {"line", r.at.line},
                                {"column", r.at.column}});
    j["files"].push_back(jf);
  }
  out << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
}

/// One JUnit suite per requirements file, one testcase per promise (and one for a file that does not load).
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

}  // namespace

int cmd_check(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  // clang-format off
  desc.add_options()
    ("requirements", po::value<std::vector<std::string>>(), "requirement files (kind: requirements)")
    ("junit", po::value<std::string>(), "also write JUnit XML here (one testcase per promise)")
    ("profiles", po::value<std::vector<std::string>>(), "folder of model/GPU/deployment profiles that promises may name (repeatable)")
    ("format,f", po::value<std::string>()->default_value("table"), "table (people), json (programs) or github (Actions annotations)")
    ("help,h", "show this help");
  // clang-format on
  po::positional_options_description pos;
  pos.add("requirements", -1);
  const auto vm = parse(args, desc, &pos);
  if (vm.count("help")) {
    print_help(kHelp.usage, kHelp.about, desc, kHelp.examples);
    return 0;
  }
  if (!vm.count("requirements")) throw UsageError("give a requirements file, e.g. kvcap check profiles/examples/requirements.yaml");
  const std::string fmt = vm["format"].as<std::string>();
  if (fmt != "table" && fmt != "json" && fmt != "github")
    throw UsageError("--format: expected table, json or github, got '" + fmt + "'");
  const auto index = index_from(vm);
  // The JUnit file must be writable before anything is evaluated (fail early, not after the run).
  std::ofstream junit;
  if (vm.count("junit")) {
    junit.open(vm["junit"].as<std::string>(), std::ios::trunc);
    if (!junit) throw UsageError("--junit: cannot write '" + vm["junit"].as<std::string>() + "'");
  }

  const auto files = check_files(vm["requirements"].as<std::vector<std::string>>(), index);

  std::size_t passed = 0, failed = 0, errors = 0, invalid_files = 0;
  for (const auto& fr : files) {
    invalid_files += !fr.load_error.empty();
    for (const auto& r : fr.results) (r.passed ? passed : r.error ? errors : failed) += 1;
  }
  const bool ok = failed == 0 && errors == 0 && invalid_files == 0;

  if (fmt == "json") {
    report_check_json(std::cout, files, ok, passed, failed, errors, invalid_files);
  } else if (fmt == "github") {
    report_github(std::cout, files, summary_line(passed, failed, errors, invalid_files));
  } else {
    report_table(std::cout, files, summary_line(passed, failed, errors, invalid_files));
  }

  if (junit.is_open()) {
    write_junit(junit, "kvcap check", junit_suites(files));
    junit.close();
    if (!junit) {
      std::cerr << "kvcap check: error: writing the JUnit file failed\n";
      return 1;
    }
  }
  return ok ? 0 : 1;
}

}  // namespace kvcap::cli
