// The host KV tier (host_tier.hpp): vLLM's CPU offloading capacity and the reload time over the host link.
#include "kvcap/planner/host_tier.hpp"

#include <cmath>

#include "kvcap/planner/error.hpp"

namespace kvcap {

HostTier plan_host_tier(const MemoryPlan& p, const GpuSpec& g, const std::optional<Calibration>& cal,
                        double offloading_size_gib) {
  if (!std::isfinite(offloading_size_gib) || offloading_size_gib <= 0 || offloading_size_gib > 1e9)
    throw SpecError("kv_offloading_size", "expected a size in GiB > 0 (vLLM's --kv-offloading-size)");
  if (p.kv_groups.size() != 1)
    throw SpecError("kv_offloading_size",
                    "vLLM's CPU offloading transfers one KV cache group and this model has " +
                        std::to_string(p.kv_groups.size()) +
                        " (hybrid attention); with --disable-hybrid-kv-cache-manager every layer joins one group");
  const StagePlan& st = p.stages.at(p.binding_stage);
  HostTier t;
  t.offloading_size_gib = offloading_size_gib;
  t.offloading_bytes = static_cast<u64>(std::floor(offloading_size_gib * 1073741824.0));  // int(GiB x 2^30)
  t.world_size = p.dep.d.tensor_parallel_size * p.dep.d.pipeline_parallel_size;
  t.copies_per_block = st.layout.group_size;
  t.page_bytes = st.layout.group_size > 0 ? st.layout.block_bytes / static_cast<u64>(st.layout.group_size) : 0;
  t.block_bytes_all_ranks = st.layout.block_bytes * static_cast<u64>(t.world_size);
  t.num_blocks = t.block_bytes_all_ranks > 0 ? t.offloading_bytes / t.block_bytes_all_ranks : 0;
  if (t.num_blocks == 0)
    throw SpecError("kv_offloading_size", "holds no KV block: one block of all " + std::to_string(t.world_size) +
                                              " ranks is " + std::to_string(t.block_bytes_all_ranks) + " bytes");
  t.tokens = t.num_blocks * static_cast<u64>(p.dep.d.block_size);
  if (cal && cal->host_to_device.bandwidth_bytes_per_s > 0) {
    t.link = HostLinkRate{cal->host_to_device.bandwidth_bytes_per_s, cal->host_to_device.per_copy_s, "calibrated",
                          g.host_link_name.empty() ? std::string("host link") : g.host_link_name};
  } else if (g.host_link_bandwidth_bytes_per_s > 0) {
    t.link = HostLinkRate{g.host_link_bandwidth_bytes_per_s, 0.0, "datasheet", g.host_link_name};
  }
  return t;
}

double reload_time_s(const HostTier& t, i64 block_size, i64 cached_tokens) {
  if (!t.link || block_size <= 0 || cached_tokens <= 0) return 0;
  const double blocks = std::floor(static_cast<double>(cached_tokens) / static_cast<double>(block_size));
  const double copies = blocks * static_cast<double>(t.copies_per_block);
  return copies * (t.link->per_copy_s + static_cast<double>(t.page_bytes) / t.link->bandwidth_bytes_per_s);
}

HostReload compare_reload(const SpeedContext& c, const HostTier& t, i64 cached_tokens) {
  HostReload r;
  r.cached_tokens = cached_tokens;
  r.reload_s = reload_time_s(t, c.plan.dep.d.block_size, cached_tokens);
  const PrefillResult pre = prefill(c, cached_tokens);
  r.recompute_s = pre.total.total_s + pre.pipeline_p2p_s;
  return r;
}

}  // namespace kvcap
