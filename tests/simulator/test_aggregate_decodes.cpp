// Decode steps in aggregate (simulator/src/replica.cpp, ReplicaConfig::aggregate_decodes) must change no result: for
// each kind of run (preemptions, chunked prefill cut by the budget, prefix caching and its LRU order, conversations
// with a host tier, multi-step scheduling, the contiguous allocator, closed loops, the roofline clock, a hybrid
// model), every completed request, step, preemption and statistic is compared bit for bit with the per-request
// reference loop, and the aggregate must have carried a share of the decode tokens (or none, where it may not run).
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/speed.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/simulator/simulator.hpp"
#include "replica_config.hpp"

using namespace kvcap;
using namespace kvcap::sim;

namespace {
/// Every record of a run, each field in hexadecimal floating point (exact).
struct Fingerprint : Observer {
  std::vector<std::string> lines;
  static std::string hex(double x) {
    char b[40];
    std::snprintf(b, sizeof b, "%a", x);
    return b;
  }
  void on_request_done(const RequestRecord& r) override {
    lines.push_back("done " + std::to_string(r.id) + " " + std::to_string(r.replica) + " " + hex(r.arrival_s) + " " +
                    hex(r.first_scheduled_s) + " " + hex(r.first_token_s) + " " + hex(r.finish_s) + " " +
                    std::to_string(r.prompt_tokens) + " " + std::to_string(r.output_tokens) + " " +
                    std::to_string(r.cached_prompt_tokens) + " " + std::to_string(r.preemptions) + " " +
                    std::to_string(static_cast<int>(r.truncated)));
  }
  void on_preemption(const PreemptionRecord& p) override {
    lines.push_back("preempt " + hex(p.time_s) + " " + std::to_string(p.replica) + " " + std::to_string(p.victim_id) +
                    " " + std::to_string(p.for_request_id) + " " + std::to_string(p.free_blocks) + " " +
                    std::to_string(p.blocks_needed) + " " + std::to_string(p.victim_computed_tokens));
  }
  void on_step(const StepRecord& s) override {
    lines.push_back("step " + hex(s.start_s) + " " + hex(s.duration_s) + " " + std::to_string(s.replica) + " " +
                    std::to_string(s.sequences) + " " + std::to_string(s.tokens) + " " +
                    std::to_string(s.kv_used_blocks) + " " + std::to_string(s.kv_slot_tokens) + " " +
                    std::to_string(s.kv_table_blocks));
  }
  void on_sample(const TimelineSample& t) override {
    lines.push_back("sample " + hex(t.time_s) + " " + std::to_string(t.replica) + " " + std::to_string(t.running) +
                    " " + std::to_string(t.waiting) + " " + std::to_string(t.kv_used_blocks) + " " +
                    hex(t.kv_utilization) + " " + std::to_string(t.preemptions));
  }
};

std::string summary(const SimResult& r) {
  auto h = Fingerprint::hex;
  auto lat = [&](const LatencySummary& l) {
    return std::to_string(l.count) + " " + h(l.mean) + " " + h(l.p50) + " " + h(l.p90) + " " + h(l.p99) + " " +
           h(l.max) + " ";
  };
  std::string s = std::to_string(r.requests_arrived) + " " + std::to_string(r.requests_completed) + " " +
                  std::to_string(r.requests_rejected) + " " + std::to_string(r.requests_truncated) + " " +
                  lat(r.ttft_s) + lat(r.tpot_s) + lat(r.e2e_s) + lat(r.queue_s) + h(r.end_s) + " " +
                  h(r.output_tokens_per_s) + " " + std::to_string(r.preemptions) + " " +
                  std::to_string(r.recomputed_tokens) + " " + std::to_string(r.prefix_cache_hit_tokens) + " " +
                  std::to_string(r.host_hit_tokens) + " " + h(r.kv_utilization_mean) + " " + h(r.kv_utilization_max) +
                  " " + h(r.kv_waste_fraction) + " " + h(r.kv_waste_tokens_per_request_max) + " " + h(r.running_mean) +
                  " " + h(r.waiting_mean) + " " + h(r.busy_breakdown_s.step_s) + " " + h(r.busy_breakdown_s.kv_read_s) +
                  " " + h(r.busy_breakdown_s.attention_s) + " " + h(r.busy_breakdown_s.gemm_s) + " " +
                  h(r.busy_breakdown_s.weights_read_s) + " " + h(r.busy_breakdown_s.communication_s) + " " +
                  h(r.busy_breakdown_s.overhead_s) + " " + h(r.host_load_s) + " " + std::to_string(r.steps) + " " +
                  std::to_string(r.events);
  for (const auto& x : r.replicas)
    s += " | " + std::to_string(x.routed) + " " + std::to_string(x.steps) + " " + h(x.busy_s) + " " +
         std::to_string(x.prefill_tokens) + " " + std::to_string(x.decode_tokens) + " " +
         std::to_string(x.recomputed_tokens) + " " + std::to_string(x.running_max) + " " +
         std::to_string(x.waiting_max) + " " + std::to_string(x.prefix_cache_query_tokens) + " " +
         h(x.kv_utilization_mean) + " " + h(x.running_mean) + " " + h(x.waiting_mean);
  return s;
}

std::uint64_t aggregated(const SimResult& r) {
  std::uint64_t n = 0;
  for (const auto& x : r.replicas) n += x.decode_tokens_aggregated;
  return n;
}

std::uint64_t decoded(const SimResult& r) {
  std::uint64_t n = 0;
  for (const auto& x : r.replicas) n += x.decode_tokens;
  return n;
}

/// Runs `cfg` on `w` both ways and requires the same records and results; returns the aggregated run.
SimResult same_both_ways(SimConfig cfg, const StepTimer& timer, const WorkloadSpec& w, std::uint64_t n) {
  SimResult res[2];
  std::vector<std::string> lines[2];
  cfg.check_invariants = true;  // the block manager verified after every step, both ways
  for (int agg = 0; agg < 2; ++agg) {
    Fingerprint f;
    cfg.observer = &f;
    cfg.replica.aggregate_decodes = agg == 1;
    auto src = synthetic_source(w, 5, {n, std::nullopt});
    res[agg] = simulate(cfg, timer, *src);
    lines[agg] = std::move(f.lines);
  }
  REQUIRE(res[0].requests_completed + res[0].requests_rejected == n);
  CHECK(aggregated(res[0]) == 0);
  REQUIRE(lines[0].size() == lines[1].size());
  std::size_t first_diff = lines[0].size();
  for (std::size_t i = 0; i < lines[0].size() && first_diff == lines[0].size(); ++i)
    if (lines[0][i] != lines[1][i]) first_diff = i;
  INFO("first differing record: " << (first_diff < lines[0].size()
                                          ? lines[0][first_diff] + " vs " + lines[1][first_diff]
                                          : std::string("none")));
  CHECK(first_diff == lines[0].size());
  CHECK(summary(res[0]) == summary(res[1]));
  // The inter-token latencies: the same gaps both ways (a tick adds its gaps at once, so the mean's sum may differ in
  // its last bits), one per output token after a request's first.
  const LatencySummary &a = res[0].itl_s, &b = res[1].itl_s;
  CHECK(a.count == res[0].output_tokens - res[0].requests_completed);
  CHECK(b.count == a.count);
  CHECK(b.p50 == a.p50);
  CHECK(b.p90 == a.p90);
  CHECK(b.p99 == a.p99);
  CHECK(b.max == a.max);
  CHECK(b.mean == Approx(a.mean).epsilon(1e-9));
  return res[1];
}

WorkloadSpec chatty(double rate, i64 prompt_median, i64 output_max) {
  WorkloadSpec w;
  w.name = "chatty";
  w.arrival = ArrivalProcess::renewal(ArrivalProcess::Kind::poisson, rate, 1);
  w.prompt = LengthDistribution::lognormal_tokens(static_cast<double>(prompt_median), 0.8, 4, 6000);
  w.output = LengthDistribution::uniform_tokens(1, output_max);
  return w;
}

ReplicaConfig replica(std::uint32_t blocks) {
  return testing::small_replica(blocks, 8192);
}
}  // namespace

