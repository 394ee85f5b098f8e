// The simulator's promises: every request completes exactly once and tokens are conserved; KV blocks
// stay within the planner's count and never leak; preemption happens exactly when blocks run out; the
// same seed gives the same output; paged vs contiguous waste what theory says; routers spread load.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <sstream>
#include <vector>

#include "kvcap/planner/error.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/simulator/simulator.hpp"
#include "kvcap/simulator/timeline.hpp"
#include "replica_config.hpp"

using namespace kvcap;
using namespace kvcap::sim;

namespace {
struct Recorder : Observer {
  std::vector<RequestRecord> done;
  std::vector<PreemptionRecord> preemptions;
  std::vector<StepRecord> steps;
  std::vector<TimelineSample> samples;
  void on_request_done(const RequestRecord& r) override { done.push_back(r); }
  void on_preemption(const PreemptionRecord& p) override { preemptions.push_back(p); }
  void on_step(const StepRecord& s) override { steps.push_back(s); }
  void on_sample(const TimelineSample& s) override { samples.push_back(s); }
};

WorkloadSpec busy_workload(double rate) {
  WorkloadSpec w;
  w.name = "busy";
  w.arrival.kind = ArrivalProcess::Kind::poisson;
  w.arrival.rate_per_s = rate;
  w.prompt = LengthDistribution::lognormal_tokens(600, 0.8, 8, 3000);
  w.output = LengthDistribution::uniform_tokens(1, 400);
  return w;
}

ReplicaConfig small_replica(std::uint32_t blocks) {
  return testing::small_replica(blocks, 4096);
}

std::vector<RequestSpec> drain(RequestSource& s) {
  std::vector<RequestSpec> r;
  while (auto x = s.next()) r.push_back(*x);
  return r;
}
}  // namespace

TEST_CASE("every request completes exactly once and tokens are conserved, through preemptions", "[sim]") {
  const WorkloadSpec w = busy_workload(40);
  const SourceLimits lim{3000, std::nullopt};
  SimConfig cfg;
  cfg.replica = small_replica(300);
  cfg.num_replicas = 3;
  cfg.router = RouterPolicy::least_outstanding;
  cfg.check_invariants = true;  // the block manager is verified after every step
  Recorder rec;
  cfg.observer = &rec;
  auto src = synthetic_source(w, 7, lim);
  const SimResult r = simulate(cfg, StepTimer::linear(0.005, 2e-6, 1e-8), *src);

  auto again = synthetic_source(w, 7, lim);
  const auto specs = drain(*again);
  REQUIRE(specs.size() == 3000);
  CHECK(r.requests_arrived == 3000);
  CHECK(r.requests_completed == 3000);
  CHECK(r.requests_rejected == 0);
  CHECK(r.requests_truncated == 0);
  REQUIRE(rec.done.size() == 3000);
  std::vector<int> seen(3000, 0);
  for (const auto& d : rec.done) {
    REQUIRE(d.id < 3000);
    ++seen[d.id];
    const auto& s = specs[d.id];
    CHECK(d.prompt_tokens == s.prompt_tokens);
    CHECK(d.output_tokens == s.output_tokens);  // exactly the tokens asked for
    CHECK(d.arrival_s == s.arrival_s);
    CHECK(d.first_scheduled_s >= d.arrival_s);
    CHECK(d.first_token_s > d.first_scheduled_s);
    CHECK(d.finish_s >= d.first_token_s);
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));

  std::uint64_t prompts = 0, decode = 0, prefill_done = 0, decode_done = 0, recomputed = 0, discarded = 0;
  for (const auto& s : specs) {
    prompts += static_cast<std::uint64_t>(s.prompt_tokens);
    decode += static_cast<std::uint64_t>(s.output_tokens - 1);  // the first token comes from the prefill
  }
  for (const auto& rs : r.replicas) {
    prefill_done += rs.prefill_tokens;
    decode_done += rs.decode_tokens;
    recomputed += rs.recomputed_tokens;
    CHECK(rs.kv_used_blocks_end == 0);  // nothing leaked
  }
  for (const auto& p : rec.preemptions) discarded += static_cast<std::uint64_t>(p.victim_computed_tokens);
  CHECK(prefill_done == prompts);
  CHECK(decode_done == decode);
  CHECK(r.output_tokens == decode + specs.size());
  // Without prefix caching every discarded KV token is computed again before its request completes.
  CHECK(recomputed == discarded);
  CHECK(r.preemptions == rec.preemptions.size());
  CHECK(r.preemptions > 0);  // the point of the small cache
  // Paged allocation wastes less than one block per running request, always.
  CHECK(r.kv_waste_tokens_per_request_max < 16);
  for (const auto& st : rec.steps) {
    CHECK(st.kv_used_blocks <= st.kv_total_blocks);
    CHECK(st.kv_table_blocks * 16 - st.kv_slot_tokens >= 0);
  }
}

