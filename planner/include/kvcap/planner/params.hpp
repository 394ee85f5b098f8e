#pragma once
// Parameter counts and weight bytes per rank, derived from the architecture tensor by tensor
// (the shapes of vllm/model_executor/models/{llama,mixtral,qwen2,deepseek_v2,gemma2,gpt_oss}.py).
#include <string_view>
#include <vector>

#include "kvcap/planner/model.hpp"

namespace kvcap {

/// How a weight tensor is split over tensor-parallel ranks (vLLM's parallel linear layers).
enum class Shard : std::uint8_t {
  replicated,  ///< every rank holds it (norms, router, MLA down-projections: ReplicatedLinear)
  q_heads,     ///< split by query heads (QKVParallelLinear q part, RowParallelLinear o_proj)
  kv_heads,    ///< split by KV heads, replicated when TP > H_kv (QKVParallelLinear k/v part)
  columns,     ///< split evenly (MLP, shared experts, routed experts under TP or EP)
  vocab,       ///< vocabulary-parallel, padded to a multiple of 64 (VocabParallelEmbedding)
};

/// Where a tensor lives in the model (decides the pipeline stage and whether it is quantised).
enum class Place : std::uint8_t { layer, embedding, head };

struct WeightTensor {
  std::string_view name;  ///< e.g. "q_proj", "experts.w13"
  i64 elements;           ///< total parameters of this tensor in one layer (or once for embedding/head)
  Shard shard;
  bool quantizable;       ///< linear weight matrices follow --quantization; norms, biases, router, embeddings do not
  bool routed_expert;     ///< counted as active only in top-k / num_experts of tokens
};

/// The weight tensors of layer `layer`.
std::vector<WeightTensor> layer_tensors(const ModelSpec& m, i64 layer);
/// Embedding, final norm and LM head (absent when tied on a single stage).
std::vector<WeightTensor> embedding_tensors(const ModelSpec& m);
std::vector<WeightTensor> head_tensors(const ModelSpec& m, bool separate_copy_of_tied);

/// The vision encoder and its projector into the text width (empty for a text-only model). vLLM builds them on
/// the first pipeline stage; their linear layers are tensor-parallel (mm_encoder_tp_mode "weights", vLLM's
/// default), their embeddings, norms and Gemma 3's projector replicated. Kept in the model dtype: quantised
/// checkpoints leave the vision tower unquantised (their ignore lists).
std::vector<WeightTensor> vision_tensors(const ModelSpec& m);

struct ParamCounts {
  i64 total = 0;   ///< every parameter once (tied embeddings once), the vision encoder included
  i64 active = 0;  ///< parameters a text token passes through: routed experts x top-k / num_experts, no vision encoder
  i64 embedding = 0;
  i64 vision = 0;  ///< the vision encoder and its projector (part of total)
};
ParamCounts param_counts(const ModelSpec& m);

/// Elements of `t` held by one of `tp` ranks.
/// `ep` > 1: routed experts are split whole over `ep` ranks (expert parallelism), ceil((E + redundant) / ep) experts
/// each (EPLB's redundant copies, --eplb-config num_redundant_experts).
i64 elements_per_rank(const ModelSpec& m, const WeightTensor& t, i64 tp, i64 ep = 1, i64 redundant = 0);

/// Layers per pipeline stage: L / PP each, the remainder to the earlier stages (vLLM get_pp_indices:
/// from the second-to-last stage backwards).
std::vector<i64> layers_per_stage(i64 num_layers, i64 pp);

}  // namespace kvcap
