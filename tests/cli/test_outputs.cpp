// Output paths (cli/common.cpp refuse_output_over_input, run by every command's parse): kvcap never writes
// over a file it reads, nor two outputs into one file. Each case runs the real command and checks the input
// is left as it was.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "common.hpp"

namespace fs = std::filesystem;
using kvcap::cli::UsageError;

namespace {

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("kvcap-outputs-" + std::to_string(::getpid()));
  Scratch() { fs::create_directories(dir); }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const char* kTrace = "TIMESTAMP,ContextTokens,GeneratedTokens\n0,100,10\n1,200,20\n";

}  // namespace

TEST_CASE("an output flag naming an input file is refused before anything is written", "[cli][outputs]") {
  const Scratch s;
  const std::string trace = s.write("trace.csv", kTrace);
  for (const char* flag : {"--timeline", "--requests-out"}) {
    INFO(flag);
    CHECK_THROWS_WITH(
        kvcap::cli::cmd_simulate({"--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", trace, flag, trace}),
        Catch::Contains(std::string(flag) + ": '" + trace + "' is also read as input (trace)"));
    CHECK(slurp(trace) == kTrace);
  }
  // The same file by another spelling, and through a hard link.
  const std::string other = (s.dir / "." / "trace.csv").string();
  CHECK_THROWS_AS(
      kvcap::cli::cmd_simulate({"--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", trace, "--timeline", other}),
      UsageError);
  fs::create_hard_link(trace, s.dir / "link.csv");
  CHECK_THROWS_AS(kvcap::cli::cmd_simulate({"--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", trace,
                                            "--requests-out", (s.dir / "link.csv").string()}),
                  UsageError);
  CHECK(slurp(trace) == kTrace);
}

TEST_CASE("two outputs into one file, a JUnit file over its requirements, a profile over its config.json",
          "[cli][outputs]") {
  const Scratch s;
  const std::string trace = s.write("trace.csv", kTrace);
  const std::string out = (s.dir / "out.csv").string();  // does not exist yet
  CHECK_THROWS_WITH(kvcap::cli::cmd_simulate({"--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", trace,
                                              "--timeline", out, "--requests-out", out}),
                    Catch::Contains("is also written by --"));
  CHECK_FALSE(fs::exists(out));
  // Two spellings of one new file: relative and "./"-prefixed (the red team's case).
  const fs::path cwd = fs::current_path();
  fs::current_path(s.dir);
  CHECK_THROWS_WITH(kvcap::cli::cmd_simulate({"--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", trace,
                                              "--timeline", "n3.csv", "--requests-out", "./n3.csv"}),
                    Catch::Contains("is also written by --"));
  fs::current_path(cwd);

  const std::string req = s.write("req.yaml", "promises: []\n");
  CHECK_THROWS_WITH(kvcap::cli::cmd_check({req, "--junit", req}), Catch::Contains("also read as input (requirements)"));
  CHECK(slurp(req) == "promises: []\n");

  const std::string cfg = s.write("config.json", "{\"model_type\": \"llama\"}\n");
  CHECK_THROWS_WITH(kvcap::cli::cmd_import_hf({cfg, "--out", cfg}), Catch::Contains("also read as input (config)"));
  CHECK(slurp(cfg) == "{\"model_type\": \"llama\"}\n");
}

TEST_CASE("distinct output paths are accepted", "[cli][outputs]") {
  const Scratch s;
  const std::string trace = s.write("trace.csv", kTrace);
  const std::string timeline = (s.dir / "timeline.csv").string(), requests = (s.dir / "requests.csv").string();
  std::streambuf* old = std::cout.rdbuf();
  std::ostringstream sink;
  std::cout.rdbuf(sink.rdbuf());
  const int rc = kvcap::cli::cmd_simulate({"--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", trace,
                                           "--timeline", timeline, "--requests-out", requests, "--no-wall-time"});
  std::cout.rdbuf(old);
  CHECK(rc == 0);
  CHECK(slurp(requests).find('\n') != std::string::npos);
  CHECK(slurp(timeline).find('\n') != std::string::npos);
  CHECK(slurp(trace) == kTrace);
}

TEST_CASE("an error quoting a flag value with a line break stays on one line", "[cli][outputs][escape]") {
  std::streambuf* old = std::cerr.rdbuf();
  std::ostringstream err;
  std::cerr.rdbuf(err.rdbuf());
  const int rc = kvcap::cli::run_guarded("plan", [] {
    return kvcap::cli::cmd_plan(
        {"--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch", "12\n::error file=x::pwned"});
  });
  const int rc_model = kvcap::cli::run_guarded("plan", [] {
    return kvcap::cli::cmd_plan({"--model", "llama\x1b[31m\n::warning x", "--gpu", "h100-sxm"});
  });
  std::cerr.rdbuf(old);
  CHECK(rc == 2);
  CHECK(rc_model == 1);
  const std::string text = err.str();
  CHECK(text.find("got '12\\n::error file=x::pwned'") != std::string::npos);
  CHECK(text.find("'llama\\x1b[31m\\n::warning x'") != std::string::npos);
  // No line of the output starts a workflow command, and no raw escape character remains.
  CHECK(text.find("\n::") == std::string::npos);
  CHECK(text.find('\x1b') == std::string::npos);
}