TEST_CASE("KV blocks never exceed the planner's count on a real deployment", "[sim]") {
  Deployment d;
  d.kv_cache_memory_bytes = {2ull << 30};  // 2 GiB of KV on the GPU: 1,024 blocks of 16 x 128 KiB for Llama 3.1 8B
  d.max_model_len = 8192;
  const auto model = profiles::resolve_model("llama-3.1-8b");
  const auto gpu = profiles::resolve_gpu("h100-sxm");
  const MemoryPlan plan = plan_memory(model, gpu, d, {});
  REQUIRE(plan.num_blocks == 1024);
  SimConfig cfg;
  cfg.replica = replica_config(plan);
  cfg.num_replicas = 2;
  cfg.check_invariants = true;
  Recorder rec;
  cfg.observer = &rec;
  WorkloadSpec w = busy_workload(30);
  w.prompt = LengthDistribution::lognormal_tokens(1500, 0.7, 16, 6000);
  auto src = synthetic_source(w, 3, {800, std::nullopt});
  const auto r = simulate(cfg, StepTimer::roofline(make_speed_context(model, gpu, plan)), *src);
  CHECK(r.requests_completed == 800);
  std::uint64_t peak = 0;
  for (const auto& s : rec.steps) {
    REQUIRE(s.kv_total_blocks == plan.num_blocks - 1);  // the pool less vLLM's null block (block_pool.py)
    REQUIRE(s.kv_used_blocks <= plan.num_blocks - 1);
    peak = std::max(peak, s.kv_used_blocks);
  }
  CHECK(r.kv_utilization_max == Approx(static_cast<double>(peak) / 1023.0));
  CHECK(r.kv_utilization_max > 0.9);  // the workload does fill the cache
  CHECK(r.preemptions > 0);
  for (const auto& rs : r.replicas) CHECK(rs.kv_used_blocks_end == 0);
  // The roofline clock's breakdown is kept: memory-bound decode dominates.
  CHECK(r.busy_breakdown_s.step_s > 0);
  CHECK(r.busy_breakdown_s.weights_read_s > 0);
  CHECK(r.busy_breakdown_s.kv_read_s > 0);
}

TEST_CASE("with pipeline parallelism the busy time's terms add up to it, as without", "[sim][pp]") {
  // A step of PP stages takes PP x (the binding stage + p2p): its terms count PP times. Memory-bound decode: the
  // reads, communication, overhead and p2p make up nearly all of each step, never more (max(memory, compute)).
  const auto model = profiles::resolve_model("llama-3.1-70b");
  const auto gpu = profiles::resolve_gpu("h100-sxm");
  for (const i64 pp : {1, 2}) {
    Deployment d;
    d.tensor_parallel_size = 4 / pp;
    d.pipeline_parallel_size = pp;
    d.max_model_len = 8192;
    const MemoryPlan plan = plan_memory(model, gpu, d, {});
    SimConfig cfg;
    cfg.replica = replica_config(plan);
    WorkloadSpec w = busy_workload(2);
    w.prompt = LengthDistribution::fixed_tokens(512);
    w.output = LengthDistribution::fixed_tokens(128);
    auto src = synthetic_source(w, 5, {100, std::nullopt});
    const auto r = simulate(cfg, StepTimer::roofline(make_speed_context(model, gpu, plan)), *src);
    const auto& b = r.busy_breakdown_s;
    const double parts = b.weights_read_s + b.kv_read_s + b.communication_s + b.overhead_s + b.pipeline_p2p_s;
    INFO("PP " << pp << ": terms " << parts << " s of busy " << b.step_s << " s");
    CHECK(parts <= b.step_s * (1 + 1e-9));
    CHECK(parts >= 0.8 * b.step_s);
  }
}

