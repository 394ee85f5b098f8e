// What-ifs of issue 20 that change the model rather than the deployment (no vLLM option): KIVI int4/int2 KV and its
// group size, KV layer sharing (CLA, MiniCache). The bytes per token, the capacity and the decode KV read follow; W207
// marks every plan that uses one.
#include <catch2/catch.hpp>

#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/plausibility.hpp"
#include "kvcap/planner/speed.hpp"
#include "kvcap/profiles/profiles.hpp"

using namespace kvcap;

namespace {
MemoryPlan plan_with(const char* model, Deployment::LayerSharing s, i64 tp = 1) {
  Deployment d;
  d.tensor_parallel_size = tp;
  d.kv_layer_sharing = s;
  return plan_memory(profiles::resolve_model(model), profiles::resolve_gpu("h200"), d, {});
}
Deployment::LayerSharing cla(i64 n) {
  Deployment::LayerSharing s;
  s.kind = Deployment::LayerSharing::Kind::cla;
  s.factor = n;
  return s;
}
Deployment::LayerSharing minicache(i64 from) {
  Deployment::LayerSharing s;
  s.kind = Deployment::LayerSharing::Kind::minicache;
  s.from_layer = from;
  return s;
}
}  // namespace

TEST_CASE("KV layer sharing: layers that hold a cache and the bytes per token", "[what_if]") {
  const MemoryPlan base = plan_with("llama-3.1-8b", {});
  REQUIRE(base.kv_bytes_per_token_per_rank == 131072);  // 32 layers x 4 KiB
  // CLA x2: layers 0, 2, ..., 30 keep a cache; x3: 0, 3, ..., 30 (11 of 32).
  CHECK(plan_with("llama-3.1-8b", cla(2)).kv_layers.size() == 16);
  CHECK(plan_with("llama-3.1-8b", cla(2)).kv_bytes_per_token_per_rank == 65536);
  CHECK(plan_with("llama-3.1-8b", cla(3)).kv_layers.size() == 11);
  CHECK(plan_with("llama-3.1-8b", cla(3)).kv_bytes_per_token_per_rank == 45056);  // 11 x 4 KiB
  // An odd layer count: DeepSeek-V3's 61 layers under CLA x2 keep 31 caches (layer 60 has its own).
  const MemoryPlan v3 = plan_with("deepseek-v3", cla(2), 8);
  CHECK(v3.kv_layers.size() == 31);
  CHECK(v3.kv_bytes_per_token_per_rank == 35712);  // 31 x (576 latent + rope dims x bf16), on every rank
  // MiniCache from layer 16: the pairs (16, 17), (18, 19), ..., (30, 31) keep one cache each: 16 + 8 = 24 of 32.
  const MemoryPlan mc = plan_with("llama-3.1-8b", minicache(16));
  i64 expect = 0;
  for (i64 l = 0; l < 32; ++l) expect += (l > 16 && (l - 16) % 2 == 1) ? 0 : 1;
  CHECK(static_cast<i64>(mc.kv_layers.size()) == expect);
  CHECK(expect == 24);
  CHECK(plan_with("llama-3.1-8b", minicache(0)).kv_layers.size() == 16);
}

