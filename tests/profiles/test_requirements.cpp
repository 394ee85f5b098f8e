// Deployment and requirement files, and kvcap validate over sets of files (issue 4). Evaluating promises:
// tests/planner/test_promise.cpp (the planner) and tests/cli/test_check.cpp (kvcap check, end to end).
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "kvcap/profiles/profiles.hpp"
#include "kvcap/profiles/requirements.hpp"
#include "kvcap/profiles/validate.hpp"

using namespace kvcap;
using profiles::Diagnostic;
using profiles::ProfileError;
namespace fs = std::filesystem;

namespace {
const fs::path kExamples = fs::path(KVCAP_SOURCE_DIR) / "profiles" / "examples";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}
std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}
int line_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  REQUIRE(at != std::string::npos);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}
std::vector<Diagnostic> req_errors(const std::string& text) {
  try {
    profiles::parse_requirements(text, "r.yaml");
  } catch (const ProfileError& e) {
    return e.diagnostics();
  }
  return {};
}
bool any_message(const std::vector<Diagnostic>& d, const std::string& key, const std::string& text) {
  for (const auto& x : d)
    if (x.key_path == key && x.message.find(text) != std::string::npos) return true;
  return false;
}

// A fresh temporary folder per test, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("kvcap-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

const std::string kPromiseHead = "kind: requirements\npromises:\n  - deployment: {model: llama-3.1-8b, gpu: h100-sxm}\n";
}  // namespace

TEST_CASE("promise errors name the key and say what is expected", "[profiles][requirements]") {
  auto d = req_errors(kPromiseHead + "    metric: concurency_at\n    context_tokens: 1K\n    at_least: 1\n");
  CHECK(any_message(d, "promises[0].metric", "did you mean 'concurrency_at'?"));
  d = req_errors(kPromiseHead + "    metric: tpot_s\n    batch: 8\n    at_most: 40ms\n");
  CHECK(any_message(d, "promises[0].context_tokens", "required by metric tpot_s"));
  d = req_errors(kPromiseHead + "    metric: kv_capacity_tokens\n    batch: 8\n    at_least: 1\n");
  CHECK(any_message(d, "promises[0].batch", "not used by metric kv_capacity_tokens"));
  d = req_errors(kPromiseHead + "    metric: kv_capacity_tokens\n    at_least: 1\n    at_most: 2\n");
  CHECK(any_message(d, "promises[0].at_most", "not both"));
  d = req_errors(kPromiseHead + "    metric: kv_capacity_tokens\n");
  CHECK(any_message(d, "promises[0].at_least", "required: at_least or at_most"));
  d = req_errors(kPromiseHead + "    metric: fits\n    at_least: 1\n");
  CHECK(any_message(d, "promises[0].at_least", "takes no threshold"));
  d = req_errors(kPromiseHead + "    metric: fits\n    scope: cluster\n");
  CHECK(any_message(d, "promises[0].scope", "no cluster scope"));
  d = req_errors(kPromiseHead + "    metric: tpot_s\n    batch: 8\n    context_tokens: 1K\n    at_most: 40 parsecs\n");
  CHECK(any_message(d, "promises[0].at_most", "expected a duration"));
  d = req_errors(kPromiseHead + "    metric: concurrency_at\n    context_tokens: 32X\n    at_least: 1\n");
  CHECK(any_message(d, "promises[0].context_tokens", "expected a token count"));
  d = req_errors("kind: requirements\npromises: []\n");
  CHECK(any_message(d, "promises", "non-empty list"));
  d = req_errors("kind: requirements\npromises:\n  - metric: fits\n");
  CHECK(any_message(d, "promises[0].deployment", "required key is missing"));
  d = req_errors(kPromiseHead + "    metric: fits\n    deployment_name: x\n");
  CHECK(any_message(d, "promises[0].deployment_name", "unknown key"));
  // Every problem at once, each on its line.
  d = req_errors(kPromiseHead + "    metric: fitz\n  - deployment: {model: x, gpu: y, tensor_parallel_size: 0}\n    metric: fits\n");
  REQUIRE(d.size() == 2);
  CHECK(d[0].line == 4);
  CHECK(d[1].key_path == "promises[1].deployment.tensor_parallel_size");
  CHECK(d[1].line == 5);
}

