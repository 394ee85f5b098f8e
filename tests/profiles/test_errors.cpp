// Every error path of the loader: located, named, and saying what was expected.
#include <algorithm>
#include <catch2/catch.hpp>

#include "kvcap/profiles/deployment.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;
using profiles::Diagnostic;
using profiles::ProfileError;

namespace {
std::vector<Diagnostic> model_errors(const std::string& text) {
  try {
    profiles::parse_model(text, "m.yaml");
  } catch (const ProfileError& e) {
    return e.diagnostics();
  }
  return {};
}
const std::string kGood = R"(kind: model
name: ok
hidden_size: 4096
intermediate_size: 14336
num_layers: 32
vocab_size: 32000
max_position_embeddings: 8192
attention:
  num_heads: 32
  num_kv_heads: 8
)";
std::string replace(std::string s, const std::string& from, const std::string& to) {
  s.replace(s.find(from), from.size(), to);
  return s;
}
}  // namespace

TEST_CASE("a valid profile loads", "[profiles][errors]") {
  const auto m = profiles::parse_model(kGood, "m.yaml");
  CHECK(m.head_dim == 128);  // hidden / heads when not given
}

TEST_CASE("YAML syntax errors name file:line:column", "[profiles][errors]") {
  const auto d = model_errors("kind: model\nname: x\nattention:\n  num_heads: 32\n   num_kv_heads: 8\n");
  REQUIRE(d.size() == 1);
  CHECK(d[0].file == "m.yaml");
  CHECK(d[0].line == 5);
  CHECK(d[0].message.find("YAML syntax error") != std::string::npos);
  CHECK(d[0].format().rfind("m.yaml:5:", 0) == 0);
}

TEST_CASE("wrong types name the key path and line, and every problem is reported", "[profiles][errors]") {
  auto text = replace(kGood, "vocab_size: 32000", "vocab_size: lots");
  text = replace(text, "num_kv_heads: 8", "num_kv_heads: [8]");
  const auto d = model_errors(text);
  REQUIRE(d.size() == 2);
  CHECK(d[0].key_path == "vocab_size");
  CHECK(d[0].line == 6);
  CHECK(d[0].message == "expected an integer, got 'lots'");
  CHECK(d[1].key_path == "attention.num_kv_heads");
  CHECK(d[1].line == 10);
  CHECK(d[1].message.find("expected an integer") != std::string::npos);
}

TEST_CASE("numbers are decimal, and an integer beyond 64 bits is out of range, not malformed", "[profiles][errors]") {
  // strtod reads hexadecimal; no profile number is written so (vLLM's flags are decimal).
  auto d = model_errors(replace(kGood, "vocab_size: 32000", "vocab_size: 0x7d00"));
  REQUIRE(d.size() == 1);
  CHECK(d[0].message == "expected an integer, got '0x7d00'");
  d = model_errors(replace(kGood, "max_position_embeddings: 8192", "max_position_embeddings: 0x1p13"));
  REQUIRE(d.size() == 1);
  CHECK(d[0].key_path == "max_position_embeddings");
  d = model_errors(replace(kGood, "vocab_size: 32000", "vocab_size: 99999999999999999999"));
  REQUIRE(d.size() == 1);
  CHECK(d[0].message.find("expected an integer between 1 and") != std::string::npos);
  d = model_errors(replace(kGood, "vocab_size: 32000", "vocab_size: 1e-400"));
  REQUIRE(d.size() == 1);
  CHECK(d[0].message == "expected an integer, got '1e-400'");
  CHECK(model_errors(replace(kGood, "vocab_size: 32000", "vocab_size: 3.2e4")).empty());
  // A token count written well but beyond 9e15 is out of range too (it said "expected a token count such as").
  const auto max_model_len_error = [](const std::string& v) {
    try {
      (void)profiles::parse_deployment(
          "kind: deployment\nname: d\nmodel: llama-3.1-8b\ngpu: h100-sxm\nmax_model_len: " + v + "\n", "d.yaml");
    } catch (const ProfileError& e) {
      return e.diagnostics().size() == 1 ? e.diagnostics()[0].message : std::string("several errors");
    }
    return std::string("no error");
  };
  for (const char* big : {"1e17", "20000000000000000K", "99999999999999999999"})
    CHECK_THAT(max_model_len_error(big), Catch::Contains("expected a token count between 1 and"));
  CHECK_THAT(max_model_len_error("1.5K7"), Catch::Contains("expected a token count such as"));
}

