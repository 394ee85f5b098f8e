#pragma once
// vLLM V1's KV cache manager, sized: which layers share a block table (KV cache groups), how many
// blocks a worker's memory holds, how many blocks a request of max_model_len needs, and what vLLM logs.
// A port of, and cited per function:
//   vllm/v1/kv_cache_interface.py   FullAttentionSpec, SlidingWindowSpec, ChunkedLocalAttentionSpec,
//                                   MLAAttentionSpec, MambaSpec: page_size_bytes, max_memory_usage_bytes
//   vllm/v1/core/kv_cache_utils.py  get_kv_cache_groups, unify_kv_cache_spec_page_size,
//                                   _get_kv_cache_groups_uniform_page_size, UniformTypeKVCacheSpecs,
//                                   get_kv_cache_config_from_groups, get_kv_cache_configs,
//                                   get_max_concurrency_for_kv_cache_config, get_kv_cache_capacity,
//                                   _max_memory_usage_bytes_from_groups, _estimate_max_model_len_from_groups
// The "layers" here are KV layers: one per attention layer, plus one per DeepSeek-V3.2 indexer key cache.
#include <string>
#include <vector>

#include "kvcap/planner/checked.hpp"

namespace kvcap {

enum class KvSpecKind : std::uint8_t {
  full,     ///< FullAttentionSpec / MLAAttentionSpec: every token of the request
  sliding,  ///< SlidingWindowSpec: the last window - 1 tokens plus those scheduled this step
  chunked,  ///< ChunkedLocalAttentionSpec (Llama 4): the current attention chunk plus the scheduled tokens
  mamba,    ///< MambaSpec (linear attention): one block holds a request's whole state; state_blocks per request
};

/// The what-if --kv-eviction (no vLLM option): the tokens of a request's context a full-attention layer keeps.
/// streaming (StreamingLLM): attention-sink tokens plus a window of the latest, a fixed `keep_tokens`; h2o (H2O):
/// heavy hitters plus recent tokens within a budget of `keep_fraction` of the context, at least `keep_min_tokens`.
struct KvEviction {
  i64 keep_tokens = 0;       ///< streaming: sink + window (0: not this policy)
  double keep_fraction = 0;  ///< h2o: the budget as a fraction of the context (0: not this policy)
  i64 keep_min_tokens = 0;   ///< h2o: the recent tokens kept whatever the budget
  bool on() const { return keep_tokens > 0 || keep_fraction > 0; }
  /// Tokens kept of a context of `context` tokens (all of them when the policy keeps more).
  i64 held(i64 context) const;
  bool operator==(const KvEviction&) const = default;
};

/// One KV layer's cache format (a vLLM KVCacheSpec).
struct KvLayerSpec {
  KvSpecKind kind = KvSpecKind::full;
  i64 block_size = 16;        ///< tokens per block (unify_kv_cache_spec_page_size may raise it)
  u64 page_size_bytes = 0;    ///< one layer, one block, on one rank
  i64 window_tokens = 0;      ///< sliding_window or attention_chunk_size (0 for full)
  i64 state_blocks = 1;       ///< mamba: blocks a running request holds (mamba_cache_mode none: 1, align and all: 2)
  /// mamba, mamba_cache_mode all: vLLM charges a request a state block per block_size tokens of max_model_len
  /// (MambaSpec.max_memory_usage_bytes) in its startup check and logged concurrency.
  bool state_per_block = false;
  KvEviction evict{};  ///< full: the what-if --kv-eviction (off: every token)
  bool operator==(const KvLayerSpec&) const = default;
};

/// One KV cache group: layers sharing one block table.
struct KvCacheGroup {
  KvLayerSpec spec;        ///< of every layer (uniform_type: kind, window and block size only)
  std::vector<i64> layers; ///< KV-layer indices, in vLLM's layers[i::num_groups] order
  /// vLLM UniformTypeKVCacheSpecs: one group of same-kind layers whose pages differ (DeepSeek-V3.2:
  /// the MLA latent and the indexer key cache); each layer's page is then `layer_page_bytes[layer]`.
  bool uniform_type = false;
};

/// get_kv_cache_groups. `hybrid` false is --disable-hybrid-kv-cache-manager: sliding-window and
/// chunked layers are then charged as full attention (unify_hybrid_kv_cache_specs). Throws SpecError
/// when vLLM would refuse (page sizes that cannot be unified; sliding and chunked layers together).
std::vector<KvCacheGroup> kv_cache_groups(const std::vector<KvLayerSpec>& layers, bool hybrid);

/// What one worker (a pipeline stage's rank) holds: its KV layers of each group.
struct KvWorkerLayout {
  i64 group_size = 0;      ///< max layers of one group on the worker (general case), 0: no KV layer
  u64 block_bytes = 0;     ///< bytes one block id costs on the worker (all its groups' slots)
};
/// get_kv_cache_config_from_groups for the worker holding KV layers `on_worker` (indices): one block
/// id costs group_size x page (general case) or the sum of the worker's pages (uniform type).
KvWorkerLayout worker_layout(const std::vector<KvCacheGroup>& groups, const std::vector<KvLayerSpec>& layers,
                             const std::vector<bool>& on_worker);
/// get_num_blocks: available // page // group_size (= available // block_bytes), 0 when negative.
u64 worker_num_blocks(const KvWorkerLayout& w, i64 available_bytes);

/// cdiv(max_memory_usage_bytes, page_size_bytes) of one layer spec: blocks one request of
/// `max_model_len` tokens holds in one layer of the group at its worst (kv_cache_interface.py).
u64 spec_blocks_per_request(const KvLayerSpec& s, i64 max_model_len, i64 max_num_batched_tokens);
/// The same for a context of `context_tokens` that keeps growing beyond it (the curve): identical to
/// spec_blocks_per_request(s, context_tokens, ...).
u64 blocks_per_request(const std::vector<KvCacheGroup>& groups, i64 max_model_len, i64 max_num_batched_tokens);

/// get_max_concurrency_for_kv_cache_config: num_blocks / sum over groups of blocks per request.
double max_concurrency(u64 num_blocks, const std::vector<KvCacheGroup>& groups, i64 max_model_len,
                       i64 max_num_batched_tokens);

/// The "GPU KV cache size: N tokens" line. Current vLLM (get_kv_cache_capacity, since the fix of
/// vllm-project/vllm#40691 after 0.19): int(max_concurrency x max_model_len), in IEEE double as Python
/// computes it. vLLM 0.10-0.19 (_report_kv_cache_config): num_blocks // len(groups) x min block size.
u64 logged_kv_cache_tokens(u64 num_blocks, const std::vector<KvCacheGroup>& groups, i64 max_model_len,
                           i64 max_num_batched_tokens, bool legacy_log);

/// _max_memory_usage_bytes_from_groups on one worker: the KV bytes one request of max_model_len needs.
u128 worker_request_bytes(const KvWorkerLayout& w, const std::vector<KvCacheGroup>& groups, i64 max_model_len,
                          i64 max_num_batched_tokens);
/// _estimate_max_model_len_from_groups on one worker: the longest max_model_len (<= upper) whose request
/// fits in `available_bytes`; 0 when not even one token does.
i64 worker_estimate_max_model_len(const KvWorkerLayout& w, const std::vector<KvCacheGroup>& groups,
                                  i64 available_bytes, i64 upper, i64 max_num_batched_tokens);

/// "full", "sliding window 128", "chunked local 8192".
std::string describe(const KvLayerSpec& s);

}  // namespace kvcap
