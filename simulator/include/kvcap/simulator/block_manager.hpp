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
// blocks are hot in the CPU cache: 1.5-2x faster on large clusters), moved in bulk with no reference counts (no
// block is shared before one is cached; a block freed twice is then caught only by the total, or by
// check_invariants' duplicate check at the next step). At the first cached block it counts the references (one per
// block not on the stack), turns the stack into vLLM's LRU free queue, and from then on follows vLLM's order exactly.
// Prefix caching (paged only): see ContentKey below; a preempted request's registered blocks are found again when it
// is admitted again, as in vLLM.
#include <algorithm>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kvcap/planner/checked.hpp"

namespace kvcap::sim {

enum class Allocator : std::uint8_t { paged, contiguous };

/// What the prefix cache knows of a request's tokens. vLLM hashes each full block's tokens chained to its parent
/// block's hash (vllm/v1/core/kv_cache_utils.py hash_block_tokens; block_pool.py cache_full_blocks), so a block is
/// found again exactly when every token up to its end is the same. In a synthetic workload two kinds of tokens
/// repeat: a shared-prefix group's prefix (the first `prefix_tokens` of the prompt) and a conversation's own tokens
/// (everything after the prefix, which later turns send again as history). Block j is therefore named by a chain
/// and its index: the group's chain while the block ends inside the prefix, then the conversation's; the blocks of
/// a single-turn request beyond the prefix are its own and never found again.
struct ContentKey {
  std::int32_t group = -1;         ///< shared-prefix group (-1: none)
  i64 prefix_tokens = 0;           ///< the group's prefix at the start of the prompt
  std::int64_t conversation = -1;  ///< conversation the tokens after the prefix belong to (-1: none)
  /// A conversation whose turns resend only their first prompt (history: repeat): the tokens that repeat; its
  /// answers are not the next turn's tokens. -1: all of a conversation's tokens repeat (its history).
  i64 repeat_tokens = -1;
  bool cacheable() const { return group >= 0 || conversation >= 0; }
};

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
  /// Cached blocks for the start of a request whose tokens `key` describes, at most `max_tokens` tokens (vLLM:
  /// num_tokens - 1, the last token is always recomputed): the longest run of cached leading blocks
  /// (find_longest_cache_hit). Fills `hits` (not yet referenced) and returns how many of them are unreferenced
  /// (evictable): those count against free blocks when taken (vLLM get_num_blocks_to_allocate).
  i64 find_prefix(const ContentKey& key, i64 max_tokens, std::vector<std::uint32_t>& hits) const;
  /// References the hit blocks and appends them to `table` (vLLM touch()).
  void take_prefix(std::vector<std::uint32_t>& table, const std::vector<std::uint32_t>& hits);
  /// Offers the request's full blocks that can repeat (the prefix; with a conversation, every computed one) to the
  /// cache once computed; `registered` counts blocks already offered. Blocks the cache already holds (computed twice
  /// concurrently) stay private.
  void register_prefix(const std::vector<std::uint32_t>& table, const ContentKey& key, i64 computed_tokens,
                       i64& registered);
  /// Blocks the cache can find (cached, referenced or not).
  std::uint64_t cached_blocks() const { return cached_blocks_; }

