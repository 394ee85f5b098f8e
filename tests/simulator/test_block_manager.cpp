// The block manager alone: all-or-nothing accounting, frees in reverse order, contiguous reservation,
// and the prefix cache's LRU eviction (vLLM's free queue order) once something is cached.
#include <catch2/catch.hpp>

#include <vector>

#include "kvcap/simulator/block_manager.hpp"

using namespace kvcap;
using namespace kvcap::sim;

TEST_CASE("paged blocks: ceil(tokens / block_size), freed blocks come back", "[sim][blocks]") {
  BlockManager m(10, 16, Allocator::paged, 0, false);
  std::vector<std::uint32_t> a, b;
  CHECK(m.blocks_to_allocate(0, 1) == 1);
  CHECK(m.blocks_to_allocate(0, 16) == 1);
  CHECK(m.blocks_to_allocate(0, 17) == 2);
  CHECK(m.blocks_to_allocate(2, 32) == 0);
  CHECK(m.blocks_to_allocate(2, 33) == 1);
  m.allocate(a, 3);
  m.allocate(b, 7);
  CHECK(m.num_free() == 0);
  CHECK(m.num_used() == 10);
  CHECK_THROWS_AS(m.allocate(a, 1), std::logic_error);  // never beyond the planner's count
  CHECK(m.check_invariants());
  m.free(a);
  CHECK(a.empty());
  CHECK(m.num_free() == 3);
  m.free(b);
  CHECK(m.num_free() == 10);
  CHECK(m.check_invariants());
}

TEST_CASE("contiguous allocation reserves max_model_len at once and never grows", "[sim][blocks]") {
  BlockManager m(100, 16, Allocator::contiguous, 1000, false);  // 1000 tokens = 63 blocks
  CHECK(m.blocks_to_allocate(0, 10) == 63);
  CHECK(m.blocks_to_allocate(63, 999) == 0);
  std::vector<std::uint32_t> t;
  m.allocate(t, 63);
  CHECK(m.blocks_to_allocate(t.size(), 1000) == 0);
  CHECK(m.blocks_to_allocate(0, 10) > static_cast<i64>(m.num_free()));  // a second request does not fit
}

TEST_CASE("prefix blocks: hits are shared, evicted least recently freed first", "[sim][blocks][prefix]") {
  BlockManager m(8, 4, Allocator::paged, 0, true);
  std::vector<std::uint32_t> r1, r2, hits;
  ContentKey g0;
  g0.group = 0;
  g0.prefix_tokens = 8;
  // Request 1 of group 0: prompt of 12 tokens, 8 of them the shared prefix (2 full blocks).
  m.allocate(r1, 3);
  i64 reg = 0;
  m.register_prefix(r1, g0, 12, reg);
  CHECK(reg == 2);
  CHECK(m.check_invariants());
  // Request 2 finds both prefix blocks (at most num_tokens - 1 = 11 tokens: still 2 blocks).
  CHECK(m.find_prefix(g0, 11, hits) == 0);  // referenced by request 1: none evictable
  REQUIRE(hits.size() == 2);
  CHECK(hits[0] == r1[0]);
  CHECK(hits[1] == r1[1]);
  m.take_prefix(r2, hits);
  CHECK(m.ref_count(r1[0]) == 2);
  CHECK(m.num_used() == 3);  // shared, not copied
  m.free(r1);
  CHECK(m.num_used() == 2);  // the prefix is still referenced by request 2
  m.free(r2);
  CHECK(m.num_used() == 0);  // everything free (cached blocks are evictable, not leaked)
  CHECK(m.check_invariants());
  // Still cached: a new request hits both, and they count as evictable (taking them uses free blocks).
  CHECK(m.find_prefix(g0, 100, hits) == 2);
  // Fill the pool: the 6 never-cached-or-older blocks go first, the cached prefix blocks last...
  std::vector<std::uint32_t> big;
  m.allocate(big, 6);
  CHECK(m.evictions() == 0);
  CHECK(m.find_prefix(g0, 100, hits) == 2);
  // ...and the next allocation evicts the least recently freed cached block.
  m.allocate(big, 1);
  CHECK(m.evictions() == 1);
  m.find_prefix(g0, 100, hits);
  CHECK(hits.size() < 2);
  CHECK(m.check_invariants());
}

