#pragma once
// JUnit XML for CI systems (Jenkins, GitLab, GitHub test reporters, Azure DevOps). Elements and attributes
// follow the Jenkins xUnit plugin's junit-10.xsd (the de-facto schema of Ant's XMLJUnitResultFormatter):
// testsuites > testsuite (name, tests, failures, errors, skipped, time, timestamp) > properties, testcase
// (name, classname, time) > failure / error (message, type) + system-out.
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace kvcap::cli {

struct JUnitCase {
  std::string classname;
  std::string name;
  double time_s = 0;
  enum class Outcome { passed, failure, error } outcome = Outcome::passed;
  std::string message;      ///< one line: the failure attribute
  std::string text;         ///< details: the failure element's body
  std::string system_out;   ///< what was measured, also for passing cases
};

struct JUnitSuite {
  std::string name;
  std::string timestamp;    ///< ISO 8601 without zone, as the XSD wants ("2026-03-14T12:00:00")
  std::vector<std::pair<std::string, std::string>> properties;
  std::vector<JUnitCase> cases;
};

/// Text safe inside XML 1.0 attributes and elements: & < > " ' escaped, control characters that XML 1.0
/// cannot carry (even as references) and invalid UTF-8 bytes replaced by '?'.
std::string xml_escape(std::string_view s);

void write_junit(std::ostream& o, const std::string& suites_name, const std::vector<JUnitSuite>& suites);

}  // namespace kvcap::cli