TEST_CASE("KV layer sharing: capacity and the decode KV read follow, and W207 marks the plan", "[what_if]") {
  const ModelSpec m = profiles::resolve_model("llama-3.1-8b");
  const GpuSpec g = profiles::resolve_gpu("h200");
  const MemoryPlan base = plan_with("llama-3.1-8b", {});
  const MemoryPlan half = plan_with("llama-3.1-8b", cla(2));
  // The same memory for the cache holds twice the blocks (each block is half as large), to within one block.
  const StagePlan& b = base.stages[0];
  const StagePlan& h = half.stages[0];
  CHECK(h.available_kv_bytes == b.available_kv_bytes);
  CHECK(h.layout.block_bytes * 2 == b.layout.block_bytes);
  CHECK(half.num_blocks == static_cast<u64>(h.available_kv_bytes) / h.layout.block_bytes);
  CHECK(half.num_blocks >= 2 * base.num_blocks);
  CHECK(half.num_blocks <= 2 * base.num_blocks + 1);
  // Half the memory, not half the traffic: a sharing layer still reads the shared cache and computes attention
  // (its queries follow the owner's output), so decode reads and computes what the baseline does, and so does a
  // prefill chunk over its earlier context.
  const auto step_base = decode_step(make_speed_context(m, g, base), 64, 8192);
  const auto step_half = decode_step(make_speed_context(m, g, half), 64, 8192);
  CHECK(step_half.stage.kv_bytes == Approx(step_base.stage.kv_bytes).epsilon(1e-12));
  CHECK(step_half.stage.attention_flops == Approx(step_base.stage.attention_flops).epsilon(1e-12));
  CHECK(step_half.stage.attention_flops > 0);
  const std::vector<StepSequence> chunk = {{8192, 2048, true}};
  const auto chunk_base = mixed_step(make_speed_context(m, g, base), chunk);
  const auto chunk_half = mixed_step(make_speed_context(m, g, half), chunk);
  CHECK(chunk_half.stage.attention_flops == Approx(chunk_base.stage.attention_flops).epsilon(1e-12));
  // Only the layers that hold a cache count where memory is concerned: 16 groups' layers, 32 attending.
  REQUIRE(h.groups.size() == 1);
  CHECK(h.groups[0].num_layers == 16);
  CHECK(h.groups[0].attending_layers == 32);
  CHECK(b.groups[0].attending_layers == 32);
  // The fast step model agrees with decode_step.
  StepLoad lb, lh;
  const StepCostModel fb(make_speed_context(m, g, base)), fh(make_speed_context(m, g, half));
  fb.add(lb, 8191, 64, true);
  fh.add(lh, 8191, 64, true);
  CHECK(fh.cost(lh).step_s == Approx(fb.cost(lb).step_s).epsilon(1e-12));
  // Findings: W207 on the what-if plan only, with the count of layers that hold a cache.
  bool marked = false;
  for (const auto& f : check_memory_plan(g, half))
    if (f.code == "KVCAP-W207") marked = f.message.find("16 of 32 layers") != std::string::npos;
  CHECK(marked);
  for (const auto& f : check_memory_plan(g, base)) CHECK(f.code != "KVCAP-W207");
}

TEST_CASE("KV layer sharing: what cannot be shared is refused at kv_layer_sharing", "[what_if][errors]") {
  const auto field = [](auto&& f) {
    try {
      f();
    } catch (const SpecError& e) {
      return e.field();
    }
    return std::string("no error");
  };
  CHECK(field([] { plan_with("llama-3.1-8b", cla(33)); }) == "kv_layer_sharing");        // more than the layers
  CHECK(field([] { plan_with("llama-3.1-8b", minicache(31)); }) == "kv_layer_sharing");  // no pair left
  CHECK(field([] { plan_with("gpt-oss-20b", cla(2)); }) == "kv_layer_sharing");          // sliding-window layers
}

TEST_CASE("KIVI int4/int2 KV: the scale and zero point of each group, for group sizes 32, 64 and 128",
          "[what_if][kivi]") {
  const auto m = profiles::resolve_model("llama-3.1-8b");  // 8 KV heads x 128: 2,048 K and V values per token and layer
  const auto gpu = profiles::resolve_gpu("h200");
  const auto per_token_per_layer = [&](DType kv, i64 group) {
    Deployment d;
    d.kv_cache_dtype = kv;
    d.kv_quant_group_size = group;
    return plan_memory(m, gpu, d, {}).kv_bytes_per_token_per_rank / 32;
  };
  // Payload bits / 8 plus 4 bytes (fp16 scale + fp16 zero point) per group of G values.
  CHECK(per_token_per_layer(DType::int4, 0) == 1024 + 2048 / 32 * 4);  // 1,280: the default group is 32
  CHECK(per_token_per_layer(DType::int4, 32) == 1280);
  CHECK(per_token_per_layer(DType::int4, 64) == 1024 + 2048 / 64 * 4);    // 1,152
  CHECK(per_token_per_layer(DType::int4, 128) == 1024 + 2048 / 128 * 4);  // 1,088
  CHECK(per_token_per_layer(DType::int2, 32) == 512 + 2048 / 32 * 4);     // 768
  CHECK(per_token_per_layer(DType::int2, 64) == 512 + 2048 / 64 * 4);     // 640
  CHECK(per_token_per_layer(DType::int2, 128) == 512 + 2048 / 128 * 4);   // 576
  // Overhead over the payload: 25%, 12.5%, 6.25% for int4; 50%, 25%, 12.5% for int2.
  CHECK(static_cast<double>(per_token_per_layer(DType::int2, 64)) / 512.0 == Approx(1.25));
  // Capacity follows the bytes: int4 at group 128 holds 1,280 / 1,088 times the tokens of group 32 (block-rounded).
  Deployment g32, g128;
  g32.kv_cache_dtype = g128.kv_cache_dtype = DType::int4;
  g128.kv_quant_group_size = 128;
  const auto p32 = plan_memory(m, gpu, g32, {}), p128 = plan_memory(m, gpu, g128, {});
  CHECK(static_cast<double>(p128.kv_capacity_tokens) / static_cast<double>(p32.kv_capacity_tokens) ==
        Approx(1280.0 / 1088.0).epsilon(0.001));
  // Every such plan is a what-if: W207 names KIVI and the group.
  const auto f = check_what_ifs(p128);
  REQUIRE(f.size() == 1);
  CHECK(f[0].code == "KVCAP-W207");
  CHECK_THAT(f[0].message, Catch::Contains("groups of 128") && Catch::Contains("KIVI"));
  CHECK(check_what_ifs(plan_memory(m, gpu, Deployment{}, {})).empty());
  // The group applies to the KIVI formats only, and must be a power of two.
  Deployment bad;
  bad.kv_quant_group_size = 64;
  CHECK_THROWS_WITH(plan_memory(m, gpu, bad, {}), Catch::Contains("int4 or int2"));
  bad.kv_cache_dtype = DType::int4;
  bad.kv_quant_group_size = 48;
  CHECK_THROWS_WITH(plan_memory(m, gpu, bad, {}), Catch::Contains("power of two"));
}

