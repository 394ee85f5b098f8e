#include "kvcap/planner/kv_cache.hpp"

#include <algorithm>
#include <cmath>

#include "kvcap/planner/error.hpp"

namespace kvcap {

namespace {
u64 u(i64 v) { return static_cast<u64>(v); }

// UniformTypeKVCacheSpecs.from_specs: every layer of one kind (and window), one block size.
bool uniform_type(const std::vector<KvLayerSpec>& layers) {
  const auto& a = layers.front();
  return std::all_of(layers.begin(), layers.end(), [&](const KvLayerSpec& s) {
    return s.kind == a.kind && s.window_tokens == a.window_tokens && s.block_size == a.block_size;
  });
}
}  // namespace

std::string describe(const KvLayerSpec& s) {
  switch (s.kind) {
    case KvSpecKind::full: return "full attention";
    case KvSpecKind::sliding: return "sliding window " + std::to_string(s.window_tokens);
    case KvSpecKind::chunked: return "chunked local " + std::to_string(s.window_tokens);
    case KvSpecKind::mamba:
      return s.state_per_block ? "linear-attention state, a checkpoint per " + std::to_string(s.block_size) + " tokens"
                               : "linear-attention state";
  }
  return "?";
}

std::vector<KvCacheGroup> kv_cache_groups(const std::vector<KvLayerSpec>& in, bool hybrid) {
  if (in.empty()) return {};
  std::vector<KvLayerSpec> layers = in;
  const auto all_equal = [&] { return std::all_of(layers.begin(), layers.end(), [&](const KvLayerSpec& s) { return s == layers[0]; }); };
  if (!hybrid && !all_equal() && !uniform_type(layers)) {
    // unify_hybrid_kv_cache_specs: with full attention present, sliding and chunked layers are
    // allocated as full attention (their compute is still local).
    const bool has_full = std::any_of(layers.begin(), layers.end(), [](const KvLayerSpec& s) { return s.kind == KvSpecKind::full; });
    if (has_full)
      for (auto& s : layers)
        if (s.kind != KvSpecKind::mamba) s.kind = KvSpecKind::full, s.window_tokens = 0;
    if (!all_equal() && !uniform_type(layers))
      throw SpecError("hybrid_kv_cache_manager", "vLLM: \"Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one unified type\"");
  }
  std::vector<KvCacheGroup> out;
  if (all_equal() || uniform_type(layers)) {
    // _get_kv_cache_groups_uniform_spec / _get_kv_cache_groups_uniform_type: one group of every layer.
    KvCacheGroup g;
    g.spec = layers[0];
    g.uniform_type = !all_equal();
    for (std::size_t i = 0; i < layers.size(); ++i) g.layers.push_back(static_cast<i64>(i));
    return {g};
  }
  const bool sliding = std::any_of(layers.begin(), layers.end(), [](const KvLayerSpec& s) { return s.kind == KvSpecKind::sliding; });
  const bool chunked = std::any_of(layers.begin(), layers.end(), [](const KvLayerSpec& s) { return s.kind == KvSpecKind::chunked; });
  if (sliding && chunked)
    throw SpecError("attention", "vLLM: \"Model with both sliding window layers and chunked local attention layers is not supported\"");
  // unify_kv_cache_spec_page_size: smaller pages grow their block size to the largest page.
  u64 max_page = 0;
  for (const auto& s : layers) max_page = std::max(max_page, s.page_size_bytes);
  for (auto& s : layers) {
    if (s.page_size_bytes == max_page) continue;
    if (s.page_size_bytes == 0 || max_page % s.page_size_bytes != 0)
      throw SpecError("kv_cache", "vLLM cannot unify the KV page sizes of this model (" + std::to_string(s.page_size_bytes) +
                                      " B does not divide " + std::to_string(max_page) + " B): NotImplementedError in unify_kv_cache_spec_page_size");
    const u64 ratio = max_page / s.page_size_bytes;
    s.block_size = mul(s.block_size, static_cast<i64>(ratio), "unified block size");
    s.page_size_bytes = max_page;
  }
  // _get_kv_cache_groups_uniform_page_size: layers of one spec, in order of first appearance.
  std::vector<std::pair<KvLayerSpec, std::vector<i64>>> same;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto it = std::find_if(same.begin(), same.end(), [&](const auto& p) { return p.first == layers[i]; });
    if (it == same.end()) {
      same.push_back({layers[i], {}});
      it = same.end() - 1;
    }
    it->second.push_back(static_cast<i64>(i));
  }
  std::size_t min_n = SIZE_MAX, max_n = 0;
  for (const auto& p : same) min_n = std::min(min_n, p.second.size()), max_n = std::max(max_n, p.second.size());
  // The n:1 pattern's "1" is the group size, unless the types are nearly balanced (max < 1.5 min:
  // gpt-oss + EAGLE's 12 sliding + 13 full pads to 13 + 13).
  const std::size_t group_size = static_cast<double>(max_n) < static_cast<double>(min_n) * 1.5 ? max_n : min_n;
  for (const auto& [spec, idx] : same) {
    const std::size_t n_groups = (idx.size() + group_size - 1) / group_size;
    // layers[i::num_groups] (not consecutive runs) keeps pipeline stages balanced.
    for (std::size_t i = 0; i < n_groups; ++i) {
      KvCacheGroup g;
      g.spec = spec;
      for (std::size_t j = i; j < idx.size(); j += n_groups) g.layers.push_back(idx[j]);
      out.push_back(std::move(g));
    }
  }
  return out;
}

