// Workload files (kind: workload): the shipped example loads, means are right, and every problem is
// located (file:line:col, key path, did-you-mean).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "kvcap/planner/error.hpp"
#include "kvcap/planner/workload.hpp"
#include "kvcap/planner/sizing.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;
using profiles::Diagnostic;
using profiles::ProfileError;

namespace {
const std::string kGood = R"(kind: workload
name: w
arrival:
  process: gamma
  rate_per_s: 2.5
  cv: 3
prompt_tokens:
  distribution: uniform
  min: 100
  max: 300
output_tokens:
  distribution: fixed
  tokens: 64
)";
std::vector<Diagnostic> errors(const std::string& text) {
  try {
    profiles::parse_workload(text, "w.yaml");
  } catch (const ProfileError& e) {
    return e.diagnostics();
  }
  return {};
}
std::string replace(std::string s, const std::string& from, const std::string& to) {
  s.replace(s.find(from), from.size(), to);
  return s;
}
}  // namespace

TEST_CASE("the example workload loads with the documented means", "[profiles][workload]") {
  const auto w = profiles::load_workload_file(KVCAP_SOURCE_DIR "/profiles/examples/workload-chat.yaml");
  CHECK(w.name == "chat");
  CHECK(w.arrival.kind == ArrivalProcess::Kind::poisson);
  CHECK(w.arrival.rate_per_s == 4.0);
  CHECK(w.prompt.kind == LengthDistribution::Kind::lognormal);
  // Clamping a lognormal of mean 1024 to [16, 8192] lowers the mean a little (the tail above 8192 is cut).
  CHECK(w.prompt.mean_tokens() < 1024.0);
  CHECK(w.prompt.mean_tokens() > 990.0);
  // 0.15*32 + 0.3*128 + 0.3*256 + 0.2*512 + 0.05*1024 = 273.6
  CHECK(w.output.mean_tokens() == Approx(273.6));
  CHECK(w.shared_prefix.num_groups == 4);
  CHECK(w.shared_prefix.tokens == 256);
  REQUIRE(w.slo.ttft_s);
  CHECK(*w.slo.ttft_s == 2.0);
}

TEST_CASE("a minimal workload loads", "[profiles][workload]") {
  const auto w = profiles::parse_workload(kGood, "w.yaml");
  CHECK(w.arrival.kind == ArrivalProcess::Kind::gamma);
  CHECK(w.arrival.cv == 3.0);
  CHECK(w.prompt.mean_tokens() == 200.0);
  CHECK(w.output.mean_tokens() == 64.0);
  CHECK(!w.shared_prefix.enabled());
}