TEST_CASE("preemption happens exactly when blocks run out", "[sim]") {
  // 4 requests arrive together: prompt 16 tokens (1 block), 17 output tokens, so each ends holding
  // 16 + 17 - 1 = 32 tokens = 2 blocks. All decode in lockstep; the first decode step needs a second block each.
  auto run = [](std::uint32_t blocks, Recorder& rec) {
    SimConfig cfg;
    cfg.replica.num_blocks = blocks;
    cfg.replica.block_size = 16;
    cfg.replica.max_num_seqs = 8;
    cfg.replica.max_num_batched_tokens = 1024;
    cfg.replica.max_model_len = 64;
    cfg.check_invariants = true;
    cfg.observer = &rec;
    auto src = list_source(std::vector<RequestSpec>(4, RequestSpec{0.0, 16, 17}), {});
    return simulate(cfg, StepTimer::linear(1.0), *src);
  };
  Recorder enough, short_one;
  const auto a = run(8, enough);
  CHECK(a.preemptions == 0);
  CHECK(a.kv_utilization_max == 1.0);  // every block used, none missing
  CHECK(a.requests_completed == 4);

  const auto b = run(7, short_one);
  CHECK(b.requests_completed == 4);
  REQUIRE(b.preemptions >= 1);
  const auto& p = short_one.preemptions.front();
  CHECK(p.time_s == 1.0);      // the first decode step, not before
  CHECK(p.free_blocks == 0);   // requests 0..2 took the last three free blocks
  CHECK(p.blocks_needed == 1);
  CHECK(p.victim_id == 3);     // the most recently admitted...
  CHECK(p.for_request_id == 3);  // ...which is the one asking: it preempts itself
  CHECK(p.victim_computed_tokens == 16);
  for (const auto& q : short_one.preemptions) CHECK(q.free_blocks < q.blocks_needed);  // only when out of blocks
}

TEST_CASE("a timeline writer with a row limit stops the run at it, the rows before it written", "[sim]") {
  SimConfig cfg;
  cfg.replica = small_replica(400);
  cfg.num_replicas = 2;
  cfg.timeline_interval_s = 0.01;
  std::ostringstream out;
  TimelineCsvWriter tw(out, nullptr, 7);
  cfg.observer = &tw;
  auto src = synthetic_source(busy_workload(25), 1, {200, std::nullopt});
  double stopped_at = -1;
  try {
    simulate(cfg, StepTimer::linear(0.004, 3e-6, 2e-8), *src);
  } catch (const TimelineRowLimit& e) {
    CHECK(e.rows == 7);
    stopped_at = e.time_s;
  }
  REQUIRE(stopped_at >= 0);  // 200 requests at 25/s run for seconds: far more than 7 rows of 10 ms x 2 replicas
  const std::string text = out.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 1 + 7);  // the header and the limit's rows
  // Without a limit the same run writes every row.
  std::ostringstream all;
  TimelineCsvWriter unlimited(all);
  cfg.observer = &unlimited;
  auto again = synthetic_source(busy_workload(25), 1, {200, std::nullopt});
  simulate(cfg, StepTimer::linear(0.004, 3e-6, 2e-8), *again);
  const std::string every = all.str();
  CHECK(std::count(every.begin(), every.end(), '\n') > 100);
}

