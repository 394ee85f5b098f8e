// Load as benchmarks generate it: a closed loop of N clients (vllm bench serve --max-concurrency N, AIPerf's
// concurrency mode), with and without think time, and every request at once (--rate inf, vllm bench throughput).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kvcap/planner/plausibility.hpp"
#include "kvcap/simulator/simulator.hpp"

using namespace kvcap;
using namespace kvcap::sim;

namespace {
struct Done : Observer {
  std::vector<RequestRecord> done;
  void on_request_done(const RequestRecord& r) override { done.push_back(r); }
};

ReplicaConfig roomy_replica() {
  ReplicaConfig c;
  c.num_blocks = 20000;
  c.block_size = 16;
  c.max_num_batched_tokens = 2048;
  c.max_num_seqs = 256;
  c.max_model_len = 8192;
  return c;
}

/// A decodes from 0 (10-token prompt, 100 tokens out); B's prompt of `prompt_tokens` arrives at 0.015 s (5 out).
std::vector<RequestSpec> decoding_then_prompt(i64 prompt_tokens) {
  std::vector<RequestSpec> reqs(2);
  reqs[0].arrival_s = 0, reqs[0].prompt_tokens = 10, reqs[0].output_tokens = 100;
  reqs[1].arrival_s = 0.015, reqs[1].prompt_tokens = prompt_tokens, reqs[1].output_tokens = 5;
  return reqs;
}

WorkloadSpec offline_workload() {
  WorkloadSpec w;
  w.name = "offline";
  w.arrival.rate_per_s = std::numeric_limits<double>::infinity();
  w.prompt = LengthDistribution::uniform_tokens(100, 900);
  w.output = LengthDistribution::uniform_tokens(20, 300);
  return w;
}

/// The offline workload with fixed prompt and output lengths.
WorkloadSpec fixed_workload(i64 prompt, i64 output) {
  WorkloadSpec w = offline_workload();
  w.prompt = LengthDistribution::fixed_tokens(prompt);
  w.output = LengthDistribution::fixed_tokens(output);
  return w;
}

/// Requests in flight (sent, not finished) just after time t.
int in_flight_at(const std::vector<RequestRecord>& rs, double t) {
  int n = 0;
  for (const auto& r : rs) n += (r.arrival_s <= t && t < r.finish_s) ? 1 : 0;
  return n;
}

std::vector<RequestRecord> run(std::uint32_t clients, double think_s, std::uint64_t requests, SimResult* out = nullptr) {
  Done obs;
  SimConfig cfg;
  cfg.replica = roomy_replica();
  cfg.observer = &obs;
  cfg.max_concurrency = clients;
  cfg.think_time_s = think_s;
  auto src = synthetic_source(offline_workload(), 7, SourceLimits{requests, std::nullopt});
  const SimResult r = simulate(cfg, StepTimer::linear(0.01, 1e-5, 1e-8), *src);
  if (out) *out = r;
  return obs.done;
}
}  // namespace

TEST_CASE("rate inf puts every arrival at t = 0", "[sim][load]") {
  auto src = synthetic_source(offline_workload(), 3, SourceLimits{500, std::nullopt});
  std::uint64_t n = 0;
  while (auto r = src->next()) {
    CHECK(r->arrival_s == 0.0);
    ++n;
  }
  CHECK(n == 500);
  // A duration cannot end a source whose arrivals never advance.
  CHECK_THROWS(synthetic_source(offline_workload(), 3, SourceLimits{std::nullopt, 60.0}));
}

TEST_CASE("a closed loop keeps exactly N requests in flight while requests remain", "[sim][load]") {
  const std::uint32_t N = 8;
  SimResult res;
  const auto rs = run(N, 0.0, 200, &res);
  REQUIRE(rs.size() == 200);
  CHECK(res.requests_completed == 200);
  CHECK(res.running_max <= static_cast<i64>(N));
  // The first N are sent at once; every later request is sent at the moment an earlier one finished.
  std::vector<double> finishes;
  for (const auto& r : rs) finishes.push_back(r.finish_s);
  std::sort(finishes.begin(), finishes.end());
  int at_start = 0;
  for (const auto& r : rs) {
    if (r.arrival_s == 0.0) {
      ++at_start;
      continue;
    }
    CHECK(std::binary_search(finishes.begin(), finishes.end(), r.arrival_s));
  }
  CHECK(at_start == static_cast<int>(N));
  // Exactly N in flight at every instant until the last request is sent.
  double last_send = 0;
  for (const auto& r : rs) last_send = std::max(last_send, r.arrival_s);
  for (const auto& r : rs) {
    if (r.arrival_s < last_send) CHECK(in_flight_at(rs, r.arrival_s) == static_cast<int>(N));
  }
}

