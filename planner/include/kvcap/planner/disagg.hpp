#pragma once
// Disaggregated prefill/decode serving (xPyD: x prefill workers, y decode workers), as vLLM's disaggregated prefill
// with the NixlConnector, NVIDIA Dynamo, llm-d and SGLang's --disaggregation-mode run it: a prefill worker computes the
// prompt's KV cache, the decode worker allocates blocks for it and reads it over the network (RDMA), then computes the
// prompt's last token itself and samples the first output token. This file owns what the move costs: the link between
// the two pools and the time to move one request's KV cache. docs/disaggregation.md.
#include <string>
#include <string_view>

#include "kvcap/planner/gpu.hpp"
#include "kvcap/planner/memory.hpp"

namespace kvcap {

/// The link a KV cache crosses from a prefill rank to a decode rank.
struct KvTransferLink {
  std::string name;
  double bandwidth_bytes_per_s = 0;  ///< per GPU, per direction
  double latency_s = 0;              ///< fixed cost per transfer
};

enum class KvLinkKind : std::uint8_t {
  network,  ///< pools on different nodes: each GPU's NIC (GpuSpec network_*), the slower side's
  nvlink,   ///< pools in one NVLink domain (one node, or an NVL72 rack): the interconnect, the slower side's
};
std::string_view to_string(KvLinkKind k);  ///< "network" | "nvlink"

/// The link between GPUs of type `prefill` and `decode`: the slower side's bandwidth and the larger latency.
/// SpecError("network") naming the profile that gives no network (or "interconnect" for nvlink) and what to do.
KvTransferLink kv_transfer_link(const GpuSpec& prefill, const GpuSpec& decode, KvLinkKind kind);

/// Bytes one rank holds of one request with `tokens` tokens in its cache, on the pipeline stage holding the most:
/// full-attention (and MLA, indexer) layers `tokens` each, sliding-window and chunked layers at most their window,
/// linear-attention layers their fixed state. What that rank sends (prefill side) or receives (decode side).
u64 kv_transfer_bytes_per_rank(const MemoryPlan& plan, i64 tokens);

/// Time to move the KV cache of a request's first `tokens` tokens from a prefill worker to a decode worker: latency +
/// the larger of the two sides' per-rank bytes / bandwidth. Every rank moves its part over its own NIC at once
/// (NixlConnector: each decode rank reads the heads it holds from the prefill ranks that hold them), so the side whose
/// ranks hold more (fewer TP ranks, or MLA's replicated latent) sets the time. 0 for tokens <= 0.
double kv_transfer_s(const MemoryPlan& prefill, const MemoryPlan& decode, const KvTransferLink& link, i64 tokens);

}  // namespace kvcap