TEST_CASE("workload errors are located and named", "[profiles][workload][errors]") {
  SECTION("unknown key with a suggestion") {
    const auto d = errors(replace(kGood, "rate_per_s: 2.5", "rate_per_sec: 2.5"));
    REQUIRE(!d.empty());
    CHECK(d[0].file == "w.yaml");
    CHECK(d[0].line == 5);
    CHECK(d[0].key_path == "arrival.rate_per_sec");
    CHECK(d[0].message.find("did you mean 'rate_per_s'") != std::string::npos);
  }
  SECTION("a list for a length, and a YAML merge key, say what to write instead") {
    const auto d = errors(
        "kind: workload\nname: w\nprompt_tokens: [1, 2]\noutput_tokens: 10\n"
        "arrival: {process: poisson, rate_per_s: 1, <<: {cv: 2}}\n");
    REQUIRE(d.size() == 2);
    CHECK(d[0].key_path == "arrival");  // the arrival is read first
    CHECK(d[0].message.find("YAML merge keys (<<: *anchor) are not supported") != std::string::npos);
    CHECK(d[1].key_path == "prompt_tokens");
    CHECK(d[1].message.find("not a list (for several lengths: {distribution: empirical") != std::string::npos);
  }
  SECTION("unknown distribution") {
    const auto d = errors(replace(kGood, "distribution: uniform", "distribution: unifrom"));
    REQUIRE(d.size() == 1);
    CHECK(d[0].line == 8);
    CHECK(d[0].key_path == "prompt_tokens.distribution");
    CHECK(d[0].message.find("did you mean 'uniform'") != std::string::npos);
  }
  SECTION("a key the distribution does not use") {
    const auto d = errors(replace(kGood, "  tokens: 64", "  tokens: 64\n  sigma: 1"));
    REQUIRE(d.size() == 1);
    CHECK(d[0].key_path == "output_tokens.sigma");
    CHECK(d[0].line == 14);
  }
  SECTION("max below min comes from the planner's validate, located on the key") {
    const auto d = errors(replace(kGood, "max: 300", "max: 50"));
    REQUIRE(d.size() == 1);
    CHECK(d[0].key_path == "prompt_tokens.max");
    CHECK(d[0].line == 10);
    CHECK(d[0].message.find("must be >= min") != std::string::npos);
  }
  SECTION("negative rate") {
    const auto d = errors(replace(kGood, "rate_per_s: 2.5", "rate_per_s: -1"));
    REQUIRE(d.size() == 1);
    CHECK(d[0].key_path == "arrival.rate_per_s");
  }
  SECTION("cv on a Poisson process") {
    const auto d = errors(replace(kGood, "process: gamma", "process: poisson"));
    REQUIRE(d.size() == 1);
    CHECK(d[0].key_path == "arrival.cv");
  }
  SECTION("empirical values must be whole token counts") {
    const auto d = errors(replace(kGood, "distribution: fixed\n  tokens: 64", "distribution: empirical\n  values: [10, 2.5, x]"));
    REQUIRE(d.size() == 2);
    CHECK(d[0].key_path == "output_tokens.values[1]");
    CHECK(d[1].key_path == "output_tokens.values[2]");
    CHECK(d[0].line == 13);
  }
  SECTION("wrong kind") {
    const auto d = errors(replace(kGood, "kind: workload", "kind: model"));
    REQUIRE(d.size() == 1);
    CHECK(d[0].key_path == "kind");
  }
  SECTION("missing output lengths") {
    const auto d = errors(kGood.substr(0, kGood.find("output_tokens")));
    REQUIRE(d.size() == 1);
    CHECK(d[0].key_path == "output_tokens");
  }
}

TEST_CASE("lognormal mean_tokens matches the closed form and a numeric integral", "[planner][workload]") {
  // Clamped only at 1 token: the mean.
  CHECK(LengthDistribution::lognormal_tokens(500, 1.0).mean_tokens() == Approx(500).epsilon(1e-9));  // the clamp at 1 token moves it by ~1e-12
  // Clamped: compare against a numeric integral of clamp(exp(y)) over the normal density.
  const double mean = 800, s = 1.2, a = 50, b = 2000;
  const double mu = std::log(mean) - 0.5 * s * s;
  double integral = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double y = mu - 10 * s + (i + 0.5) * 20 * s / n;
    const double pdf = std::exp(-0.5 * (y - mu) * (y - mu) / (s * s)) / (s * std::sqrt(2 * std::numbers::pi));
    integral += std::clamp(std::exp(y), a, b) * pdf * 20 * s / n;
  }
  CHECK(LengthDistribution::lognormal_tokens(mean, s, 50, 2000).mean_tokens() == Approx(integral).epsilon(1e-6));
}

TEST_CASE("workload validate names the field", "[planner][workload]") {
  WorkloadSpec w;
  w.arrival.rate_per_s = 1;
  w.prompt = LengthDistribution::fixed_tokens(10);
  w.output = LengthDistribution::empirical_tokens({1, 2}, {1.0});
  try {
    validate(w);
    FAIL("expected a SpecError");
  } catch (const SpecError& e) {
    CHECK(e.field() == "output_tokens.weights");
  }
  w.output = LengthDistribution::fixed_tokens(0);
  CHECK_THROWS_AS(validate(w), SpecError);
}

TEST_CASE("a workload's independent mistakes are all named at once", "[profiles][workload][errors]") {
  // A prefix longer than the prompt, and a conversation in a closed loop: two sections, two errors, each at its line.
  const auto d = errors(R"(kind: workload
name: w
prompt_tokens: 512
output_tokens: 128
shared_prefix: {tokens: 100000, groups: 1}
arrival: {process: closed, concurrency: 4}
conversation: {turns: 3}
)");
  REQUIRE(d.size() == 2);
  CHECK(d[0].key_path == "shared_prefix.tokens");
  CHECK(d[0].line == 5);
  CHECK(d[1].key_path == "conversation");
  CHECK(d[1].line == 7);
  // validate() throws the first of the same list.
  WorkloadSpec w;
  w.arrival.rate_per_s = -1;
  w.prompt = LengthDistribution::fixed_tokens(0);
  w.output = LengthDistribution::fixed_tokens(8);
  const auto problems = workload_problems(w);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].field() == "arrival.rate_per_s");
  CHECK(problems[1].field() == "prompt_tokens.tokens");
  CHECK_THROWS_WITH(validate(w), Catch::StartsWith("arrival.rate_per_s"));
}

