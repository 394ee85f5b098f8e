#include "kvcap/planner/disagg.hpp"

#include <algorithm>
#include <cmath>

#include "kvcap/planner/error.hpp"

namespace kvcap {

std::string_view to_string(KvLinkKind k) {
  return k == KvLinkKind::network ? "network" : "nvlink";
}

KvTransferLink kv_transfer_link(const GpuSpec& prefill, const GpuSpec& decode, KvLinkKind kind) {
  const bool net = kind == KvLinkKind::network;
  for (const GpuSpec* g : {&prefill, &decode}) {
    const double bw = net ? g->network_bandwidth_bytes_per_s : g->interconnect_bandwidth_bytes_per_s;
    if (!(bw > 0))
      throw SpecError(net ? "network" : "interconnect",
                      "GPU profile '" + g->name + "' gives no " +
                          (net ? std::string("network (the NIC per GPU a KV cache crosses between nodes): add a "
                                             "network section to the profile, give --kv-transfer-bandwidth, or put "
                                             "both pools in one NVLink domain (--kv-transfer-link nvlink)")
                               : std::string("interconnect bandwidth: add it to the profile, or give "
                                             "--kv-transfer-bandwidth")));
  }
  auto bw = [net](const GpuSpec& g) {
    return net ? g.network_bandwidth_bytes_per_s : g.interconnect_bandwidth_bytes_per_s;
  };
  auto lat = [net](const GpuSpec& g) { return net ? g.network_latency_s : g.interconnect_latency_s; };
  auto name = [net](const GpuSpec& g) { return net ? g.network_name : g.interconnect_name; };
  const GpuSpec& slow = bw(prefill) <= bw(decode) ? prefill : decode;
  KvTransferLink l;
  l.name = name(slow).empty() ? std::string(to_string(kind)) : name(slow);
  l.bandwidth_bytes_per_s = bw(slow);
  l.latency_s = std::max(lat(prefill), lat(decode));
  return l;
}

u64 kv_transfer_bytes_per_rank(const MemoryPlan& plan, i64 tokens) {
  if (tokens <= 0) return 0;
  u64 most = 0;
  for (const StagePlan& st : plan.stages) {
    u64 bytes = 0;
    for (const KvLayerGroup& g : st.groups) {
      const auto layers = static_cast<u64>(g.num_layers);
      if (g.attention == LayerAttention::linear) {
        bytes = add(bytes, mul(layers, g.state_bytes_per_layer, "state bytes"), "KV transfer bytes");
        continue;
      }
      // Sliding and chunked layers hold at most their window (a chunk) of the prompt (SlidingWindowManager frees
      // the rest); full layers every token.
      const i64 held =
          g.attention != LayerAttention::full && g.window_tokens > 0 ? std::min(tokens, g.window_tokens) : tokens;
      bytes = add(bytes, mul(mul(layers, g.bytes_per_token_per_layer, "KV bytes"), static_cast<u64>(held), "KV bytes"),
                  "KV transfer bytes");
    }
    most = std::max(most, bytes);
  }
  return most;
}

double kv_transfer_s(const MemoryPlan& prefill, const MemoryPlan& decode, const KvTransferLink& link, i64 tokens) {
  if (tokens <= 0) return 0;
  if (!(link.bandwidth_bytes_per_s > 0) || !std::isfinite(link.bandwidth_bytes_per_s))
    throw SpecError("kv_transfer.bandwidth_bytes_per_s", "must be a positive, finite number of bytes per second");
  if (!(link.latency_s >= 0) || !std::isfinite(link.latency_s))
    throw SpecError("kv_transfer.latency_s", "must be a finite number of seconds >= 0");
  const u64 bytes = std::max(kv_transfer_bytes_per_rank(prefill, tokens), kv_transfer_bytes_per_rank(decode, tokens));
  return link.latency_s + static_cast<double>(bytes) / link.bandwidth_bytes_per_s;
}

}  // namespace kvcap
