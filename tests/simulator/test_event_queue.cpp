// The event queue's tie-break rule, as documented in event_queue.hpp, and its consequence for the
// scheduler: a request arriving at the instant a step ends joins the very next step.
#include <catch2/catch.hpp>

#include <algorithm>
#include <tuple>
#include <vector>

#include "kvcap/simulator/event_queue.hpp"
#include "kvcap/simulator/simulator.hpp"

using namespace kvcap;
using namespace kvcap::sim;

TEST_CASE("simultaneous events fire step_end, arrival, schedule, sample, then first-in first-out", "[sim][events]") {
  EventQueue q;
  q.push(1.0, EventKind::sample, 7);
  q.push(1.0, EventKind::schedule, 1);
  q.push(1.0, EventKind::arrival, 0);
  q.push(1.0, EventKind::step_end, 2);
  q.push(0.5, EventKind::sample, 9);
  q.push(1.0, EventKind::arrival, 3);
  q.push(1.0, EventKind::step_end, 4);
  std::vector<std::pair<EventKind, std::uint32_t>> got;
  while (!q.empty()) {
    const Event e = q.pop();
    got.emplace_back(e.kind, e.target);
  }
  const std::vector<std::pair<EventKind, std::uint32_t>> want = {
      {EventKind::sample, 9},  {EventKind::step_end, 2}, {EventKind::step_end, 4}, {EventKind::arrival, 0},
      {EventKind::arrival, 3}, {EventKind::schedule, 1}, {EventKind::sample, 7}};
  CHECK(got == want);
}

TEST_CASE("the queue pops in (time, kind, insertion) order under random pushes", "[sim][events]") {
  EventQueue q;
  std::vector<std::tuple<double, int, std::uint64_t>> pushed;
  std::uint64_t x = 12345;
  for (std::uint64_t i = 0; i < 5000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const double t = static_cast<double>((x >> 33) % 50) * 0.25;  // many exact ties
    const auto k = static_cast<EventKind>((x >> 20) % 4);
    q.push(t, k, static_cast<std::uint32_t>(i));
    pushed.emplace_back(t, static_cast<int>(k), i);
  }
  std::sort(pushed.begin(), pushed.end());
  for (const auto& [t, k, i] : pushed) {
    const Event e = q.pop();
    REQUIRE(e.time_s == t);
    REQUIRE(static_cast<int>(e.kind) == k);
    REQUIRE(e.target == i);
  }
  CHECK(q.empty());
  CHECK_THROWS(q.push(std::numeric_limits<double>::infinity(), EventKind::arrival));
}

namespace {
struct Records : Observer {
  std::vector<RequestRecord> done;
  void on_request_done(const RequestRecord& r) override { done.push_back(r); }
};
}  // namespace

TEST_CASE("a request arriving as a step ends is scheduled in the next step", "[sim][events]") {
  // Step time 1 s; request 0 (prompt 4, output 3) runs steps [0,1), [1,2), [2,3); request 1 arrives at
  // exactly t = 1: arrival fires after the step end and before the schedule, so it joins the step at 1.
  SimConfig cfg;
  cfg.replica.num_blocks = 100;
  cfg.replica.block_size = 4;
  cfg.replica.max_model_len = 64;
  cfg.replica.max_num_seqs = 8;
  Records rec;
  cfg.observer = &rec;
  auto src = list_source({{0.0, 4, 3}, {1.0, 4, 1}}, {});
  const auto r = simulate(cfg, StepTimer::linear(1.0), *src);
  REQUIRE(rec.done.size() == 2);
  CHECK(r.requests_completed == 2);
  const auto& second = rec.done[0].id == 1 ? rec.done[0] : rec.done[1];
  CHECK(second.first_scheduled_s == 1.0);
  CHECK(second.finish_s == 2.0);
}
