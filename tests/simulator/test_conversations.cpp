// Multi-turn conversations (planner/workload.hpp ConversationSpec) and the hash-chained prefix cache they exercise:
// turn k's prompt is the history plus the new message, sent when answer k-1 has finished plus the think time; its
// history hits the cache while the blocks are cached and misses once they were evicted; inference-perf's users never
// have two turns in flight.
#include <algorithm>
#include <catch2/catch.hpp>
#include <limits>
#include <map>
#include <vector>

#include "kvcap/planner/error.hpp"
#include "kvcap/simulator/simulator.hpp"
#include "replica_config.hpp"

using namespace kvcap;
using namespace kvcap::sim;

namespace {
struct Recorder : Observer {
  std::vector<RequestRecord> done;
  void on_request_done(const RequestRecord& r) override { done.push_back(r); }
};

ReplicaConfig replica(std::uint32_t blocks) {
  return testing::small_replica(blocks, 8192);
}

/// Fixed lengths: prompt `prompt` (prefix included), answer `output`; conversations of `turns` turns.
WorkloadSpec chat(double rate, i64 prompt, i64 output, i64 turns, double think_s) {
  WorkloadSpec w;
  w.name = "chat";
  w.arrival.kind = ArrivalProcess::Kind::fixed_rate;
  w.arrival.rate_per_s = rate;
  w.prompt = LengthDistribution::fixed_tokens(prompt);
  w.output = LengthDistribution::fixed_tokens(output);
  w.conversation.turns = LengthDistribution::fixed_tokens(turns);
  w.conversation.think_time_s = think_s;
  return w;
}

/// The run's finished turns, grouped by conversation and ordered by turn.
std::map<std::int64_t, std::vector<RequestRecord>> by_conversation(const std::vector<RequestRecord>& done) {
  std::map<std::int64_t, std::vector<RequestRecord>> m;
  for (const auto& r : done) m[r.conversation].push_back(r);
  for (auto& [c, turns] : m)
    std::sort(turns.begin(), turns.end(), [](const auto& a, const auto& b) { return a.turn < b.turn; });
  return m;
}

/// Conversations started during the first `duration_s` run all their turns; users' turns stop at `requests`.
SimResult run(const WorkloadSpec& w, std::uint32_t blocks, const SourceLimits& limits, Recorder& rec) {
  SimConfig cfg;
  cfg.replica = replica(blocks);
  cfg.check_invariants = true;
  cfg.observer = &rec;
  auto src = synthetic_source(w, 11, limits);
  return simulate(cfg, StepTimer::linear(0.01, 1e-5, 1e-8), *src);
}
}  // namespace