TEST_CASE("think time delays each client's next request and lowers the load", "[sim][load]") {
  const std::uint32_t N = 4;
  const double think = 0.5;
  const auto rs = run(N, think, 60);
  REQUIRE(rs.size() == 60);
  // Never more than N in flight; a request after the first N is sent `think` after some request finished.
  std::vector<double> finishes;
  for (const auto& r : rs) finishes.push_back(r.finish_s);
  for (const auto& r : rs) {
    CHECK(in_flight_at(rs, r.arrival_s) <= static_cast<int>(N));
    if (r.arrival_s == 0.0) continue;
    const bool after_a_finish = std::any_of(finishes.begin(), finishes.end(),
                                            [&](double f) { return std::abs(f + think - r.arrival_s) < 1e-9; });
    CHECK(after_a_finish);
  }
  SimResult no_think, with_think;
  run(N, 0.0, 60, &no_think);
  run(N, think, 60, &with_think);
  CHECK(with_think.end_s > no_think.end_s + think);
  CHECK(with_think.running_mean < no_think.running_mean);
}

TEST_CASE("a closed loop of one client runs requests strictly one after another", "[sim][load]") {
  auto rs = run(1, 0.0, 20);
  std::sort(rs.begin(), rs.end(), [](const auto& a, const auto& b) { return a.arrival_s < b.arrival_s; });
  for (std::size_t i = 1; i < rs.size(); ++i) CHECK(rs[i].arrival_s == rs[i - 1].finish_s);
  // With no one to queue behind, a request waits for nothing: its first step starts when it is sent.
  for (const auto& r : rs) CHECK(r.first_scheduled_s == r.arrival_s);
}

TEST_CASE("offered against served load flags an overloaded open loop (KVCAP-W202)", "[sim][load][plausibility]") {
  // One replica with a linear step timer; the same workload at a light and at an impossible rate.
  auto run_at = [](double rate) {
    SimConfig cfg;
    cfg.replica = roomy_replica();
    WorkloadSpec w = offline_workload();
    w.arrival.rate_per_s = rate;
    auto src = synthetic_source(w, 7, SourceLimits{400, std::nullopt});
    return simulate(cfg, StepTimer::linear(0.01, 1e-5, 1e-8), *src);
  };
  const SimResult light = run_at(1.0);
  const auto low = offered_and_served_per_s(light, false);
  CHECK(low.first == Approx(1.0).epsilon(0.2));
  CHECK(low.first < low.second);  // below capacity everything offered is served
  CHECK_FALSE(overloaded(light, false));
  const SimResult heavy = run_at(1000.0);
  const auto high = offered_and_served_per_s(heavy, false);
  CHECK(high.first > 5 * high.second);
  const auto f = check_offered_load(high.first, high.second);
  REQUIRE(f.has_value());
  CHECK(f->code == "KVCAP-W202");
  CHECK(overloaded(heavy, false));
  CHECK_FALSE(overloaded(heavy, true));
  CHECK(offered_and_served_per_s(heavy, true).first == 0);  // a closed loop is never "overloaded"
}

// (No ';' in a test name: CTest splits names on it, and the truncated name matched no case, so this test did not
// run under ctest until 2026-11-25 -- when it did, it showed a freed client waiting behind later staggered starts.)
TEST_CASE("staggered clients start spread over the stagger, together they all start at 0", "[sim][load]") {
  auto first_sends = [](double stagger, i64 output_tokens) {
    Done obs;
    SimConfig cfg;
    cfg.replica = roomy_replica();
    cfg.observer = &obs;
    cfg.max_concurrency = 4;
    cfg.client_stagger_s = stagger;
    const WorkloadSpec w = fixed_workload(100, output_tokens);
    auto src = synthetic_source(w, 1, SourceLimits{40, std::nullopt});
    (void)simulate(cfg, StepTimer::linear(0.01, 1e-5, 1e-8), *src);
    std::vector<double> t;
    for (const auto& r : obs.done) t.push_back(r.arrival_s);
    std::sort(t.begin(), t.end());
    t.resize(4);
    return t;
  };
  // Requests of 500 tokens (about 5.5 s) outlast the stagger: the first four sends are the four clients' first.
  CHECK(first_sends(0, 500) == std::vector<double>{0, 0, 0, 0});
  CHECK(first_sends(2.0, 500) == std::vector<double>{0, 0.5, 1.0, 1.5});
  // Requests of 50 tokens (about 0.5 s): client 0 sends its second request as soon as its first ends, before
  // clients 2 and 3 make their first sends at 1.0 and 1.5.
  const auto early = first_sends(2.0, 50);
  CHECK(early[0] == 0);
  CHECK(early[1] == 0.5);
  CHECK(early[2] > 0.5);
  CHECK(early[2] < 0.6);
  CHECK(early[3] == 1.0);
  SimConfig bad;
  bad.replica = roomy_replica();
  bad.max_concurrency = 2;
  bad.client_stagger_s = -1;
  auto src = synthetic_source(offline_workload(), 1, SourceLimits{4, std::nullopt});
  CHECK_THROWS_AS(simulate(bad, StepTimer::linear(0.01), *src), SpecError);
}