KvWorkerLayout worker_layout(const std::vector<KvCacheGroup>& groups, const std::vector<KvLayerSpec>& layers,
                             const std::vector<bool>& on_worker) {
  KvWorkerLayout w;
  const auto here = [&](i64 l) { return static_cast<std::size_t>(l) < on_worker.size() && on_worker[static_cast<std::size_t>(l)]; };
  if (groups.size() == 1) {
    // One group (uniform spec or uniform type): a tensor per layer, num_blocks = available // sum(pages).
    for (i64 l : groups[0].layers)
      if (here(l)) {
        ++w.group_size;
        const u64 page = groups[0].uniform_type ? layers[static_cast<std::size_t>(l)].page_size_bytes : groups[0].spec.page_size_bytes;
        w.block_bytes = add(w.block_bytes, page, "KV bytes per block");
      }
    return w;
  }
  // General case: group_size tensors, each shared by one layer of every group (padding slots included).
  for (const auto& g : groups)
    w.group_size = std::max<i64>(w.group_size, std::count_if(g.layers.begin(), g.layers.end(), here));
  w.block_bytes = mul(groups[0].spec.page_size_bytes, u(w.group_size), "KV bytes per block");
  return w;
}

u64 worker_num_blocks(const KvWorkerLayout& w, i64 available_bytes) {
  if (available_bytes <= 0 || w.block_bytes == 0) return 0;
  return u(available_bytes) / w.block_bytes;
}

i64 KvEviction::held(i64 context) const {
  if (keep_tokens > 0) return std::min(context, keep_tokens);
  if (keep_fraction > 0) {
    const double budget = std::ceil(keep_fraction * static_cast<double>(context));
    return std::min(context, std::max(keep_min_tokens, static_cast<i64>(budget)));
  }
  return context;
}

u64 spec_blocks_per_request(const KvLayerSpec& s, i64 max_model_len, i64 mnbt) {
  const u64 bs = u(s.block_size), len = u(max_model_len);
  switch (s.kind) {
    case KvSpecKind::full: {
      // What-if eviction: the kept tokens in whole blocks (evicted tokens compacted out, as a paged
      // implementation must to free memory) plus the block the next token is written to.
      const u64 held = u(s.evict.held(max_model_len));
      return held < len ? ceil_div(held, bs) + 1 : ceil_div(len, bs);
    }
    case KvSpecKind::sliding: {
      // min(sliding_window - 1 + max_num_batched_tokens, max_model_len) tokens, + 1 block "because the
      // sliding window may not start from the beginning of the block".
      const u64 t = std::min(add(u(s.window_tokens) - 1, u(mnbt), "sliding-window tokens"), len);
      return ceil_div(t, bs) + 1;
    }
    case KvSpecKind::chunked: {
      const u64 t = std::min(add(u(s.window_tokens), u(mnbt), "chunk tokens"), len);
      return ceil_div(t, bs);
    }
    // MambaSpec.max_memory_usage_bytes: page_size_bytes x (1 + speculative blocks) in mamba_cache_mode
    // "none", x (2 + speculative blocks) in "align" (the running state and the last block-boundary checkpoint),
    // cdiv(max_model_len, block_size) pages in "all" (a checkpoint every block).
    case KvSpecKind::mamba:
      return s.state_per_block ? ceil_div(len, bs) : u(s.state_blocks);
  }
  return 0;
}

u64 blocks_per_request(const std::vector<KvCacheGroup>& groups, i64 max_model_len, i64 mnbt) {
  u64 n = 0;
  for (const auto& g : groups) n = add(n, spec_blocks_per_request(g.spec, max_model_len, mnbt), "blocks per request");
  return n;
}

double max_concurrency(u64 num_blocks, const std::vector<KvCacheGroup>& groups, i64 max_model_len, i64 mnbt) {
  const u64 per_request = blocks_per_request(groups, max_model_len, mnbt);
  return per_request == 0 ? 0.0 : static_cast<double>(num_blocks) / static_cast<double>(per_request);
}

u64 logged_kv_cache_tokens(u64 num_blocks, const std::vector<KvCacheGroup>& groups, i64 max_model_len, i64 mnbt,
                           bool legacy_log) {
  if (groups.empty()) return 0;
  if (legacy_log) {
    i64 min_bs = groups[0].spec.block_size;
    for (const auto& g : groups) min_bs = std::min(min_bs, g.spec.block_size);
    return mul(num_blocks / groups.size(), u(min_bs), "logged KV tokens");
  }
  // Python: int(max_concurrency * max_model_len) with float max_concurrency: the same IEEE doubles.
  const double c = max_concurrency(num_blocks, groups, max_model_len, mnbt);
  const double t = c * static_cast<double>(max_model_len);
  return t >= 1.8e19 ? UINT64_MAX : static_cast<u64>(t);
}

u128 worker_request_bytes(const KvWorkerLayout& w, const std::vector<KvCacheGroup>& groups, i64 max_model_len, i64 mnbt) {
  // General: group_size x page x sum over groups of the blocks; one group: its layers' pages x blocks.
  return static_cast<u128>(w.block_bytes) * blocks_per_request(groups, max_model_len, mnbt);
}

i64 worker_estimate_max_model_len(const KvWorkerLayout& w, const std::vector<KvCacheGroup>& groups, i64 available_bytes,
                                  i64 upper, i64 mnbt) {
  if (available_bytes <= 0) return 0;
  const auto fits = [&](i64 len) { return worker_request_bytes(w, groups, len, mnbt) <= static_cast<u128>(available_bytes); };
  if (!fits(1)) return 0;
  i64 left = 1, right = upper, result = 1;
  while (left <= right) {
    const i64 mid = left + (right - left) / 2;
    if (fits(mid)) result = mid, left = mid + 1;
    else right = mid - 1;
  }
  return result;
}

}  // namespace kvcap