TEST_CASE("aggregated decodes: preemptions and budget cuts give the per-request loop's run", "[sim][aggregate]") {
  SimConfig cfg;
  cfg.replica = replica(600);                // scarce: preemptions
  cfg.replica.max_num_batched_tokens = 512;  // long prompts take several chunks and cut the budget
  cfg.num_replicas = 3;
  cfg.router = RouterPolicy::least_outstanding;
  cfg.check_invariants = true;
  cfg.timeline_interval_s = 0.25;
  const SimResult r = same_both_ways(cfg, StepTimer::linear(0.004, 2e-6, 1e-8), chatty(30, 500, 300), 1500);
  CHECK(r.preemptions > 0);
  CHECK(aggregated(r) > decoded(r) / 10);
}

TEST_CASE("aggregated decodes: prefix caching (LRU order), conversations and a host tier", "[sim][aggregate]") {
  WorkloadSpec w = chatty(12, 300, 120);
  w.shared_prefix = {3, 256, 0.7};
  SimConfig cfg;
  cfg.replica = replica(900);  // evictions of cached blocks
  cfg.num_replicas = 2;
  cfg.router = RouterPolicy::least_kv;
  cfg.check_invariants = true;
  const SimResult shared = same_both_ways(cfg, StepTimer::linear(0.005, 3e-6, 2e-8), w, 800);
  CHECK(shared.prefix_cache_hit_tokens > 0);
  CHECK(aggregated(shared) > decoded(shared) / 10);

  // A host tier beside lazy requests: prefixes evicted from the GPU come back from the host (requests waiting for
  // their load, ready_s) while others decode in aggregate.
  cfg.replica = replica(500);
  cfg.replica.host_blocks = 4000;
  cfg.replica.host_reload_s_per_block = 2e-4;
  const SimResult host = same_both_ways(cfg, StepTimer::linear(0.005, 3e-6, 2e-8), w, 800);
  CHECK(host.host_hit_tokens > 0);
  CHECK(aggregated(host) > decoded(host) / 10);

  WorkloadSpec chat = chatty(2, 200, 80);
  chat.conversation.turns = LengthDistribution::fixed_tokens(3);
  chat.conversation.think_time_s = 1.0;
  cfg.replica = replica(400);
  cfg.replica.host_blocks = 2000;
  cfg.replica.host_reload_s_per_block = 1e-4;
  cfg.num_replicas = 1;
  const SimResult conv = same_both_ways(cfg, StepTimer::linear(0.01, 1e-5, 1e-8), chat, 300);
  CHECK(conv.prefix_cache_hit_tokens > 0);
}

