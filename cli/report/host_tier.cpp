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

void report_host_tier_table(std::ostream& o, const MemoryPlan& p, const HostTier& t,
                            const std::vector<HostReload>& rows) {
  const auto& d = p.dep.d;
  char size[32];
  std::snprintf(size, sizeof size, "%g", t.offloading_size_gib);
  o << "\nHost KV tier (vLLM CPU offloading, --kv-offloading-size " << size << " GiB over " << t.world_size
    << (t.world_size == 1 ? " rank" : " ranks") << ")\n";
  o << "  one block: " << t.copies_per_block << " KV tensors x " << human_bytes(static_cast<double>(t.page_bytes))
    << " on each of " << t.world_size << (t.world_size == 1 ? " rank" : " ranks") << " = "
    << human_bytes(static_cast<double>(t.block_bytes_all_ranks)) << " for " << d.block_size << " tokens\n";
  o << "  " << grouped(t.num_blocks) << " blocks x " << d.block_size << " = " << grouped(t.tokens)
    << " tokens per replica, besides the GPU's " << grouped(p.kv_capacity_tokens) << "\n";
  o << "  Running requests keep their KV on the GPU: the concurrency above does not change. The host tier keeps\n"
       "  blocks the GPU evicts, so a later prefix-cache hit (conversation history, a shared prompt) reloads them.\n";
  if (!t.link) {
    o << "  Reload time unknown: the GPU profile has no host_link and no --calibration measured one.\n";
    return;
  }
  o << "  Reload over " << link_text(*t.link)
    << "\n  one copy per block and KV tensor, each rank over its own link "
       "(vLLM ops.swap_blocks)\n";
  o << "    cached   reload        recompute (prefill)   reload / recompute\n";
  for (const auto& r : rows) {
    o << "  " << padl(human_tokens(r.cached_tokens), 8) << "   " << padl(millis(r.reload_s), 10) << "   "
      << padl(millis(r.recompute_s), 19) << "   "
      << padl(fixed(r.recompute_s > 0 ? r.reload_s / r.recompute_s : 0, 3), 18) << "\n";
  }
}

nlohmann::ordered_json host_tier_json(const MemoryPlan& p, const HostTier& t, const std::vector<HostReload>& rows) {
  nlohmann::ordered_json j;
  j["offloading_size_gib"] = t.offloading_size_gib;
  j["offloading_bytes"] = t.offloading_bytes;
  j["world_size"] = t.world_size;
  j["copies_per_block"] = t.copies_per_block;
  j["page_bytes"] = t.page_bytes;
  j["block_bytes_all_ranks"] = t.block_bytes_all_ranks;
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
      a.push_back({{"cached_tokens", r.cached_tokens}, {"reload_s", r.reload_s}, {"recompute_s", r.recompute_s}});
    j["reload"] = a;
  } else {
    j["link"] = nullptr;
  }
  return j;
}

}  // namespace kvcap::cli
