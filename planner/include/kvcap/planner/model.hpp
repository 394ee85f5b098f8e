#pragma once
// ModelSpec: the architecture of a decoder-only transformer, as far as memory and speed depend on it.
// Field names follow Hugging Face config.json keys where one exists (noted per field).
#include <cstdint>
#include <string>
#include <vector>

#include "kvcap/planner/dtype.hpp"

namespace kvcap {

enum class AttentionType : std::uint8_t {
  gqa,  ///< multi-head / grouped-query / multi-query attention: K and V per KV head
  mla,  ///< DeepSeek multi-head latent attention: one compressed latent + rope key per token
};

/// What one layer's attention keeps for a request.
enum class LayerAttention : std::uint8_t {
  full,     ///< every token of the context
  sliding,  ///< the last `sliding_window` tokens (Mistral v0.1, Gemma 2/3 local layers, gpt-oss)
  chunked,  ///< chunked local attention: tokens of the current `attention_chunk_size` chunk (Llama 4 RoPE layers)
  linear,   ///< linear attention / state space (Qwen3-Next Gated DeltaNet): a fixed-size state per request, no KV
  none,     ///< no token mixer: an MLP-only block (Nemotron-H's '-' and 'E' layers), no cache
};

/// The feed-forward block of one layer.
enum class LayerMlp : std::uint8_t {
  dense,  ///< a dense MLP of intermediate_size
  moe,    ///< routed experts (and the shared experts) of `moe`
  none,   ///< no MLP: a mixer-only block (Nemotron-H's Mamba and attention layers)
};

/// Linear-attention / state-space layers: per request a causal-conv state and a recurrent state whatever the
/// context length (vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator):
///   gated_delta_net  Qwen3-Next, Qwen3.5 (config.json linear_* keys): conv (conv_kernel - 1) x conv_dim,
///                    recurrent num_value_heads x value_head_dim x key_head_dim
///   mamba2           Granite 4.0 H, Falcon-H1, Nemotron-H (mamba_* keys): conv (conv_kernel - 1) x (intermediate +
///                    2 n_groups state), recurrent num_heads x head_dim x state
///   mamba1           Jamba: conv intermediate x (conv_kernel - 1), recurrent intermediate x state
struct LinearAttentionSpec {
  enum class Kind : std::uint8_t { gated_delta_net, mamba2, mamba1 };
  Kind kind = Kind::gated_delta_net;
  i64 num_key_heads = 0;    ///< gated_delta_net: linear_num_key_heads
  i64 num_value_heads = 0;  ///< gated_delta_net: linear_num_value_heads; mamba2: mamba_n_heads
  i64 key_head_dim = 0;     ///< gated_delta_net: linear_key_head_dim
  i64 value_head_dim = 0;   ///< gated_delta_net: linear_value_head_dim; mamba2: mamba_d_head
  i64 intermediate_size = 0;///< mamba: mamba_expand x hidden_size (d_inner)
  i64 state_size = 0;       ///< mamba: mamba_d_state
  i64 n_groups = 1;         ///< mamba2: mamba_n_groups
  i64 dt_rank = 0;          ///< mamba1: mamba_dt_rank
  bool conv_bias = false;   ///< mamba: mamba_conv_bias
  bool proj_bias = false;   ///< mamba: mamba_proj_bias
  bool gated_norm = true;   ///< mamba2: the gated RMSNorm before out_proj (Falcon-H1 mamba_rms_norm)
  /// Every attention layer also runs this mixer beside its attention, the two outputs summed (Falcon-H1's
  /// parallel hybrid, vllm/model_executor/models/falcon_h1.py FalconH1ParallelHybrid): the layer keeps both a KV
  /// cache and a state.
  bool parallel = false;
  i64 conv_kernel = 0;      ///< linear_conv_kernel_dim / mamba_d_conv
  /// mamba_ssm_dtype of config.json (Qwen3.5: float32): the recurrent state's dtype; auto: the model dtype
  /// (vLLM Qwen3_5ForConditionalGenerationConfig copies it into --mamba-ssm-cache-dtype).
  DType state_dtype = DType::auto_;
  /// The Mamba-2 SSD kernel's chunk (config.json mamba_chunk_size or chunk_size; 0: absent, which vLLM's
  /// ModelConfig.get_mamba_chunk_size reads as 2048, as for Mamba-1). Only the block size of vLLM's
  /// mamba_cache_mode "all" depends on it: the block is a multiple of it.
  i64 chunk_size = 0;
  /// vLLM's model class declares SupportsMambaPrefixCaching (Mamba-2 and Mamba-1 hybrids: nemotron_h.py,
  /// granitemoehybrid.py, falcon_h1.py, jamba.py), so with prefix caching its default mamba_cache_mode is "all";
  /// Qwen3-Next and Qwen3.5 (Gated DeltaNet) do not, and run "align".
  [[nodiscard]] bool supports_cache_mode_all() const { return kind != Kind::gated_delta_net; }
  /// The channels the short convolution runs over (before tensor parallelism; mamba2 without group padding).
  i64 conv_dim() const {
    switch (kind) {
      case Kind::gated_delta_net: return key_head_dim * num_key_heads * 2 + value_head_dim * num_value_heads;
      case Kind::mamba2: return intermediate_size + 2 * n_groups * state_size;
      case Kind::mamba1: return intermediate_size;
    }
    return 0;
  }
  bool enabled() const { return conv_kernel > 0; }
};

/// DeepSeek's multi-head latent attention projections. With attention `mla` the cache holds the latent;
/// with attention `gqa` and kv_lora_rank > 0 the projections are low-rank but every head's key and value
/// (value zero-padded to the key's width) are cached as in MHA: MiniCPM3 (vllm/model_executor/models/
/// minicpm3.py MiniCPM3Attention builds Attention(num_heads, qk_head_dim, num_kv_heads=num_heads)).
struct MlaSpec {
  i64 kv_lora_rank = 0;      ///< kv_lora_rank: width of the compressed KV latent (512 for V2/V3)
  i64 q_lora_rank = 0;       ///< q_lora_rank: 0 (null) means a full-rank q_proj (V2-Lite)
  i64 qk_rope_head_dim = 0;  ///< qk_rope_head_dim: decoupled rope key, cached beside the latent (64)
  i64 qk_nope_head_dim = 0;  ///< qk_nope_head_dim
  i64 v_head_dim = 0;        ///< v_head_dim
};

struct MoeSpec {
  i64 num_experts = 0;                 ///< routed experts (n_routed_experts / num_local_experts / num_experts)
  i64 experts_per_token = 0;           ///< num_experts_per_tok (top-k)
  i64 expert_intermediate_size = 0;    ///< moe_intermediate_size (Mixtral: intermediate_size)
  i64 shared_intermediate_size = 0;    ///< total width of always-on shared experts (n_shared_experts x moe_intermediate_size)
  i64 first_dense_layers = 0;          ///< first_k_dense_replace: leading layers with a dense MLP
  i64 layer_frequency = 1;             ///< moe_layer_freq / decoder_sparse_step: every n-th layer is MoE
  i64 layer_offset = 0;                ///< layer l is MoE when (l + offset) % frequency == 0 (Llama 4: step - 1)
  bool router_bias = false;            ///< gpt-oss router has a bias
  bool expert_bias = false;            ///< gpt-oss experts have biases
  bool score_correction_bias = false;  ///< DeepSeek-V3 e_score_correction_bias (noaux_tc routing)
  bool shared_expert_gate = false;     ///< Qwen2-MoE sigmoid gate on the shared expert
  bool enabled() const { return num_experts > 0; }
};

/// The vision encoder of a multimodal checkpoint, which vLLM builds and loads beside the language model (its
/// weights take GPU memory; `--language-model-only` leaves it out). Only its weights are modelled: its activations
/// in vLLM's start-up profiling and the encoder cache are not. Shapes from config.json's vision_config:
///   siglip  Gemma 3 (vllm/model_executor/models/siglip.py SiglipVisionModel, gemma3_mm.py Gemma3MultiModalProjector)
///   llama4  Llama 4 (vllm/model_executor/models/mllama4.py Llama4VisionModel, Llama4MultiModalProjector)
struct VisionSpec {
  enum class Kind : std::uint8_t { none, siglip, llama4 };
  Kind kind = Kind::none;
  i64 hidden_size = 0;           ///< vision_config.hidden_size
  i64 num_layers = 0;            ///< vision_config.num_hidden_layers
  i64 intermediate_size = 0;     ///< vision_config.intermediate_size
  i64 patch_size = 0;            ///< vision_config.patch_size
  i64 image_size = 0;            ///< vision_config.image_size
  i64 num_channels = 3;          ///< vision_config.num_channels
  bool use_head = false;         ///< siglip: vision_use_head (the attention-pooling head)
  i64 projector_input_dim = 0;   ///< llama4: projector_input_dim (pixel-shuffle MLP width)
  i64 projector_output_dim = 0;  ///< llama4: projector_output_dim
  i64 output_dim = 0;            ///< llama4: vision_output_dim (input of the projector to the text width)
  bool enabled() const { return kind != Kind::none; }
};

struct ModelSpec {
  std::string name;          ///< built-in name, e.g. "llama-3.1-8b"
  std::string display_name;  ///< e.g. "Meta Llama 3.1 8B"
  std::string family;        ///< config.json model_type: llama, mistral, mixtral, qwen2, deepseek_v3, ...
  std::string source;        ///< where the numbers come from (config.json citation)
  DType dtype = DType::bf16;           ///< torch_dtype: the activation / unquantised weight dtype
  DType quantization = DType::auto_;   ///< linear-layer weight format of the checkpoint (auto: = dtype)
  /// The KV-cache format a ModelOpt checkpoint's kv_cache_quant_algo names (fp8), which vLLM's --kv-cache-dtype auto
  /// serves from 0.13 on (auto_kv_dtype); auto: none named, auto is the model dtype.
  DType kv_cache_dtype = DType::auto_;

