// Disaggregated prefill/decode in the simulator (SimConfig::prefill): a request's TTFT is its prefill, the KV transfer
// and the decode worker's first step; every request completes once through both pools; the decode pool runs without
// prefill interference; adding prefill workers relieves a prefill-bound pool; the run is deterministic.
#include <catch2/catch.hpp>
#include <vector>

#include "kvcap/simulator/simulator.hpp"
#include "replica_config.hpp"

using namespace kvcap;
using namespace kvcap::sim;

namespace {
struct Recorder : Observer {
  std::vector<RequestRecord> done;
  void on_request_done(const RequestRecord& r) override { done.push_back(r); }
};

/// `prefill` prefill workers with `prefill_timer` in front of `decode` decode workers; transfer: 0.5 s + 0.1 ms/token.
SimConfig disaggregated(std::uint32_t prefill, std::uint32_t decode, const StepTimer& prefill_timer,
                        std::uint32_t blocks = 4000) {
  SimConfig cfg;
  cfg.replica = testing::small_replica(blocks, 8192);
  cfg.num_replicas = decode;
  cfg.prefill.num_replicas = prefill;
  cfg.prefill.replica = testing::small_replica(4000, 8192);
  cfg.prefill.timer = &prefill_timer;
  cfg.prefill.kv_transfer_s = [](i64 tokens) { return 0.5 + 1e-4 * static_cast<double>(tokens); };
  cfg.check_invariants = true;
  return cfg;
}

WorkloadSpec prompts_heavy(double rate, double prompt_tokens, double output_tokens) {
  WorkloadSpec w;
  w.name = "prompts";
  w.arrival.kind = ArrivalProcess::Kind::poisson;
  w.arrival.rate_per_s = rate;
  w.prompt =
      LengthDistribution::uniform_tokens(static_cast<i64>(prompt_tokens / 2), static_cast<i64>(prompt_tokens * 3 / 2));
  w.output =
      LengthDistribution::uniform_tokens(static_cast<i64>(output_tokens / 2), static_cast<i64>(output_tokens * 3 / 2));
  return w;
}
}  // namespace

TEST_CASE("a disaggregated request's first token waits for its prefill, the KV transfer and one decode step",
          "[sim][disagg]") {
  const StepTimer prefill_timer = StepTimer::linear(0.1, 1e-4);  // 1,000 prompt tokens: 0.2 s
  SimConfig cfg = disaggregated(1, 1, prefill_timer);
  Recorder rec;
  cfg.observer = &rec;
  auto src = list_source({RequestSpec{0.0, 1000, 5}}, {});
  const SimResult r = simulate(cfg, StepTimer::linear(0.01), *src);
  REQUIRE(r.requests_completed == 1);
  const double prefill_s = 0.1 + 1e-4 * 1000, transfer_s = 0.5 + 1e-4 * 999;  // all prompt tokens but the last
  CHECK(r.ttft_s.mean == Approx(prefill_s + transfer_s + 0.01));
  CHECK(r.tpot_s.mean == Approx(0.01));
  CHECK(r.e2e_s.mean == Approx(prefill_s + transfer_s + 5 * 0.01));
  CHECK(r.queue_s.mean == 0);  // scheduled at once on the prefill worker
  CHECK(r.kv_transfers == 1);
  CHECK(r.kv_transfer_s_mean == Approx(transfer_s));
  CHECK(r.kv_transfer_tokens_mean == 999);
  REQUIRE(r.prefill_replicas.size() == 1);
  CHECK(r.prefill_replicas[0].completed == 1);  // handed off, not completed there
  CHECK(r.prefill_replicas[0].decode_tokens == 0);
  CHECK(r.replicas[0].kv_received_tokens == 999);
  CHECK(r.replicas[0].prefill_tokens <= 1);  // the decode worker computes the prompt's last token only
  REQUIRE(rec.done.size() == 1);
  CHECK(rec.done[0].output_tokens == 5);
  CHECK(rec.done[0].replica == 0);  // completed on the decode worker
}

