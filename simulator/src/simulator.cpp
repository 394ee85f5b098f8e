// The event loop: requests from the source (open loop, or a closed loop of clients) -> the router -> the replicas,
// on one discrete-event queue (event_queue.hpp: its tie-break rule orders what happens at one instant). The nouns
// are files: replica.* (the scheduler), router.* (routing policies), collector.* (metrics), load.cpp (offered load
// and the closed loop's cycle). docs/simulator.md describes the whole model.
#include "kvcap/simulator/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "collector.hpp"
#include "kvcap/planner/error.hpp"
#include "kvcap/planner/host_tier.hpp"
#include "kvcap/simulator/event_queue.hpp"
#include "kvcap/simulator/random.hpp"
#include "replica.hpp"
#include "router.hpp"

namespace kvcap::sim {

namespace {

/// The replica settings' checks (what can be checked before the first request); returns the longest request, prompt
/// plus output, a replica can hold.
i64 checked_max_request_tokens(const ReplicaConfig& rc, std::uint32_t num_replicas) {
  if (num_replicas < 1) throw SpecError("replicas", "must be >= 1");
  if (rc.num_blocks < 1) throw SpecError("num_blocks", "a replica needs at least one KV block");
  if (rc.block_size < 1) throw SpecError("block_size", "must be >= 1");
  if (rc.max_num_batched_tokens < 1) throw SpecError("max_num_batched_tokens", "must be >= 1");
  if (rc.max_num_seqs < 1) throw SpecError("max_num_seqs", "must be >= 1");
  if (rc.max_model_len < 2) throw SpecError("max_model_len", "must be >= 2 (a prompt token and an output token)");
  if (rc.full_groups < 1) throw SpecError("full_groups", "must be >= 1");
  if (rc.table_evicts && rc.allocator == Allocator::contiguous)
    throw SpecError("kv_eviction",
                    "with the contiguous allocator is not modelled (a reservation of max_model_len "
                    "tokens per request leaves nothing for eviction to free)");
  if (rc.table_evicts && rc.host_blocks + rc.host_disk_blocks > 0)
    throw SpecError("kv_eviction", kEvictionWithHostTier);
  const i64 side_max = rc.side_blocks(rc.max_model_len, rc.max_num_batched_tokens);
  if (rc.state_blocks_per_request < 0 || side_max >= static_cast<i64>(rc.num_blocks))
    throw SpecError("num_blocks", "a replica's " + std::to_string(rc.num_blocks) +
                                      " KV blocks cannot hold one request's " + std::to_string(side_max) +
                                      " sliding-window / state blocks and a token");
  // A request can grow to what one replica's blocks hold beside its local-attention and state blocks, and to
  // max_model_len.
  const u64 capacity_tokens = mul(static_cast<u64>(rc.num_blocks) - static_cast<u64>(side_max),
                                  static_cast<u64>(rc.block_size), "KV capacity in tokens");
  const i64 max_len = std::min<i64>(rc.max_model_len, to_signed(capacity_tokens, "KV capacity in tokens"));
  if (rc.allocator == Allocator::contiguous &&
      ceil_div(static_cast<u64>(rc.max_model_len), static_cast<u64>(rc.block_size)) > rc.num_blocks)
    throw SpecError("max_model_len", "the contiguous allocator reserves max_model_len (" +
                                         std::to_string(rc.max_model_len) +
                                         " tokens) per request, more than a replica's " +
                                         std::to_string(capacity_tokens) + " KV tokens: not even one request fits");
  return max_len;
}

/// The longest request the cluster holds: a replica's, or with disaggregated prefill workers the shorter of the two
/// pools' (a request must fit on both).
i64 checked_max_request_tokens(const SimConfig& cfg) {
  if (cfg.timeline_interval_s < 0 || !std::isfinite(cfg.timeline_interval_s))
    throw SpecError("timeline_interval_s", "must be a finite number >= 0");
  i64 max_len = checked_max_request_tokens(cfg.replica, cfg.num_replicas);
  const PrefillPool& p = cfg.prefill;
  if (p.num_replicas == 0) return max_len;
  if (!p.timer) throw std::invalid_argument("a prefill pool needs its step timer");
  if (!p.kv_transfer_s) throw std::invalid_argument("a prefill pool needs its KV transfer time");
  if (p.replica.host_blocks + p.replica.host_disk_blocks > 0 ||
      cfg.replica.host_blocks + cfg.replica.host_disk_blocks > 0)
    throw SpecError("kv_offloading_size", "a host KV tier beside disaggregated prefill workers is not modelled");
  if (p.replica.table_evicts || cfg.replica.table_evicts)
    throw SpecError("kv_eviction",
                    "with disaggregated prefill workers is not modelled (what crosses to the decode "
                    "worker would be the kept tokens, which the KV transfer does not model)");
  max_len = std::min(max_len, checked_max_request_tokens(p.replica, p.num_replicas));
  return max_len;
}

/// The loop's settings' checks, made once the source has given a first request (an empty source returns before).
void check_loop_settings(const SimConfig& cfg) {
  if (!(std::isfinite(cfg.request_overhead_s) && cfg.request_overhead_s >= 0))
    throw SpecError("request_overhead_s", "must be a finite number of seconds >= 0");
  if (cfg.replica.num_scheduler_steps < 1) throw SpecError("num_scheduler_steps", "must be >= 1");
  if (!(std::isfinite(cfg.client_stagger_s) && cfg.client_stagger_s >= 0))
    throw SpecError("client_stagger_s", "must be a finite number of seconds >= 0");
}

/// Adds one replica's statistics to the cluster's (means over replicas, peaks, sums).
void add_replica_stats(SimResult& res, const ReplicaStats& s, std::uint32_t num_replicas) {
  res.preemptions += s.preemptions;
  res.prefix_cache_hit_tokens += s.prefix_cache_hit_tokens;
  res.host_hit_tokens += s.host_hit_tokens;
  res.host_disk_hit_tokens += s.host_disk_hit_tokens;
  res.host_load_s += s.host_load_s;
  res.recomputed_tokens += s.recomputed_tokens;
  res.steps += s.steps;
  res.kv_utilization_mean += s.kv_utilization_mean / num_replicas;
  res.kv_utilization_max = std::max(res.kv_utilization_max, s.kv_utilization_max);
  res.running_mean += s.running_mean / num_replicas;
  res.running_max = std::max(res.running_max, s.running_max);
  res.waiting_mean += s.waiting_mean / num_replicas;
  res.waiting_max = std::max(res.waiting_max, s.waiting_max);
  res.replicas.push_back(s);
}

class EventLoop {
 public:
  EventLoop(const SimConfig& cfg, const StepTimer& timer, RequestSource& source);
  SimResult run();