TEST_CASE("the same seed gives identical output, another seed does not", "[sim]") {
  auto run = [](std::uint64_t seed, std::string& timeline) {
    WorkloadSpec w = busy_workload(25);
    w.arrival.kind = ArrivalProcess::Kind::gamma;
    w.arrival.cv = 2.5;
    w.shared_prefix = {3, 256, 0.7};
    SimConfig cfg;
    cfg.replica = small_replica(400);
    cfg.num_replicas = 2;
    cfg.router = RouterPolicy::least_kv;
    cfg.timeline_interval_s = 0.5;
    std::ostringstream out;
    TimelineCsvWriter tw(out);
    cfg.observer = &tw;
    auto src = synthetic_source(w, seed, {1000, std::nullopt});
    const auto r = simulate(cfg, StepTimer::linear(0.004, 3e-6, 2e-8), *src);
    timeline = out.str();
    return r;
  };
  std::string t1, t2, t3;
  const auto a = run(42, t1), b = run(42, t2), c = run(43, t3);
  CHECK(t1 == t2);
  CHECK(t1.rfind(std::string(kTimelineHeader) + "\n", 0) == 0);
  CHECK(a.ttft_s.mean == b.ttft_s.mean);
  CHECK(a.ttft_s.p99 == b.ttft_s.p99);
  CHECK(a.e2e_s.mean == b.e2e_s.mean);
  CHECK(a.preemptions == b.preemptions);
  CHECK(a.kv_utilization_mean == b.kv_utilization_mean);
  CHECK(a.events == b.events);
  CHECK(a.end_s == b.end_s);
  CHECK(t1 != t3);
  CHECK(a.e2e_s.mean != c.e2e_s.mean);
}

namespace {
// One request at a time (fixed gaps far longer than service), fixed lengths, step time 1 s.
SimResult lone_requests(Allocator alloc, i64 prompt, i64 output, i64 max_len) {
  SimConfig cfg;
  cfg.replica.num_blocks = 1000;
  cfg.replica.block_size = 16;
  cfg.replica.max_model_len = max_len;
  cfg.replica.allocator = alloc;
  WorkloadSpec w;
  w.arrival = ArrivalProcess::renewal(ArrivalProcess::Kind::fixed_rate, 0.01, 1);
  w.prompt = LengthDistribution::fixed_tokens(prompt);
  w.output = LengthDistribution::fixed_tokens(output);
  auto src = synthetic_source(w, 1, {10, std::nullopt});
  return simulate(cfg, StepTimer::linear(1.0), *src);
}
}  // namespace

TEST_CASE("paged waste is the last partial block, contiguous waste is what max_model_len implies", "[sim][allocator]") {
  const i64 P = 100, O = 50, L = 1024, bs = 16;
  // During the prefill step a request holds P slots; during decode step j (1..O-1), P + j.
  double paged_waste = 0, paged_alloc = 0, held = 0;
  for (i64 j = 0; j < O; ++j) {
    const i64 tokens = P + j;
    const i64 alloc = (tokens + bs - 1) / bs * bs;
    paged_waste += static_cast<double>(alloc - tokens);
    paged_alloc += static_cast<double>(alloc);
    held += static_cast<double>(tokens);
  }
  const auto paged = lone_requests(Allocator::paged, P, O, L);
  CHECK(paged.kv_waste_fraction == Approx(paged_waste / paged_alloc).epsilon(1e-12));
  CHECK(paged.kv_waste_fraction < 0.08);  // < 1 block of 16 per ~125-token request
  CHECK(paged.kv_waste_tokens_per_request_max < bs);
  const auto contiguous = lone_requests(Allocator::contiguous, P, O, L);
  // 1 - mean held / reserved = 1 - (P + (O - 1) / 2) / L
  CHECK(contiguous.kv_waste_fraction == Approx(1.0 - held / static_cast<double>(O * L)).epsilon(1e-12));
  CHECK(contiguous.kv_waste_fraction == Approx(1.0 - (P + (O - 1) / 2.0) / L).epsilon(1e-12));
}

