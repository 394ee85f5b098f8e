#pragma once
// The small replica the simulator tests run on: 16-token blocks, a 2,048-token step budget, 64 sequences at most.
#include <cstdint>

#include "kvcap/simulator/simulator.hpp"

namespace kvcap::sim::testing {

inline ReplicaConfig small_replica(std::uint32_t blocks, i64 max_model_len) {
  ReplicaConfig c;
  c.num_blocks = blocks;
  c.block_size = 16;
  c.max_num_batched_tokens = 2048;
  c.max_num_seqs = 64;
  c.max_model_len = max_model_len;
  return c;
}

}  // namespace kvcap::sim::testing