TEST_CASE("the front end's request overhead delays admission and adds to TTFT and E2E", "[sim][load]") {
  auto one = [](double overhead) {
    Done obs;
    SimConfig cfg;
    cfg.replica = roomy_replica();
    cfg.observer = &obs;
    cfg.request_overhead_s = overhead;
    const WorkloadSpec w = fixed_workload(100, 10);
    auto src = synthetic_source(w, 1, SourceLimits{1, std::nullopt});
    (void)simulate(cfg, StepTimer::linear(0.01), *src);
    REQUIRE(obs.done.size() == 1);
    return obs.done[0];
  };
  const auto a = one(0), b = one(0.05);
  CHECK(b.arrival_s == a.arrival_s);  // TTFT counts from the send
  CHECK(b.first_token_s - b.arrival_s == Approx(a.first_token_s - a.arrival_s + 0.05));
  CHECK(b.finish_s - b.arrival_s == Approx(a.finish_s - a.arrival_s + 0.05));
}

TEST_CASE("multi-step scheduling admits waiting requests only every k steps", "[sim][load]") {
  // One long request runs; a second arrives at 0.015 s. With k = 1 it joins the next step (at 0.02 s);
  // with --num-scheduler-steps 10 only when the burst of 10 steps that started at 0 ends (0.10 s).
  auto second_first_token = [](i64 k) {
    Done obs;
    SimConfig cfg;
    cfg.replica = roomy_replica();
    cfg.replica.num_scheduler_steps = k;
    cfg.observer = &obs;
    auto src = list_source(decoding_then_prompt(10), SourceLimits{});
    (void)simulate(cfg, StepTimer::linear(0.01), *src);
    for (const auto& r : obs.done)
      if (r.arrival_s > 0) return r.first_token_s;
    return -1.0;
  };
  CHECK(second_first_token(1) == Approx(0.03));   // admitted at the 0.02 s step, first token at its end
  CHECK(second_first_token(10) == Approx(0.11));  // admitted at the 0.10 s step
}

namespace {
struct Steps : Observer {
  std::vector<RequestRecord> done;
  std::vector<StepRecord> steps;
  void on_request_done(const RequestRecord& r) override { done.push_back(r); }
  void on_step(const StepRecord& s) override { steps.push_back(s); }
};
}  // namespace