TEST_CASE("a contiguous reservation larger than the cache is refused up front", "[sim][allocator]") {
  SimConfig cfg;
  cfg.replica = small_replica(100);  // 1,600 tokens < max_model_len 4,096
  cfg.replica.allocator = Allocator::contiguous;
  auto src = list_source({{0, 10, 5}}, {});
  CHECK_THROWS_AS(simulate(cfg, StepTimer::linear(0.01), *src), SpecError);
}

TEST_CASE("contiguous reservation caps concurrency at blocks / max_model_len, paging admits more", "[sim][allocator]") {
  auto run = [](Allocator a) {
    SimConfig cfg;
    cfg.replica = small_replica(1024);  // 16,384 tokens
    cfg.replica.max_model_len = 4096;   // contiguous: 4 requests at most
    cfg.replica.allocator = a;
    auto src = synthetic_source(busy_workload(20), 5, {600, std::nullopt});
    return simulate(cfg, StepTimer::linear(0.005, 2e-6, 1e-8), *src);
  };
  const auto paged = run(Allocator::paged), contiguous = run(Allocator::contiguous);
  CHECK(contiguous.running_max == 4);
  CHECK(contiguous.preemptions == 0);  // everything is reserved up front
  CHECK(paged.running_max > 4 * contiguous.running_max);
  CHECK(contiguous.kv_waste_fraction > 0.6);
  CHECK(paged.kv_waste_fraction < 0.04);
  CHECK(paged.e2e_s.mean < contiguous.e2e_s.mean);
}

TEST_CASE("round-robin spreads requests evenly, every router completes everything", "[sim][router]") {
  for (auto policy : {RouterPolicy::round_robin, RouterPolicy::least_outstanding, RouterPolicy::least_kv}) {
    SimConfig cfg;
    cfg.replica = small_replica(600);
    cfg.num_replicas = 4;
    cfg.router = policy;
    auto src = synthetic_source(busy_workload(40), 11, {1000, std::nullopt});
    const auto r = simulate(cfg, StepTimer::linear(0.005, 2e-6, 1e-8), *src);
    INFO(to_string(policy));
    CHECK(r.requests_completed == 1000);
    std::uint64_t sum = 0;
    for (const auto& s : r.replicas) sum += s.routed;
    CHECK(sum == 1000);
    if (policy == RouterPolicy::round_robin)
      for (const auto& s : r.replicas) CHECK(s.routed == 250);
    else
      CHECK(r.balance_max_over_mean < 1.2);
  }
  CHECK(parse_router("lor") == RouterPolicy::least_outstanding);
  CHECK(parse_router("kv") == RouterPolicy::least_kv);
  CHECK(!parse_router("random"));
}

TEST_CASE("router names: each policy's name and aliases parse back to it", "[sim][router]") {
  for (auto policy : {RouterPolicy::round_robin, RouterPolicy::least_outstanding, RouterPolicy::least_kv})
    CHECK(parse_router(to_string(policy)) == policy);
  CHECK(to_string(RouterPolicy::round_robin) == "round-robin");
  CHECK(parse_router("rr") == RouterPolicy::round_robin);
  CHECK(parse_router("least-outstanding-requests") == RouterPolicy::least_outstanding);
  CHECK(parse_router("least-outstanding") == RouterPolicy::least_outstanding);
  CHECK(parse_router("least-kv") == RouterPolicy::least_kv);
  CHECK(parse_router("least-kv-utilization") == RouterPolicy::least_kv);
  CHECK(!parse_router(""));
}

