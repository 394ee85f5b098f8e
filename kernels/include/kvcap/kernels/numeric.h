// Storage formats shared by the CPU twins and the CUDA kernels: bf16, fp16 and fp8-e4m3 held as raw bits,
// converted in software so the same code runs on the host and on the device, bit for bit.
// Widening conversions (storage -> float) are exact; narrowing ones (float -> storage) round to nearest even and
// exist on the host only (the kernels never quantise).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#if defined(__CUDACC__)
#define KVCAP_HD __host__ __device__ __forceinline__
#else
#define KVCAP_HD inline
#endif

namespace kvcap::kernels {

// Element type of the KV cache.
enum class KvDtype : int { bf16 = 0, fp16 = 1, fp8_e4m3 = 2 };

constexpr std::size_t kv_dtype_bytes(KvDtype d) { return d == KvDtype::fp8_e4m3 ? 1 : 2; }

// Names as the calibration file writes them ("fp8" is e4m3, as vLLM's kv_cache_dtype="fp8").
constexpr std::string_view to_string(KvDtype d) {
  switch (d) {
    case KvDtype::bf16: return "bf16";
    case KvDtype::fp16: return "fp16";
    case KvDtype::fp8_e4m3: return "fp8";
  }
  return "?";
}

KVCAP_HD float bits_to_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

KVCAP_HD std::uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

// ---- bf16: the top 16 bits of an IEEE float ----
KVCAP_HD float bf16_to_float(std::uint16_t h) { return bits_to_float(std::uint32_t{h} << 16); }

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN stays a quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                       // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

// ---- fp16 (IEEE binary16) ----
// Branch-free (so CPU loops vectorise): move exponent+mantissa into float position and rescale by 2^(127-15);
// subnormals come out exact through the float subnormal range. Exact for every finite value; inf/NaN inputs (never
// stored in a KV cache) widen to large finite values.
KVCAP_HD float fp16_to_float(std::uint16_t h) {
  const float mag = bits_to_float(std::uint32_t{h & 0x7fffu} << 13) * 5.192296858534828e+33f;  // 2^112
  return bits_to_float(float_to_bits(mag) | (std::uint32_t{h & 0x8000u} << 16));
}

inline std::uint16_t float_to_fp16(float f) {
  const std::uint32_t u = float_to_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const float a = std::fabs(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>(sign | 0x7e00u);
  if (a >= 65520.0f) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (a < 6.103515625e-5f) {  // below the smallest normal: subnormal steps of 2^-24
    const auto q = static_cast<std::uint32_t>(std::nearbyint(a * 16777216.0f));
    return static_cast<std::uint16_t>(sign | q);  // q == 1024 encodes the smallest normal, as wanted
  }
  int e = 0;
  const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  auto q = static_cast<std::uint32_t>(std::nearbyint((m * 2.0f - 1.0f) * 1024.0f));
  int biased = e - 1 + 15;
  if (q == 1024) { q = 0; ++biased; }
  if (biased >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(biased) << 10) | q);
}

// ---- fp8 e4m3 (OCP "E4M3FN": bias 7, no infinity, max 448, S.1111.111 is NaN) ----
// Branch-free like fp16: exponent+mantissa into float position, rescale by 2^(127-7). Exact for all 254 finite
// values (the NaN codes 0x7f/0xff widen to +-480).
KVCAP_HD float fp8e4m3_to_float(std::uint8_t v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  // sm_89+: the hardware conversion (see fp8x2_e4m3_to_float2 below), on a pair whose upper byte is zero.
  std::uint32_t h2;
  float f;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(static_cast<std::uint16_t>(v)));
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<std::uint16_t>(h2 & 0xffffu)));
  return f;
#else
  const float mag = bits_to_float(std::uint32_t{v & 0x7fu} << 20) * 1.329227995784916e+36f;  // 2^120
  return bits_to_float(float_to_bits(mag) | (std::uint32_t{v & 0x80u} << 24));
#endif
}

inline std::uint8_t float_to_fp8e4m3(float f) {
  const std::uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  if (std::isnan(f)) return 0x7f;
  const float a = std::fabs(f);
  if (a >= 448.0f) return static_cast<std::uint8_t>(sign | 0x7e);  // saturate (the "satfinite" convention)
  if (a < 0.015625f) {  // below 2^-6: subnormal steps of 2^-9 (q == 8 encodes 2^-6, as wanted)
    const auto q = static_cast<std::uint32_t>(std::nearbyint(a * 512.0f));
    return static_cast<std::uint8_t>(sign | q);
  }
  int e = 0;
  const float m = std::frexp(a, &e);
  auto q = static_cast<std::uint32_t>(std::nearbyint((m * 2.0f - 1.0f) * 8.0f));
  int biased = e - 1 + 7;
  if (q == 8) { q = 0; ++biased; }
  if (biased > 15 || (biased == 15 && q == 7)) return static_cast<std::uint8_t>(sign | 0x7e);
  return static_cast<std::uint8_t>(sign | (static_cast<std::uint32_t>(biased) << 3) | q);
}

// Two packed elements at once, as the CUDA kernels widen them. bf16: the halves of a 32-bit word, shifted into
// place. fp8: on sm_89+ one cvt.rn.f16x2.e4m3x2 (exact: every finite e4m3 value is an fp16 normal) and two
// f16 -> f32 conversions; elsewhere, and on the host, the software widening above (same values; the two NaN codes
// differ, and no KV cache holds them).
KVCAP_HD void bf16x2_to_float2(std::uint32_t two, float& lo, float& hi) {
  lo = bits_to_float(two << 16);
  hi = bits_to_float(two & 0xffff0000u);
}

KVCAP_HD void fp8x2_e4m3_to_float2(std::uint16_t two, float& lo, float& hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  std::uint32_t h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(two));
  asm("cvt.f32.f16 %0, %1;" : "=f"(lo) : "h"(static_cast<std::uint16_t>(h2 & 0xffffu)));
  asm("cvt.f32.f16 %0, %1;" : "=f"(hi) : "h"(static_cast<std::uint16_t>(h2 >> 16)));
#else
  lo = fp8e4m3_to_float(static_cast<std::uint8_t>(two & 0xffu));
  hi = fp8e4m3_to_float(static_cast<std::uint8_t>(two >> 8));
#endif
}

// Compile-time view of a KV element type: its storage and its widening conversion.
template <KvDtype D> struct KvTraits;
template <> struct KvTraits<KvDtype::bf16> {
  using storage = std::uint16_t;
  static KVCAP_HD float to_float(storage s) { return bf16_to_float(s); }
  static storage from_float(float f) { return float_to_bf16(f); }
};
template <> struct KvTraits<KvDtype::fp16> {
  using storage = std::uint16_t;
  static KVCAP_HD float to_float(storage s) { return fp16_to_float(s); }
  static storage from_float(float f) { return float_to_fp16(f); }
};
template <> struct KvTraits<KvDtype::fp8_e4m3> {
  using storage = std::uint8_t;
  static KVCAP_HD float to_float(storage s) { return fp8e4m3_to_float(s); }
  static storage from_float(float f) { return float_to_fp8e4m3(f); }
};

// Quantise `n` floats into `dst` (n * kv_dtype_bytes(d) bytes), dividing by `scale` first (fp8 scale convention:
// stored = round(x / scale), x ~= stored * scale).
void quantize_kv(KvDtype d, const float* src, void* dst, std::size_t n, float scale = 1.0f);
// Widen element i of a KV buffer to float (no scale applied).
float kv_element(KvDtype d, const void* buf, std::size_t i);

}  // namespace kvcap::kernels
