// The host KV tier's table and JSON (report/host_tier.hpp).
#include "report/host_tier.hpp"

#include <cstdio>
#include <string>

#include "kvcap/escape.hpp"
#include "kvcap/planner/text.hpp"
#include "report/format.hpp"

namespace kvcap::cli {

namespace {

std::string millis(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f ms", s * 1e3);
  return b;
}

// "PCIe Gen5 x16, calibrated: 53.7 GB/s + 2.7 us per copy" or the datasheet's figure and what it leaves out.
std::string link_text(const HostLinkRate& l) {
  char b[160];
  const std::string name = l.name.empty() ? std::string("host link") : escape::terminal_text(l.name);
  if (l.source == "calibrated") {
    std::snprintf(b, sizeof b, "%s, calibrated: %.1f GB/s + %.1f us per copy", name.c_str(),
                  l.bandwidth_bytes_per_s / 1e9, l.per_copy_s * 1e6);
  } else {
    std::snprintf(b, sizeof b,
                  "%s, datasheet %.1f GB/s per direction\n  (the cost per copy is not measured: reload times are "
                  "lower bounds; kvcap calibrate measures both)",
                  name.c_str(), l.bandwidth_bytes_per_s / 1e9);
  }
  return b;
}

}  // namespace

namespace {
std::string gib_text(double gib) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", gib);
  return b;
}
const char* ranks(i64 n) {
  return n == 1 ? " rank" : " ranks";
}

// LMCache's capacity lines: its CPU and disk backends per rank, in chunks, beside the GPU's tokens.
void lmcache_capacity(std::ostream& o, const MemoryPlan& p, const HostTier& t) {
  const auto& s = t.lmcache;
  o << "\nHost KV tier (LMCache, per rank: max_local_cpu_size " << gib_text(s.cpu_gib) << " GiB, max_local_disk_size "
    << gib_text(s.disk_gib) << " GiB; " << t.world_size << ranks(t.world_size) << ")\n";
  o << "  one chunk: " << s.chunk_tokens << " tokens x "
    << human_bytes(static_cast<double>(p.kv_bytes_per_token_per_rank))
    << " per token = " << human_bytes(static_cast<double>(t.chunk_bytes_per_rank)) << " on each rank\n";
  o << "  CPU memory: " << grouped(t.cpu_chunks) << " chunks = " << grouped(t.tokens) << " tokens per replica";
  if (t.disk) o << "; local disk: " << grouped(t.disk_chunks) << " chunks = " << grouped(t.disk_tokens) << " tokens";
  o << "; besides the GPU's " << grouped(p.kv_capacity_tokens) << "\n";
  o << "  Every chunk is stored in each backend; a hit is read from CPU memory, else from disk (into CPU memory),\n"
       "  in whole chunks from the prompt's start.\n";
}
}  // namespace

