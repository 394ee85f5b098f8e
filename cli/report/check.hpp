#pragma once
// Reporters of `kvcap check`: the promises' outcomes per requirements file as a table for people, JSON, GitHub
// Actions annotations, and JUnit XML suites (report/junit.hpp writes them). Text from files goes through cli/escape.
#include <ostream>
#include <string>
#include <vector>

#include "promises.hpp"
#include "report/junit.hpp"

namespace kvcap::cli {

/// One requirements file and what became of its promises.
struct FileResult {
  std::string file;
  std::string name;
  std::vector<PromiseOutcome> results;
  std::string load_error;  ///< the file itself could not be read (diagnostics, one per line)
};

/// "kvcap check: 9 promises, 9 passed, 0 failed" (and what could not be evaluated, invalid files).
std::string summary_line(std::size_t passed, std::size_t failed, std::size_t errors, std::size_t invalid_files);
void report_table(std::ostream& o, const std::vector<FileResult>& files, const std::string& summary);
void report_github(std::ostream& o, const std::vector<FileResult>& files, const std::string& summary);
void report_check_json(std::ostream& out, const std::vector<FileResult>& files, bool ok, std::size_t passed,
                       std::size_t failed, std::size_t errors, std::size_t invalid_files);
/// One JUnit suite per requirements file, one testcase per promise (and one for a file that does not load).
std::vector<JUnitSuite> junit_suites(const std::vector<FileResult>& files);

}  // namespace kvcap::cli