TEST_CASE("a profile's name must not be blank", "[profiles][workload][errors]") {
  const auto d = errors(
      "kind: workload\nname: \" \"\nprompt_tokens: 10\noutput_tokens: 10\n"
      "arrival: {process: poisson, rate_per_s: 1}\n");
  REQUIRE(d.size() == 1);
  CHECK(d[0].key_path == "name");
  CHECK(d[0].line == 2);
  CHECK(d[0].message.find("must not be empty") != std::string::npos);
}

TEST_CASE("workload files describe closed loops and rate phases", "[profiles][workload]") {
  const std::string closed = "kind: workload\nname: bench\narrival: {process: closed, concurrency: 64, think_time_s: 2}\n"
                             "prompt_tokens: {distribution: fixed, tokens: 4096}\noutput_tokens: {distribution: fixed, tokens: 512}\n";
  const auto c = profiles::parse_workload(closed, "w.yaml");
  CHECK(c.arrival.kind == ArrivalProcess::Kind::closed);
  CHECK(c.arrival.concurrency == 64);
  CHECK(c.arrival.think_time_s == 2.0);
  CHECK(std::isinf(c.arrival.rate_per_s));
  // size sizes it as 64 concurrent users.
  CHECK(sizing_workload(c).concurrent_users == 64);
  const std::string phased = "kind: workload\nname: steps\narrival:\n  process: poisson\n  phases:\n"
                             "    - {rate_per_s: 5, duration_s: 600}\n    - {rate_per_s: 10, duration_s: 600}\n"
                             "prompt_tokens: {distribution: fixed, tokens: 1000}\noutput_tokens: {distribution: fixed, tokens: 200}\n";
  const auto p = profiles::parse_workload(phased, "w.yaml");
  REQUIRE(p.arrival.phases.size() == 2);
  CHECK(p.arrival.phases[1].rate_per_s == 10.0);
  CHECK(p.arrival.rate_per_s == 10.0);  // size sizes for the busiest phase
  CHECK(sizing_workload(p).arrival_rate_per_s == 10.0);
  // Mixed-up keys are errors at their line.
  CHECK_THROWS_WITH(profiles::parse_workload(replace(closed, "concurrency: 64", "rate_per_s: 3"), "w.yaml"),
                    Catch::Contains("w.yaml:3") && Catch::Contains("arrival.rate_per_s: does not apply to a closed loop"));
  CHECK_THROWS_WITH(profiles::parse_workload(replace(phased, "  process: poisson\n", "  process: poisson\n  rate_per_s: 3\n"), "w.yaml"),
                    Catch::Contains("give the rate per phase"));
  CHECK_THROWS_WITH(profiles::parse_workload(replace(phased, "duration_s: 600}\n    -", "duration: 600}\n    -"), "w.yaml"),
                    Catch::Contains("arrival.phases[0].duration"));
}

