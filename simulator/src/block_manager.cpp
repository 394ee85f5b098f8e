#include "kvcap/simulator/block_manager.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvcap::sim {

BlockManager::BlockManager(std::uint32_t num_blocks, i64 block_size, Allocator a, i64 reserve_tokens, bool prefix_caching)
    : num_blocks_(num_blocks), block_size_(block_size), allocator_(a),
      prefix_caching_(prefix_caching && a == Allocator::paged), num_free_(num_blocks) {
  if (block_size < 1) throw std::invalid_argument("block_size must be >= 1");
  if (num_blocks == kNone) throw std::invalid_argument("too many KV blocks for one replica (>= 2^32)");
  if (a == Allocator::contiguous) {
    if (reserve_tokens < 1) throw std::invalid_argument("the contiguous allocator needs max_model_len >= 1");
    reserve_blocks_ = static_cast<i64>(ceil_div(static_cast<u64>(reserve_tokens), static_cast<u64>(block_size)));
  }
  ref_.assign(num_blocks, 0);
  // Free blocks handed out in id order at first (vLLM BlockPool.__init__ queues them 0, 1, 2, ...).
  stack_.reserve(num_blocks);
  for (std::uint32_t b = num_blocks; b-- > 0;) stack_.push_back(b);
  if (prefix_caching_) {
    key_chain_.assign(num_blocks, -1);
    key_index_.assign(num_blocks, 0);
  }
}

void BlockManager::queue_remove(std::uint32_t b) {
  const std::uint32_t p = prev_[b], n = next_[b];
  if (p != kNone) next_[p] = n; else head_ = n;
  if (n != kNone) prev_[n] = p; else tail_ = p;
  prev_[b] = next_[b] = kNone;
  --num_free_;
}

void BlockManager::queue_push_back(std::uint32_t b) {
  prev_[b] = tail_;
  next_[b] = kNone;
  if (tail_ != kNone) next_[tail_] = b; else head_ = b;
  tail_ = b;
  ++num_free_;
}

void BlockManager::use_lru_queue() {
  if (lru_) return;
  lru_ = true;
  // On the stack no block is shared, so the blocks in use are those not on it, each referenced once.
  ref_.assign(num_blocks_, 1);
  for (const std::uint32_t b : stack_) ref_[b] = 0;
  prev_.assign(num_blocks_, kNone);
  next_.assign(num_blocks_, kNone);
  head_ = tail_ = kNone;
  const std::uint32_t n = num_free_;
  num_free_ = 0;
  // The stack's top (the next block it would have handed out) goes to the front.
  for (auto it = stack_.rbegin(); it != stack_.rend(); ++it) queue_push_back(*it);
  if (num_free_ != n) throw std::logic_error("BlockManager: free count changed while building the free queue");
  stack_.clear();
  stack_.shrink_to_fit();
}

std::uint32_t BlockManager::queue_pop_front() {
  const std::uint32_t b = head_;
  queue_remove(b);
  return b;
}

void BlockManager::allocate(std::vector<std::uint32_t>& table, i64 n) {
  if (n < 0 || n > static_cast<i64>(num_free_))
    throw std::logic_error("BlockManager::allocate: " + std::to_string(n) + " blocks requested, " +
                           std::to_string(num_free_) + " free");
  if (!lru_) {  // the top of the stack, copied as it lies; no reference counts kept (use_lru_queue)
    const auto k = static_cast<std::size_t>(n);
    table.insert(table.end(), stack_.end() - static_cast<std::ptrdiff_t>(k), stack_.end());
    stack_.resize(stack_.size() - k);
    num_free_ -= static_cast<std::uint32_t>(n);
    return;
  }
  for (i64 i = 0; i < n; ++i) {
    const std::uint32_t b = queue_pop_front();
    if (prefix_caching_ && key_chain_[b] >= 0) {
      // Evict: the least recently freed cached block is reused (vLLM _maybe_evict_cached_block).
      uncache(b);
      ++evictions_;
    }
    ref_[b] = 1;
    table.push_back(b);
  }
}

void BlockManager::free(std::vector<std::uint32_t>& table) { free_tail(table, static_cast<i64>(table.size())); }