TEST_CASE("deployment files resolve models and GPUs by built-in name, profile name or relative path", "[profiles][deployment]") {
  TempDir t;
  fs::create_directories(t.path / "models");
  write(t.path / "models" / "my-model.yaml", replace(profiles::builtin_text("models/llama-3.1-8b.yaml"),
                                                     "name: \"llama-3.1-8b\"", "name: \"my-model\""));
  write(t.path / "by-path.yaml", "kind: deployment\nname: a\nmodel: models/my-model.yaml\ngpu: h100-sxm\n");
  write(t.path / "by-name.yaml", "kind: deployment\nname: b\nmodel: my-model\ngpu: h100-sxm\n");
  const auto a = profiles::load_deployment_file((t.path / "by-path.yaml").string());
  CHECK(profiles::resolve_deployment(a, nullptr).model.name == "my-model");
  const auto b = profiles::load_deployment_file((t.path / "by-name.yaml").string());
  CHECK_THROWS_AS(profiles::resolve_deployment(b, nullptr), ProfileError);  // no set: the name is unknown
  const auto index = profiles::index_profiles(t.path.string());
  CHECK(index.models.count("my-model") == 1);
  CHECK(profiles::resolve_deployment(b, &index).model.name == "my-model");
  const auto rep = profiles::validate_paths({t.path.string()});
  CHECK(rep.ok());
  CHECK(rep.files.size() == 3);
}

TEST_CASE("kvcap validate accepts the whole shipped profiles/ tree", "[profiles][validate]") {
  const auto rep = profiles::validate_paths({(fs::path(KVCAP_SOURCE_DIR) / "profiles").string()});
  for (const auto& d : rep.diagnostics) UNSCOPED_INFO(d.format());
  CHECK(rep.ok());
  std::map<std::string, int> kinds;
  for (const auto& f : rep.files) ++kinds[f.kind];
  CHECK(kinds["model"] == 27);
  CHECK(kinds["gpu"] == 13);
  CHECK(kinds["deployment"] >= 1);
  CHECK(kinds["requirements"] >= 1);
  CHECK(rep.skipped > 0);  // schema JSON, sources: not YAML, not checked
}

TEST_CASE("kvcap validate reports every problem across files, located", "[profiles][validate]") {
  const std::string dir = std::string(KVCAP_TEST_DATA) + "/validate";
  const auto rep = profiles::validate_paths({dir});
  CHECK_FALSE(rep.ok());
  CHECK(rep.files.size() == 6);
  CHECK(rep.skipped == 1);  // notes.txt
  auto has = [&](const std::string& file, int line, const std::string& key, const std::string& text) {
    for (const auto& d : rep.diagnostics)
      if (d.file == dir + "/" + file && d.line == line && d.key_path == key && d.message.find(text) != std::string::npos) return true;
    return false;
  };
  // Field errors and the architecture check of the same file, in one run.
  CHECK(has("deploy-bad-tp.yaml", 5, "tensor_parallel_size", "must be divisible by tensor_parallel_size (3)"));
  CHECK(has("deploy-bad-tp.yaml", 6, "gpu_memory_utilization", "between 0 and 1"));
  CHECK(has("deploy-bad-tp.yaml", 7, "kv_cache_dtype", "unknown KV-cache format 'fp7'"));
  CHECK(has("deploy-unknown-model.yaml", 3, "model", "did you mean"));
  CHECK(has("model-broken.yaml", 4, "num_layers", "expected an integer, got 'lots'"));
  CHECK(has("model-broken.yaml", 10, "attention.num_kv_head", "did you mean 'num_kv_heads'?"));
  CHECK(has("deploy-uses-broken.yaml", 3, "model", "has errors"));
  CHECK(has("deploy-uses-broken.yaml", 4, "gpu", "no such gpu profile './no-such-gpu.yaml'"));
  CHECK(has("requirements-bad.yaml", 4, "deployment", "no deployment named 'no-such-deployment'"));
  CHECK(has("requirements-bad.yaml", 8, "promises[1].metric", "did you mean 'tpot_s'?"));
  CHECK(has("unknown-kind.yaml", 1, "kind", "did you mean 'model'?"));
  // The broken model is named by a deployment too, but each problem is printed once.
  std::set<std::string> seen;
  for (const auto& d : rep.diagnostics) CHECK(seen.insert(d.format()).second);
  CHECK(rep.diagnostics.size() == 14);
  // A missing path is a diagnostic, not an exception.
  const auto missing = profiles::validate_paths({"/nonexistent/profiles"});
  REQUIRE(missing.diagnostics.size() == 1);
  CHECK(missing.diagnostics[0].message == "no such file or directory");
}