TEST_CASE("lengths in the text form of --prompt-tokens read as the mapping form does", "[workload][units]") {
  const std::string head = "kind: workload\nname: w\narrival: {process: poisson, rate_per_s: 2}\n";
  const auto text = profiles::parse_workload(
      head + "prompt_tokens: \"lognormal:mean=1K,sigma=0.8,min=16,max=8K\"\noutput_tokens: uniform:32-512\n", "w.yaml");
  const auto map =
      profiles::parse_workload(head +
                                   "prompt_tokens: {distribution: lognormal, mean: 1024, sigma: 0.8, min: 16, "
                                   "max: 8192}\noutput_tokens: {distribution: uniform, min: 32, max: 512}\n",
                               "w.yaml");
  CHECK(text.prompt.kind == LengthDistribution::Kind::lognormal);
  CHECK(text.prompt.mean_tokens() == map.prompt.mean_tokens());
  CHECK(text.prompt.min_tokens == map.prompt.min_tokens);
  CHECK(text.prompt.max_tokens == map.prompt.max_tokens);
  CHECK(text.output.kind == LengthDistribution::Kind::uniform);
  CHECK(text.output.min_tokens == 32);
  CHECK(text.output.max_tokens == 512);
  CHECK(profiles::parse_workload(head + "prompt_tokens: 2K\noutput_tokens: 128\n", "w.yaml").prompt.tokens == 2048);

  const auto e = errors(head + "prompt_tokens: \"uniform:2K\"\noutput_tokens: 128\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0].line == 4);
  CHECK(e[0].column == 16);
  CHECK(e[0].key_path == "prompt_tokens");
  CHECK(e[0].message.rfind("expected uniform:MIN-MAX, got 'uniform:2K'", 0) == 0);
}

TEST_CASE("conversation workloads load, and their mistakes are located", "[profiles][workload][conversation]") {
  const auto mt = profiles::load_workload_file(KVCAP_SOURCE_DIR "/profiles/examples/workload-multi-turn.yaml");
  CHECK(mt.conversation.enabled());
  CHECK(mt.conversation.users == 0);
  CHECK(mt.conversation.turns.kind == LengthDistribution::Kind::uniform);
  CHECK(mt.conversation.turns.mean_tokens() == 5.0);
  CHECK(mt.conversation.think_time_s == 30.0);
  CHECK(mt.conversation.think_time_exponential);
  CHECK(mt.conversation.history == ConversationSpec::History::accumulate);
  const auto ip =
      profiles::load_workload_file(KVCAP_SOURCE_DIR "/profiles/examples/workload-inference-perf-multi-turn.yaml");
  CHECK(ip.conversation.users == 44);
  CHECK(ip.conversation.history == ConversationSpec::History::repeat);
  CHECK(ip.arrival.phases.size() == 2);

  // size: E[T] requests per conversation; over all requests the mean prompt carries E[T(T-1)] / (2 E[T]) turns of
  // history: for T uniform on 2..8, E[T^2] = 203 / 7 = 29, so 24 / 10 = 2.4 turns (longer conversations bring more
  // requests; (E[T] - 1) / 2 = 2 would under-count).
  const SizingWorkload sw = sizing_workload(mt);
  CHECK(sw.arrival_rate_per_s == Approx(2.0 * 5.0));
  const double prefix = 200, turn = mt.output.mean_tokens() + (mt.prompt.mean_tokens() - prefix);
  CHECK(sw.prompt_tokens == Approx(mt.prompt.mean_tokens() + 2.4 * turn));
  // Repeating conversations: E[T] requests each, the prompt as drawn.
  WorkloadSpec rep = mt;
  rep.conversation.history = ConversationSpec::History::repeat;
  CHECK(sizing_workload(rep).arrival_rate_per_s == Approx(10.0));
  CHECK(sizing_workload(rep).prompt_tokens == Approx(mt.prompt.mean_tokens()));
  // Users whose history accumulates have no steady state to size.
  WorkloadSpec grow = ip;
  grow.conversation.history = ConversationSpec::History::accumulate;
  CHECK_THROWS_AS(sizing_workload(grow), SpecError);
  // Repeating users are sized as their requests.
  CHECK(sizing_workload(ip).prompt_tokens == 566.0);

  SECTION("neither turns nor users") {
    const auto d = errors(kGood + "conversation: {think_time_s: 3}\n");
    REQUIRE(d.size() == 1);
    CHECK(d[0].key_path == "conversation");
  }
  SECTION("a typo in history") {
    const auto d = errors(kGood + "conversation: {turns: 3, history: acumulate}\n");
    REQUIRE(d.size() == 1);
    CHECK(d[0].key_path == "conversation.history");
    CHECK(d[0].line == 14);
  }
  SECTION("turns in the length grammar, located") {
    const auto d = errors(kGood + "conversation:\n  turns: \"uniform:5-2\"\n");
    REQUIRE(d.size() == 1);
    CHECK(d[0].key_path == "conversation.turns");
    CHECK(d[0].line == 15);
  }
  SECTION("turns beside users") {
    const auto d = errors(kGood + "conversation: {turns: 3, users: 4}\n");
    REQUIRE(d.size() == 1);
    CHECK(d[0].key_path == "conversation.turns");
  }
  SECTION("a closed loop cannot carry conversations") {
    const auto d = errors(replace(replace(kGood, "process: gamma", "process: closed\n  concurrency: 4"),
                                  "  rate_per_s: 2.5\n  cv: 3\n", "") +
                          "conversation: {turns: 3}\n");
    REQUIRE(d.size() == 1);
    CHECK(d[0].key_path == "conversation");
  }
}