TEST_CASE("KV eviction: the tokens each policy keeps per request, the blocks, the capacity and the decode read",
          "[what_if][eviction]") {
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto gpu = profiles::resolve_gpu("h200");
  Deployment streaming, h2o, base;
  streaming.kv_eviction.kind = Deployment::Eviction::Kind::streaming;
  streaming.kv_eviction.sink_tokens = 4;
  streaming.kv_eviction.window_tokens = 4092;
  h2o.kv_eviction.kind = Deployment::Eviction::Kind::h2o;
  h2o.kv_eviction.budget = 0.2;
  const auto ps = plan_memory(m, gpu, streaming, {1024, 4096, 8192, 131072});
  const auto ph = plan_memory(m, gpu, h2o, {1024, 4096, 8192, 131072});
  const auto pb = plan_memory(m, gpu, base, {1024, 4096, 8192, 131072});
  // Tokens kept: StreamingLLM min(S, sink + window); H2O min(S, ceil(0.2 S)) (recent tokens within the budget).
  const KvEviction ks = kv_eviction(streaming.kv_eviction), kh = kv_eviction(h2o.kv_eviction);
  CHECK(ks.held(1024) == 1024);
  CHECK(ks.held(4096) == 4096);
  CHECK(ks.held(8192) == 4096);
  CHECK(ks.held(131072) == 4096);
  CHECK(kh.held(1024) == 205);  // ceil(204.8)
  CHECK(kh.held(4096) == 820);  // ceil(819.2)
  CHECK(kh.held(131072) == 26215);
  Deployment::Eviction recent = h2o.kv_eviction;
  recent.recent_tokens = 512;  // at least the 512 latest tokens
  CHECK(kv_eviction(recent).held(1024) == 512);
  CHECK(kv_eviction(recent).held(131072) == 26215);
  // Blocks per request: the kept tokens in whole blocks plus the one being written; all of them when nothing is
  // evicted. The block pool is the same as the baseline's (eviction changes no page).
  REQUIRE(ps.kv_groups.size() == 1);
  const auto& ss = ps.kv_groups[0].spec;
  CHECK(spec_blocks_per_request(ss, 4096, 8192) == 256);
  CHECK(spec_blocks_per_request(ss, 8192, 8192) == 257);
  CHECK(spec_blocks_per_request(ss, 131072, 8192) == 257);
  CHECK(spec_blocks_per_request(ph.kv_groups[0].spec, 131072, 8192) == 1640);  // ceil(26215 / 16) + 1
  CHECK(ps.num_blocks == pb.num_blocks);
  // H2O also keeps an accumulated attention score per kept token and KV head (bf16 here): 8 x 2 bytes per token and
  // layer beside the 4,096 of K and V, so its blocks are 16 x 16 bytes larger per layer and the pool holds fewer.
  const u64 block_base = pb.stages[0].layout.block_bytes, block_h2o = ph.stages[0].layout.block_bytes;
  CHECK(block_h2o == block_base + u64{32} * 16 * 16);
  CHECK(ph.num_blocks == static_cast<u64>(ph.stages[0].available_kv_bytes) / block_h2o);
  CHECK(ph.kv_bytes_per_token_per_rank == pb.kv_bytes_per_token_per_rank + u64{32} * 16);
  // The curve: at 128K StreamingLLM's requests hold 257 blocks instead of 8,192, H2O's 1,640.
  const auto at = [](const MemoryPlan& p, i64 s) {
    for (const auto& c : p.curve)
      if (c.context_tokens == s) return c.max_concurrency;
    return -1.0;
  };
  // Beyond the kept tokens a prefilling request also holds one step's chunks (max_num_batched_tokens, 8,192 on an
  // H200) until the policy evicts: 512 + 1 blocks the pool keeps for them.
  CHECK(at(ps, 131072) == Approx(static_cast<double>(ps.num_blocks - 513) / 257.0));
  CHECK(at(ph, 131072) == Approx(static_cast<double>(ph.num_blocks - 513) / 1640.0));
  CHECK(at(ps, 1024) == Approx(at(pb, 1024)));  // nothing evicted yet, nothing reserved
  // Decode reads the kept tokens only.
  const auto tpot_kv = [&](const Deployment& d) {
    return decode_step(make_speed_context(m, gpu, d), 8, 131072).stage.kv_bytes;
  };
  CHECK(tpot_kv(streaming) == Approx(tpot_kv(base) * 4096.0 / 131072.0));
  CHECK(tpot_kv(h2o) == Approx(tpot_kv(base) * 26215.0 / 131072.0 * (4096.0 + 16.0) / 4096.0));  // + the scores
  // The fast step model (sweep, the simulator's timer) agrees.
  const auto ctx = make_speed_context(m, gpu, h2o);
  const StepCostModel fast(ctx);
  StepLoad load;
  fast.add(load, 131071, 1, true);
  CHECK(load.kv_read_tokens[0] == 26215);
  // W207 names the policy and its paper.
  const auto f = check_what_ifs(ps);
  REQUIRE(f.size() == 1);
  CHECK_THAT(f[0].message, Catch::Contains("streaming:sink=4,window=4092") && Catch::Contains("StreamingLLM"));
  // Models with sliding-window or linear layers are refused, as are budgets outside (0, 1).
  CHECK_THROWS_WITH(plan_memory(profiles::resolve_model("gpt-oss-20b"), gpu, h2o, {}),
                    Catch::Contains("full attention"));
  Deployment bad = h2o;
  bad.kv_eviction.budget = 1.5;
  CHECK_THROWS_WITH(plan_memory(m, gpu, bad, {}), Catch::Contains("(0, 1)"));
}

