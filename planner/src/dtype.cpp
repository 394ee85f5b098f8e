#include "kvcap/planner/dtype.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "kvcap/planner/text.hpp"

namespace kvcap {

void throw_overflow(std::string_view what) {
  throw OverflowError("integer overflow computing " + std::string(what) + " (exceeds 2^64)");
}

namespace {
// Sources of the layouts:
// - fp8 weights: DeepSeek-V3 checkpoint (config.json quantization_config: e4m3, weight_block_size
//   [128, 128], one fp32 scale per 128x128 block); vLLM fp8 KV (--kv-cache-dtype fp8) keeps one
//   scale per layer outside the cache: vllm/attention/layer.py (_k_scale, _v_scale).
// - int4 weights: AWQ/GPTQ with group_size 128: an fp16 scale and a packed 4-bit zero point per group
//   (vllm/model_executor/layers/quantization/awq.py: qzeros, scales).
// - mxfp4: OCP Microscaling Formats v1.0: 32 elements share one 8-bit E8M0 scale (gpt-oss experts).
// - nvfp4: NVIDIA's FP4 (ModelOpt quant_algo NVFP4): e2m1 values, one fp8 e4m3 scale per 16 elements and one fp32
//   scale per tensor (negligible): 4.5 bits per weight (NVIDIA Blackwell architecture technical brief; vLLM
//   modelopt.py ModelOptNvFp4Config, group_size 16).
// - vLLM's KV formats (vllm/v1/kv_cache_interface.py AttentionSpec.real_page_size_bytes and
//   page_size_bytes; vllm/utils/torch_utils.py nvfp4_kv_cache_full_dim): nvfp4 stores head/2 bytes of e2m1
//   values plus head/16 bytes of e4m3 block scales per head; the *_per_token_head formats (int4 packs two
//   per byte) add 2 x block x kv_heads x 4 bytes of fp32 scales to the page.
// - int8 KV: one fp16 scale per token and head of 128 (the seed text's per-head layout: 2 bytes per
//   128, 1.56%); int4 / int2 KV: KIVI (Liu et al., arXiv:2402.02750), groups of 32 with an fp16 scale
//   and an fp16 zero point.
const std::vector<DTypeInfo> kTable = {
    {DType::auto_, "auto", 0, 0, 0, 0, 0, 0, true, true, true, "resolved against the model dtype"},
    {DType::fp32, "fp32", 32, 0, 0, 0, 0, 0, true, true, true, "IEEE binary32"},
    {DType::bf16, "bf16", 16, 0, 0, 0, 0, 0, true, true, true, "bfloat16"},
    {DType::fp16, "fp16", 16, 0, 0, 0, 0, 0, true, true, true, "IEEE binary16"},
    {DType::fp8, "fp8", 8, 128 * 128, 32, 0, 0, 0, true, true, false,
     "e4m3; weights: fp32 scale per 128x128 block; KV: per-tensor scale outside the cache"},
    {DType::fp8_e5m2, "fp8_e5m2", 8, 0, 0, 0, 0, 0, false, true, false, "e5m2, no scale"},
    {DType::int8, "int8", 8, 0, 0, 128, 16, 0, true, true, false,
     "weights: per-channel scale (negligible); KV: fp16 scale per 128 values"},
    {DType::int4, "int4", 4, 128, 20, 32, 32, 0, true, true, false,
     "weights: AWQ/GPTQ group 128, fp16 scale + 4-bit zero; KV: KIVI group 32, fp16 scale + zero"},
    {DType::int2, "int2", 2, 0, 0, 32, 32, 0, false, true, false, "KV only: KIVI group 32, fp16 scale + zero"},
    {DType::mxfp4, "mxfp4", 4, 32, 8, 0, 0, 0, true, false, false, "OCP MX: E8M0 scale per 32"},
    {DType::nvfp4, "nvfp4", 4, 16, 8, 16, 8, 0, true, true, false,
     "NVIDIA fp4: e4m3 scale per 16 (+ fp32 per tensor); KV: head/2 + head/16 bytes per head"},
    {DType::fp8_per_token_head, "fp8_per_token_head", 8, 0, 0, 0, 0, 32, false, true, false,
     "KV only: e4m3 with an fp32 scale per token and head"},
    {DType::int8_per_token_head, "int8_per_token_head", 8, 0, 0, 0, 0, 32, false, true, false,
     "KV only: int8 with an fp32 scale per token and head"},
    {DType::int4_per_token_head, "int4_per_token_head", 4, 0, 0, 0, 0, 32, false, true, false,
     "KV only: int4 packed two per byte with an fp32 scale per token and head"},
};

u64 group_bits(u64 elements, unsigned group, unsigned bits) {
  if (group == 0) return 0;
  return mul(ceil_div(elements, group), bits, "dtype metadata bits");
}
}  // namespace

const std::vector<DTypeInfo>& dtype_table() { return kTable; }

const DTypeInfo& info(DType d) {
  for (const auto& i : kTable)
    if (i.dtype == d) return i;
  return kTable.front();
}

std::string_view name(DType d) { return info(d).name; }

std::optional<DType> parse_dtype(std::string_view s) {
  const std::string v = lowercase(s);
  if (v == "auto") return DType::auto_;
  if (v == "fp32" || v == "float32" || v == "float") return DType::fp32;
  if (v == "bf16" || v == "bfloat16") return DType::bf16;
  if (v == "fp16" || v == "float16" || v == "half") return DType::fp16;
  if (v == "fp8" || v == "fp8_e4m3" || v == "float8_e4m3fn" || v == "e4m3") return DType::fp8;
  if (v == "fp8_e5m2" || v == "float8_e5m2" || v == "e5m2") return DType::fp8_e5m2;
  if (v == "int8" || v == "w8a16") return DType::int8;
  if (v == "int4" || v == "awq" || v == "gptq" || v == "w4a16") return DType::int4;
  if (v == "int2") return DType::int2;
  if (v == "mxfp4") return DType::mxfp4;
  if (v == "nvfp4" || v == "modelopt_fp4" || v == "fp4") return DType::nvfp4;
  if (v == "fp8_per_token_head") return DType::fp8_per_token_head;
  if (v == "int8_per_token_head") return DType::int8_per_token_head;
  if (v == "int4_per_token_head") return DType::int4_per_token_head;
  return std::nullopt;
}

std::string dtype_names(bool (*accept)(const DTypeInfo&)) {
  std::string r;
  for (const auto& i : kTable) {
    if (!accept(i)) continue;
    if (!r.empty()) r += ", ";
    r += i.name;
  }
  return r;
}

u64 payload_bits(DType d, u64 elements) { return mul(elements, info(d).payload_bits, "payload bits"); }

u64 weight_bytes(DType d, u64 elements) {
  const auto& i = info(d);
  const u64 bits = add(payload_bits(d, elements), group_bits(elements, i.weight_group, i.weight_group_bits),
                       "weight bits");
  return ceil_div(bits, 8);
}

u64 kv_head_scale_bytes(DType d) {
  return info(d).kv_head_scale_bits / 8;
}

bool kv_group_size_settable(DType d) {
  return d == DType::int4 || d == DType::int2;
}

u64 kv_bytes(DType d, u64 elements, unsigned group) {
  const auto& i = info(d);
  const unsigned g = group > 0 && kv_group_size_settable(d) ? group : i.kv_group;
  const u64 bits = add(payload_bits(d, elements), group_bits(elements, g, i.kv_group_bits), "KV bits");
  return ceil_div(bits, 8);
}

}  // namespace kvcap