TEST_CASE("prefill-first steps (SGLang, vLLM V0) hold no decode, and the decodes wait for them", "[sim][load]") {
  // A decodes from 0; B's 1,000-token prompt arrives at 0.015 s. Mixed (vLLM V1): B's prompt joins A's decode in one
  // step of 1,001 tokens. Prefill-first: a step of B's 1,000 tokens alone, A's decode waiting for the next one.
  auto run = [](bool prefill_first, Steps& obs, std::vector<RequestSpec> reqs, i64 k = 1) {
    SimConfig cfg;
    cfg.replica = roomy_replica();
    cfg.replica.prefill_first = prefill_first;
    cfg.replica.num_scheduler_steps = k;
    cfg.observer = &obs;
    auto src = list_source(reqs, SourceLimits{});
    (void)simulate(cfg, StepTimer::linear(0.01, 1e-5), *src);
  };
  std::vector<RequestSpec> reqs = decoding_then_prompt(1000);
  Steps mixed, first;
  run(false, mixed, reqs);
  run(true, first, reqs);
  auto has_step = [](const Steps& o, i64 seqs, i64 tokens) {
    for (const auto& st : o.steps)
      if (st.sequences == seqs && st.tokens == tokens) return true;
    return false;
  };
  CHECK(has_step(mixed, 2, 1001));
  CHECK(!has_step(mixed, 1, 1000));
  CHECK(has_step(first, 1, 1000));
  CHECK(!has_step(first, 2, 1001));
  CHECK(first.steps.size() == mixed.steps.size() + 1);  // the prefill's step of its own
  auto by_prompt = [](const Steps& o, i64 prompt) {
    for (const auto& r : o.done)
      if (r.prompt_tokens == prompt) return r;
    return RequestRecord{};
  };
  // A decodes one step more, alone (0.01001 s), after B's prefill step (0.02 s) in place of the mixed one (0.02001 s);
  // B's first token does not come later (its step is the mixed one less A's token).
  CHECK(by_prompt(first, 10).finish_s == Approx(by_prompt(mixed, 10).finish_s + 0.02 + 0.01001 - 0.02001));
  CHECK(by_prompt(first, 1000).first_token_s <= by_prompt(mixed, 1000).first_token_s);

  // Under multi-step scheduling a prefill step stands alone and the scheduler runs again after it (vLLM V0 calls
  // schedule() after each prompt step): C, arriving while B's prefill runs, gets the step right after it although a
  // burst of 10 steps would otherwise keep it out.
  // A's prompt step stands alone at 0, its burst of 10 decode steps runs from 0.0101 s to 0.1102 s, B's prompt then
  // (to 0.1302 s), and C arrives at 0.125 s.
  reqs.push_back(RequestSpec{0.125, 500, 5});
  Steps multi;
  run(true, multi, reqs, 10);
  std::size_t b_step = multi.steps.size();
  for (std::size_t i = 0; i < multi.steps.size(); ++i)
    if (multi.steps[i].tokens == 1000) b_step = i;
  REQUIRE(b_step + 1 < multi.steps.size());
  CHECK(multi.steps[b_step].start_s == Approx(0.0101 + 10 * 0.01001));
  CHECK(multi.steps[b_step + 1].sequences == 1);
  CHECK(multi.steps[b_step + 1].tokens == 500);
}

TEST_CASE("inter-token latency: one sample per gap between a request's tokens, a prefill step's stall in one gap",
          "[sim][load]") {
  // A (10-token prompt, 100 tokens out) decodes from 0; B's 1,000-token prompt (5 out) arrives at 0.015 s. Steps take
  // 0.01 s + 10 us per token. Prefill-first: B's prompt runs alone (0.02 s) and A's next token waits for it and for
  // the decode step after it (A and B: 0.01002 s). Mixed (vLLM V1): A's gap over B's prompt is their one step (1,001
  // tokens, 0.02001 s).
  auto run = [](bool prefill_first, Steps& obs) {
    SimConfig cfg;
    cfg.replica = roomy_replica();
    cfg.replica.prefill_first = prefill_first;
    cfg.observer = &obs;
    auto src = list_source(decoding_then_prompt(1000), SourceLimits{});
    return simulate(cfg, StepTimer::linear(0.01, 1e-5), *src);
  };
  for (const bool prefill_first : {true, false}) {
    INFO("prefill_first " << prefill_first);
    Steps obs;
    const SimResult r = run(prefill_first, obs);
    const LatencySummary& itl = r.itl_s;
    CHECK(itl.count == 99 + 4);  // every token after each request's first
    CHECK(itl.max == Approx(prefill_first ? 0.02 + 0.01002 : 0.02001));
    CHECK(itl.p50 == Approx(0.01001).epsilon(0.003));  // A's decode steps alone (LogHistogram's bucket error)
    // The gaps of a request add up to its time from first token to last.
    double sum = 0;
    for (const RequestRecord& d : obs.done) sum += d.finish_s - d.first_token_s;
    CHECK(itl.mean * static_cast<double>(itl.count) == Approx(sum));
    // A's TPOT spreads its stall over its 99 gaps; the median gap does not see it.
    CHECK(r.tpot_s.max > itl.p50 * 1.005);
  }
}

