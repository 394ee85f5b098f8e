#pragma once
// One table of element formats for weights, activations and the KV cache: payload bits per element
// plus per-group metadata (scales, zero points). Every byte count in kvcap derives from it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvcap/planner/checked.hpp"

namespace kvcap {

enum class DType : std::uint8_t {
  auto_,  ///< "auto": resolved against the model dtype (vLLM --dtype / --kv-cache-dtype auto)
  fp32,
  bf16,
  fp16,
  fp8,  ///< fp8 e4m3 (vLLM "fp8" / "fp8_e4m3"), per-tensor scale for KV
  fp8_e5m2,
  int8,
  int4,
  int2,
  mxfp4,  ///< OCP microscaling fp4 (gpt-oss expert weights)
  nvfp4,  ///< NVIDIA fp4 (e2m1) with an fp8 scale per 16 elements (ModelOpt NVFP4 checkpoints; vLLM nvfp4 KV)
  fp8_per_token_head,   ///< vLLM KV: fp8 e4m3 with an fp32 scale per token and KV head
  int8_per_token_head,  ///< vLLM KV: int8 with an fp32 scale per token and KV head
  int4_per_token_head,  ///< vLLM KV: int4 (two per byte) with an fp32 scale per token and KV head
};

struct DTypeInfo {
  DType dtype;
  std::string_view name;         ///< canonical kvcap name
  unsigned payload_bits;         ///< bits per element
  unsigned weight_group;         ///< elements per metadata group when used for weights (0: none)
  unsigned weight_group_bits;    ///< metadata bits per weight group
  unsigned kv_group;             ///< elements per metadata group when used for KV (0: none)
  unsigned kv_group_bits;        ///< metadata bits per KV group
  unsigned kv_head_scale_bits;   ///< metadata bits per token and KV head, for K and V each (per-token-head formats)
  bool weights_ok;               ///< valid as a weight format
  bool kv_ok;                    ///< valid as a KV-cache format
  bool activation_ok;            ///< valid as the model (activation) dtype
  std::string_view note;         ///< where the layout comes from
};

/// The table (see dtype.cpp for the sources of each layout).
const std::vector<DTypeInfo>& dtype_table();
const DTypeInfo& info(DType d);
std::string_view name(DType d);
/// Parses kvcap and vLLM spellings ("bfloat16", "fp8_e4m3", "float16", "half", "awq"...).
std::optional<DType> parse_dtype(std::string_view s);
/// Comma-separated list of accepted names, for error messages.
std::string dtype_names(bool (*accept)(const DTypeInfo&));

/// Bytes to store `elements` values as weights: payload plus group metadata, rounded up to a byte.
u64 weight_bytes(DType d, u64 elements);
/// Bytes to store `elements` KV values of one token of one layer (groups run along the head). `group` > 0 sets the
/// group size of the KIVI formats (int4, int2: one fp16 scale and one fp16 zero point per group; the what-if
/// --kv-quant-group-size); 0 keeps the table's 32.
u64 kv_bytes(DType d, u64 elements, unsigned group = 0);
/// Whether `d` is a KIVI-style grouped KV format whose group size --kv-quant-group-size sets (int4, int2).
bool kv_group_size_settable(DType d);
/// Scale bytes a per-token-head KV format adds per token and KV head, for K and V each (0 for the others).
u64 kv_head_scale_bytes(DType d);
/// Payload-only bytes (the textbook 0.5 B for int4), as fraction numerator over 8: bits.
u64 payload_bits(DType d, u64 elements);

}  // namespace kvcap