TEST_CASE("a conversation's k-th prompt is its history plus the new message, sent think time after the answer",
          "[sim][conversation]") {
  WorkloadSpec w = chat(0.001, 100, 30, 4, 2.0);
  w.shared_prefix.num_groups = 1;
  w.shared_prefix.tokens = 20;
  Recorder rec;
  const SimResult r = run(w, 10'000, SourceLimits{std::nullopt, 1.0}, rec);
  REQUIRE(r.requests_completed == 4);
  const auto conv = by_conversation(rec.done);
  REQUIRE(conv.size() == 1);
  const auto& t = conv.begin()->second;
  REQUIRE(t.size() == 4);
  // Turn 1: the prompt as drawn; turn k+1: turn k's prompt and answer, then 100 - 20 (prefix) new tokens.
  CHECK(t[0].prompt_tokens == 100);
  CHECK(t[1].prompt_tokens == 100 + 30 + 80);
  CHECK(t[2].prompt_tokens == 210 + 30 + 80);
  CHECK(t[3].prompt_tokens == 320 + 30 + 80);
  for (std::size_t k = 1; k < t.size(); ++k) {
    CHECK(t[k].turn == k);
    CHECK(t[k].arrival_s == Approx(t[k - 1].finish_s + 2.0));
    // The history in cache: every full block of what turn k-1 computed (its prompt and all but its last answer
    // token), at most the prompt less its last token.
    const i64 computed = t[k - 1].prompt_tokens + t[k - 1].output_tokens - 1;
    const i64 expect = std::min(computed / 16, (t[k].prompt_tokens - 1) / 16) * 16;
    CHECK(t[k].cached_prompt_tokens == expect);
  }
  CHECK(t[0].cached_prompt_tokens == 0);
  const std::uint64_t hits = r.replicas[0].prefix_cache_hit_tokens;
  CHECK(hits ==
        static_cast<std::uint64_t>(t[1].cached_prompt_tokens + t[2].cached_prompt_tokens + t[3].cached_prompt_tokens));
}

TEST_CASE("a conversation's history misses the cache once its blocks were evicted", "[sim][conversation]") {
  // A conversation starts every second; each turn 2 comes 60 s after turn 1, while 60 other conversations ran.
  const WorkloadSpec w = chat(1.0, 200, 20, 2, 60.0);
  Recorder roomy, tight;
  const SourceLimits hundred_s{std::nullopt, 100.0};
  const SimResult a = run(w, 100'000, hundred_s, roomy);  // every block stays cached
  const SimResult b = run(w, 60, hundred_s, tight);       // 960 tokens: the others' blocks evict it
  REQUIRE(a.requests_completed == 200);
  REQUIRE(b.requests_completed == 200);
  std::uint64_t second_turns = 0;
  for (const auto& rec : roomy.done)
    if (rec.turn == 1) {
      ++second_turns;
      CHECK(rec.cached_prompt_tokens == i64{(200 + 20 - 1) / 16} * 16);
    }
  CHECK(second_turns == 100);
  for (const auto& rec : tight.done)
    if (rec.turn == 1) CHECK(rec.cached_prompt_tokens == 0);
  CHECK(a.replicas[0].prefix_cache_hit_tokens > 0);
  CHECK(b.replicas[0].prefix_cache_hit_tokens == 0);
}

TEST_CASE("a host KV tier keeps the evicted history: turn 2 reloads it instead of recomputing it",
          "[sim][conversation][host_tier]") {
  // The tight run above, with vLLM's CPU offloading: 100,000 host blocks, 1 ms to bring one block back.
  const WorkloadSpec w = chat(1.0, 200, 20, 2, 60.0);
  const SourceLimits hundred_s{std::nullopt, 100.0};
  const auto run_host = [&](std::uint64_t host_blocks, Recorder& rec) {
    SimConfig cfg;
    cfg.replica = replica(60);
    cfg.replica.host_blocks = host_blocks;
    cfg.replica.host_reload_s_per_block = 0.001;
    cfg.check_invariants = true;
    cfg.observer = &rec;
    auto src = synthetic_source(w, 11, hundred_s);
    return simulate(cfg, StepTimer::linear(0.01, 1e-5, 1e-8), *src);
  };
  Recorder gpu_only, host, small_host;
  const SimResult a = run_host(0, gpu_only);
  const SimResult b = run_host(100'000, host);
  const SimResult c = run_host(12, small_host);  // less than one history (13 blocks): LRU keeps the newest only
  REQUIRE(a.requests_completed == 200);
  REQUIRE(b.requests_completed == 200);
  REQUIRE(c.requests_completed == 200);
  const i64 history = i64{(200 + 20 - 1) / 16} * 16;  // 13 full blocks of turn 1's computed tokens
  std::map<std::int64_t, double> ttft_gpu_only;
  for (const auto& rec : gpu_only.done)
    if (rec.turn == 1) ttft_gpu_only[rec.conversation] = rec.first_token_s - rec.arrival_s;
  std::uint64_t second_turns = 0;
  for (const auto& rec : host.done) {
    if (rec.turn != 1) continue;
    ++second_turns;
    CHECK(rec.cached_prompt_tokens == history);
    // Its 13 blocks take 13 ms to come back before the request runs.
    CHECK(rec.first_token_s - rec.arrival_s >= 0.013);
  }
  CHECK(second_turns == 100);
  CHECK(a.host_hit_tokens == 0);
  CHECK(b.host_hit_tokens == 100 * static_cast<std::uint64_t>(history));
  CHECK(b.host_load_s == Approx(100 * 13 * 0.001));
  // Fewer prompt tokens computed: the histories were reloaded, not recomputed.
  CHECK(b.replicas[0].prefill_tokens + b.host_hit_tokens == a.replicas[0].prefill_tokens);
  // A host tier smaller than one history finds no leading run of it (the history's first block was evicted first).
  CHECK(c.host_hit_tokens == 0);
  for (const auto& rec : small_host.done)
    if (rec.turn == 1) CHECK(rec.cached_prompt_tokens == 0);
}

TEST_CASE("LMCache keeps the history in whole chunks, and a disk tier serves what CPU memory lost, at the disk's cost",
          "[sim][conversation][host_tier][lmcache]") {
  // The run above with LMCache's chunks of 4 blocks (64 tokens): of the 13-block history (208 tokens), 3 chunks
  // (192 tokens) come back; one CPU backend large enough, or a small one with a disk beside it.
  const WorkloadSpec w = chat(1.0, 200, 20, 2, 60.0);
  const SourceLimits hundred_s{std::nullopt, 100.0};
  const auto run_lmcache = [&](std::uint64_t cpu_blocks, std::uint64_t disk_blocks) {
    SimConfig cfg;
    cfg.replica = replica(60);
    cfg.replica.host_blocks = cpu_blocks;
    cfg.replica.host_disk_blocks = disk_blocks;
    cfg.replica.host_unit_blocks = 4;
    cfg.replica.host_reload_s_per_block = 0.001;
    cfg.replica.host_disk_reload_s_per_block = 0.004;
    cfg.check_invariants = true;
    auto src = synthetic_source(w, 11, hundred_s);
    return simulate(cfg, StepTimer::linear(0.01, 1e-5, 1e-8), *src);
  };
  const SimResult none = run_lmcache(0, 0), cpu = run_lmcache(100'000, 0), disk = run_lmcache(12, 100'000);
  REQUIRE(none.requests_completed == 200);
  REQUIRE(cpu.requests_completed == 200);
  REQUIRE(disk.requests_completed == 200);
  CHECK(cpu.host_hit_tokens == std::uint64_t{100} * 192);  // 3 whole chunks of each second turn's 13-block history
  CHECK(cpu.host_disk_hit_tokens == 0);
  CHECK(cpu.host_load_s == Approx(100 * 12 * 0.001));
  CHECK(cpu.replicas[0].prefill_tokens + cpu.host_hit_tokens == none.replicas[0].prefill_tokens);
  // CPU memory of 12 blocks keeps no history whole; the disk does, so every hit is read from disk first.
  CHECK(disk.host_hit_tokens == std::uint64_t{100} * 192);
  CHECK(disk.host_disk_hit_tokens == disk.host_hit_tokens);
  CHECK(disk.host_load_s == Approx(100 * 12 * (0.001 + 0.004)));
}

TEST_CASE("inference-perf users: turns dealt round-robin, one in flight per user, a repeated prompt hits the cache",
          "[sim][conversation]") {
  WorkloadSpec w;
  w.name = "users";
  w.arrival.kind = ArrivalProcess::Kind::poisson;
  w.arrival.rate_per_s = 50;  // far more than 3 users can send one at a time
  w.prompt = LengthDistribution::fixed_tokens(566);
  w.output = LengthDistribution::fixed_tokens(40);
  w.shared_prefix.num_groups = 2;
  w.shared_prefix.tokens = 100;
  w.conversation.users = 3;
  w.conversation.history = ConversationSpec::History::repeat;
  w.conversation.think_time_s = 0.5;
  Recorder rec;
  const SimResult r = run(w, 10'000, SourceLimits{60, std::nullopt}, rec);
  REQUIRE(r.requests_completed == 60);
  const auto conv = by_conversation(rec.done);
  REQUIRE(conv.size() == 3);
  for (const auto& [user, t] : conv) {
    CHECK(t.size() == 20);  // request i went to user i mod 3
    for (std::size_t k = 0; k < t.size(); ++k) {
      CHECK(t[k].prompt_tokens == 566);
      // Turn 1 is cold except for another user's copy of its group's prefix; later turns find all 35 full blocks.
      if (k > 0) CHECK(t[k].cached_prompt_tokens == 560);
      if (k > 0) CHECK(t[k].arrival_s >= t[k - 1].finish_s + 0.5 - 1e-9);
    }
  }
  // Three users one turn at a time: never more than 3 requests in flight.
  CHECK(r.running_max <= 3);
}

TEST_CASE("conversation workloads are checked", "[sim][conversation]") {
  WorkloadSpec w = chat(1.0, 100, 10, 3, 0);
  w.conversation.users = 4;
  CHECK_THROWS_AS(validate(w), SpecError);  // turns and users together
  w = chat(1.0, 100, 10, 3, -1);
  CHECK_THROWS_AS(validate(w), SpecError);
  w = chat(1.0, 100, 10, 3, 0);
  w.arrival = ArrivalProcess{};
  w.arrival.kind = ArrivalProcess::Kind::closed;
  w.arrival.concurrency = 4;
  w.arrival.rate_per_s = std::numeric_limits<double>::infinity();
  CHECK_THROWS_AS(synthetic_source(w, 1, SourceLimits{10, std::nullopt}), SpecError);
  // A closed loop given by the run (--max-concurrency) cannot carry conversations either.
  SimConfig cfg;
  cfg.replica = replica(1000);
  cfg.max_concurrency = 2;
  auto src = synthetic_source(chat(1.0, 100, 10, 3, 0), 1, SourceLimits{10, std::nullopt});
  CHECK_THROWS_AS(simulate(cfg, StepTimer::linear(0.01, 0, 0), *src), SpecError);
}

TEST_CASE("an idle user still waits its think time after the last answer", "[sim][conversation]") {
  WorkloadSpec w;
  w.name = "idle-user";
  w.arrival.kind = ArrivalProcess::Kind::fixed_rate;
  w.arrival.rate_per_s = 0.5;  // a turn dealt every 2 s, the answer takes well under 1 s
  w.prompt = LengthDistribution::fixed_tokens(200);
  w.output = LengthDistribution::fixed_tokens(20);
  w.conversation.users = 1;
  w.conversation.think_time_s = 5.0;
  Recorder rec;
  const SimResult r = run(w, 10'000, SourceLimits{6, std::nullopt}, rec);
  REQUIRE(r.requests_completed == 6);
  const auto conv = by_conversation(rec.done);
  REQUIRE(conv.size() == 1);
  const auto& t = conv.begin()->second;
  REQUIRE(t.size() == 6);
  for (std::size_t k = 1; k < t.size(); ++k) CHECK(t[k].arrival_s >= t[k - 1].finish_s + 5.0 - 1e-9);
}
