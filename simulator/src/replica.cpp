// The replica scheduler, after vLLM V1 (vllm/v1/core/sched/scheduler.py, kv_cache_manager.py); docs/simulator.md.
#include "replica.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "kvcap/planner/error.hpp"

namespace kvcap::sim {

namespace {
/// What the prefix cache can know of `r`'s tokens: its shared prefix and its conversation.
ContentKey content_key(const Request& r) {
  ContentKey k;
  k.group = r.prefix_group;
  k.prefix_tokens = r.prefix_tokens;
  k.conversation = r.conversation;
  if (r.prompt_repeats) k.repeat_tokens = r.prompt_tokens;
  return k;
}
}  // namespace

i64 ReplicaConfig::side_blocks(i64 tokens, i64 step_tokens) const {
  if (local_groups.empty() && state_blocks_per_request == 0) return 0;
  u64 blocks = static_cast<u64>(state_blocks_per_request);
  for (const auto& g : local_groups) {
    if (g.kind == KvSpecKind::full && g.evict.on()) {
      // The what-if --kv-eviction: the kept tokens (compacted into whole blocks) and the step's, as the planner's
      // spec_blocks_per_request counts a decode step (kept + the block written to), but a chunk held whole.
      const i64 before = std::max<i64>(0, tokens - std::max<i64>(1, step_tokens));
      const u64 bs = static_cast<u64>(g.block_size);
      const i64 kept = g.evict.held(before);
      blocks =
          add(blocks,
              kept < before ? ceil_div(static_cast<u64>(kept), bs) + ceil_div(static_cast<u64>(tokens - before), bs)
                            : ceil_div(static_cast<u64>(std::max<i64>(1, tokens)), bs),
              "side blocks");
      continue;
    }
    blocks =
        add(blocks, spec_blocks_per_request(g, std::max<i64>(1, tokens), std::max<i64>(1, step_tokens)), "side blocks");
  }
  return static_cast<i64>(ceil_div(blocks, static_cast<u64>(std::max<i64>(1, full_groups))));
}

ReplicaConfig replica_config(const MemoryPlan& plan) {
  ReplicaConfig c;
  if (plan.num_blocks >= UINT32_MAX) throw SpecError("num_blocks", "more than 2^32 - 1 KV blocks per replica");
  // vLLM's hybrid KV cache manager: groups share one pool. The block table is the full-attention groups' (a table
  // entry = one block in each of them); sliding-window and chunked-local groups hold a bounded number of blocks
  // per request (the planner's spec_blocks_per_request: the window plus one step's tokens), linear-attention
  // groups a fixed one or two; both are taken beside the table, in entries. Without a full-attention group the
  // first group is the table (its tokens charged as full attention would charge them: conservative).
  const KvCacheGroup* table = nullptr;
  i64 full = 0;
  for (const auto& g : plan.kv_groups)
    if (g.spec.kind == KvSpecKind::full) table = table ? table : &g, ++full;
  if (!table && !plan.kv_groups.empty()) table = &plan.kv_groups.front(), full = 1;
  if (table && table->spec.evict.on()) {
    // The what-if --kv-eviction (full-attention models only: planner/deployment.cpp): each full group's blocks are
    // bounded by the policy, held beside an empty table.
    c.table_evicts = true;
    for (const auto& g : plan.kv_groups)
      if (g.spec.kind == KvSpecKind::full) c.local_groups.push_back(g.spec);
  }
  for (const auto& g : plan.kv_groups) {
    if (&g == table || g.spec.kind == KvSpecKind::full) continue;
    if (g.spec.kind == KvSpecKind::mamba)
      c.state_blocks_per_request += g.spec.state_blocks;
    else
      c.local_groups.push_back(g.spec);
  }
  c.full_groups = std::max<i64>(1, full);
  // vLLM's block pool keeps one block aside as the null block, a placeholder in block tables that is never handed
  // to a request (vllm/v1/core/block_pool.py BlockPool.__init__: null_block = free_block_queue.popleft()), so
  // requests share num_blocks - 1; the logged capacity and concurrency count all num_blocks.
  const u64 usable = plan.num_blocks > 0 ? plan.num_blocks - 1 : 0;
  c.num_blocks = static_cast<std::uint32_t>(usable / static_cast<u64>(c.full_groups));
  c.block_size = table ? table->spec.block_size : plan.dep.block_size;
  c.max_num_batched_tokens = plan.dep.max_num_batched_tokens;
  c.max_num_seqs = plan.dep.max_num_seqs;
  c.max_model_len = plan.dep.max_model_len;
  return c;
}

Replica::Replica(std::uint32_t index, const ReplicaConfig& c, const StepTimer& t, Collector& out, bool check)
    : index_(index),
      cfg_(c),
      timer_(t),
      kv_(c.num_blocks, c.block_size, c.allocator, c.max_model_len, c.prefix_caching && !c.table_evicts),
      out_(out),
      check_(check),
      // Aggregation needs a decode's load to be its held tokens (StepTimer::adds_decodes) and no blocks beside the
      // table (a sliding window's blocks move every step).
      aggregate_(c.aggregate_decodes && t.adds_decodes() && c.local_groups.empty() && c.state_blocks_per_request == 0),
      active_valid_(aggregate_) {
  if (c.host_blocks + c.host_disk_blocks > 0)
    kv_.enable_host_tier(c.host_blocks, c.host_disk_blocks, c.host_unit_blocks);
  // A decoding request needs a block at most block_size ticks later (paged; a contiguous reservation, or a block
  // size beyond the ring, lasts longer: such a request hops along the ring, which changes nothing but the cost).
  if (aggregate_) ring_.resize(static_cast<std::size_t>(std::min<i64>(c.block_size, 1024)) + 1);
}

Request& Replica::enqueue(const RequestSpec& spec, std::uint64_t id, i64 output_tokens, bool truncated, double now) {
  integrate(now);
  std::uint32_t s = 0;
  if (!free_slots_.empty()) {
    s = free_slots_.back();
    free_slots_.pop_back();
  } else {
    s = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Request& r = slots_[s];
  std::vector<std::uint32_t> keep = std::move(r.blocks);  // reuse the table's capacity
  keep.clear();
  r = Request{};
  r.blocks = std::move(keep);
  r.id = id;
  r.arrival_s = spec.arrival_s;
  r.prompt_tokens = spec.prompt_tokens;
  r.output_tokens = output_tokens;
  r.truncated = truncated;
  r.num_tokens = spec.prompt_tokens;
  r.prefix_group = spec.prefix_group;
  r.prefix_tokens = spec.prefix_tokens;
  r.conversation = spec.conversation;
  r.turn = spec.turn;
  r.prompt_repeats = spec.prompt_repeats;
  waiting_.push_back(s);
  waiting_tokens_ += r.num_tokens;
  ++stats_.routed;
  stats_.waiting_max = std::max<i64>(stats_.waiting_max, static_cast<i64>(waiting_.size()));
  return r;
}

Outcome Replica::schedule(double now, double& step_s, Observer* obs) {
  integrate(now);
  StepLoad load;
  i64 budget = cfg_.max_num_batched_tokens;
  bool preempted = false;
  bool aggregated = false;
  const bool admission_point = burst_left_ == 0 || running_.empty();
  if (cfg_.prefill_first && has_prefill_work(now, admission_point) &&
      schedule_prefills_only(now, budget, load, admission_point)) {
    burst_left_ = 0;  // a prefill step stands alone: the scheduler runs again after it
    pressure_ = budget <= 0;
    step_s = start_step(now, load, obs);
    return Outcome::stepped;
  }
  if (active_valid_ && lazy_count_ > 0) {
    const i64 lazy_blocks = take_due();
    aggregated = lazy_count_ > 0 && aggregated_step_fits(now, budget, lazy_blocks);
    if (aggregated) schedule_aggregated(now, budget, load);
  }
  if (!aggregated) {
    materialize_all();
    active_valid_ = false;
    // Prefill-first: a step of decodes only (the prompts' chunks did not fit); when no decode can run, the prompts'
    // chunks, preempting as vLLM does, so that requests holding blocks mid-prompt cannot stall each other.
    preempted = schedule_running(now, budget, load, obs, cfg_.prefill_first);
    if (cfg_.prefill_first && load.sequences == 0 && !preempted) preempted = schedule_running(now, budget, load, obs);
  }
  // A step that spent the budget or preempted: the next is likely to as well, and would materialize every lazy request
  // again; its requests stay active until a step has room (a matter of speed only: results are the same either way).
  pressure_ = !aggregated && (preempted || budget <= 0);
  // 2. WAITING requests, only when nothing was preempted in this step (as vLLM), FCFS, while the token
  //    budget and max_num_seqs allow and their first chunk's blocks can be allocated. With multi-step
  //    scheduling only at the start of a burst of num_scheduler_steps steps (or when nothing runs).
  const bool burst_start = burst_left_ == 0 || running_.empty();
  burst_left_ = burst_start ? cfg_.num_scheduler_steps - 1 : burst_left_ - 1;
  // A prefill-first engine admits in prefill steps only (schedule_prefills_only).
  if (!preempted && burst_start && !cfg_.prefill_first) admit_waiting(now, budget, load);
  if (load.sequences == 0) {
    if (loading_until(now) > now) return Outcome::idle;  // requests wait for their host-tier loads
    if (!waiting_.empty() && !preempted)
      throw std::logic_error("scheduler stalled: replica " + std::to_string(index_) + " has " +
                             std::to_string(waiting_.size()) + " waiting requests and cannot admit one");
    return preempted ? Outcome::retry : Outcome::idle;
  }
  step_s = start_step(now, load, obs);
  return Outcome::stepped;
}

/// 1. RUNNING requests first, in admission order (decode-first: a running request's decode token or next
/// prefill chunk is scheduled before any waiting request is admitted). Returns whether it preempted.
bool Replica::schedule_running(double now, i64& budget, StepLoad& load, Observer* obs, bool decodes_only) {
  bool preempted = false;
  std::size_t i = 0;
  while (i < running_.size() && budget > 0) {
    const std::uint32_t s = running_[i];
    Request& r = slots_[s];
    // Its blocks are still coming from the host tier (WAITING_FOR_REMOTE_KVS), or a prompt in a decode-only step.
    if (r.ready_s > now || (decodes_only && in_prefill(r))) {
      ++i;
      continue;
    }
    const i64 n = std::min(r.num_tokens - r.computed, budget);  // chunked prefill: at most the budget
    if (!grow(s, n, now, preempted, obs)) break;
    add_to_step(r, n, load);
    budget -= n;
    ++i;
  }
  return preempted;
}

/// Whether a prefill-first step may have something to run: a ready running request with prompt tokens left (a chunked
/// prompt, or one recomputed after preemption), or, at an admission point, a waiting request with room for it under
/// max_num_seqs whose first step's blocks are free (a prefix-cache hit only lowers that).
bool Replica::has_prefill_work(double now, bool admission_point) const {
  for (const std::uint32_t s : active_valid_ ? active_ : running_) {  // lazy requests only decode
    const Request& r = slots_[s];
    if (r.ready_s <= now && in_prefill(r)) return true;
  }
  if (!admission_point || waiting_.empty() || static_cast<i64>(running_.size()) >= cfg_.max_num_seqs) return false;
  const Request& head = slots_[waiting_.front()];
  // A prefix-cache hit, a host-tier or remote load, or the eviction what-if change what admission needs: admit()
  // judges those. Otherwise its first chunk's blocks must be free (admit's own test without a hit).
  if (cfg_.table_evicts || kv_.host_capacity() > 0 || head.remote_tokens > 0 ||
      (kv_.prefix_caching() && (head.prefix_group >= 0 || head.conversation >= 0)))
    return true;
  const i64 first = std::min(head.num_tokens, cfg_.max_num_batched_tokens);
  return kv_.blocks_to_allocate(0, first) + cfg_.side_blocks(first, first) <= static_cast<i64>(kv_.num_free());
}

/// Prefill-first (ReplicaConfig::prefill_first): the running requests' remaining prompt tokens in running order, then,
/// at an admission point, the waiting requests admitted, and no decode token (SGLang's prefill batch, vLLM V0's prompt
/// step). Nothing is preempted for a prompt (SGLang reserves a prompt's memory when it admits it, V0 allocates a
/// prompt whole): a chunk whose blocks are not free waits, and no waiting request is admitted past it. False when
/// nothing could be scheduled, with nothing changed: the caller then forms a decode step. The lazy decodes are
/// materialized only when the step runs, so that they do not advance in it.
bool Replica::schedule_prefills_only(double now, i64& budget, StepLoad& load, bool admission_point) {
  const std::vector<std::uint32_t>& order = active_valid_ ? active_ : running_;
  bool blocked = false;  // a prompt's chunk waits for blocks: newer requests do not overtake it
  for (std::size_t i = 0; i < order.size() && budget > 0 && !blocked; ++i) {
    const std::uint32_t s = order[i];
    Request& r = slots_[s];
    if (r.ready_s > now || !in_prefill(r)) continue;
    const i64 n = std::min(r.num_tokens - r.computed, budget);
    const Growth g = growth(r, n);
    if (g.table + g.side > static_cast<i64>(kv_.num_free())) {
      blocked = true;
      break;
    }
    bool preempted = false;
    if (!grow(s, n, now, preempted, nullptr) || preempted)
      throw std::logic_error("prefill step preempted on replica " + std::to_string(index_));
    add_to_step(r, n, load);
    budget -= n;
  }
  if (admission_point && !blocked) admit_waiting(now, budget, load);
  if (load.sequences == 0) return false;
  materialize_all();
  active_valid_ = false;
  return true;
}

/// What request `r` needs for `n` more tokens: table blocks, the blocks it wants beside the table after the step, and
/// how many of those it must still take (allocate_slots' count, all or nothing).
inline Replica::Growth Replica::growth(const Request& r, i64 n) const {
  Growth g;
  g.table = cfg_.table_evicts ? 0 : kv_.blocks_to_allocate(r.blocks.size(), r.computed + n);
  g.side_want = cfg_.side_blocks(r.computed + n, n);
  g.side = std::max<i64>(0, g.side_want - static_cast<i64>(r.state_blocks.size()));
  return g;
}

/// The blocks running request `s` needs for `n` more tokens (kv_cache_manager.allocate_slots: all or nothing, in
/// every group), preempting until they fit; false when `s` itself was preempted.
inline bool Replica::grow(std::uint32_t s, i64 n, double now, bool& preempted, Observer* obs) {
  Request& r = slots_[s];
  while (true) {
    const Growth g = growth(r, n);
    const i64 table_need = g.table, side_want = g.side_want, side_need = g.side;
    const i64 need = table_need + side_need;
    if (need <= static_cast<i64>(kv_.num_free())) {
      if (table_need > 0) {
        kv_.allocate(r.blocks, table_need);
        sum_table_blocks_ += table_need;
      }
      if (side_need > 0) kv_.allocate(r.state_blocks, side_need);
      // Blocks that left the window go back (after a prefill chunk, a decode step needs fewer).
      if (side_want < static_cast<i64>(r.state_blocks.size()))
        kv_.free_tail(r.state_blocks, static_cast<i64>(r.state_blocks.size()) - side_want);
      return true;
    }
    // Out of blocks: preempt the most recently admitted running request (self.running.pop()),
    // by recompute: its blocks are freed and it goes back to the front of the waiting queue.
    const std::uint32_t victim = running_.back();
    preempt(victim, now, r.id, need, obs);
    preempted = true;
    if (victim == s) return false;
  }
}

void Replica::admit_waiting(double now, i64& budget, StepLoad& load) {
  while (!waiting_.empty() && budget > 0 && static_cast<i64>(running_.size()) < cfg_.max_num_seqs)
    if (!admit(waiting_.front(), now, budget, load)) break;  // cannot be scheduled: stop admitting
}

/// Admits waiting request `s` with its first chunk when its blocks can be allocated; false when they cannot.
bool Replica::admit(std::uint32_t s, double now, i64& budget, StepLoad& load) {
  Request& r = slots_[s];
  // Prefix-cache hit (kv_cache_manager.get_computed_blocks): whole blocks, never the last token.
  i64 evictable = 0;
  hits_.clear();
  if (kv_.prefix_caching() && (r.prefix_group >= 0 || r.conversation >= 0))
    evictable = kv_.find_prefix(content_key(r), r.num_tokens - 1, hits_);
  const i64 gpu_hit_blocks = static_cast<i64>(hits_.size());
  // The hit continues in the host tier (vLLM's offloading connector, get_num_new_matched_tokens): those blocks get
  // GPU blocks now and are copied in before the request runs.
  const BlockManager::HostHit host = kv_.host_capacity() > 0 && r.remote_tokens == 0
                                         ? kv_.find_host_prefix(content_key(r), gpu_hit_blocks, r.num_tokens - 1)
                                         : BlockManager::HostHit{};
  const i64 host_hit_blocks = host.blocks;
  const i64 hit_tokens = (gpu_hit_blocks + host_hit_blocks) * cfg_.block_size;
  // A disaggregated decode worker: the prompt's KV beyond the local hit comes from the prefill worker
  // (NixlConnector.get_num_new_matched_tokens: all prompt tokens but the last, less the local hit); its blocks are
  // allocated now and the request runs once the read is done (WAITING_FOR_REMOTE_KVS), its last prompt token then.
  const i64 remote = std::max<i64>(0, r.remote_tokens - hit_tokens);
  const i64 loaded = hit_tokens + remote;
  const i64 n = host_hit_blocks > 0 || remote > 0 ? 0 : std::min(r.num_tokens - hit_tokens, budget);
  const i64 need = cfg_.table_evicts ? 0 : kv_.blocks_to_allocate(hits_.size(), loaded + n);
  const i64 side = cfg_.side_blocks(loaded + n, remote > 0 ? 1 : n);  // remote: the window's blocks only
  // Under --kv-eviction a request admitted with its first chunk may need more blocks at a later chunk (the kept tokens
  // and a whole chunk), which vLLM's admission rule would meet by preempting it, again and again: kvcap admits it only
  // when its prefill's largest step fits beside the running requests (peak_blocks), a choice of its own.
  const i64 peak_blocks =
      cfg_.table_evicts ? cfg_.side_blocks(r.num_tokens, std::min(cfg_.max_num_batched_tokens, r.num_tokens)) : 0;
  if (std::max(need + side, peak_blocks) + evictable > static_cast<i64>(kv_.num_free())) return false;
  kv_.take_prefix(r.blocks, hits_);
  kv_.allocate(r.blocks, need);
  kv_.allocate(r.state_blocks, side);
  sum_table_blocks_ += static_cast<i64>(r.blocks.size());
  waiting_.pop_front();
  waiting_tokens_ -= r.num_tokens;
  running_.push_back(s);
  if (active_valid_) active_.push_back(s);
  r.order = ++admitted_;
  r.computed = loaded;
  r.registered_prefix_blocks = gpu_hit_blocks;
  sum_slot_tokens_ += loaded;
  if (r.first_scheduled_s < 0) {
    r.first_scheduled_s = now;
    r.cached_tokens = hit_tokens;
  }
  stats_.prefix_cache_hit_tokens += static_cast<std::uint64_t>(hit_tokens);
  if (kv_.prefix_caching()) stats_.prefix_cache_query_tokens += static_cast<std::uint64_t>(r.num_tokens);
  r.ready_s = 0;
  if (remote > 0) {
    const double load_s = r.remote_s * static_cast<double>(remote) / static_cast<double>(r.remote_tokens);
    r.ready_s = now + load_s;
    r.remote_tokens = 0;  // read once: a preempted request computes its prompt here (vLLM recomputes it locally)
    stats_.kv_received_tokens += static_cast<std::uint64_t>(remote);
    stats_.kv_transfer_s += load_s;
    return true;  // it joins a step once its KV is here
  }
  r.remote_tokens = 0;
  if (host_hit_blocks > 0) {
    const double load_s =
        static_cast<double>(host_hit_blocks + host.reread) * cfg_.host_reload_s_per_block +
        static_cast<double>(host.from_disk + host.reread_from_disk) * cfg_.host_disk_reload_s_per_block;
    r.ready_s = now + load_s;
    stats_.host_hit_tokens += static_cast<std::uint64_t>(host_hit_blocks * cfg_.block_size);
    stats_.host_disk_hit_tokens += static_cast<std::uint64_t>(host.from_disk * cfg_.block_size);
    stats_.host_load_s += load_s;
    return true;  // it joins a step once loaded
  }
  add_to_step(r, n, load);
  budget -= n;
  return true;
}

/// Times the formed step, counts it, checks the block manager when asked, tells the observer; returns its duration.
double Replica::start_step(double now, const StepLoad& load, Observer* obs) {
  const StepCost c = timer_.cost(load);
  busy_ = true;
  ++stats_.steps;
  stats_.busy_s += c.step_s;
  add_step_cost(breakdown_, c);
  const std::uint64_t used = kv_.num_used();
  peak_used_ = std::max<std::uint64_t>(peak_used_, used);
  stats_.running_max = std::max<i64>(stats_.running_max, static_cast<i64>(running_.size()));
  const double waste = static_cast<double>(sum_table_blocks_ * cfg_.block_size - sum_slot_tokens_);
  waste_per_request_max_ = std::max(waste_per_request_max_, waste / static_cast<double>(running_.size()));
  if (check_ && (!kv_.check_invariants() || used > kv_.num_blocks()))
    throw std::logic_error("block manager invariant broken on replica " + std::to_string(index_));
  if (obs) {
    StepRecord rec;
    rec.start_s = now;
    rec.duration_s = c.step_s;
    rec.replica = index_;
    rec.sequences = load.sequences;
    rec.tokens = load.tokens;
    rec.decode_tokens = load.decode_tokens;
    rec.kv_used_blocks = used;
    rec.kv_total_blocks = kv_.num_blocks();
    rec.kv_slot_tokens = sum_slot_tokens_;
    rec.kv_table_blocks = sum_table_blocks_;
    obs->on_step(rec);
  }
  return c.step_s;
}

void Replica::finish_step(double now) {
  integrate(now);
  busy_ = false;
  if (!active_valid_) {
    // A per-request step (no request is lazy): every running request, then active_ is all of them again.
    std::size_t out = 0;
    for (std::size_t k = 0; k < running_.size(); ++k)
      if (!finish_request(running_[k], now)) running_[out++] = running_[k];
    running_.resize(out);
    if (aggregate_) active_ = running_;  // without aggregation active_ is never read
    active_valid_ = aggregate_;
  } else {
    done_.clear();
    std::size_t out = 0;
    for (std::size_t k = 0; k < active_.size(); ++k) {
      if (finish_request(active_[k], now))
        done_.push_back(active_[k]);
      else
        active_[out++] = active_[k];
    }
    active_.resize(out);
    if (!done_.empty()) {  // both in running order: one merge pass drops the completed
      std::size_t j = 0, keep = 0;
      for (const std::uint32_t s : running_)
        if (j < done_.size() && s == done_[j])
          ++j;
        else
          running_[keep++] = s;
      running_.resize(keep);
    }
    if (lazy_count_ > 0) {  // every lazy request computed its decode token and sampled the next
      lazy_itl(now);
      ++tick_;
      lazy_held_ += lazy_count_;
      stats_.decode_tokens += static_cast<std::uint64_t>(lazy_count_);
      stats_.decode_tokens_aggregated += static_cast<std::uint64_t>(lazy_count_);
    }
  }
  if (aggregate_ && !pressure_) aggregate_decodes(now);
}

/// The end of the step for running request `s` (Scheduler.update_from_output): its scheduled tokens computed, a token
/// sampled when its KV caught up, completion. True when it completed (its blocks are freed, its slot is free).
bool Replica::finish_request(std::uint32_t s, double now) {
  Request& r = slots_[s];
  if (r.scheduled > 0) {
    count_tokens(r, r.computed, r.computed + r.scheduled);
    r.computed += r.scheduled;
    r.scheduled = 0;
    if (r.prefix_group >= 0 || r.conversation >= 0)
      kv_.register_prefix(r.blocks, content_key(r), r.computed, r.registered_prefix_blocks);
    if (r.computed == r.num_tokens) {
      if (r.last_token_s >= 0) out_.add_itl(now - r.last_token_s);
      r.last_token_s = now;
      ++r.generated;
      ++r.num_tokens;
      if (r.first_token_s < 0) r.first_token_s = now;
      if (r.generated >= r.output_tokens) {
        complete(s, now);
        return true;
      }
    }
  }
  return false;
}

// ---- Decode steps in aggregate ------------------------------------------------------------------------------
// In most steps most running requests only decode: one token computed into a block they already hold, one sampled,
// nothing registered in the prefix cache, not the last token. Such a step changes the request by +1 in computed,
// generated, num_tokens and the high-water mark and adds (held tokens) to the step's load, the same for each. A
// request in that state becomes lazy: it leaves active_, the replica counts lazy requests and their held tokens, and
// a tick (one aggregated step) advances them all at O(1). A ring of buckets holds each lazy request at its next event:
// every block_size ticks it gets its next block while it stays lazy, and before the step that samples its last token
// it wakes (materialize) and is visited again. A step is aggregated only when it would schedule every running request
// in full and allocate every block without preempting (aggregated_step_fits); otherwise every lazy request is
// materialized and the per-request loop runs, so budget cuts and preemption order stay vLLM's. The load's sums are of
// integers (exact in doubles) and active requests are visited in running order as before; lazy requests take their
// blocks after them, which renames block ids and nothing else. So every result is the per-request loop's bit for bit
// (tests/simulator/test_aggregate_decodes.cpp; ReplicaConfig::aggregate_decodes).

/// A lazy request's next event: its wake, its next block, or a hop to the ring's far end when both are further.
i64 Replica::next_event_tick(const Request& r) const {
  return std::min({r.wake_tick, r.block_tick, tick_ + static_cast<i64>(ring_.size()) - 1});
}

/// The lazy requests with an event before this tick's step: those that sample their last token in it are
/// materialized into active_ (in running order); those that need a block go to due_; the others hop on. Returns
/// due_'s size.
i64 Replica::take_due() {
  auto& bucket = ring_[static_cast<std::size_t>(tick_) % ring_.size()];
  due_.clear();
  for (const std::uint32_t s : bucket) {
    Request& r = slots_[s];
    if (r.wake_tick == tick_) {
      materialize(s);
      const auto at = std::upper_bound(active_.begin(), active_.end(), r.order,
                                       [&](std::uint64_t o, std::uint32_t x) { return o < slots_[x].order; });
      active_.insert(at, s);
    } else if (r.block_tick == tick_) {
      due_.push_back(s);
    } else {
      ring_[static_cast<std::size_t>(next_event_tick(r)) % ring_.size()].push_back(s);
    }
  }
  bucket.clear();
  return static_cast<i64>(due_.size());
}

/// Whether this step schedules every running request in full (the token budget holds them all) and allocates their
/// blocks without preempting.
bool Replica::aggregated_step_fits(double now, i64 budget, i64 lazy_blocks) const {
  i64 tokens = lazy_count_, blocks = lazy_blocks;
  for (const std::uint32_t s : active_) {
    const Request& r = slots_[s];
    if (r.ready_s > now) continue;
    tokens += r.num_tokens - r.computed;
    blocks += kv_.blocks_to_allocate(r.blocks.size(), r.num_tokens);
  }
  return tokens <= budget && blocks <= static_cast<i64>(kv_.num_free());
}

/// schedule_running() when aggregated_step_fits(): the active requests in running order, then the lazy ones' load.
void Replica::schedule_aggregated(double now, i64& budget, StepLoad& load) {
  for (const std::uint32_t s : active_) {
    Request& r = slots_[s];
    if (r.ready_s > now) continue;
    const i64 n = r.num_tokens - r.computed;
    const i64 need = kv_.blocks_to_allocate(r.blocks.size(), r.computed + n);
    if (need > 0) {
      kv_.allocate(r.blocks, need);
      sum_table_blocks_ += need;
    }
    add_to_step(r, n, load);
    budget -= n;
  }
  // The lazy requests whose decode starts a block get it (in bucket order, not running order: before anything is
  // cached the pool's ids are interchangeable, and after, the same blocks leave the front of the free queue whoever
  // takes them, so only the ids' names differ, which no result reads).
  for (const std::uint32_t s : due_) {
    Request& r = slots_[s];
    kv_.allocate(r.blocks, 1);
    ++sum_table_blocks_;
    r.block_tick += cfg_.block_size;
    ring_[static_cast<std::size_t>(next_event_tick(r)) % ring_.size()].push_back(s);
  }
  due_.clear();
  timer_.add_decodes(load, lazy_count_, lazy_held_);
  sum_slot_tokens_ += lazy_count_;
  budget -= lazy_count_;
}

/// Makes the active requests that only decode in the coming steps lazy until the tick they need their own step.
void Replica::aggregate_decodes(double now) {
  std::size_t out = 0;
  for (const std::uint32_t s : active_) {
    Request& r = slots_[s];
    // Decoding (one token to compute, after the first output token, at the high-water mark) and nothing to register: no
    // conversation, and a shared prefix (if any) registered already.
    const bool decoding = r.num_tokens - r.computed == 1 && r.generated > 0 && r.computed == r.computed_high_water &&
                          r.ready_s <= now && r.conversation < 0 &&
                          (r.prefix_group < 0 || !kv_.prefix_caching() ||
                           r.registered_prefix_blocks >= r.prefix_tokens / cfg_.block_size);
    if (decoding) {
      // Steps before the one sampling its last token (it wakes then), and before the one needing a block (once
      // computed + 1 exceeds the blocks it holds).
      const i64 last = r.output_tokens - r.generated - 1;
      if (last >= 1) {
        r.lazy = true;
        r.lazy_tick = tick_;
        r.wake_tick = tick_ + last;
        r.block_tick = tick_ + static_cast<i64>(r.blocks.size()) * cfg_.block_size - r.computed;
        ring_[static_cast<std::size_t>(next_event_tick(r)) % ring_.size()].push_back(s);
        ++lazy_count_;
        lazy_held_ += r.computed + 1;
        fresh_lazy_.push_back(s);
        continue;
      }
    }
    active_[out++] = s;
  }
  active_.resize(out);
}

/// The inter-token latencies of the lazy requests' tokens sampled at `now`, the end of tick tick_'s step. Ticks are
/// consecutive steps (a step that is not a tick materializes every lazy request first), so a request lazy before this
/// tick sampled its previous token at the previous tick's end; one made lazy since (fresh_lazy_) at its last_token_s.
void Replica::lazy_itl(double now) {
  i64 steady = lazy_count_;
  for (const std::uint32_t s : fresh_lazy_) {
    const Request& r = slots_[s];
    if (!r.lazy || r.lazy_tick != tick_) continue;  // woken since (it samples in its own step)
    out_.add_itl(now - r.last_token_s);
    --steady;
  }
  fresh_lazy_.clear();
  if (steady > 0) out_.add_itl(now - last_tick_end_s_, static_cast<std::uint64_t>(steady));
  last_tick_end_s_ = now;
}

/// Lazy request `s` gets the fields of the current tick and leaves the aggregate.
void Replica::materialize(std::uint32_t s) {
  Request& r = slots_[s];
  const i64 m = tick_ - r.lazy_tick;
  r.computed += m;
  r.generated += m;
  r.num_tokens += m;
  r.computed_high_water += m;
  if (m > 0) r.last_token_s = last_tick_end_s_;
  r.lazy = false;
  --lazy_count_;
  lazy_held_ -= r.computed + 1;
}

/// Every lazy request materialized (before a per-request step).
void Replica::materialize_all() {
  if (lazy_count_ == 0) return;
  for (const std::uint32_t s : running_)
    if (slots_[s].lazy) materialize(s);
  for (auto& bucket : ring_) bucket.clear();
  due_.clear();
  fresh_lazy_.clear();
  if (lazy_count_ != 0 || lazy_held_ != 0)
    throw std::logic_error("lazy decode accounting broken on replica " + std::to_string(index_));
}

TimelineSample Replica::sample(double now) const {
  TimelineSample t;
  t.time_s = now;
  t.replica = index_;
  t.running = static_cast<i64>(running_.size());
  t.waiting = static_cast<i64>(waiting_.size());
  t.kv_used_blocks = kv_.num_used();
  t.kv_total_blocks = kv_.num_blocks();
  t.kv_utilization =
      kv_.num_blocks() ? static_cast<double>(t.kv_used_blocks) / static_cast<double>(t.kv_total_blocks) : 0;
  t.preemptions = stats_.preemptions;
  return t;
}

ReplicaStats Replica::finish(double start, double end) {
  integrate(end);
  ReplicaStats s = stats_;
  const double span = end - start;
  if (span > 0) {
    s.kv_utilization_mean = area_used_ / (static_cast<double>(kv_.num_blocks()) * span);
    s.running_mean = area_running_ / span;
    s.waiting_mean = area_waiting_ / span;
  }
  s.kv_utilization_max = kv_.num_blocks() ? static_cast<double>(peak_used_) / static_cast<double>(kv_.num_blocks()) : 0;
  // The time integral's rounding can put a pool held full all along a last bit above its peak.
  s.kv_utilization_mean = std::min(s.kv_utilization_mean, s.kv_utilization_max);
  s.kv_used_blocks_end = kv_.num_used();
  if (kv_.num_used() != 0) throw std::logic_error("KV blocks leaked on replica " + std::to_string(index_));
  return s;
}

double Replica::loading_until(double now) const {
  double t = now;
  for (const std::uint32_t s : running_)
    if (slots_[s].ready_s > now && (t == now || slots_[s].ready_s < t)) t = slots_[s].ready_s;
  return t;
}

inline void Replica::add_to_step(Request& r, i64 n, StepLoad& load) {
  r.scheduled = n;
  sum_slot_tokens_ += n;
  timer_.add(load, r.computed, n, r.computed + n == r.num_tokens);
}

void Replica::preempt(std::uint32_t victim, double now, std::uint64_t for_id, i64 need, Observer* obs) {
  Request& v = slots_[victim];
  running_.pop_back();
  if (obs) {
    PreemptionRecord p;
    p.time_s = now;
    p.replica = index_;
    p.victim_id = v.id;
    p.for_request_id = for_id;
    p.free_blocks = static_cast<i64>(kv_.num_free());
    p.blocks_needed = need;
    p.victim_computed_tokens = v.computed;
    obs->on_preemption(p);
  }
  sum_table_blocks_ -= static_cast<i64>(v.blocks.size());
  sum_slot_tokens_ -= v.computed;
  kv_.free(v.blocks);
  kv_.free(v.state_blocks);
  v.computed = 0;
  v.registered_prefix_blocks = 0;
  ++v.preemptions;
  ++stats_.preemptions;
  waiting_.push_front(victim);  // self.waiting.prepend_request
  waiting_tokens_ += v.num_tokens;
}

inline void Replica::count_tokens(Request& r, i64 from, i64 to) {
  // Positions below the request's high-water mark were computed before a preemption: recomputed.
  const i64 again = std::max<i64>(0, std::min(to, r.computed_high_water) - from);
  stats_.recomputed_tokens += static_cast<std::uint64_t>(again);
  const i64 first = std::max(from, r.computed_high_water);
  if (to > first) {
    const i64 prompt_part = std::max<i64>(0, std::min(to, r.prompt_tokens) - first);
    stats_.prefill_tokens += static_cast<std::uint64_t>(prompt_part);
    stats_.decode_tokens += static_cast<std::uint64_t>(to - first - prompt_part);
    r.computed_high_water = to;
  }
}

void Replica::complete(std::uint32_t s, double now) {
  Request& r = slots_[s];
  sum_table_blocks_ -= static_cast<i64>(r.blocks.size());
  sum_slot_tokens_ -= r.computed;
  kv_.free(r.blocks);
  kv_.free(r.state_blocks);
  ++stats_.completed;
  if (cfg_.hand_off)
    out_.hand_off(r, now);
  else
    out_.record(r, index_, now);
  free_slots_.push_back(s);
}

inline void Replica::integrate(double now) {
  const double dt = now - last_t_;
  if (dt > 0) {
    const double used = static_cast<double>(kv_.num_used());
    area_used_ += used * dt;
    area_running_ += static_cast<double>(running_.size()) * dt;
    area_waiting_ += static_cast<double>(waiting_.size()) * dt;
    area_waste_ += static_cast<double>(sum_table_blocks_ * cfg_.block_size - sum_slot_tokens_) * dt;
    area_alloc_ += used * static_cast<double>(cfg_.block_size) * dt;
    last_t_ = now;
  }
}

}  // namespace kvcap::sim