  i64 hidden_size = 0;              ///< hidden_size
  i64 intermediate_size = 0;        ///< intermediate_size (dense MLP width)
  i64 num_layers = 0;               ///< num_hidden_layers
  i64 vocab_size = 0;               ///< vocab_size
  i64 max_position_embeddings = 0;  ///< vLLM's derived maximum model length (config keys x rope scaling)
  i64 default_max_model_len = 0;    ///< vLLM's default max_model_len when it differs (longrope: the original length); 0: max_position_embeddings
  bool tie_word_embeddings = false; ///< tie_word_embeddings

  AttentionType attention = AttentionType::gqa;
  i64 num_heads = 0;     ///< num_attention_heads (query heads)
  i64 num_kv_heads = 0;  ///< num_key_value_heads (= num_heads for MHA, 1 for MQA)
  i64 head_dim = 0;      ///< explicit head_dim, else hidden_size / num_attention_heads
  bool qkv_bias = false; ///< attention_bias / Qwen2 q,k,v bias
  bool o_bias = false;   ///< bias on o_proj (gpt-oss)
  bool qk_norm = false;  ///< per-head RMSNorm on q and k (Qwen3, Gemma 3)
  bool attention_sinks = false;  ///< learned per-head sinks (gpt-oss)
  bool attention_output_gate = false;  ///< q_proj also emits a sigmoid gate per head (Qwen3-Next gated attention)
  i64 sliding_window = 0;        ///< sliding_window in tokens (0: none)
  i64 attention_chunk_size = 0;  ///< attention_chunk_size of chunked local layers (Llama 4; 0: none)
  /// The last kv_shared_layers layers read the KV cache of an earlier layer and keep none of their own
  /// (Gemma 3n num_kv_shared_layers; vLLM Attention(kv_sharing_target_layer_name=...) gets no KVCacheSpec).
  i64 kv_shared_layers = 0;
  /// index_head_dim of DeepSeek-V3.2's sparse-attention indexer (0: none): each layer also caches an
  /// fp8 indexer key of index_head_dim bytes + one fp32 scale per 128 (vllm deepseek_v2.py DeepseekV32IndexerCache).
  i64 index_head_dim = 0;
  /// Attention kind per layer, repeated cyclically over the layers (config layer_types, or the
  /// Gemma pattern). Empty: every layer full, or every layer sliding when sliding_window > 0.
  std::vector<LayerAttention> layer_pattern;
  /// Feed-forward kind per layer, repeated cyclically (Nemotron-H's hybrid_override_pattern: its Mamba and attention
  /// blocks have no MLP). Empty: every layer has one, with experts where `moe` places them.
  std::vector<LayerMlp> mlp_pattern;