void report_host_tier_table(std::ostream& o, const MemoryPlan& p, const HostTier& t,
                            const std::vector<HostReload>& rows) {
  const bool lmcache = t.connector == HostTier::Connector::lmcache;
  if (lmcache) {
    lmcache_capacity(o, p, t);
  } else {
    o << "\nHost KV tier (vLLM CPU offloading, --kv-offloading-size " << gib_text(t.offloading_size_gib) << " GiB over "
      << t.world_size << ranks(t.world_size) << ")\n";
    o << "  one block: " << t.copies_per_block << " KV tensors x " << human_bytes(static_cast<double>(t.page_bytes))
      << " on each of " << t.world_size << ranks(t.world_size) << " = "
      << human_bytes(static_cast<double>(t.block_bytes_all_ranks)) << " for " << t.unit_tokens << " tokens\n";
    o << "  " << grouped(t.num_blocks) << " blocks x " << t.unit_tokens << " = " << grouped(t.tokens)
      << " tokens per replica, besides the GPU's " << grouped(p.kv_capacity_tokens) << "\n";
  }
  o << "  Running requests keep their KV on the GPU: the concurrency above does not change. The host tier keeps\n"
       "  blocks the GPU evicts, so a later prefix-cache hit (conversation history, a shared prompt) reloads them.\n";
  if (!t.link) {
    o << "  Reload time unknown: the GPU profile has no host_link and no --calibration measured one.\n";
    return;
  }
  o << "  Reload over " << link_text(*t.link)
    << (lmcache ? "\n  one copy per chunk, each rank over its own link"
                : "\n  one copy per block and KV tensor, each rank over its own link (vLLM ops.swap_blocks)")
    << "\n";
  if (t.disk) {
    char b[200];
    std::snprintf(b, sizeof b, "  From disk first: %.2f GB/s (%s), one disk for the replica's %lld%s\n",
                  t.disk->read_bytes_per_s / 1e9, t.disk->source.c_str(), static_cast<long long>(t.world_size),
                  ranks(t.world_size));
    o << b;
  }
  o << "    cached   reload        " << (t.disk ? "from disk    " : "") << "recompute (prefill)   reload / recompute\n";
  for (const auto& r : rows) {
    o << "  " << padl(human_tokens(r.cached_tokens), 8) << "   " << padl(millis(r.reload_s), 10) << "   "
      << (t.disk ? padl(millis(r.disk_reload_s), 10) + "   " : std::string()) << padl(millis(r.recompute_s), 19)
      << "   " << padl(fixed(r.recompute_s > 0 ? r.reload_s / r.recompute_s : 0, 3), 18) << "\n";
  }
}

nlohmann::ordered_json host_tier_json(const MemoryPlan& p, const HostTier& t, const std::vector<HostReload>& rows) {
  nlohmann::ordered_json j;
  if (t.connector == HostTier::Connector::lmcache) {
    j["connector"] = "lmcache";
    j["max_local_cpu_size_gib"] = t.lmcache.cpu_gib;
    j["max_local_disk_size_gib"] = t.lmcache.disk_gib;
    j["chunk_tokens"] = t.lmcache.chunk_tokens;
    j["chunk_bytes_per_rank"] = t.chunk_bytes_per_rank;
    j["cpu_chunks"] = t.cpu_chunks;
    j["disk_chunks"] = t.disk_chunks;
    j["disk_tokens"] = t.disk_tokens;
    if (t.disk) j["disk"] = {{"read_bytes_per_s", t.disk->read_bytes_per_s}, {"source", t.disk->source}};
  } else {
    j["connector"] = "offloading";
    j["offloading_size_gib"] = t.offloading_size_gib;
    j["offloading_bytes"] = t.offloading_bytes;
  }
  j["world_size"] = t.world_size;
  if (t.connector == HostTier::Connector::offloading) {
    j["copies_per_block"] = t.copies_per_block;
    j["page_bytes"] = t.page_bytes;
    j["block_bytes_all_ranks"] = t.block_bytes_all_ranks;
  }
  j["num_blocks"] = t.num_blocks;
  j["tokens"] = t.tokens;
  j["gpu_tokens"] = p.kv_capacity_tokens;
  if (t.link) {
    j["link"] = {{"name", t.link->name},
                 {"source", t.link->source},
                 {"bandwidth_bytes_per_s", t.link->bandwidth_bytes_per_s},
                 {"per_copy_s", t.link->per_copy_s},
                 {"reload_is_lower_bound", t.link->per_copy_s == 0}};
    auto a = nlohmann::ordered_json::array();
    for (const auto& r : rows)
      a.push_back({{"cached_tokens", r.cached_tokens},
                   {"reload_s", r.reload_s},
                   {"disk_reload_s", t.disk ? nlohmann::ordered_json(r.disk_reload_s) : nullptr},
                   {"recompute_s", r.recompute_s}});
    j["reload"] = a;
  } else {
    j["link"] = nullptr;
  }
  return j;
}

}  // namespace kvcap::cli