TEST_CASE("eviction never needs more memory than keeping every token, and sharing stays within a stage",
          "[what_if][eviction]") {
  const auto m = profiles::resolve_model("llama-3.1-8b");
  const auto gpu = profiles::resolve_gpu("h200");
  Deployment base;
  base.kv_cache_memory_bytes = {static_cast<u64>(1.2 * 1073741824.0)};
  base.max_model_len = 5000;
  const std::vector<i64> contexts = {1024, 4096, 5000};
  const MemoryPlan pb = plan_memory(m, gpu, base, contexts);
  for (const char* text : {"streaming", "h2o"}) {
    Deployment d = base;
    if (std::string(text) == "streaming") {
      d.kv_eviction.kind = Deployment::Eviction::Kind::streaming;
      d.kv_eviction.window_tokens = 4092;
    } else {
      d.kv_eviction.kind = Deployment::Eviction::Kind::h2o;
      d.kv_eviction.budget = 0.9;
    }
    const MemoryPlan pe = plan_memory(m, gpu, d, contexts);
    INFO(text);
    // H2O's scores take a little of the pool (a few blocks fewer): beyond that, never worse than the baseline.
    for (std::size_t i = 0; i < contexts.size(); ++i)
      CHECK(pe.curve[i].max_concurrency >= pb.curve[i].max_concurrency * 0.99);
    CHECK(pe.fits());
  }
  // CLA x2 over 3 pipeline stages of 11, 11 and 10 layers: layer 11 would read layer 10's cache on stage 0.
  Deployment pp3;
  pp3.pipeline_parallel_size = 3;
  pp3.kv_layer_sharing.kind = Deployment::LayerSharing::Kind::cla;
  CHECK_THROWS_WITH(plan_memory(m, gpu, pp3, {}), Catch::Contains("within a stage"));
  pp3.pipeline_parallel_size = 2;  // 16 + 16: every pair on one stage
  CHECK_NOTHROW(plan_memory(m, gpu, pp3, {}));
}
