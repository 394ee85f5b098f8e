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

WorkloadSpec offline_workload() {
  WorkloadSpec w;
  w.name = "offline";
  w.arrival.rate_per_s = std::numeric_limits<double>::infinity();
  w.prompt = LengthDistribution::uniform_tokens(100, 900);
  w.output = LengthDistribution::uniform_tokens(20, 300);
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
