// What-ifs of issue 20 that change the model rather than the deployment (no vLLM option): KV layer sharing (CLA,
// MiniCache). The bytes per token, the capacity and the decode KV read follow; W207 marks every plan that uses one.
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
  // Decode reads half the KV bytes per step.
  const auto step_base = decode_step(make_speed_context(m, g, base), 64, 8192);
  const auto step_half = decode_step(make_speed_context(m, g, half), 64, 8192);
  CHECK(step_half.stage.kv_bytes == Approx(step_base.stage.kv_bytes / 2).epsilon(1e-9));
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