TEST_CASE("a deliberate mistake in a shipped example is reported at its file and line", "[profiles][validate]") {
  TempDir t;
  for (const char* f : {"requirements.yaml", "deployment-llama-3.1-70b-4xh100.yaml"}) fs::copy_file(kExamples / f, t.path / f);
  REQUIRE(profiles::validate_paths({t.path.string()}).ok());

  // 1. TP 3 for a model with 64 heads and 8 KV heads: an architecture mistake in the deployment file.
  const fs::path dep = t.path / "deployment-llama-3.1-70b-4xh100.yaml";
  const std::string text = replace(slurp(dep), "tensor_parallel_size: 4", "tensor_parallel_size: 3");
  write(dep, text);
  auto rep = profiles::validate_paths({t.path.string()});
  REQUIRE(rep.diagnostics.size() >= 1);
  CHECK(rep.diagnostics[0].file == dep.string());
  CHECK(rep.diagnostics[0].line == line_of(text, "tensor_parallel_size: 3"));
  CHECK(rep.diagnostics[0].key_path == "tensor_parallel_size");

  // 2. A typo in a key of the requirements file.
  write(dep, slurp(kExamples / "deployment-llama-3.1-70b-4xh100.yaml"));
  const fs::path req = t.path / "requirements.yaml";
  const std::string rtext = replace(slurp(req), "    context_tokens: 8K\n    at_most: 40ms", "    context_tokens: 8K\n    at_mots: 40ms");
  write(req, rtext);
  rep = profiles::validate_paths({t.path.string()});
  bool found = false;
  for (const auto& d : rep.diagnostics) {
    CHECK(d.file == req.string());
    found = found || (d.line == line_of(rtext, "at_mots") && d.message.find("did you mean 'at_most'?") != std::string::npos);
  }
  CHECK(found);

  // 3. A shipped model profile with an inconsistent architecture (8 KV heads -> 7: 64 query heads do not divide).
  const std::string mtext = replace(profiles::builtin_text("models/llama-3.1-70b.yaml"), "num_kv_heads: 8", "num_kv_heads: 7");
  write(t.path / "llama-3.1-70b.yaml", mtext);
  rep = profiles::validate_paths({(t.path / "llama-3.1-70b.yaml").string()});
  REQUIRE(rep.diagnostics.size() == 1);
  CHECK(rep.diagnostics[0].line == line_of(mtext, "num_kv_heads: 7"));
  CHECK(rep.diagnostics[0].key_path == "attention.num_kv_heads");
}

TEST_CASE("duplicate profile names in one set are ambiguous references", "[profiles][validate]") {
  TempDir t;
  const std::string gpu = profiles::builtin_text("gpus/h100-sxm.yaml");
  write(t.path / "a.yaml", gpu);
  write(t.path / "b.yaml", gpu);
  const auto rep = profiles::validate_paths({t.path.string()});
  REQUIRE(rep.diagnostics.size() == 1);
  CHECK(rep.diagnostics[0].file == (t.path / "b.yaml").string());
  CHECK(rep.diagnostics[0].message.find("duplicate gpu name 'h100-sxm'") != std::string::npos);
}

TEST_CASE("check's --profiles index refuses duplicate names, in one folder or across folders", "[profiles][validate]") {
  TempDir t;
  const std::string gpu = profiles::builtin_text("gpus/h100-sxm.yaml");
  fs::create_directories(t.path / "one");
  fs::create_directories(t.path / "two");
  write(t.path / "one" / "a.yaml", gpu);
  write(t.path / "two" / "b.yaml", gpu);
  CHECK(profiles::index_profiles((t.path / "one").string()).gpus.count("h100-sxm") == 1);
  try {
    (void)profiles::index_profiles(std::vector<std::string>{(t.path / "one").string(), (t.path / "two").string()});
    FAIL("no error for two profiles named h100-sxm");
  } catch (const ProfileError& e) {
    REQUIRE(e.diagnostics().size() == 1);
    CHECK(e.diagnostics()[0].file == (t.path / "two" / "b.yaml").string());
    CHECK(e.diagnostics()[0].message.find("duplicate gpu name 'h100-sxm'") != std::string::npos);
  }
  // One file reached through two folders (overlapping) is one profile, not a duplicate.
  const std::string one = (t.path / "one").string();
  CHECK(profiles::index_profiles(std::vector<std::string>{one, one + "/."}).gpus.size() == 1);
  write(t.path / "one" / "c.yaml", gpu);
  CHECK_THROWS_AS(profiles::index_profiles((t.path / "one").string()), ProfileError);
}