 private:
  void send_pending(double t);
  void release(std::uint64_t n, double t);
  void wake(std::uint32_t r);
  void report() const;
  Replica& at(std::uint32_t r) { return r < replicas_.size() ? replicas_[r] : prefill_[r - replicas_.size()]; }
  void on_step_end(std::uint32_t r);
  void hand_off_prefilled();
  void on_arrival(std::uint32_t target);
  bool begin_turn(const RequestSpec& spec);
  void dispatch(RequestSpec spec);
  void end_turn(std::int64_t conversation, i64 generated, bool rejected);
  void send_turn(const RequestSpec& spec, double t);
  void on_schedule(std::uint32_t r);
  void on_sample();
  void summarize();

  const SimConfig& cfg_;
  RequestSource& source_;
  const i64 max_len_;  ///< the longest request a replica holds: longer prompts are rejected, longer outputs cut
  Collector col_;
  std::vector<Replica> replicas_;
  Router router_;
  // Disaggregated serving (SimConfig::prefill): the prefill workers, numbered after the decode workers in events.
  std::vector<Replica> prefill_;
  Router prefill_router_;
  EventQueue q_;
  SimResult res_;
  std::optional<RequestSpec> pending_;  ///< the source's next request, not yet sent
  const bool closed_;                   ///< closed loop (max_concurrency > 0)
  // Closed loop: each client that is free to send is an arrival event of its own (target 0) at the time it sends
  // plus the front end's cost; it takes the source's next request then. So a client freed early never waits behind
  // another client's later (staggered) first send.
  Rng think_rng_;
  double start_s_ = 0, now_ = 0;
  double last_send_s_ = -1;  ///< closed loop: the last client's send (SimResult::coincident_sends)
  std::uint64_t arrived_ = 0;
  /// A conversation between its turns (planner/workload.hpp ConversationSpec).
  struct Conversation {
    RequestSpec last;                ///< the last turn sent, its prompt in full
    bool in_flight = false;          ///< a turn is sent, or scheduled to be, and has not finished
    double done_s = 0;               ///< when its last turn ended
    std::deque<RequestSpec> queued;  ///< users: turns dealt to the user while it waited for an answer
  };
  std::unordered_map<std::int64_t, Conversation> conversations_;
  /// Turns scheduled to be sent: the arrival event with target k + 1 sends turns_[k].
  std::vector<RequestSpec> turns_;
  std::vector<std::uint32_t> free_turns_;
};

EventLoop::EventLoop(const SimConfig& cfg, const StepTimer& timer, RequestSource& source)
    : cfg_(cfg),
      source_(source),
      max_len_(checked_max_request_tokens(cfg)),
      col_(cfg.slo, cfg.observer),
      router_(cfg.router),
      prefill_router_(cfg.router),
      closed_(cfg.max_concurrency > 0),
      think_rng_(stream_seed(cfg.think_seed, 7)) {
  res_.max_request_tokens = max_len_;
  replicas_.reserve(cfg.num_replicas);
  for (std::uint32_t i = 0; i < cfg.num_replicas; ++i)
    replicas_.emplace_back(i, cfg.replica, timer, col_, cfg.check_invariants);
  if (cfg.prefill.num_replicas == 0) return;
  ReplicaConfig pc = cfg.prefill.replica;
  pc.hand_off = true;
  prefill_.reserve(cfg.prefill.num_replicas);
  for (std::uint32_t i = 0; i < cfg.prefill.num_replicas; ++i)
    prefill_.emplace_back(cfg.num_replicas + i, pc, *cfg.prefill.timer, col_, cfg.check_invariants);
}

SimResult EventLoop::run() {
  if (!(std::isfinite(cfg_.think_time_s) && cfg_.think_time_s >= 0))
    throw SpecError("think_time_s", "must be a finite number of seconds >= 0");
  pending_ = source_.next();
  if (!pending_) return res_;
  start_s_ = now_ = pending_->arrival_s;
  for (auto& r : replicas_) r.start_clock(start_s_);
  for (auto& r : prefill_) r.start_clock(start_s_);
  check_loop_settings(cfg_);
  if (closed_) {
    for (std::uint32_t i = 0; i < cfg_.max_concurrency; ++i)
      q_.push(start_s_ + cfg_.client_stagger_s * static_cast<double>(i) / static_cast<double>(cfg_.max_concurrency) +
                  cfg_.request_overhead_s,
              EventKind::arrival);
  } else {
    send_pending(start_s_);
  }
  if (cfg_.timeline_interval_s > 0 && cfg_.observer) q_.push(start_s_, EventKind::sample);
  while (!q_.empty()) {
    const Event e = q_.pop();
    now_ = e.time_s;
    ++res_.events;
    switch (e.kind) {
      case EventKind::step_end:
        on_step_end(e.target);
        break;
      case EventKind::arrival:
        on_arrival(e.target);
        break;
      case EventKind::schedule:
        on_schedule(e.target);
        break;
      case EventKind::sample:
        on_sample();
        break;
    }
    if ((res_.events & 0xFFFF) == 0) report();
  }
  report();
  summarize();
  return std::move(res_);
}

/// Open loop: sends the pending request at its arrival time (never before `t`).
void EventLoop::send_pending(double t) {
  if (!(pending_->arrival_s >= t)) throw std::logic_error("request source went back in time");
  q_.push(pending_->arrival_s + cfg_.request_overhead_s, EventKind::arrival);
}

/// Closed loop: `n` requests ended at `t` (completed or rejected); their clients are free again after a think time.
void EventLoop::release(std::uint64_t n, double t) {
  if (!closed_) return;
  for (std::uint64_t i = 0; i < n; ++i) {
    const double think = cfg_.think_time_exponential && cfg_.think_time_s > 0
                             ? think_rng_.exponential(1.0 / cfg_.think_time_s)
                             : cfg_.think_time_s;
    if (pending_) q_.push(t + think + cfg_.request_overhead_s, EventKind::arrival);
  }
}

void EventLoop::wake(std::uint32_t r) {
  Replica& rep = at(r);
  if (!rep.busy() && !rep.schedule_pending) {
    rep.schedule_pending = true;
    q_.push(now_, EventKind::schedule, r);
  }
}

void EventLoop::report() const {
  if (cfg_.progress) cfg_.progress(Progress{arrived_, col_.completed(), source_.size_hint(), now_});
}

void EventLoop::on_step_end(std::uint32_t r) {
  const std::uint64_t done_before = col_.completed();
  at(r).finish_step(now_);
  if (!col_.handoffs().empty()) hand_off_prefilled();
  release(col_.completed() - done_before, now_);
  auto& finished = col_.finished_turns();
  for (const auto& [conversation, generated] : finished) end_turn(conversation, generated, false);
  finished.clear();
  wake(r);
}

/// The requests a prefill worker finished go to the decode pool: the router picks a decode worker, which reads their
/// KV (all prompt tokens but the last) when it admits them.
void EventLoop::hand_off_prefilled() {
  for (const Collector::Handoff& h : col_.handoffs()) {
    const std::uint32_t d = router_.pick(replicas_);
    Request& q = replicas_[d].enqueue(h.spec, h.id, h.output_tokens, h.truncated, now_);
    q.first_scheduled_s = h.first_scheduled_s;
    q.cached_tokens = h.cached_tokens;
    q.remote_tokens = h.spec.prompt_tokens - 1;
    q.remote_s = cfg_.prefill.kv_transfer_s(q.remote_tokens);
    ++res_.kv_transfers;
    wake(d);
  }
  col_.handoffs().clear();
}

/// An arrival event: the source's pending request (target 0), or a conversation's next turn (target k + 1).
void EventLoop::on_arrival(std::uint32_t target) {
  if (target > 0) {
    RequestSpec spec = turns_[target - 1];
    free_turns_.push_back(target - 1);
    spec.arrival_s = now_ - cfg_.request_overhead_s;
    dispatch(spec);
    return;
  }
  if (!pending_) return;  // closed loop: the source is exhausted, the client stays idle
  if (closed_ && pending_->arrival_s + cfg_.request_overhead_s > now_) {
    // A free client, but the source's next request is not out yet: the client sends it when it is.
    q_.push(pending_->arrival_s + cfg_.request_overhead_s, EventKind::arrival);
    return;
  }
  RequestSpec spec = *pending_;
  // The send time (later than the source's arrival time when a closed loop's client was busy): the engine sees the
  // request request_overhead_s later, and its TTFT counts from the send.
  spec.arrival_s = now_ - cfg_.request_overhead_s;
  pending_ = source_.next();
  const double sent_s = spec.arrival_s;
  if (closed_) {
    if (sent_s == last_send_s_) ++res_.coincident_sends;
    last_send_s_ = sent_s;
  }
  if (spec.conversation >= 0 && closed_)
    throw SpecError("max_concurrency",
                    "a closed loop of clients cannot also run conversations; give the workload an "
                    "open-loop arrival process, or drop --max-concurrency");
  if (spec.conversation < 0 || begin_turn(spec)) dispatch(spec);
  if (pending_ && !closed_) send_pending(sent_s);
}

/// A turn from the source: true when it goes now, false when it waits behind its user's turn in flight or for the
/// user's think time after the last answer.
bool EventLoop::begin_turn(const RequestSpec& spec) {
  Conversation& c = conversations_[spec.conversation];
  if (c.in_flight) {
    c.queued.push_back(spec);
    return false;
  }
  if (spec.turn > 0 && c.done_s + spec.think_time_s > now_) {
    send_turn(spec, c.done_s + spec.think_time_s);
    return false;
  }
  c.in_flight = true;
  return true;
}

/// Sends `spec` to a replica (or rejects it): a turn that follows its conversation's history is sent with it.
void EventLoop::dispatch(RequestSpec spec) {
  if (spec.conversation >= 0) {
    Conversation& c = conversations_[spec.conversation];
    if (spec.follows_history)
      spec.prompt_tokens = add(add(c.last.prompt_tokens, c.last.output_tokens, "conversation history in tokens"),
                               spec.prompt_tokens, "conversation history in tokens");
    c.last = spec;
  }
  res_.last_arrival_s = spec.arrival_s;
  const std::uint64_t id = arrived_++;
  if (spec.prompt_tokens >= max_len_) {
    ++res_.requests_rejected;  // vLLM rejects a prompt that leaves no room for one output token
    release(1, now_);
    if (spec.conversation >= 0) end_turn(spec.conversation, 0, true);
    return;
  }
  i64 out = spec.output_tokens;
  const bool truncated = spec.prompt_tokens + out > max_len_;  // generation stops at max_model_len
  if (truncated) {
    out = max_len_ - spec.prompt_tokens;
    ++res_.requests_truncated;
  }
  if (!prefill_.empty()) {  // disaggregated: the prompt first, on a prefill worker (its first token ends it there)
    const std::uint32_t p = prefill_router_.pick(prefill_);
    prefill_[p].enqueue(spec, id, 1, truncated, now_).handoff_output_tokens = out;
    wake(cfg_.num_replicas + p);
    return;
  }
  const std::uint32_t r = router_.pick(replicas_);
  replicas_[r].enqueue(spec, id, out, truncated, now_);
  wake(r);
}

/// A conversation's turn ended at now_ with `generated` answer tokens (0 and `rejected`: refused): the user's next
/// dealt turn goes after the think time, or the source gives the conversation's next turn; a conversation started
/// by an arrival ends with its last turn or its first refusal.
void EventLoop::end_turn(std::int64_t conversation, i64 generated, bool rejected) {
  const auto it = conversations_.find(conversation);
  if (it == conversations_.end()) throw std::logic_error("a turn ended for a conversation not in flight");
  Conversation& c = it->second;
  c.in_flight = false;
  c.done_s = now_;
  c.last.output_tokens = generated;  // the answer as it was given (cut at max_model_len, or none)
  if (!c.queued.empty()) {
    RequestSpec next = c.queued.front();
    c.queued.pop_front();
    const double t = std::max(now_ + next.think_time_s, next.arrival_s);
    send_turn(next, t);
    return;
  }
  if (c.last.turns == 0) return;  // a user: its next turn comes with the arrivals
  std::optional<RequestSpec> next;
  if (!rejected) next = source_.next_turn(c.last);
  if (!next) {
    conversations_.erase(it);
    return;
  }
  const double t = now_ + next->think_time_s;
  send_turn(*next, t);
}

/// Schedules a conversation's turn to be sent at `t` (it reaches the engine request_overhead_s later).
void EventLoop::send_turn(const RequestSpec& spec, double t) {
  conversations_[spec.conversation].in_flight = true;
  std::uint32_t slot = 0;
  if (!free_turns_.empty()) {
    slot = free_turns_.back();
    free_turns_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(turns_.size());
    turns_.emplace_back();
  }
  turns_[slot] = spec;
  q_.push(t + cfg_.request_overhead_s, EventKind::arrival, slot + 1);
}

void EventLoop::on_schedule(std::uint32_t r) {
  Replica& rep = at(r);
  rep.schedule_pending = false;
  if (rep.busy()) return;
  double step_s = 0;
  const Outcome o = rep.schedule(now_, step_s, cfg_.observer);
  if (o == Outcome::stepped) {
    q_.push(now_ + step_s, EventKind::step_end, r);
  } else if (o == Outcome::retry) {
    wake(r);
  } else if (const double ready = rep.loading_until(now_); ready > now_) {
    // Idle while host-tier loads are in flight: look again when the first is done. Not a pending schedule, so an
    // arrival before then is still scheduled at once (wake); a second schedule event finds the replica busy or idle.
    q_.push(ready, EventKind::schedule, r);
  }
}

void EventLoop::on_sample() {
  for (const auto& rep : replicas_) cfg_.observer->on_sample(rep.sample(now_));
  for (const auto& rep : prefill_) cfg_.observer->on_sample(rep.sample(now_));
  bool done = !pending_ && free_turns_.size() == turns_.size();
  for (const auto& rep : replicas_) done = done && rep.empty() && !rep.busy();
  for (const auto& rep : prefill_) done = done && rep.empty() && !rep.busy();
  if (!done) q_.push(now_ + cfg_.timeline_interval_s, EventKind::sample);
}

/// The run's result over [first arrival, last completion]: the collector's metrics and the replicas' statistics.
void EventLoop::summarize() {
  res_.requests_arrived = arrived_;
  res_.first_arrival_s = start_s_;
  res_.end_s = std::max(start_s_, col_.last_completion_s());
  col_.summarize(res_);
  double waste = 0, alloc = 0;
  for (auto& rep : replicas_) {
    add_replica_stats(res_, rep.finish(res_.first_arrival_s, res_.end_s), cfg_.num_replicas);
    res_.kv_waste_tokens_per_request_max = std::max(res_.kv_waste_tokens_per_request_max, rep.waste_per_request_max());
    waste += rep.area_waste();
    alloc += rep.area_alloc();
    add_step_cost(res_.busy_breakdown_s, rep.breakdown());
  }
  res_.kv_waste_measured = !cfg_.replica.table_evicts;
  res_.kv_waste_fraction = alloc > 0 && res_.kv_waste_measured ? waste / alloc : 0;
  double transfer_s = 0, transfer_tokens = 0;
  for (const auto& s : res_.replicas)
    transfer_s += s.kv_transfer_s, transfer_tokens += static_cast<double>(s.kv_received_tokens);
  for (auto& rep : prefill_) {
    const ReplicaStats s = rep.finish(res_.first_arrival_s, res_.end_s);
    res_.steps += s.steps;
    res_.preemptions += s.preemptions;
    res_.recomputed_tokens += s.recomputed_tokens;
    add_step_cost(res_.busy_breakdown_s, rep.breakdown());
    res_.prefill_replicas.push_back(s);
  }
  if (res_.kv_transfers > 0) {
    res_.kv_transfer_s_mean = transfer_s / static_cast<double>(res_.kv_transfers);
    res_.kv_transfer_tokens_mean = transfer_tokens / static_cast<double>(res_.kv_transfers);
  }
  std::uint64_t queries = 0;
  for (const auto& s : res_.replicas) queries += s.prefix_cache_query_tokens;
  res_.prefix_cache_hit_rate =
      queries > 0 ? static_cast<double>(res_.prefix_cache_hit_tokens) / static_cast<double>(queries) : 0;
  double max_done = 0;
  for (const auto& s : res_.replicas) max_done = std::max(max_done, static_cast<double>(s.completed));
  const double mean_done = static_cast<double>(col_.completed()) / cfg_.num_replicas;
  res_.balance_max_over_mean = mean_done > 0 ? max_done / mean_done : 0;
}

}  // namespace

SimResult simulate(const SimConfig& cfg, const StepTimer& timer, RequestSource& source) {
  return EventLoop(cfg, timer, source).run();
}

}  // namespace kvcap::sim
