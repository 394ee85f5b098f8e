// kvcap check: evaluates the capacity promises of requirement files; pass/fail with the measured value and
// the margin, exit 1 when any promise fails, and JUnit XML for CI (one testcase per promise). Flags -> files and
// a profile index -> check_requirements (promises.hpp: profiles resolve, the planner evaluates) -> a reporter.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "common.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/profiles/requirements.hpp"
#include "promises.hpp"
#include "report/check.hpp"

namespace kvcap::cli {

namespace {
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
/// Two profiles of one name are an error (index_profiles); a folder's model or GPU profile that differs from the
/// built-in of its name replaces it for every promise, which is said on stderr (the shipped profiles/ tree holds
/// the built-ins' own files: those are not mentioned).
std::optional<profiles::ProfileIndex> index_from(const po::variables_map& vm) {
  if (!vm.count("profiles")) return std::nullopt;
  const auto& dirs = vm["profiles"].as<std::vector<std::string>>();
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) throw UsageError("--profiles: '" + dir + "' is not a folder");
  }
  profiles::ProfileIndex index = profiles::index_profiles(dirs);
  const auto note_shadowed = [](const std::map<std::string, std::string>& found, const std::string& folder,
                                const std::vector<std::string>& builtins) {
    for (const auto& [name, file] : found) {
      if (std::find(builtins.begin(), builtins.end(), name) == builtins.end()) continue;
      std::ifstream in(file, std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text != profiles::builtin_text(folder + "/" + name.c_str() + ".yaml"))
        std::cerr << "kvcap check: note: " << escape::terminal_text(file) << " is used for '"
                  << escape::terminal_text(name) << "' instead of the built-in profile of that name\n";
    }
  };
  note_shadowed(index.models, "models", profiles::builtin_model_names());
  note_shadowed(index.gpus, "gpus", profiles::builtin_gpu_names());
  return index;
}

// Whether a regular file is empty or XML: its first character past white space and a UTF-8 byte-order mark,
// however far into the file, is '<' (an earlier report), or there is none.
bool empty_or_xml(const std::string& path) {
  std::ifstream old(path, std::ios::binary);
  std::array<char, 3> bom{};
  if (!old.read(bom.data(), bom.size()) || std::string_view(bom.data(), bom.size()) != "\xEF\xBB\xBF") {
    old.clear();  // no UTF-8 byte order mark: read from the start
    old.seekg(0);
  }
  char ch = 0;
  while (old.get(ch) && (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')) {
  }
  return !old || ch == '<';
}

// The JUnit file must be writable before anything is evaluated (fail early), but it is truncated only after
// every profile was read. A requirements file names deployment and model profiles by path, and kvcap never writes
// over one: a profile's extension is refused in any case (.YAML too), and an existing file is overwritten only
// when it is empty or XML (its first character past white space and a byte-order mark is '<'), as an earlier
// report is; a profile, whatever its name, is neither.
void refuse_junit_path(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  std::string lower = ext;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (lower == ".yaml" || lower == ".yml" || lower == ".json")
    throw UsageError("--junit: '" + path + "' has a profile's extension (" + ext +
                     "); a JUnit report is XML (e.g. kvcap-junit.xml), and kvcap never writes over a profile");
  namespace fs = std::filesystem;
  std::error_code ec;
  struct stat at {};  // through links
  const bool exists = ::stat(path.c_str(), &at) == 0;
  // A link to a missing file: the report would be written where it points (x.xml -> p.yaml created p.yaml).
  struct stat link {};
  if (!exists && ::lstat(path.c_str(), &link) == 0)
    throw UsageError("--junit: '" + path + "' is a link to a file that does not exist; give the file's own path");
  if (exists && S_ISDIR(at.st_mode)) throw UsageError("--junit: '" + path + "' is a folder");
  const auto same_file = [&](const struct stat& other) {
    return exists && other.st_dev == at.st_dev && other.st_ino == at.st_ino;
  };
  // Only a regular file is read, up to its first character past white space however far. A FIFO would block, a
  // terminal or a pipe (/dev/stdout) would mix the XML into the table; /dev/null discards the report.
  if (exists && !S_ISREG(at.st_mode)) {
    struct stat null {};
    if (::stat("/dev/null", &null) == 0 && same_file(null)) return;
    throw UsageError("--junit: '" + path + "' is not a regular file (" +
                     (S_ISFIFO(at.st_mode) ? "a FIFO or a pipe" : "a device or a socket") + "); give a file path");
  }
  if (exists) {
    // The file this command's table is written to (--junit /dev/stdout > out.txt): truncating it would cut the
    // table written before it.
    for (const int fd : {STDOUT_FILENO, STDERR_FILENO}) {
      struct stat out {};
      if (::fstat(fd, &out) == 0 && same_file(out))
        throw UsageError("--junit: '" + path + "' is where this command writes its " +
                         (fd == STDOUT_FILENO ? "output" : "messages") + "; give the report a file of its own");
    }
    if (!empty_or_xml(path))
      throw UsageError("--junit: '" + path +
                       "' exists and is not an XML report; kvcap overwrites only an earlier JUnit report (or an "
                       "empty file), never a profile: give a new path, e.g. kvcap-junit.xml");
    std::ofstream probe(path, std::ios::app);
    if (!probe) throw UsageError("--junit: cannot write '" + path + "'");
    return;
  }
  // A new file is not created before the report is written: a requirement may name this very path as a
  // profile, and would then find it empty instead of missing. Its folder must exist and be writable.
  const fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  const bool is_dir = fs::is_directory(dir, ec);
  if (!is_dir || ::access(dir.c_str(), W_OK) != 0)
    throw UsageError("--junit: cannot write '" + path + "': folder '" + dir + "' " +
                     (is_dir ? "is not writable" : "does not exist"));
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
  if (vm.count("junit")) refuse_junit_path(vm["junit"].as<std::string>());
  std::ofstream junit;

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

  if (vm.count("junit")) {
    const std::string path = vm["junit"].as<std::string>();
    errno = 0;
    junit.open(path, std::ios::trunc);
    const int open_errno = errno;
    if (junit) write_junit(junit, "kvcap check", junit_suites(files));
    junit.close();
    if (!junit) {
      const int err = open_errno != 0 ? open_errno : errno;
      std::cerr << "kvcap check: error: writing the JUnit file '" << escape::terminal_text(path) << "' failed"
                << (err != 0 ? std::string(": ") + std::strerror(err) : std::string()) << "\n";
      return 1;
    }
  }
  return ok ? 0 : 1;
}

}  // namespace kvcap::cli