TEST_CASE("aggregated decodes: multi-step scheduling, the contiguous allocator, a closed loop", "[sim][aggregate]") {
  SimConfig cfg;
  cfg.replica = replica(3000);
  cfg.replica.num_scheduler_steps = 4;
  const SimResult multi = same_both_ways(cfg, StepTimer::linear(0.003, 1e-6, 1e-8), chatty(40, 400, 200), 1000);
  CHECK(aggregated(multi) > decoded(multi) / 2);

  // Prefill-first steps (SGLang, vLLM V0) materialize the lazy decodes and leave them out of the step.
  cfg.replica = replica(700);
  cfg.replica.prefill_first = true;
  cfg.replica.max_num_batched_tokens = 512;
  const SimResult first = same_both_ways(cfg, StepTimer::linear(0.003, 1e-6, 1e-8), chatty(40, 400, 200), 1000);
  CHECK(first.preemptions > 0);
  CHECK(aggregated(first) > decoded(first) / 4);
  cfg.replica.num_scheduler_steps = 4;
  (void)same_both_ways(cfg, StepTimer::linear(0.003, 1e-6, 1e-8), chatty(40, 400, 200), 1000);

  cfg.replica = replica(3000);
  cfg.replica.allocator = Allocator::contiguous;
  cfg.replica.max_model_len = 2048;
  const SimResult contiguous = same_both_ways(cfg, StepTimer::linear(0.003, 1e-6, 1e-8), chatty(20, 300, 200), 600);
  CHECK(aggregated(contiguous) > 0);

  // Block sizes at the ring's edges: 1 token (a block every step: a ring of two buckets) and 2,048 (beyond the ring:
  // lazy requests hop along it).
  for (const i64 block : {i64{1}, i64{2048}}) {
    cfg.replica = replica(block == 1 ? 16000 : 40);
    cfg.replica.block_size = block;
    const SimResult r = same_both_ways(cfg, StepTimer::linear(0.003, 1e-6, 1e-8), chatty(20, 300, 200), 400);
    CHECK(aggregated(r) > decoded(r) / 2);
  }

  cfg.replica = replica(2000);
  cfg.max_concurrency = 16;
  cfg.think_time_s = 0.05;
  const SimResult closed = same_both_ways(cfg, StepTimer::linear(0.004, 1e-6, 1e-8), chatty(100, 300, 200), 800);
  CHECK(aggregated(closed) > decoded(closed) / 2);
}

TEST_CASE("aggregated decodes: the roofline clock of a real deployment, and a sliding-window model stays per request",
          "[sim][aggregate]") {
  const auto gpu = profiles::resolve_gpu("h100-sxm");
  Deployment d;
  d.max_model_len = 16384;
  {
    const auto model = profiles::resolve_model("llama-3.1-8b");
    const MemoryPlan plan = plan_memory(model, gpu, d, {});
    SimConfig cfg;
    cfg.replica = replica_config(plan);
    cfg.num_replicas = 2;
    cfg.router = RouterPolicy::least_outstanding;
    const SimResult r =
        same_both_ways(cfg, StepTimer::roofline(make_speed_context(model, gpu, plan)), chatty(40, 1000, 400), 2000);
    CHECK(aggregated(r) > decoded(r) / 2);
  }
  {
    const auto model = profiles::resolve_model("gpt-oss-20b");
    const MemoryPlan plan = plan_memory(model, gpu, d, {});
    SimConfig cfg;
    cfg.replica = replica_config(plan);
    const SimResult r =
        same_both_ways(cfg, StepTimer::roofline(make_speed_context(model, gpu, plan)), chatty(20, 1000, 300), 500);
    CHECK(aggregated(r) == 0);  // its sliding-window layers read min(held, window): not a sum of held tokens
  }
}
