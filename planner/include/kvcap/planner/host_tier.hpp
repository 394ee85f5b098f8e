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

struct HostTier {
  double offloading_size_gib = 0;    ///< --kv-offloading-size
  u64 offloading_bytes = 0;          ///< x 2^30, all ranks of a replica together
  i64 world_size = 0;                ///< TP x PP
  i64 copies_per_block = 0;          ///< KV cache tensors on the binding rank: one copy per block and tensor
  u64 page_bytes = 0;                ///< bytes of one copy (one block of one tensor)
  u64 block_bytes_all_ranks = 0;     ///< page x tensors x world size: one offloaded block (block_size_factor 1)
  u64 num_blocks = 0;                ///< per replica
  u64 tokens = 0;                    ///< num_blocks x block_size, per replica
  std::optional<HostLinkRate> link;  ///< none: the GPU profile has no host_link and no calibration measured one
};

/// Throws SpecError ("kv_offloading_size") for a size that is negative, not finite, or holds no block, and for models
/// whose KV cache has more than one group (vLLM's transfers handle one; --disable-hybrid-kv-cache-manager makes one).
HostTier plan_host_tier(const MemoryPlan& p, const GpuSpec& g, const std::optional<Calibration>& cal,
                        double offloading_size_gib);

/// Time to bring the full blocks of `cached_tokens` back to the GPU (each rank its share, in parallel):
/// blocks x copies_per_block x (per_copy_s + page_bytes / bandwidth). 0 without a link rate.
double reload_time_s(const HostTier& t, i64 block_size, i64 cached_tokens);

/// A prefix-cache hit of `cached_tokens` found in the host tier: reloading its blocks against recomputing them.
struct HostReload {
  i64 cached_tokens = 0;
  double reload_s = 0;     ///< reload_time_s (0 without a link rate)
  double recompute_s = 0;  ///< prefill of the same tokens: its chunk passes and pipeline sends (no front-end overhead)
};
HostReload compare_reload(const SpeedContext& c, const HostTier& t, i64 cached_tokens);

}  // namespace kvcap
