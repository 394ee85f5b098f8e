#pragma once
// A second tier of KV blocks in host memory: vLLM's native CPU offloading (--kv-offloading-size; vllm/v1/kv_offload/).
// Running requests still hold their KV on the GPU; the host tier keeps blocks the GPU evicts, so a later prefix-cache
// hit (a conversation's history, a shared prompt) reloads them over the host link instead of recomputing them.
//
//   capacity  vllm/v1/kv_offload/cpu/spec.py CPUOffloadingSpec: cpu_bytes_to_use = kv_offloading_size x 2^30 (GiB,
//             summed over the TP x PP ranks: vllm/config/vllm.py _post_init_kv_transfer_config); num_cpu_blocks =
//             cpu_bytes_to_use // (page_size_bytes x len(kv_cache_tensors) x world_size x block_size_factor).
//   reload    vllm/v1/kv_offload/worker/cpu_gpu.py: per KV cache tensor (one per layer on a rank) one ops.swap_blocks,
//             which copies block by block (one cudaMemcpyAsync of page_size_bytes per block and tensor); the ranks
//             copy in parallel, each over its own link. Transfers handle a single KV cache group.
#include <optional>
#include <string>

#include "kvcap/planner/calibration.hpp"
#include "kvcap/planner/gpu.hpp"
#include "kvcap/planner/memory.hpp"
#include "kvcap/planner/speed.hpp"

namespace kvcap {

/// The host link one rank reloads over: one copy of c bytes takes per_copy_s + c / bandwidth_bytes_per_s.
struct HostLinkRate {
  double bandwidth_bytes_per_s = 0;  ///< host to device
  double per_copy_s = 0;             ///< 0 when not measured (the datasheet path): reload times are then lower bounds
  std::string source;                ///< "calibrated" (kvcap calibrate's host_link) or "datasheet" (the GPU profile)
  std::string name;                  ///< e.g. "PCIe Gen5 x16"
};

/// A local disk LMCache stores chunks on: its sequential read rate, shared by the node's ranks.
struct DiskRate {
  double read_bytes_per_s = 0;
  std::string source;  ///< "--lmcache-disk-read-rate" or the default's datasheet
};

/// LMCache (LMCacheConnectorV1: vllm serve --kv-transfer-config '{"kv_connector":"LMCacheConnectorV1",...}'), its
/// local backends as LMCACHE_* configure them (lmcache/v1/config.py; docs "Configuring LMCache"): every worker rank
/// runs its own engine over its shard of the KV, in chunks of chunk_size tokens (all of the rank's layers), stored in
/// every backend (StorageManager.batched_put), read from the first that holds it (CPU, then disk).
struct LmcacheSpec {
  double cpu_gib = 5.0;    ///< max_local_cpu_size: GB in LMCache's words, int(x * 1024**3) bytes per rank (default 5.0)
  double disk_gib = 0;     ///< max_local_disk_size: likewise x 2^30 per rank (default 0: no disk backend)
  i64 chunk_tokens = 256;  ///< chunk_size (default 256)
  std::optional<double> disk_read_bytes_per_s;  ///< the disk's sequential read rate; default kDefaultDiskRead
};
/// A datacenter NVMe SSD on PCIe Gen4 x4: 6.9 GB/s sequential read (Samsung PM9A3 U.2 datasheet), the default local
/// disk of LMCache's disk backend when no rate is given.
inline constexpr double kDefaultDiskReadBytesPerS = 6.9e9;

struct HostTier {
  /// Which connector keeps the tier: vLLM's own CPU offloading (--kv-offloading-size) or LMCache.
  enum class Connector : std::uint8_t { offloading, lmcache } connector = Connector::offloading;
  i64 unit_tokens = 0;               ///< a hit counts in these: block_size (offloading), chunk_size (LMCache)
  u64 copies_per_unit = 0;           ///< copies over the host link per unit and rank (offloading: one per KV tensor)
  u64 copy_bytes = 0;                ///< bytes of one such copy
  double offloading_size_gib = 0;    ///< --kv-offloading-size
  u64 offloading_bytes = 0;          ///< x 2^30, all ranks of a replica together
  i64 world_size = 0;                ///< TP x PP
  i64 copies_per_block = 0;          ///< KV cache tensors on the binding rank: one copy per block and tensor
  u64 page_bytes = 0;                ///< bytes of one copy (one block of one tensor)
  u64 block_bytes_all_ranks = 0;     ///< page x tensors x world size: one offloaded block (block_size_factor 1)
  u64 num_blocks = 0;                ///< per replica
  u64 tokens = 0;                    ///< num_blocks x block_size, per replica
  std::optional<HostLinkRate> link;  ///< none: the GPU profile has no host_link and no calibration measured one
  // LMCache: num_blocks and tokens are its CPU backend's (in vLLM blocks, whole chunks); the disk backend's beside it.
  LmcacheSpec lmcache;
  u64 chunk_bytes_per_rank = 0;  ///< one chunk on the binding rank: chunk_size x its KV bytes per token
  u64 cpu_chunks = 0;            ///< max_local_cpu_size x 2^30 // chunk bytes
  u64 disk_chunks = 0;           ///< max_local_disk_size x 2^30 // chunk bytes
  u64 disk_tokens = 0;
  std::optional<DiskRate> disk;  ///< with a disk backend
};

/// Throws SpecError ("kv_offloading_size") for a size that is negative, not finite, or holds no block, and for models
/// whose KV cache has more than one group (vLLM's transfers handle one; --disable-hybrid-kv-cache-manager makes one).
HostTier plan_host_tier(const MemoryPlan& p, const GpuSpec& g, const std::optional<Calibration>& cal,
                        double offloading_size_gib);

/// Why the eviction what-if and a host tier do not go together (plan and simulate say the same).
inline constexpr const char* kEvictionWithHostTier =
    "with a host KV tier (--kv-offloading-size, --lmcache-*) is not modelled: under eviction a request's blocks are "
    "never cached, so nothing would reach the host tier";

/// LMCache's local backends for the deployment `p` (one KV cache group, as vLLM's own offloading; the chunk a whole
/// number of blocks). SpecError ("lmcache") for sizes out of range, a chunk that holds no block, a hybrid model.
HostTier plan_lmcache_tier(const MemoryPlan& p, const GpuSpec& g, const std::optional<Calibration>& cal,
                           const LmcacheSpec& spec);

/// Time to bring the whole units (blocks; LMCache: chunks) of `cached_tokens` back to the GPU from host memory, each
/// rank its share over its own link, in parallel: units x copies_per_unit x (per_copy_s + copy_bytes / bandwidth).
/// 0 without a link rate.
double reload_time_s(const HostTier& t, i64 cached_tokens);
/// The same units read from LMCache's local disk first: every rank's shard through the node's one disk
/// (units x chunk bytes x TP x PP / read rate), then over the host links. 0 without a disk backend or a link rate.
double disk_reload_time_s(const HostTier& t, i64 cached_tokens);

/// A prefix-cache hit of `cached_tokens` found in the host tier: reloading its blocks against recomputing them.
struct HostReload {
  i64 cached_tokens = 0;
  double reload_s = 0;       ///< reload_time_s (0 without a link rate)
  double disk_reload_s = 0;  ///< disk_reload_time_s (LMCache with a disk backend)
  double recompute_s = 0;  ///< prefill of the same tokens: its chunk passes and pipeline sends (no front-end overhead)
};
HostReload compare_reload(const SpeedContext& c, const HostTier& t, i64 cached_tokens);

}  // namespace kvcap
