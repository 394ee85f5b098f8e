// kvcap validate: every problem in a set of profiles, as compiler-style lines, JSON, or GitHub annotations.
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "common.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/profiles/validate.hpp"

namespace kvcap::cli {

namespace {
using escape::gh_data;
using escape::gh_property;

std::string summary(const profiles::ValidationReport& r) {
  // The files the errors are in: a referenced profile's own (m.yaml, named by d.yaml) count as its, not d.yaml's.
  // A missing path or a folder without profiles is not a file with errors.
  std::set<std::string> in;
  std::error_code ec;
  for (const auto& d : r.diagnostics)
    if (std::filesystem::is_regular_file(d.file, ec)) in.insert(d.file);
  const auto bad_files = static_cast<int>(in.size());
  std::string s = "kvcap validate: " + std::to_string(r.files.size()) + " file" + (r.files.size() == 1 ? "" : "s") + " checked";
  if (r.skipped) s += " (" + std::to_string(r.skipped) + " non-YAML skipped)";
  if (r.ok()) return s + ", no errors";
  s += ", " + std::to_string(r.diagnostics.size()) + " error" + (r.diagnostics.size() == 1 ? "" : "s");
  if (bad_files) s += " in " + std::to_string(bad_files) + " file" + (bad_files == 1 ? "" : "s");
  return s;
}
}  // namespace

int cmd_validate(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  // clang-format off
  desc.add_options()
    ("paths", po::value<std::vector<std::string>>(), "profile files or folders (recursively: *.yaml, *.yml)")
    ("format,f", po::value<std::string>()->default_value("text"), "text (file:line:col: error: ...), json, or github (Actions annotations)")
    ("help,h", "show this help");
  // clang-format on
  po::positional_options_description pos;
  pos.add("paths", -1);
  const auto vm = parse(args, desc, &pos);
  if (vm.count("help")) {
    print_help("kvcap validate PATH... [--format text|json|github]",
               "Checks YAML profiles (kind: model, gpu, deployment, requirements, workload; calibration files; a\n"
               "config.json named explicitly): schema, types, ranges, architecture consistency, and references between\n"
               "files (a deployment naming a model or GPU that is neither built-in, nor a profile in the checked set,\n"
               "nor an existing path relative to it). Folders are searched recursively; other files are skipped.\n"
               "Every problem is reported. Exit code 0: no errors; 1: errors; 2: bad command line.",
               desc,
               "  kvcap validate profiles/\n"
               "  kvcap validate deploy/ models/my-model.yaml --format github\n"
               "  kvcap validate profiles/examples/requirements.yaml --format json");
    return 0;
  }
  if (!vm.count("paths")) throw UsageError("give at least one profile file or folder, e.g. kvcap validate profiles/");
  const std::string fmt = vm["format"].as<std::string>();
  if (fmt != "text" && fmt != "json" && fmt != "github")
    throw UsageError("--format: expected text, json or github, got '" + fmt + "'");
  const auto report = profiles::validate_paths(vm["paths"].as<std::vector<std::string>>());
  if (fmt == "json") {
    nlohmann::ordered_json j;
    j["ok"] = report.ok();
    j["errors"] = report.diagnostics.size();
    j["files_checked"] = report.files.size();
    j["skipped"] = report.skipped;
    j["files"] = nlohmann::ordered_json::array();
    for (const auto& f : report.files) j["files"].push_back({{"path", f.path}, {"kind", f.kind}, {"errors", f.errors}});
    j["diagnostics"] = nlohmann::ordered_json::array();
    for (const auto& d : report.diagnostics)
      j["diagnostics"].push_back({{"file", d.file}, {"line", d.line}, {"column", d.column}, {"key", d.key_path},
                                  {"message", d.message}, {"text", d.format()}});
    // Profile text may hold invalid UTF-8; replace it rather than throw.
    std::cout << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  } else if (fmt == "github") {
    for (const auto& d : report.diagnostics) {
      std::cout << "::error file=" << gh_property(d.file);
      if (d.line > 0) std::cout << ",line=" << d.line << ",col=" << (d.column > 0 ? d.column : 1);
      std::cout << ",title=" << gh_property("kvcap validate") << "::"
                << gh_data((d.key_path.empty() ? "" : d.key_path + ": ") + d.message) << "\n";
    }
    std::cout << escape::terminal_text(summary(report)) << "\n";
  } else {
    for (const auto& d : report.diagnostics) std::cout << escape::terminal_text(d.format()) << "\n";
    std::cout << escape::terminal_text(summary(report)) << "\n";
  }
  return report.ok() ? 0 : 1;
}

}  // namespace kvcap::cli
