#include "kvcap/kernels/numeric.h"

#include <stdexcept>

namespace kvcap::kernels {

void quantize_kv(KvDtype d, const float* src, void* dst, std::size_t n, float scale) {
  const float inv = 1.0f / scale;
  switch (d) {
    case KvDtype::bf16: {
      auto* o = static_cast<std::uint16_t*>(dst);
      for (std::size_t i = 0; i < n; ++i) o[i] = float_to_bf16(src[i] * inv);
      return;
    }
    case KvDtype::fp16: {
      auto* o = static_cast<std::uint16_t*>(dst);
      for (std::size_t i = 0; i < n; ++i) o[i] = float_to_fp16(src[i] * inv);
      return;
    }
    case KvDtype::fp8_e4m3: {
      auto* o = static_cast<std::uint8_t*>(dst);
      for (std::size_t i = 0; i < n; ++i) o[i] = float_to_fp8e4m3(src[i] * inv);
      return;
    }
  }
  throw std::invalid_argument("quantize_kv: unknown KvDtype");
}

float kv_element(KvDtype d, const void* buf, std::size_t i) {
  switch (d) {
    case KvDtype::bf16: return bf16_to_float(static_cast<const std::uint16_t*>(buf)[i]);
    case KvDtype::fp16: return fp16_to_float(static_cast<const std::uint16_t*>(buf)[i]);
    case KvDtype::fp8_e4m3: return fp8e4m3_to_float(static_cast<const std::uint8_t*>(buf)[i]);
  }
  throw std::invalid_argument("kv_element: unknown KvDtype");
}

}  // namespace kvcap::kernels
