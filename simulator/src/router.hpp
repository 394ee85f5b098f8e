#pragma once
// The router in front of the replicas (docs/simulator.md, "Cluster and router"). It sees every replica's state at
// the instant a request arrives and keeps a round-robin pointer; the choice itself is a RoutingPolicy. A new
// policy is a new RoutingPolicy class and one row of the table in router.cpp (its RouterPolicy value, its names
// and its factory), which to_string, parse_router and the router all read.
#include <cstdint>
#include <memory>
#include <vector>

#include "kvcap/simulator/simulator.hpp"
#include "replica.hpp"

namespace kvcap::sim {

class RoutingPolicy {
 public:
  virtual ~RoutingPolicy() = default;
  /// The replica for the next request; `next` is the round-robin pointer (the replica after the last pick), where
  /// a policy that compares replicas starts its scan so that ties rotate instead of piling onto replica 0.
  virtual std::uint32_t pick(const std::vector<Replica>& replicas, std::uint32_t next) const = 0;
};

/// The policy a RouterPolicy names (std::invalid_argument for a value without one).
std::unique_ptr<RoutingPolicy> make_routing_policy(RouterPolicy p);

class Router {
 public:
  explicit Router(RouterPolicy p) : policy_(make_routing_policy(p)) {}
  std::uint32_t pick(const std::vector<Replica>& replicas) {
    const std::uint32_t best = policy_->pick(replicas, next_);
    next_ = (best + 1) % static_cast<std::uint32_t>(replicas.size());
    return best;
  }

 private:
  std::unique_ptr<RoutingPolicy> policy_;
  std::uint32_t next_ = 0;
};

}  // namespace kvcap::sim