TEST_CASE("prefill-first steps stay pure when blocks run short and requests are preempted", "[sim][load]") {
  // A small pool (preemptions), prompts never chunked (the budget holds max_num_seqs whole prompts, so a prompt piece
  // has at least 2 tokens): a step that computes a decode token and a prompt piece is a mixed step.
  auto run = [](bool prefill_first, std::uint64_t& mixed) {
    Steps obs;
    SimConfig cfg;
    cfg.replica = roomy_replica();
    cfg.replica.num_blocks = 300;
    cfg.replica.max_num_seqs = 16;
    cfg.replica.max_num_batched_tokens = 16384;
    cfg.replica.prefill_first = prefill_first;
    cfg.observer = &obs;
    WorkloadSpec w;
    w.arrival = ArrivalProcess::renewal(ArrivalProcess::Kind::poisson, 40, 1);
    w.prompt = LengthDistribution::uniform_tokens(100, 500);
    w.output = LengthDistribution::uniform_tokens(20, 200);
    auto src = synthetic_source(w, 3, SourceLimits{600, std::nullopt});
    const SimResult r = simulate(cfg, StepTimer::linear(0.005, 1e-5), *src);
    mixed = 0;
    for (const auto& st : obs.steps) mixed += st.decode_tokens > 0 && st.tokens > st.sequences ? 1 : 0;
    CHECK(r.requests_completed == 600);
    return r.preemptions;
  };
  std::uint64_t mixed_first = 0, mixed_v1 = 0;
  CHECK(run(true, mixed_first) > 0);
  CHECK(mixed_first == 0);
  CHECK(run(false, mixed_v1) > 0);
  CHECK(mixed_v1 > 0);  // the check can fail: vLLM V1 mixes them
}

TEST_CASE("rate phases change the rate at the stated times and end the arrivals", "[sim][load]") {
  WorkloadSpec w = offline_workload();
  w.arrival = ArrivalProcess::renewal(ArrivalProcess::Kind::poisson, 40);
  w.arrival.phases = {{10, 100}, {40, 50}};  // 1,000 then 2,000 arrivals expected
  auto src = synthetic_source(w, 11, SourceLimits{});
  std::uint64_t first = 0, second = 0;
  double last = 0;
  while (auto r = src->next()) {
    CHECK(r->arrival_s >= last);
    last = r->arrival_s;
    (r->arrival_s < 100 ? first : second) += 1;
  }
  CHECK(last < 150);
  CHECK(static_cast<double>(first) == Approx(1000).epsilon(0.1));   // Poisson: sd ~ 3%
  CHECK(static_cast<double>(second) == Approx(2000).epsilon(0.1));
  // A fixed-rate process keeps its spacing within a phase and steps at the boundary.
  w.arrival.kind = ArrivalProcess::Kind::fixed_rate;
  w.arrival.phases = {{1, 3}, {4, 1}};
  auto fixed = synthetic_source(w, 1, SourceLimits{});
  std::vector<double> t;
  while (auto r = fixed->next()) t.push_back(r->arrival_s);
  CHECK(t == std::vector<double>{0, 1, 2, 3, 3.25, 3.5, 3.75});
  // rate x duration arrivals exactly, whatever 1 / rate rounds to: a phase and a duration are [start, end).
  for (const auto& [rate, seconds] :
       {std::pair{5.0, 2.0}, std::pair{3.0, 2.0}, std::pair{10.0, 10.0}, std::pair{7.0, 3.0}, std::pair{0.3, 100.0},
        std::pair{4.9, 10.0}, std::pair{1.3, 30.0}, std::pair{1.1, 30.0}, std::pair{2.2, 100.0}}) {
    w.arrival.phases = {{rate, seconds}, {0.1, 30}};
    auto phased = synthetic_source(w, 1, SourceLimits{});
    std::uint64_t n = 0;
    while (phased->next()) ++n;
    CHECK(n == static_cast<std::uint64_t>(std::llround(rate * seconds)) + 3);
    w.arrival.phases.clear();
    w.arrival.rate_per_s = rate;
    auto timed = synthetic_source(w, 1, SourceLimits{std::nullopt, seconds});
    n = 0;
    while (timed->next()) ++n;
    CHECK(n == static_cast<std::uint64_t>(std::llround(rate * seconds)));
  }
  // A phase of rate 0 is an idle gap, also first: the arrivals start with the first phase that has a rate.
  w.arrival.kind = ArrivalProcess::Kind::fixed_rate;
  w.arrival.rate_per_s = 4;
  w.arrival.phases = {{0, 5}, {2, 2}, {0, 10}, {4, 1}};
  auto gapped = synthetic_source(w, 1, SourceLimits{});
  t.clear();
  while (auto r = gapped->next()) t.push_back(r->arrival_s);
  CHECK(t == std::vector<double>{5, 5.5, 6, 6.5, 17, 17.25, 17.5, 17.75});
  w.arrival.kind = ArrivalProcess::Kind::poisson;
  auto poisson_gap = synthetic_source(w, 3, SourceLimits{});
  std::uint64_t gapped_arrivals = 0;
  while (auto r = poisson_gap->next()) {
    ++gapped_arrivals;
    CHECK(r->arrival_s >= 5);
    CHECK_FALSE((r->arrival_s >= 7 && r->arrival_s < 17));
    CHECK(r->arrival_s < 18);
  }
  CHECK(gapped_arrivals >= 3);  // 2 x 2 + 4 x 1 = 8 expected
  // Invalid phases are located errors: a rate between 0 and 1e-9, and only idle phases.
  w.arrival.phases = {{1, 3}, {1e-12, 1}};
  CHECK_THROWS_WITH(synthetic_source(w, 1, SourceLimits{}), Catch::Contains("arrival.phases[1].rate_per_s"));
  w.arrival.phases = {{0, 3}, {0, 1}};
  CHECK_THROWS_WITH(synthetic_source(w, 1, SourceLimits{}), Catch::Contains("every phase has rate 0"));
}

