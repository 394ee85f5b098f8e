#pragma once
// A request as the workload describes it (RequestSpec) and as a replica tracks it (Request).
#include <cstdint>
#include <vector>

#include "kvcap/planner/checked.hpp"

namespace kvcap::sim {

/// What arrives: when, how long the prompt is, how many tokens to generate.
struct RequestSpec {
  double arrival_s = 0;
  i64 prompt_tokens = 0;
  i64 output_tokens = 0;
  std::int32_t prefix_group = -1;  ///< shared-prefix group (-1: none)
  i64 prefix_tokens = 0;           ///< tokens of the group's prefix at the start of the prompt (<= prompt_tokens)
  /// The conversation this request is a turn of (-1: a single-turn request). Its tokens after the shared prefix are
  /// the conversation's own (history, then the new message): identical in every turn that carries them, so the
  /// prefix cache finds them (block_manager.hpp, ContentKey).
  std::int64_t conversation = -1;
  std::uint32_t turn = 0;   ///< 0-based
  std::uint32_t turns = 1;  ///< conversations started by an arrival: their number of turns (0: unbounded, users)
  /// Turn > 0 with history: `prompt_tokens` counts only the new user message; the event loop prepends the history
  /// (the previous turn's prompt and answer) when it sends the turn.
  bool follows_history = false;
  /// History `repeat`: later turns resend this turn's prompt only, so its answer's blocks never repeat.
  bool prompt_repeats = false;
  double think_time_s = 0;  ///< pause after the previous turn's answer before this turn is sent
};

/// A request in a replica, in vLLM V1's terms (vllm/v1/request.py): num_tokens = prompt + generated
/// tokens so far; num_computed_tokens = those whose KV is in the cache. Each step computes `scheduled`
/// more; when computed reaches num_tokens the step samples one token (generated += 1, num_tokens += 1).
/// A decode step is the case num_tokens - computed = 1. Preemption (recompute) sets computed to 0.
struct Request {
  std::uint64_t id = 0;        ///< arrival order over the whole cluster (0-based)
  double arrival_s = 0;
  double first_scheduled_s = -1;
  double first_token_s = -1;
  /// When its latest output token was sampled (-1: none on this replica yet); the next token's inter-token latency
  /// starts there. A lazy request's is that of its lazy_tick's step (Replica::materialize brings it up to date).
  double last_token_s = -1;
  i64 prompt_tokens = 0;
  i64 output_tokens = 0;       ///< target (after truncation at max_model_len)
  i64 num_tokens = 0;
  i64 computed = 0;
  i64 generated = 0;
  i64 scheduled = 0;           ///< tokens in the step in flight (0: not in it)
  i64 computed_high_water = 0; ///< positions computed at least once (below it, computing again is recompute)
  i64 prefix_tokens = 0;
  std::int32_t prefix_group = -1;
  std::int64_t conversation = -1;    ///< RequestSpec::conversation
  std::uint32_t turn = 0;            ///< RequestSpec::turn
  bool prompt_repeats = false;       ///< RequestSpec::prompt_repeats
  i64 registered_prefix_blocks = 0;  ///< leading blocks already offered to the prefix cache
  i64 cached_tokens = 0;       ///< prompt tokens served from the prefix cache (first admission)
  double ready_s = 0;          ///< blocks loaded from the host tier arrive then: the request runs from that time on
  std::uint32_t preemptions = 0;
  bool truncated = false;      ///< output cut at max_model_len
  /// Disaggregated serving (SimConfig::prefill). On a prefill worker: the output target handed on to the decode worker
  /// (the prefill itself samples one token). On a decode worker until its first admission: the prompt tokens whose KV
  /// the prefill worker computed (all but the last) and the time to read them over the link.
  i64 handoff_output_tokens = 0;
  i64 remote_tokens = 0;
  double remote_s = 0;
  /// Aggregated decode (replica.cpp, "Decode steps in aggregate"): computed, generated, num_tokens and the
  /// high-water mark are those of tick `lazy_tick` of its replica; each tick since added one to each.
  bool lazy = false;
  i64 lazy_tick = 0;
  i64 wake_tick = 0;        ///< lazy: the tick before whose step it is materialized (the step sampling its last token)
  i64 block_tick = 0;       ///< lazy: the tick whose step needs its next block (allocated while it stays lazy)
  std::uint64_t order = 0;  ///< admission sequence on its replica: running requests are in increasing order
  std::vector<std::uint32_t> blocks;  ///< block table (block ids of this replica's pool)
  std::vector<std::uint32_t> state_blocks;  ///< blocks outside the table (local-attention groups, states), held while admitted
};

}  // namespace kvcap::sim