TEST_CASE("a file of several YAML documents is refused, not read as its first", "[profiles][validate]") {
  TempDir t;
  const std::string gpu = profiles::builtin_text("gpus/h100-sxm.yaml");
  write(t.path / "two.yaml", "---\n" + gpu + "---\n" + gpu);
  write(t.path / "one.yaml", "---\n---\n" + gpu + "---\n# nothing more\n");  // empty documents hold nothing
  const auto rep = profiles::validate_paths({(t.path / "two.yaml").string()});
  REQUIRE(rep.diagnostics.size() == 1);
  CHECK(rep.diagnostics[0].message.find("holds 2 YAML documents") != std::string::npos);
  CHECK(profiles::validate_paths({(t.path / "one.yaml").string()}).ok());
  CHECK_THROWS_AS(profiles::resolve_gpu((t.path / "two.yaml").string()), ProfileError);
  // In a --profiles folder it is an error too: skipped, the built-in h100-sxm would be used in its place.
  CHECK_THROWS_AS(profiles::index_profiles(t.path.string()), ProfileError);
}

TEST_CASE("a token yaml-cpp 0.7 cannot place is a syntax error, not an endless stream of documents",
          "[profiles][validate]") {
  // YAML::LoadAll of yaml-cpp 0.7 pushed null documents for ever on these (jbeder/yaml-cpp#1319; found by
  // fuzz_requirements and fuzz_hf_config in CI): memory grew until the process was killed.
  TempDir t;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {",", "1:1"},
      {"\n,\n    ", "2:1"},
      {"name: x\nkind: requirements\n---\n,\n", "4:1"},
      {"- a: x\n  b:\n    (u in (\n\"/x\",\n    \"-c\"\n    )  )  \n    ", ""},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto path = t.path / ("bad" + std::to_string(i) + ".yaml");
    write(path, cases[i].first);
    const auto rep = profiles::validate_paths({path.string()});
    INFO("case " << i);
    REQUIRE(rep.diagnostics.size() == 1);
    CHECK(rep.diagnostics[0].message.find("YAML syntax error") != std::string::npos);
    if (!cases[i].second.empty())
      CHECK(rep.diagnostics[0].format().find(":" + cases[i].second + ":") != std::string::npos);
  }
  CHECK_THROWS_AS(profiles::import_hf(",", "config.json"), ProfileError);
}

TEST_CASE("kvcap validate dispatches calibration files and config.json named explicitly", "[profiles][validate]") {
  const auto rep = profiles::validate_paths({std::string(KVCAP_TEST_DATA) + "/calibration-example.yaml",
                                             std::string(KVCAP_FIXTURES) + "/hf/DeepSeek-V3.json"});
  for (const auto& d : rep.diagnostics) UNSCOPED_INFO(d.format());
  CHECK(rep.ok());
  REQUIRE(rep.files.size() == 2);
  CHECK(rep.files[0].kind == "calibration");
  CHECK(rep.files[1].kind == "hf-config");
  TempDir t;
  write(t.path / "bad-calibration.yaml", "kvcap_calibration: 1\ndevice: {kind: gpu}\n");
  write(t.path / "no-kind.yaml", "name: x\n");
  const auto bad = profiles::validate_paths({t.path.string()});
  REQUIRE(bad.files.size() == 2);
  CHECK(bad.files[0].kind == "calibration");
  CHECK(bad.files[0].errors >= 1);
  CHECK(bad.files[1].errors == 1);
  CHECK(bad.diagnostics.back().message.find("required key is missing; expected one of model, gpu, deployment") != std::string::npos);
}