TEST_CASE("unknown keys are errors with a did-you-mean", "[profiles][errors]") {
  const auto d = model_errors(replace(kGood, "num_kv_heads", "num_kv_head"));
  REQUIRE_FALSE(d.empty());
  CHECK(d[0].key_path == "attention.num_kv_head");
  CHECK(d[0].message.find("did you mean 'num_kv_heads'?") != std::string::npos);
  const auto top = model_errors(kGood + "hiden_size: 1\n");
  REQUIRE_FALSE(top.empty());
  CHECK(top[0].message.find("did you mean 'hidden_size'?") != std::string::npos);
  CHECK(top[0].line == 11);
}

TEST_CASE("impossible architectures are rejected with the reason", "[profiles][errors]") {
  auto d = model_errors(replace(kGood, "num_kv_heads: 8", "num_kv_heads: 6"));
  REQUIRE(d.size() == 1);
  CHECK(d[0].key_path == "attention.num_kv_heads");
  CHECK(d[0].message.find("divisible") != std::string::npos);
  CHECK(d[0].line == 10);
  d = model_errors(replace(kGood, "num_layers: 32", "num_layers: 0"));
  REQUIRE(d.size() == 1);
  CHECK(d[0].key_path == "num_layers");
  d = model_errors(replace(kGood, "hidden_size: 4096", "hidden_size: -4096"));
  REQUIRE(d.size() == 1);
  CHECK(d[0].message.find("expected an integer between 1 and") != std::string::npos);
  d = model_errors(replace(kGood, "num_kv_heads: 8", "num_kv_heads: 64"));
  REQUIRE(d.size() == 1);
  CHECK(d[0].message.find("cannot exceed") != std::string::npos);
  d = model_errors(replace(kGood, "vocab_size: 32000", "vocab_size: 3.5"));
  REQUIRE(d.size() == 1);
  d = model_errors(replace(kGood, "kind: model", "kind: gpu"));
  REQUIRE(d.size() == 1);
  CHECK(d[0].key_path == "kind");
}

TEST_CASE("empty, binary, non-mapping and missing files get clear errors", "[profiles][errors]") {
  CHECK(model_errors("").at(0).message.find("empty") != std::string::npos);
  CHECK(model_errors(std::string("\x7f" "ELF\0\0\x01", 7)).at(0).message.find("not a text file") != std::string::npos);
  CHECK(model_errors("- a\n- b\n").at(0).message.find("mapping") != std::string::npos);
  try {
    profiles::load_model_file("/nonexistent/x.yaml");
    FAIL("no error");
  } catch (const ProfileError& e) {
    CHECK(e.diagnostics().at(0).file == "/nonexistent/x.yaml");
    CHECK(e.diagnostics().at(0).message.find("cannot open") != std::string::npos);
  }
}

TEST_CASE("unknown built-in names suggest the closest", "[profiles][errors]") {
  try {
    profiles::resolve_model("llama-3.1-8");
    FAIL("no error");
  } catch (const ProfileError& e) {
    CHECK(std::string(e.what()).find("did you mean 'llama-3.1-8b'?") != std::string::npos);
  }
  CHECK_THROWS_AS(profiles::resolve_gpu("h1000"), ProfileError);
  auto message = [](auto resolve, const char* arg) -> std::string {
    try {
      resolve(arg);
    } catch (const ProfileError& e) {
      return e.what();
    }
    return "";
  };
  // A prefix of several GPUs names each (h100 is three different memories), not the nearest by spelling (h200).
  CHECK_THAT(message(profiles::resolve_gpu, "h100"),
             Catch::Contains("did you mean one of 'h100-nvl', 'h100-pcie', 'h100-sxm'?") && !Catch::Contains("'h200'"));
  CHECK_THAT(message(profiles::resolve_gpu, "a100"), Catch::Contains("did you mean one of 'a100-40gb', 'a100-80gb'?"));
  // Another case: the name itself, not silently accepted.
  CHECK_THAT(message(profiles::resolve_model, "LLAMA-3.1-8B"),
             Catch::Contains("did you mean 'llama-3.1-8b'? (names are lower case)"));
  // Nothing close: the list follows a full stop.
  CHECK_THAT(message(profiles::resolve_model, "zzz"),
             Catch::Contains("unknown built-in model 'zzz'. Built-in models: "));
  // A Hugging Face id: how to get its config.json, and the built-in of that name.
  CHECK_THAT(message(profiles::resolve_model, "meta-llama/Llama-3.1-8B"),
             Catch::Contains("a Hugging Face id?") &&
                 Catch::Contains("huggingface-cli download meta-llama/Llama-3.1-8B") &&
                 Catch::Contains("or use the built-in 'llama-3.1-8b'"));
}