TEST_CASE("every request completes once through both pools, blocks conserved, through decode-side preemptions",
          "[sim][disagg]") {
  const StepTimer prefill_timer = StepTimer::linear(0.004, 2e-5);
  // A decode pool of 400 blocks per worker (6,400 tokens) preempts under this load.
  SimConfig cfg = disaggregated(2, 2, prefill_timer, 400);
  Recorder rec;
  cfg.observer = &rec;
  const WorkloadSpec w = prompts_heavy(20, 1500, 200);
  auto src = synthetic_source(w, 3, {1500, std::nullopt});
  const SimResult r = simulate(cfg, StepTimer::linear(0.005, 2e-6, 1e-8), *src);
  CHECK(r.requests_arrived == 1500);
  CHECK(r.requests_completed == 1500);
  REQUIRE(rec.done.size() == 1500);
  std::vector<int> seen(1500, 0);
  for (const auto& d : rec.done) {
    REQUIRE(d.id < 1500);
    ++seen[d.id];
    CHECK(d.first_token_s > d.first_scheduled_s);
    CHECK(d.replica < 2);
  }
  for (int s : seen) CHECK(s == 1);
  CHECK(r.preemptions > 0);
  std::uint64_t handed = 0;
  for (const auto& p : r.prefill_replicas) {
    handed += p.completed;
    CHECK(p.kv_used_blocks_end == 0);
    CHECK(p.decode_tokens == 0);
  }
  CHECK(handed == 1500);
  CHECK(r.kv_transfers == 1500);
  for (const auto& d : r.replicas) CHECK(d.kv_used_blocks_end == 0);

  SECTION("deterministic: the same run again gives the same result") {
    auto again = synthetic_source(w, 3, {1500, std::nullopt});
    cfg.observer = nullptr;
    const SimResult r2 = simulate(cfg, StepTimer::linear(0.005, 2e-6, 1e-8), *again);
    CHECK(r2.ttft_s.mean == r.ttft_s.mean);
    CHECK(r2.tpot_s.p90 == r.tpot_s.p90);
    CHECK(r2.end_s == r.end_s);
    CHECK(r2.preemptions == r.preemptions);
  }
}

TEST_CASE("decode workers run without prefill interference, and prefill workers set the TTFT", "[sim][disagg]") {
  // A step costs 5 ms plus 50 us per token computed: a 2,000-token prompt chunk stretches an aggregated decode step
  // twenty-fold.
  const StepTimer timer = StepTimer::linear(0.005, 5e-5);
  const WorkloadSpec w = prompts_heavy(4, 2000, 300);
  const SourceLimits lim{800, std::nullopt};

  SimConfig agg;
  agg.replica = testing::small_replica(4000, 8192);
  agg.num_replicas = 2;
  auto s1 = synthetic_source(w, 11, lim);
  const SimResult a = simulate(agg, timer, *s1);

  SimConfig one = disaggregated(1, 1, timer);
  one.prefill.kv_transfer_s = [](i64 tokens) { return 1e-6 * static_cast<double>(tokens); };
  auto s2 = synthetic_source(w, 11, lim);
  const SimResult d = simulate(one, timer, *s2);
  REQUIRE(a.requests_completed == 800);
  REQUIRE(d.requests_completed == 800);
  // A decode worker's step computes one token per running request (and a handed-off request's last prompt token):
  // no request's TPOT exceeds the longest such step. Aggregated replicas' decode steps carry prompt chunks.
  CHECK(d.tpot_s.max <= 0.005 + 5e-5 * static_cast<double>(d.running_max) + 1e-9);
  CHECK(a.tpot_s.p90 > d.tpot_s.max);
  CHECK(a.tpot_s.mean > d.tpot_s.mean);
  // Every TTFT holds its transfer: at least the shortest prompt's (1,000 tokens x 1 us) on top of a prefill step.
  CHECK(d.ttft_s.p50 > 0.005 + 1000 * 5e-5 + 1e-3);

  SECTION("a prefill-bound pool: a second prefill worker cuts the TTFT") {
    const WorkloadSpec hot = prompts_heavy(9, 2000, 300);  // 9 x 0.105 s of prefill per second on one worker: > 90%
    SimConfig two = one;
    two.prefill.num_replicas = 2;
    auto s3 = synthetic_source(hot, 5, lim);
    auto s4 = synthetic_source(hot, 5, lim);
    const SimResult d1 = simulate(one, timer, *s3);
    const SimResult d2 = simulate(two, timer, *s4);
    CHECK(d2.ttft_s.p90 < 0.5 * d1.ttft_s.p90);
    double busy1 = 0;
    for (const auto& p : d1.prefill_replicas) busy1 += p.busy_s / (d1.end_s - d1.first_arrival_s);
    CHECK(busy1 > 0.8);  // the one prefill worker was the bottleneck
  }
}

TEST_CASE("a request longer than either pool holds is rejected before it is prefilled", "[sim][disagg]") {
  const StepTimer prefill_timer = StepTimer::linear(0.01);
  SimConfig cfg = disaggregated(1, 1, prefill_timer);
  cfg.prefill.replica.max_model_len = 2048;  // the prefill workers are deployed shorter
  auto src = list_source({RequestSpec{0.0, 3000, 5}, RequestSpec{0.1, 1000, 5}}, {});
  const SimResult r = simulate(cfg, StepTimer::linear(0.01), *src);
  CHECK(r.requests_rejected == 1);
  CHECK(r.requests_completed == 1);
  cfg.prefill.timer = nullptr;
  auto again = list_source({RequestSpec{0.0, 100, 5}}, {});
  CHECK_THROWS_AS(simulate(cfg, StepTimer::linear(0.01), *again), std::invalid_argument);
}