TEST_CASE("exponential think times keep the mean and vary per request", "[sim][load]") {
  auto gaps = [](bool exponential) {
    Done obs;
    SimConfig cfg;
    cfg.replica = roomy_replica();
    cfg.observer = &obs;
    cfg.max_concurrency = 1;  // one client: each gap between a finish and the next send is one think time
    cfg.think_time_s = 2.0;
    cfg.think_time_exponential = exponential;
    cfg.think_seed = 5;
    const WorkloadSpec w = fixed_workload(10, 2);
    auto src = synthetic_source(w, 1, SourceLimits{2000, std::nullopt});
    (void)simulate(cfg, StepTimer::linear(0.001), *src);
    std::sort(obs.done.begin(), obs.done.end(), [](const auto& a, const auto& b) { return a.arrival_s < b.arrival_s; });
    std::vector<double> g;
    for (std::size_t i = 1; i < obs.done.size(); ++i) g.push_back(obs.done[i].arrival_s - obs.done[i - 1].finish_s);
    return g;
  };
  const auto fixed = gaps(false), expo = gaps(true);
  REQUIRE(expo.size() == 1999);
  for (double g : fixed) CHECK(g == Approx(2.0));
  double sum = 0, sq = 0;
  for (double g : expo) sum += g, sq += g * g;
  const double mean = sum / 1999, sd = std::sqrt(sq / 1999 - mean * mean);
  CHECK(mean == Approx(2.0).epsilon(0.08));  // sd of the mean ~ 2.2%
  CHECK(sd == Approx(2.0).epsilon(0.12));    // exponential: sd = mean
}

TEST_CASE("clients that finish in one step send together again: coincident sends are counted", "[sim][load]") {
  // 16 clients of equal requests with a fixed think time: clients whose requests finish in one step send at one
  // instant, are prefilled together and finish together again (lockstep); an exponential think time parts them.
  auto coincident = [](double think, bool exponential, bool staggered) {
    SimConfig cfg;
    cfg.replica = roomy_replica();
    cfg.max_concurrency = 16;
    cfg.think_time_s = think;
    cfg.think_time_exponential = exponential;
    cfg.think_seed = 3;
    if (staggered) cfg.client_stagger_s = 1.0;
    const WorkloadSpec w = fixed_workload(500, 50);
    auto src = synthetic_source(w, 1, SourceLimits{3000, std::nullopt});
    return simulate(cfg, StepTimer::linear(0.001), *src).coincident_sends;
  };
  // Started together: the 2,048-token budget prefills 4 of the 500-token prompts a step, so the clients move in 4
  // groups of 4, and 3 of each group's 4 sends come with another.
  CHECK(coincident(0.5, false, false) >= 3000 * 3 / 4 - 16);
  CHECK(coincident(0.5, false, false) <= 3000 * 3 / 4 + 16);
  // Exponential think times part them: only the first wave's 15 sends after the first coincide, and none staggered.
  CHECK(coincident(0.5, true, false) == 15);
  CHECK(coincident(0.5, true, true) == 0);
  // No closed loop, no count.
  SimConfig open;
  open.replica = roomy_replica();
  auto src = synthetic_source(offline_workload(), 1, SourceLimits{200, std::nullopt});
  CHECK(simulate(open, StepTimer::linear(0.001), *src).coincident_sends == 0);
}