TEST_CASE("GPU profile errors", "[profiles][errors]") {
  const std::string good = profiles::builtin_text("gpus/h100-sxm.yaml");
  REQUIRE_FALSE(good.empty());
  CHECK_NOTHROW(profiles::parse_gpu(good, "g.yaml"));
  try {
    profiles::parse_gpu(replace(good, "bandwidth_bytes_per_s: 3.35e+12", "bandwidth_bytes_per_s: .nan"), "g.yaml");
    FAIL("no error");
  } catch (const ProfileError& e) {
    CHECK(e.diagnostics().at(0).key_path == "memory.bandwidth_bytes_per_s");
  }
  // host_link: one direction's bandwidth, like the interconnect; a marketed both-directions figure is refused.
  CHECK(profiles::parse_gpu(good, "g.yaml").host_link_bandwidth_bytes_per_s == Approx(64e9));
  try {
    profiles::parse_gpu(replace(good, "  direction: per_direction\nnetwork", "  direction: bidirectional\nnetwork"),
                        "g.yaml");
    FAIL("no error");
  } catch (const ProfileError& e) {
    CHECK(e.diagnostics().at(0).key_path == "host_link.direction");
  }
  try {
    profiles::parse_gpu(replace(good, "bandwidth_bytes_per_s: 64.0e+9", "bandwidth_bytes_per_s: -1"), "g.yaml");
    FAIL("no error");
  } catch (const ProfileError& e) {
    CHECK(e.diagnostics().at(0).key_path == "host_link.bandwidth_bytes_per_s");
  }
  // network: one GPU's NIC, one direction (400 Gb/s = 50e9 bytes/s); a both-directions figure is refused.
  const GpuSpec h100 = profiles::parse_gpu(good, "g.yaml");
  CHECK(h100.network_bandwidth_bytes_per_s == Approx(50e9));
  CHECK(h100.network_latency_s == Approx(5e-6));
  try {
    profiles::parse_gpu(replace(good, "  direction: per_direction\n  # Assumption: one RDMA",
                                "  direction: bidirectional\n  # Assumption: one RDMA"),
                        "g.yaml");
    FAIL("no error");
  } catch (const ProfileError& e) {
    CHECK(e.diagnostics().at(0).key_path == "network.direction");
  }
  try {
    profiles::parse_gpu(replace(good, "bandwidth_bytes_per_s: 50.0e+9", "bandwidth_bytes_per_s: -5"), "g.yaml");
    FAIL("no error");
  } catch (const ProfileError& e) {
    CHECK(e.diagnostics().at(0).key_path == "network.bandwidth_bytes_per_s");
  }
}