  MlaSpec mla;
  LinearAttentionSpec linear;  ///< of the `linear` layers of layer_pattern
  MoeSpec moe;
  VisionSpec vision;          ///< vision_config of a multimodal checkpoint (none: a text-only model)
  bool mlp_gated = true;      ///< SwiGLU/GeGLU: gate, up, down (3 matrices)
  bool mlp_bias = false;
  i64 norms_per_layer = 2;    ///< RMSNorm weight vectors per layer (Gemma 2/3: 4)

  /// What vLLM says of this architecture when it cannot serve it as kvcap models it (printed as a warning
  /// with every plan), e.g. Phi-3-small's removal in vLLM 0.10; empty: none.
  std::string vllm_note;

  double published_params_total = 0;   ///< published parameter count, for cross-checks (0: unknown)
  double published_params_active = 0;
  /// Relative precision of the published total (0.005 for "3-4 significant figures"; "1T" is one figure).
  double published_params_tolerance = 0.005;
};

/// Attention kind of layer `layer` (0-based).
LayerAttention layer_attention(const ModelSpec& m, i64 layer);
/// Whether layer `layer` has a mixture-of-experts MLP.
bool layer_is_moe(const ModelSpec& m, i64 layer);
/// The feed-forward kind of layer `layer`.
LayerMlp layer_mlp(const ModelSpec& m, i64 layer);
/// Whether layer `layer` attends (full, sliding or chunked attention: it keeps a KV cache).
bool layer_has_attention(const ModelSpec& m, i64 layer);
/// Whether layer `layer` runs a linear-attention / state-space mixer (a `linear` layer, or beside its attention when
/// linear.parallel).
bool layer_has_linear(const ModelSpec& m, i64 layer);
/// Tensor-parallel all-reduces of layer `layer`'s forward pass: one per row-parallel output (attention's o_proj, a
/// mixer's out_proj, the MLP's down_proj; vllm RowParallelLinear reduce_results).
i64 allreduces_per_layer(const ModelSpec& m, i64 layer);
/// KV elements per token per layer on one rank, before dtype: 2 x max(1, H_kv/TP) x head_dim (GQA),
/// kv_lora_rank + qk_rope_head_dim (MLA, replicated on every TP rank).
/// Source: vllm/v1/kv_cache_interface.py (AttentionSpec.page_size_bytes, MLAAttentionSpec) and
/// vllm/config get_num_kv_heads (max(1, total_kv_heads // tp)).
i64 kv_elements_per_token_per_layer(const ModelSpec& m, i64 tensor_parallel_size);
/// KV heads held by one rank: max(1, H_kv / TP) (replicated when TP > H_kv); 1 for MLA.
i64 kv_heads_per_rank(const ModelSpec& m, i64 tensor_parallel_size);

/// Bytes of one attention layer's page of `block_size` tokens on one rank in KV format `kv`
/// (vllm/v1/kv_cache_interface.py AttentionSpec.page_size_bytes): the K and V elements in `kv`, plus for the
/// *_per_token_head formats an fp32 scale per token and KV head for K and V (2 x block x kv_heads x 4).
/// `kv_group`: the KIVI group size of int4/int2 KV (0: the format's 32; dtype.hpp kv_bytes).
u64 attention_page_bytes(const ModelSpec& m, DType kv, i64 tensor_parallel_size, i64 block_size, unsigned kv_group = 0);

/// Whether the attention projections are MLA's low-rank ones (DeepSeek MLA, or MiniCPM3's per-head cache).
bool mla_projections(const ModelSpec& m);

/// Whether any layer is a linear-attention layer (a hybrid of attention and state-space layers).
bool has_linear_layers(const ModelSpec& m);
/// Bytes of one linear-attention layer's per-request state on one TP rank: conv state in `act`, the
/// recurrent state in linear.state_dtype (auto: act) or `ssm_override` when not auto
/// (vLLM MambaSpec.page_size_bytes before padding; MambaStateDtypeCalculator.gated_delta_net_state_dtype).
u64 linear_state_bytes_per_rank(const ModelSpec& m, i64 tensor_parallel_size, DType act, DType ssm_override = DType::auto_);

/// Throws SpecError naming the field when the architecture is impossible.
void validate(const ModelSpec& m);

}  // namespace kvcap
