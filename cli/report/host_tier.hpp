#pragma once
// The host KV tier of `kvcap plan --kv-offloading-size` (planner/host_tier.hpp): its capacity beside the GPU's, and
// what a prefix-cache hit in it costs to reload against recomputing it. Table and JSON.
#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "kvcap/planner/host_tier.hpp"

namespace kvcap::cli {

void report_host_tier_table(std::ostream& o, const MemoryPlan& p, const HostTier& t,
                            const std::vector<HostReload>& rows);
nlohmann::ordered_json host_tier_json(const MemoryPlan& p, const HostTier& t, const std::vector<HostReload>& rows);

}  // namespace kvcap::cli