TEST_CASE("GPU profile: measured all-reduce times load and bad ones are located errors", "[profiles][errors]") {
  const std::string good = profiles::builtin_text("gpus/h100-sxm.yaml");
  const GpuSpec g = profiles::parse_gpu(good, "g.yaml");
  REQUIRE(g.allreduce_measured.size() == 18);
  CHECK(g.allreduce_measured.front().tp == 2);
  CHECK(g.allreduce_measured.front().message_bytes == 2048);  // 512 float32 elements
  CHECK(g.allreduce_measured.front().time_s == Approx(3.7e-6));
  CHECK(g.allreduce_source.find("sglang#2904") != std::string::npos);
  auto first_error = [&](const std::string& from, const std::string& to) {
    try {
      profiles::parse_gpu(replace(good, from, to), "g.yaml");
    } catch (const ProfileError& e) {
      return e.diagnostics().at(0);
    }
    FAIL("no error");
    return Diagnostic{};
  };
  // Sizes must grow within a TP size (the second TP 2 point made smaller than the first).
  auto d = first_error("{tp: 2, message_bytes: 16384, time_s: 3.9e-6}", "{tp: 2, message_bytes: 1024, time_s: 3.9e-6}");
  CHECK(d.key_path == "interconnect.allreduce_measured.points[1].message_bytes");
  CHECK(d.message.find("must grow") != std::string::npos);
  CHECK(d.line > 0);
  // One TP size with a single point has no slope.
  std::string one = good;
  for (const char* row : {"      - {tp: 8, message_bytes: 16384, time_s: 5.7e-6}\n",
                          "      - {tp: 8, message_bytes: 131072, time_s: 7.8e-6}\n",
                          "      - {tp: 8, message_bytes: 1048576, time_s: 16.7e-6}\n",
                          "      - {tp: 8, message_bytes: 2097152, time_s: 22.1e-6}\n",
                          "      - {tp: 8, message_bytes: 4194304, time_s: 33.8e-6}\n"})
    one = replace(one, row, "");
  try {
    profiles::parse_gpu(one, "g.yaml");
    FAIL("no error");
  } catch (const ProfileError& e) {
    CHECK(e.diagnostics().at(0).message.find("TP 8 has one point") != std::string::npos);
  }
  // TP 1 is no all-reduce; a time must be positive; an unknown key gets a suggestion; points must be a list.
  d = first_error("{tp: 2, message_bytes: 2048,", "{tp: 1, message_bytes: 2048,");
  CHECK(d.key_path == "interconnect.allreduce_measured.points[0].tp");
  d = first_error("time_s: 3.7e-6}", "time_s: 0}");
  CHECK(d.key_path == "interconnect.allreduce_measured.points[0].time_s");
  d = first_error("{tp: 2, message_bytes: 2048,", "{tp: 2, message_byte: 2048,");
  CHECK(d.key_path.find("interconnect.allreduce_measured.points[0]") == 0);
  CHECK(d.message.find("message_bytes") != std::string::npos);
  d = first_error("    points:\n", "    points: 3\n    old_points:\n");
  CHECK(d.key_path.find("interconnect.allreduce_measured") == 0);
  // Present but empty is an error, as the schema says (not a silent "no measurements").
  try {
    profiles::parse_gpu(replace(good, "  allreduce_measured:\n", "  allreduce_measured:\n  unused_block:\n"), "g.yaml");
    FAIL("no error");
  } catch (const ProfileError& e) {
    const auto& ds = e.diagnostics();
    CHECK(std::any_of(ds.begin(), ds.end(), [](const Diagnostic& x) {
      return x.key_path == "interconnect.allreduce_measured" && x.message.find("expected {source") == 0;
    }));
  }
}

TEST_CASE("did_you_mean suggests a near key, and spends no time on one that cannot be near", "[errors]") {
  const std::vector<std::string> keys = {"num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim"};
  CHECK(kvcap::profiles::did_you_mean("num_hiden_layers", keys) == "num_hidden_layers");
  CHECK(kvcap::profiles::did_you_mean("hed_dim", keys) == "head_dim");
  CHECK(kvcap::profiles::did_you_mean("key_value", keys) == "num_key_value_heads");  // contained
  CHECK(kvcap::profiles::did_you_mean("rope_theta", keys).empty());
  // A hostile 1 MB key: no suggestion, and no 1M x |key| distance table per candidate (fuzz_model_yaml spent
  // most of its time there).
  const std::string huge(1 << 20, 'x');
  CHECK(kvcap::profiles::did_you_mean(huge, keys).empty());
  CHECK(kvcap::profiles::did_you_mean(huge + "head_dim", keys) == "head_dim");  // contains a key
}
