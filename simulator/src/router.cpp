// Routing policies and the one table that names them (docs/simulator.md, "Cluster and router").
#include "router.hpp"

#include <array>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kvcap::sim {

namespace {

/// The replica with the smallest `load`, scanning from `next` so that ties go to the next replica in round-robin
/// order (an idle cluster is used evenly).
template <class Load>
std::uint32_t least(const std::vector<Replica>& replicas, std::uint32_t next, Load load) {
  const auto n = static_cast<std::uint32_t>(replicas.size());
  std::uint32_t best = next;
  i64 best_v = std::numeric_limits<i64>::max();
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint32_t i = (next + k) % n;
    const i64 v = load(replicas[i]);
    if (v < best_v) {
      best_v = v;
      best = i;
    }
  }
  return best;
}

/// Request i to replica i mod R.
class RoundRobin final : public RoutingPolicy {
 public:
  std::uint32_t pick(const std::vector<Replica>&, std::uint32_t next) const override { return next; }
};

/// Fewest outstanding (running + waiting) requests.
class LeastOutstanding final : public RoutingPolicy {
 public:
  std::uint32_t pick(const std::vector<Replica>& replicas, std::uint32_t next) const override {
    return least(replicas, next, [](const Replica& r) { return r.outstanding(); });
  }
};

/// Lowest KV load: used blocks plus the blocks the waiting requests' tokens will need (waiting requests hold no
/// blocks yet, so plain utilisation would send a whole burst to one replica).
class LeastKv final : public RoutingPolicy {
 public:
  std::uint32_t pick(const std::vector<Replica>& replicas, std::uint32_t next) const override {
    return least(replicas, next, [](const Replica& r) { return r.kv_load_blocks(); });
  }
};

template <class Policy>
std::unique_ptr<RoutingPolicy> make() {
  return std::make_unique<Policy>();
}

struct PolicyRow {
  RouterPolicy policy;
  std::array<std::string_view, 3> names;  ///< to_string's first, then the other spellings parse_router takes ("": none)
  std::unique_ptr<RoutingPolicy> (*make)();
};

constexpr PolicyRow kPolicies[] = {
    {RouterPolicy::round_robin, {"round-robin", "rr", ""}, make<RoundRobin>},
    {RouterPolicy::least_outstanding,
     {"lor", "least-outstanding-requests", "least-outstanding"},
     make<LeastOutstanding>},
    {RouterPolicy::least_kv, {"kv", "least-kv", "least-kv-utilization"}, make<LeastKv>},
};

}  // namespace

std::string_view to_string(RouterPolicy p) {
  for (const auto& row : kPolicies)
    if (row.policy == p) return row.names[0];
  return "?";
}

std::optional<RouterPolicy> parse_router(std::string_view s) {
  for (const auto& row : kPolicies)
    for (const std::string_view name : row.names)
      if (!name.empty() && s == name) return row.policy;
  return std::nullopt;
}

std::unique_ptr<RoutingPolicy> make_routing_policy(RouterPolicy p) {
  for (const auto& row : kPolicies)
    if (row.policy == p) return row.make();
  throw std::invalid_argument("no routing policy for router " + std::to_string(static_cast<int>(p)));
}

}  // namespace kvcap::sim