TEST_CASE("least-outstanding-requests avoids a replica stuck on a long request", "[sim][router]") {
  // One request at a time per replica. Request 0 keeps replica 0 busy for 20 s; short requests (4
  // steps = 40 ms) arrive every 100 ms, so replica 1 is always empty when one arrives. LOR sends them all
  // there; round-robin would queue every other one behind the long request.
  std::vector<RequestSpec> rs = {{0.0, 64, 2000}};
  for (int i = 0; i < 10; ++i) rs.push_back({1.0 + i * 0.1, 64, 4});
  auto run = [&](RouterPolicy p) {
    SimConfig cfg;
    cfg.replica = small_replica(1000);
    cfg.replica.max_num_seqs = 1;
    cfg.num_replicas = 2;
    cfg.router = p;
    Recorder rec;
    cfg.observer = &rec;
    auto src = list_source(rs, {});
    const auto r = simulate(cfg, StepTimer::linear(0.01), *src);
    return std::make_pair(r, rec.done);
  };
  const auto [lor, lor_done] = run(RouterPolicy::least_outstanding);
  for (const auto& d : lor_done)
    if (d.id > 0) CHECK(d.replica == 1);
  const auto [rr, rr_done] = run(RouterPolicy::round_robin);
  CHECK(rr.e2e_s.p99 > 10.0);   // some short request waited for the long one
  CHECK(lor.e2e_s.p90 < 0.1);   // none did under LOR (the long request itself is the slowest 10%)
}

TEST_CASE("prefix caching computes each shared prefix once per replica", "[sim][prefix]") {
  auto run = [](bool caching) {
    WorkloadSpec w;
    w.arrival = ArrivalProcess::renewal(ArrivalProcess::Kind::poisson, 5, 1);
    w.prompt = LengthDistribution::fixed_tokens(1024);
    w.output = LengthDistribution::fixed_tokens(16);
    w.shared_prefix = {2, 512, 1.0};
    SimConfig cfg;
    cfg.replica = small_replica(4000);  // ample: no preemption, so first-admission hits are all the hits
    cfg.replica.prefix_caching = caching;
    cfg.check_invariants = true;
    Recorder rec;
    cfg.observer = &rec;
    auto src = synthetic_source(w, 9, {200, std::nullopt});
    auto r = simulate(cfg, StepTimer::linear(0.01, 1e-6), *src);
    std::uint64_t cached = 0;
    for (const auto& d : rec.done) cached += static_cast<std::uint64_t>(d.cached_prompt_tokens);
    return std::make_pair(r, cached);
  };
  const auto [on, cached_on] = run(true);
  const auto [off, cached_off] = run(false);
  CHECK(off.replicas[0].prefix_cache_hit_tokens == 0);
  CHECK(off.replicas[0].prefill_tokens == 200 * 1024);
  CHECK(cached_on == on.replicas[0].prefix_cache_hit_tokens);
  CHECK(on.replicas[0].prefill_tokens + cached_on == 200 * 1024);
  // A hit is the whole 512-token prefix (32 blocks); all but a few requests (the first of each group,
  // and any arriving while their group's prefix is still being computed) hit it.
  CHECK(cached_on % 512 == 0);
  CHECK(cached_on >= 190 * 512);
  CHECK(on.replicas[0].kv_used_blocks_end == 0);  // cached blocks are free (evictable), not leaked
  CHECK(on.ttft_s.mean < off.ttft_s.mean);
}

TEST_CASE("prompts beyond max_model_len are rejected, outputs truncated", "[sim]") {
  SimConfig cfg;
  cfg.replica = small_replica(100);  // 1,600 tokens: less than max_model_len 4,096, so 1,600 binds
  auto src = list_source({{0, 1600, 5}, {0, 1500, 500}, {0, 100, 10}}, {});
  Recorder rec;
  cfg.observer = &rec;
  const auto r = simulate(cfg, StepTimer::linear(0.01), *src);
  CHECK(r.requests_rejected == 1);
  CHECK(r.requests_truncated == 1);
  CHECK(r.requests_completed == 2);
  for (const auto& d : rec.done)
    if (d.id == 1) CHECK(d.output_tokens == 100);
}