TEST_CASE("prefix chains: a conversation's history hits after the group's prefix, hits never exceed cached blocks",
          "[sim][blocks][prefix][conversation]") {
  BlockManager m(16, 4, Allocator::paged, 0, true);
  std::vector<std::uint32_t> t1, t2, t3, other, hits;
  // Turn 1 of conversation 7 in group 0: 6 prefix tokens (1 full block of the group), prompt 10 + 3 answer tokens
  // computed = 13 tokens: blocks 0 (group), 1 and 2 (the conversation's; the boundary block is the conversation's).
  ContentKey k;
  k.group = 0;
  k.prefix_tokens = 6;
  k.conversation = 7;
  m.allocate(t1, 4);
  i64 reg = 0;
  m.register_prefix(t1, k, 13, reg);
  CHECK(reg == 3);
  CHECK(m.cached_blocks() == 3);
  CHECK(m.check_invariants());
  // Turn 2 resends the 13 tokens plus a new message (20 tokens): the 3 full blocks hit, the 4th does not exist.
  CHECK(m.find_prefix(k, 19, hits) == 0);
  CHECK(hits == std::vector<std::uint32_t>{t1[0], t1[1], t1[2]});
  // Never more than num_tokens - 1 allows, never more than is cached.
  CHECK(m.find_prefix(k, 7, hits) == 0);
  CHECK(hits.size() == 1);
  // Another conversation of the same group hits only the group's block.
  ContentKey k2 = k;
  k2.conversation = 8;
  m.find_prefix(k2, 100, hits);
  CHECK(hits == std::vector<std::uint32_t>{t1[0]});
  // A single-turn request of the group: only the prefix's full blocks are offered to the cache.
  ContentKey single;
  single.group = 0;
  single.prefix_tokens = 6;
  m.allocate(other, 3);
  i64 reg_other = 0;
  m.register_prefix(other, single, 12, reg_other);
  CHECK(reg_other == 1);
  CHECK(m.cached_blocks() == 3);  // block 0 of the group was cached already: this one stays private
  m.free(other);
  // Turn 1 ends; its blocks stay cached (free, evictable) until the pool needs them.
  m.free(t1);
  CHECK(m.num_used() == 0);
  CHECK(m.find_prefix(k, 19, hits) == 3);
  // Fill the pool: the conversation's blocks are evicted least recently freed first; a partly evicted history hits
  // only its leading run (the tail is freed, so evicted, first), until nothing of it is left.
  m.allocate(t2, 13);
  CHECK(m.evictions() == 0);
  m.allocate(t2, 1);
  CHECK(m.evictions() == 1);
  m.find_prefix(k, 19, hits);
  CHECK(hits.size() < 3);
  m.allocate(t3, 2);
  m.find_prefix(k, 19, hits);
  CHECK(hits.empty());
  CHECK(m.cached_blocks() == 0);
  CHECK(m.check_invariants());
}

TEST_CASE("prefix chains: a repeating conversation caches and finds only its prompt, never its answers",
          "[sim][blocks][prefix][conversation]") {
  BlockManager m(16, 4, Allocator::paged, 0, true);
  std::vector<std::uint32_t> t1, hits;
  // history: repeat, prompt 10 tokens: 20 tokens computed (10 of answer), but only the prompt's 2 full blocks repeat.
  ContentKey k;
  k.conversation = 3;
  k.repeat_tokens = 10;
  m.allocate(t1, 5);
  i64 reg = 0;
  m.register_prefix(t1, k, 20, reg);
  CHECK(m.cached_blocks() == 2);
  // A later turn preempted after 10 generated tokens looks up 19 tokens: the answer's blocks are not its tokens.
  CHECK(m.find_prefix(k, 19, hits) == 0);
  CHECK(hits == std::vector<std::uint32_t>{t1[0], t1[1]});
  CHECK(m.check_invariants());
}

