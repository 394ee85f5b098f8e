// The host KV tier (host_tier.hpp): vLLM's CPU offloading capacity and the reload time over the host link.
#include "kvcap/planner/host_tier.hpp"

#include <cmath>

#include "kvcap/planner/error.hpp"

namespace kvcap {

namespace {
/// The host link a rank reloads over: measured by kvcap calibrate, else the GPU profile's datasheet figure.
std::optional<HostLinkRate> host_link_rate(const GpuSpec& g, const std::optional<Calibration>& cal) {
  if (cal && cal->host_to_device.bandwidth_bytes_per_s > 0)
    return HostLinkRate{cal->host_to_device.bandwidth_bytes_per_s, cal->host_to_device.per_copy_s, "calibrated",
                        g.host_link_name.empty() ? std::string("host link") : g.host_link_name};
  if (g.host_link_bandwidth_bytes_per_s > 0)
    return HostLinkRate{g.host_link_bandwidth_bytes_per_s, 0.0, "datasheet", g.host_link_name};
  return std::nullopt;
}
}  // namespace

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
  // A block id stands for block_size tokens as resolved (FlashMLA: 64) on each rank, block_size x DCP of the request.
  t.unit_tokens = p.dep.block_size * p.dep.d.decode_context_parallel_size;
  t.tokens = t.num_blocks * static_cast<u64>(t.unit_tokens);
  t.copies_per_unit = t.copies_per_block;
  t.copy_bytes = t.page_bytes;
  t.link = host_link_rate(g, cal);
  return t;
}

HostTier plan_lmcache_tier(const MemoryPlan& p, const GpuSpec& g, const std::optional<Calibration>& cal,
                           const LmcacheSpec& spec) {
  const auto size_ok = [](double gib) { return std::isfinite(gib) && gib >= 0 && gib <= 1e9; };
  if (!size_ok(spec.cpu_gib) || !size_ok(spec.disk_gib) || spec.cpu_gib + spec.disk_gib <= 0)
    throw SpecError("lmcache",
                    "expected sizes in GiB >= 0 per rank (LMCache's max_local_cpu_size and "
                    "max_local_disk_size), not both 0");
  const i64 bs = p.dep.block_size;  // as resolved (FlashMLA: 64)
  if (p.dep.d.decode_context_parallel_size > 1)
    throw SpecError("lmcache",
                    "with decode context parallelism is not modelled (a chunk's tokens are spread over the "
                    "DCP ranks); give --decode-context-parallel-size 1");
  if (spec.chunk_tokens > p.dep.max_model_len)
    throw SpecError("lmcache", "chunk_size " + std::to_string(spec.chunk_tokens) + " is longer than max_model_len " +
                                   std::to_string(p.dep.max_model_len) + ": no request fills one chunk");
  if (spec.chunk_tokens < bs || spec.chunk_tokens % bs != 0 || spec.chunk_tokens > (1 << 20))
    throw SpecError("lmcache", "chunk_size " + std::to_string(spec.chunk_tokens) +
                                   " must be a whole number of KV blocks of " + std::to_string(bs) + " tokens");
  if (spec.disk_read_bytes_per_s && !(*spec.disk_read_bytes_per_s >= 1e7 && *spec.disk_read_bytes_per_s <= 1e12))
    throw SpecError("lmcache", "the disk read rate must be within 0.01 to 1000 GB/s");
  if (p.kv_groups.size() != 1)
    throw SpecError("lmcache", "kvcap models LMCache for one KV cache group and this model has " +
                                   std::to_string(p.kv_groups.size()) +
                                   " (hybrid attention); with --disable-hybrid-kv-cache-manager every layer joins one");
  const StagePlan& st = p.stages.at(p.binding_stage);
  HostTier t;
  t.connector = HostTier::Connector::lmcache;
  t.lmcache = spec;
  t.world_size = p.dep.d.tensor_parallel_size * p.dep.d.pipeline_parallel_size;
  t.unit_tokens = spec.chunk_tokens;
  // A chunk of the rank's KV (LMCache's KV_2LTD layout: K and V of every layer on the rank for chunk_size tokens),
  // moved in one transfer per chunk (lmcache/v1/gpu_connector.py, one multi-layer kernel per memory object).
  t.chunk_bytes_per_rank = st.layout.block_bytes * static_cast<u64>(spec.chunk_tokens / bs);
  t.copies_per_unit = 1;
  t.copy_bytes = t.chunk_bytes_per_rank;
  t.cpu_chunks = static_cast<u64>(std::floor(spec.cpu_gib * 1073741824.0)) / t.chunk_bytes_per_rank;
  t.disk_chunks = static_cast<u64>(std::floor(spec.disk_gib * 1073741824.0)) / t.chunk_bytes_per_rank;
  if (t.cpu_chunks + t.disk_chunks == 0)
    throw SpecError("lmcache", "holds no chunk: one chunk of " + std::to_string(spec.chunk_tokens) + " tokens is " +
                                   std::to_string(t.chunk_bytes_per_rank) + " bytes per rank");
  t.num_blocks = t.cpu_chunks * static_cast<u64>(spec.chunk_tokens / bs);
  t.tokens = t.cpu_chunks * static_cast<u64>(spec.chunk_tokens);
  t.disk_tokens = t.disk_chunks * static_cast<u64>(spec.chunk_tokens);
  if (t.disk_chunks > 0)
    t.disk = spec.disk_read_bytes_per_s
                 ? DiskRate{*spec.disk_read_bytes_per_s, "--lmcache-disk-read-rate"}
                 : DiskRate{kDefaultDiskReadBytesPerS,
                            "datasheet: NVMe PCIe Gen4, 6.9 GB/s sequential read (Samsung PM9A3 U.2)"};
  t.link = host_link_rate(g, cal);
  return t;
}

double reload_time_s(const HostTier& t, i64 cached_tokens) {
  if (!t.link || t.unit_tokens <= 0 || cached_tokens <= 0) return 0;
  const double units = std::floor(static_cast<double>(cached_tokens) / static_cast<double>(t.unit_tokens));
  const double copies = units * static_cast<double>(t.copies_per_unit);
  return copies * (t.link->per_copy_s + static_cast<double>(t.copy_bytes) / t.link->bandwidth_bytes_per_s);
}

double disk_reload_time_s(const HostTier& t, i64 cached_tokens) {
  if (!t.disk || !t.link || t.unit_tokens <= 0 || cached_tokens <= 0) return 0;
  const double units = std::floor(static_cast<double>(cached_tokens) / static_cast<double>(t.unit_tokens));
  const double bytes = units * static_cast<double>(t.chunk_bytes_per_rank) * static_cast<double>(t.world_size);
  return bytes / t.disk->read_bytes_per_s + reload_time_s(t, cached_tokens);
}

HostReload compare_reload(const SpeedContext& c, const HostTier& t, i64 cached_tokens) {
  HostReload r;
  r.cached_tokens = cached_tokens;
  r.reload_s = reload_time_s(t, cached_tokens);
  r.disk_reload_s = disk_reload_time_s(t, cached_tokens);
  const PrefillResult pre = prefill(c, cached_tokens);
  r.recompute_s = pre.total.total_s + pre.pipeline_p2p_s;
  return r;
}

}  // namespace kvcap
