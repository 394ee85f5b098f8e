#pragma once
// The KV block manager of one replica, after vLLM V1:
//   vllm/v1/core/block_pool.py        BlockPool: a fixed number of blocks, a free queue, prefix-cache map
//   vllm/v1/core/kv_cache_utils.py    FreeKVCacheBlockQueue: doubly linked; allocate from the front,
//                                     freed blocks appended at the back (least recently freed evicted first)
//   vllm/v1/core/kv_cache_manager.py  allocate_slots (all-or-nothing: None when too few free blocks),
//                                     free (a request's blocks in reverse order), get_computed_blocks
// Layered as TensorRT-LLM's kvCacheManager: block metadata (ids, reference counts, no data) -> pool ->
// per-request tables. Sizing comes from the planner (MemoryPlan::num_blocks); this class only spends it.
//
// Two allocators:
//   paged       blocks on demand, ceil(tokens / block_size) per request: waste < 1 block per request;
//   contiguous  the pre-paging design (FasterTransformer, Orca): a request reserves max_model_len tokens
//               at admission, so it never grows, never preempts, and wastes max_model_len - tokens.
// Free-block order: until the first block is cached, free blocks hold nothing anyone can reuse, so which
// id is handed out cannot change any result; the pool then keeps them on a LIFO stack (recently freed
// blocks are hot in the CPU cache: 1.5-2x faster on large clusters). At the first cached block it turns
// the stack into vLLM's LRU free queue, and from then on follows vLLM's order exactly.
// Prefix caching (paged only) caches the blocks of shared-prefix groups (RequestSpec::prefix_group):
// a block j of group g is full of identical tokens in every request of g, so later requests reuse it
// (vLLM hashes block contents; only these blocks have identical contents in a synthetic workload, so
// only they are cached here — a preempted request's own blocks are not found again, see docs/simulator.md).
#include <cstdint>
#include <vector>

#include "kvcap/planner/checked.hpp"

namespace kvcap::sim {

enum class Allocator : std::uint8_t { paged, contiguous };

class BlockManager {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  /// `num_blocks` from the planner; `reserve_tokens` (contiguous: max_model_len) ignored when paged.
  BlockManager(std::uint32_t num_blocks, i64 block_size, Allocator a, i64 reserve_tokens, bool prefix_caching);

  std::uint32_t num_blocks() const { return num_blocks_; }
  /// Free blocks, counting cached blocks no request references (they are evicted on demand, as in vLLM).
  std::uint32_t num_free() const { return num_free_; }
  std::uint32_t num_used() const { return num_blocks_ - num_free_; }
  i64 block_size() const { return block_size_; }
  Allocator allocator() const { return allocator_; }
  bool prefix_caching() const { return prefix_caching_; }

  /// Blocks a table of `table_blocks` blocks must gain to hold `tokens` tokens (contiguous: the reservation).
  i64 blocks_to_allocate(std::size_t table_blocks, i64 tokens) const {
    const i64 have = static_cast<i64>(table_blocks);
    if (tokens <= have * block_size_) return 0;  // the common case (a decode token in a partial block): no division
    i64 want = static_cast<i64>(ceil_div(static_cast<u64>(tokens), static_cast<u64>(block_size_)));
    if (allocator_ == Allocator::contiguous && want < reserve_blocks_) want = reserve_blocks_;
    return want > have ? want - have : 0;
  }
  /// Appends `n` new blocks to `table`; precondition n <= num_free() (checked, throws std::logic_error).
  void allocate(std::vector<std::uint32_t>& table, i64 n);
  /// Releases every block of `table` (last block first) and clears it.
  void free(std::vector<std::uint32_t>& table);
  /// Releases the last `n` blocks of `table` (the last first) and removes them (blocks a sliding window left).
  void free_tail(std::vector<std::uint32_t>& table, i64 n);

  // ---- prefix cache --------------------------------------------------------------------------------
  /// Cached blocks for the start of a request of `group` whose prompt begins with `prefix_tokens` shared
  /// tokens, at most `max_tokens` tokens (vLLM: num_tokens - 1, the last token is always recomputed).
  /// Fills `hits` (not yet referenced) and returns how many of them are unreferenced (evictable): those
  /// count against free blocks when taken (vLLM get_num_blocks_to_allocate).
  i64 find_prefix(std::int32_t group, i64 prefix_tokens, i64 max_tokens, std::vector<std::uint32_t>& hits) const;
  /// References the hit blocks and appends them to `table` (vLLM touch()).
  void take_prefix(std::vector<std::uint32_t>& table, const std::vector<std::uint32_t>& hits);
  /// Offers the request's full prefix blocks to the cache once computed; `registered` counts blocks
  /// already offered. Blocks the cache already holds (computed twice concurrently) stay private.
  void register_prefix(const std::vector<std::uint32_t>& table, std::int32_t group, i64 prefix_tokens,
                       i64 computed_tokens, i64& registered);
  std::uint64_t evictions() const { return evictions_; }

  /// Consistency of free queue, reference counts and counters (tests; O(num_blocks)).
  bool check_invariants() const;
  /// Reference count of a block (tests).
  std::uint32_t ref_count(std::uint32_t block) const { return ref_[block]; }

 private:
  void queue_remove(std::uint32_t b);
  void queue_push_back(std::uint32_t b);
  std::uint32_t queue_pop_front();
  void use_lru_queue();  ///< stack -> vLLM's free queue (at the first cached block)

  std::uint32_t num_blocks_;
  i64 block_size_;
  Allocator allocator_;
  i64 reserve_blocks_ = 0;
  bool prefix_caching_;
  std::uint32_t num_free_;
  bool lru_ = false;                      ///< free blocks in the LRU queue (else on the stack)
  std::vector<std::uint32_t> stack_;      ///< free blocks, LIFO (before anything is cached)
  // Free queue (FreeKVCacheBlockQueue): intrusive doubly linked list over block ids.
  std::vector<std::uint32_t> prev_, next_;
  std::uint32_t head_ = kNone, tail_ = kNone;
  std::vector<std::uint32_t> ref_;
  // Prefix cache: block -> (group, index) and (group, index) -> block.
  std::vector<std::int32_t> key_group_;
  std::vector<std::uint32_t> key_index_;
  std::vector<std::vector<std::uint32_t>> cache_;  ///< [group][block index] -> block id or kNone
  std::uint64_t evictions_ = 0;
};

}  // namespace kvcap::sim