TEST_CASE("host tier: every registered block is stored, found after the GPU hit, evicted least recently used",
          "[sim][blocks][prefix][host_tier]") {
  BlockManager m(8, 4, Allocator::paged, 0, true);
  m.enable_host_tier(3);
  ContentKey k;
  k.conversation = 1;
  std::vector<std::uint32_t> t, other, hits;
  m.allocate(t, 4);
  i64 reg = 0;
  m.register_prefix(t, k, 16, reg);  // 4 full blocks: the host keeps the last 3 it was given (LRU of capacity 3)
  CHECK(m.host_blocks() == 3);
  m.free(t);
  // Evict all of the GPU's cached blocks: the host still has blocks 1-3, not block 0, so no leading run.
  m.allocate(other, 8);
  CHECK(m.find_prefix(k, 100, hits) == 0);
  CHECK(hits.empty());
  CHECK(m.find_host_prefix(k, 0, 100).blocks == 0);
  // After a GPU hit of 1 block the host continues with blocks 1-3, within max_tokens.
  CHECK(m.find_host_prefix(k, 1, 100).blocks == 3);
  CHECK(m.find_host_prefix(k, 1, 12).blocks == 2);  // max_tokens 12: blocks up to index 2
  // Another conversation's blocks are not found; without prefix caching there is no host tier.
  ContentKey k2 = k;
  k2.conversation = 2;
  CHECK(m.find_host_prefix(k2, 1, 100).blocks == 0);
  BlockManager off(8, 4, Allocator::paged, 0, false);
  off.enable_host_tier(3);
  CHECK(off.host_capacity() == 0);
  m.free(other);
  CHECK(m.check_invariants());
}

TEST_CASE("LMCache tiers: CPU then disk, whole chunks from the prompt's start, a disk read stored in CPU memory",
          "[sim][blocks][prefix][host_tier][lmcache]") {
  BlockManager m(16, 4, Allocator::paged, 0, true);
  m.enable_host_tier(2, 8, 2);  // CPU 2 blocks, disk 8, chunks of 2 blocks
  ContentKey k;
  k.conversation = 1;
  std::vector<std::uint32_t> t, other, hits;
  m.allocate(t, 6);
  i64 reg = 0;
  m.register_prefix(t, k, 24, reg);  // 6 blocks: the disk keeps all 6, CPU memory the last 2 (blocks 4, 5)
  CHECK(m.host_blocks() == 2);
  CHECK(m.host_disk_blocks() == 6);
  m.free(t);
  m.allocate(other, 16);  // the GPU's cached blocks are all evicted
  CHECK(m.find_prefix(k, 100, hits) == 0);
  // From block 0, max_tokens 19 allows blocks 0-3: two whole chunks, read from disk, then held in CPU memory.
  auto h = m.find_host_prefix(k, 0, 19);
  CHECK(h.blocks == 4);
  CHECK(h.from_disk == 4);
  CHECK(h.reread == 0);
  // CPU memory (2 blocks) kept the last two read, blocks 2 and 3: a GPU hit of 2 blocks continues there, no disk read.
  h = m.find_host_prefix(k, 2, 19);
  CHECK(h.blocks == 2);
  CHECK(h.from_disk == 0);
  CHECK(h.reread == 0);
  // A GPU hit of 3 blocks: chunks 0-2 (blocks 0-5) reach past it; the chunk holding block 3 is read whole, block 2
  // again; a GPU hit inside the last chunk the host holds gives nothing new beyond whole chunks.
  h = m.find_host_prefix(k, 3, 100);
  CHECK(h.blocks == 3);
  CHECK(h.reread == 1);
  CHECK(m.find_host_prefix(k, 3, 15).blocks == 0);  // max_tokens 15: blocks 0-2, one whole chunk, behind the GPU hit
  m.free(other);
  CHECK(m.check_invariants());
}

TEST_CASE("LMCache tiers: blocks CPU memory holds are not pushed out by the disk blocks of the same hit",
          "[sim][blocks][host_tier][lmcache]") {
  BlockManager m(32, 4, Allocator::paged, 0, true);
  m.enable_host_tier(6, 100, 1);
  ContentKey k;
  k.conversation = 1;
  std::vector<std::uint32_t> t, other, hits;
  m.allocate(t, 10);
  i64 reg = 0;
  m.register_prefix(t, k, 40, reg);  // CPU memory holds blocks 4-9, the disk all 10
  m.free(t);
  m.allocate(other, 32);
  const auto h = m.find_host_prefix(k, 0, 1000);
  CHECK(h.blocks == 10);
  CHECK(h.from_disk == 4);  // blocks 0-3 only: 4-9 were in CPU memory when looked up
  m.free(other);
  CHECK(m.check_invariants());
}