void BlockManager::free_tail(std::vector<std::uint32_t>& table, i64 n) {
  if (n < 0 || n > static_cast<i64>(table.size()))
    throw std::logic_error("BlockManager::free_tail: " + std::to_string(n) + " of " + std::to_string(table.size()) + " blocks");
  if (!lru_) {  // onto the stack as they lie (no block is shared before the first is cached)
    if (num_free_ + static_cast<std::uint64_t>(n) > num_blocks_)
      throw std::logic_error("BlockManager::free: more blocks freed than allocated");
    stack_.insert(stack_.end(), table.end() - n, table.end());
    num_free_ += static_cast<std::uint32_t>(n);
    table.resize(table.size() - static_cast<std::size_t>(n));
    return;
  }
  // Reverse order: a request's tail blocks are evicted before its head (prefix) blocks.
  for (auto it = table.rbegin(); it != table.rbegin() + n; ++it) {
    const std::uint32_t b = *it;
    if (ref_[b] == 0) throw std::logic_error("BlockManager::free: block " + std::to_string(b) + " freed twice");
    if (--ref_[b] == 0) queue_push_back(b);
  }
  table.resize(table.size() - static_cast<std::size_t>(n));
}

void BlockManager::uncache(std::uint32_t b) {
  const auto it = chains_.find(key_chain_[b]);
  if (it == chains_.end()) throw std::logic_error("BlockManager: a cached block's chain is missing");
  auto& c = it->second;
  c[key_index_[b]] = kNone;
  while (!c.empty() && c.back() == kNone) c.pop_back();
  if (c.empty()) chains_.erase(it);
  key_chain_[b] = -1;
  --cached_blocks_;
}

i64 BlockManager::find_prefix(const ContentKey& key, i64 max_tokens, std::vector<std::uint32_t>& hits) const {
  hits.clear();
  if (!prefix_caching_ || !key.cacheable() || chains_.empty()) return 0;
  const i64 shareable = (key.repeat_tokens >= 0 ? std::min(max_tokens, key.repeat_tokens) : max_tokens) / block_size_;
  i64 evictable = 0;
  std::int64_t chain = -1;
  const std::vector<std::uint32_t>* c = nullptr;
  for (i64 j = 0; j < shareable; ++j) {
    const std::int64_t ch = chain_of(key, j);
    if (ch < 0) break;
    if (ch != chain) {
      const auto it = chains_.find(ch);
      if (it == chains_.end()) break;
      chain = ch;
      c = &it->second;
    }
    if (static_cast<std::size_t>(j) >= c->size()) break;
    const std::uint32_t b = (*c)[static_cast<std::size_t>(j)];
    if (b == kNone) break;  // the longest cached run of leading blocks (vLLM find_longest_cache_hit)
    hits.push_back(b);
    if (ref_[b] == 0) ++evictable;
  }
  return evictable;
}

void BlockManager::take_prefix(std::vector<std::uint32_t>& table, const std::vector<std::uint32_t>& hits) {
  for (const std::uint32_t b : hits) {
    if (ref_[b] == 0) queue_remove(b);
    ++ref_[b];
    table.push_back(b);
  }
}

void BlockManager::register_prefix(const std::vector<std::uint32_t>& table, const ContentKey& key, i64 computed_tokens,
                                   i64& registered) {
  if (!prefix_caching_ || !key.cacheable()) return;
  // A conversation's blocks all repeat (later turns resend them); otherwise only the shared prefix does.
  i64 repeatable = key.conversation >= 0 ? computed_tokens : std::min(key.prefix_tokens, computed_tokens);
  if (key.conversation >= 0 && key.repeat_tokens >= 0) repeatable = std::min(repeatable, key.repeat_tokens);
  const i64 full = repeatable / block_size_;
  if (full <= registered) return;
  use_lru_queue();  // from now on free blocks may hold cached content: keep vLLM's eviction order
  std::int64_t chain = -1;
  std::vector<std::uint32_t>* c = nullptr;
  for (i64 j = registered; j < full; ++j) {
    const std::int64_t ch = chain_of(key, j);
    if (ch != chain) {
      chain = ch;
      c = &chains_[ch];
    }
    if (c->size() <= static_cast<std::size_t>(j)) c->resize(static_cast<std::size_t>(j) + 1, kNone);
    const std::uint32_t b = table[static_cast<std::size_t>(j)];
    auto& slot = (*c)[static_cast<std::size_t>(j)];
    if (host_capacity() > 0) host_store(ch, j);
    if (slot == kNone && key_chain_[b] < 0) {
      slot = b;
      key_chain_[b] = ch;
      key_index_[b] = static_cast<std::uint32_t>(j);
      ++cached_blocks_;
    }
  }
  registered = full;
}