  // ---- host tier (vLLM's CPU offloading, LMCache: planner/host_tier.hpp) ---------------------------------
  /// A second cache of `capacity` blocks in host memory, and under LMCache a third of `disk_capacity` blocks on the
  /// local disk. Every block the GPU cache registers is stored in each (the connector copies each computed block out;
  /// the copy is asynchronous and not charged), and each evicts least recently used blocks
  /// (vllm/v1/kv_offload/cpu/policies/lru.py; LMCache's LRU cache policy). A hit counts in units of `unit_blocks`
  /// blocks (LMCache's chunk; 1 for vLLM's offloading).
  void enable_host_tier(std::uint64_t capacity_blocks, std::uint64_t disk_capacity_blocks = 0, i64 unit_blocks = 1);
  std::uint64_t host_capacity() const { return host_.capacity + disk_.capacity; }
  std::uint64_t host_blocks() const { return host_.index.size(); }
  std::uint64_t host_disk_blocks() const { return disk_.index.size(); }
  /// What the host tiers give a request beyond its GPU hit (get_num_new_matched_tokens).
  struct HostHit {
    i64 blocks = 0;            ///< new blocks for the request, from `from_block` on
    i64 from_disk = 0;         ///< of them, held only on disk (read from disk, then stored in CPU memory again)
    i64 reread = 0;            ///< LMCache: blocks of the chunk holding from_block that the GPU has, read again
    i64 reread_from_disk = 0;  ///< of those, held only on disk
  };
  /// The blocks of the request described by `key` the host tiers give it from block `from_block` (the end of its GPU
  /// hit) on, at most `max_tokens` tokens in all (as find_prefix). vLLM's offloading: the blocks held in a row from
  /// from_block. LMCache (units > 1): its whole chunks held in a row from the prompt's start, if they reach past
  /// from_block. The blocks looked up become the most recently used of their levels; a block read only from disk is
  /// stored in CPU memory again (LMCache reads it into a CPU buffer).
  HostHit find_host_prefix(const ContentKey& key, i64 from_block, i64 max_tokens);
  std::uint64_t evictions() const { return evictions_; }

  /// Consistency of free queue, reference counts and counters (tests; O(num_blocks)).
  bool check_invariants() const;
  /// Reference count of a block (tests).
  std::uint32_t ref_count(std::uint32_t block) const {
    if (lru_) return ref_[block];
    return std::find(stack_.begin(), stack_.end(), block) == stack_.end() ? 1 : 0;  // on the stack: free
  }

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
  /// The chain block `j` of a request described by `key` belongs to (ContentKey): 2 x group, 2 x conversation + 1,
  /// or -1 (its own tokens).
  std::int64_t chain_of(const ContentKey& key, i64 j) const {
    if (key.group >= 0 && (j + 1) * block_size_ <= key.prefix_tokens) return 2 * static_cast<std::int64_t>(key.group);
    return key.conversation >= 0 ? 2 * key.conversation + 1 : -1;
  }
  /// An evicted block leaves its chain; trailing empty slots and empty chains are dropped, so memory follows what is
  /// cached, not every conversation ever seen.
  void uncache(std::uint32_t b);
  // Prefix cache: block -> (chain, index) and chain -> [index] -> block.
  std::vector<std::int64_t> key_chain_;
  std::vector<std::uint32_t> key_index_;
  std::unordered_map<std::int64_t, std::vector<std::uint32_t>> chains_;  ///< [chain][block index] -> block or kNone
  std::uint64_t cached_blocks_ = 0;
  std::uint64_t evictions_ = 0;
  // Host tier: (chain, index) in LRU order, most recent at the back.
  struct HostKeyHash {
    std::size_t operator()(const std::pair<std::int64_t, i64>& k) const {
      return std::hash<std::int64_t>()(k.first) * 1000003u ^ std::hash<i64>()(k.second);
    }
  };
  /// One host level: (chain, index) in LRU order, most recent at the back.
  struct HostLru {
    using Key = std::pair<std::int64_t, i64>;
    std::uint64_t capacity = 0;
    std::list<Key> order;
    std::unordered_map<Key, std::list<Key>::iterator, HostKeyHash> index;
    bool touch(const Key& k);  ///< makes k the most recent; false when not held
    void put(const Key& k);    ///< stores k as the most recent, evicting the least recent when full
  };
  void host_store(std::int64_t chain, i64 index);
  HostLru host_, disk_;
  i64 host_unit_blocks_ = 1;
  std::vector<char> host_scratch_;  ///< find_host_prefix: which looked-up blocks CPU memory holds
};

}  // namespace kvcap::sim