void BlockManager::enable_host_tier(std::uint64_t capacity_blocks, std::uint64_t disk_capacity_blocks,
                                    i64 unit_blocks) {
  host_.capacity = prefix_caching_ ? capacity_blocks : 0;
  disk_.capacity = prefix_caching_ ? disk_capacity_blocks : 0;
  host_unit_blocks_ = std::max<i64>(1, unit_blocks);
}

bool BlockManager::HostLru::touch(const Key& k) {
  const auto it = index.find(k);
  if (it == index.end()) return false;
  order.splice(order.end(), order, it->second);
  return true;
}

void BlockManager::HostLru::put(const Key& k) {
  if (capacity == 0 || touch(k)) return;  // stored again: the most recent
  if (order.size() >= capacity) {
    index.erase(order.front());
    order.pop_front();
  }
  order.push_back(k);
  index.emplace(k, std::prev(order.end()));
}

void BlockManager::host_store(std::int64_t chain, i64 index) {
  host_.put({chain, index});
  disk_.put({chain, index});
}

BlockManager::HostHit BlockManager::find_host_prefix(const ContentKey& key, i64 from_block, i64 max_tokens) {
  HostHit hit;
  if (host_capacity() == 0 || !key.cacheable()) return hit;
  const i64 shareable = (key.repeat_tokens >= 0 ? std::min(max_tokens, key.repeat_tokens) : max_tokens) / block_size_;
  const i64 unit = host_unit_blocks_;
  // vLLM's offloading looks blocks up from the end of the GPU hit; LMCache (chunks of `unit` blocks) looks its chunks
  // up from the prompt's start and stops at the first it lacks (ChunkedTokenDatabase), so the hit ends at a chunk
  // boundary, and a hit that does not reach past the GPU's gives nothing.
  const i64 start = unit > 1 ? 0 : from_block;
  i64 end = start;
  for (; end < shareable; ++end) {
    const std::int64_t ch = chain_of(key, end);
    if (ch < 0 || (!host_.index.count({ch, end}) && !disk_.index.count({ch, end}))) break;
  }
  end = end / unit * unit;
  if (end <= from_block) return hit;
  // Loaded: whole chunks from the one holding from_block (LMCache skips only the chunks vLLM holds whole, so the GPU's
  // blocks of that chunk are read again). Every block looked up becomes the most recent of its levels, those in CPU
  // memory first, so that a block read from disk, stored in CPU memory again, cannot evict one this hit uses.
  const i64 first = from_block / unit * unit;
  host_scratch_.assign(static_cast<std::size_t>(end - start), 0);
  for (i64 j = start; j < end; ++j) {
    const std::pair<std::int64_t, i64> k{chain_of(key, j), j};
    disk_.touch(k);
    host_scratch_[static_cast<std::size_t>(j - start)] = host_.touch(k) ? 1 : 0;
  }
  for (i64 j = std::max(start, first); j < end; ++j) {
    if (host_scratch_[static_cast<std::size_t>(j - start)]) continue;
    host_.put({chain_of(key, j), j});
    ++(j < from_block ? hit.reread_from_disk : hit.from_disk);
  }
  hit.blocks = end - from_block;
  hit.reread = from_block - first;
  return hit;
}

bool BlockManager::check_invariants() const {
  if (!lru_) {
    if (stack_.size() != num_free_) return false;
    std::vector<char> seen(num_blocks_, 0);
    for (const std::uint32_t b : stack_)
      if (b >= num_blocks_ || seen[b]++) return false;
    return true;
  }
  std::uint32_t unreferenced = 0;
  for (std::uint32_t b = 0; b < num_blocks_; ++b) unreferenced += ref_[b] == 0 ? 1 : 0;
  if (unreferenced != num_free_) return false;
  std::uint32_t in_queue = 0;
  std::uint32_t prev = kNone;
  for (std::uint32_t b = head_; b != kNone; b = next_[b]) {
    if (ref_[b] != 0 || prev_[b] != prev || ++in_queue > num_blocks_) return false;
    prev = b;
  }
  if (prev != tail_ || in_queue != num_free_) return false;
  if (prefix_caching_) {
    std::uint64_t cached = 0;
    for (const auto& [chain, c] : chains_) {
      if (c.empty() || c.back() == kNone) return false;
      for (std::size_t j = 0; j < c.size(); ++j) {
        const std::uint32_t b = c[j];
        if (b == kNone) continue;
        if (b >= num_blocks_ || key_chain_[b] != chain || key_index_[b] != j) return false;
        ++cached;
      }
    }
    if (cached != cached_blocks_) return false;
  }
  return true;
}

}  // namespace kvcap::sim
