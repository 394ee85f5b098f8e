#pragma once
// Overflow-checked integer arithmetic for byte and token products. Cluster-scale products
// (10^6 GPUs x 10^7 tokens x ~10^6 bytes/token ~ 10^19) exceed 2^64, so every product that can
// grow with GPUs, tokens or bytes goes through these helpers: they either return the exact value
// or throw OverflowError naming what was being computed. No silent wrap, no silent rounding.
#include <cstdint>
#include <string_view>

#include "kvcap/planner/error.hpp"

namespace kvcap {

using u64 = std::uint64_t;
using i64 = std::int64_t;
__extension__ using u128 = unsigned __int128;  // GCC/Clang extension, for exact cluster-scale products

[[noreturn]] void throw_overflow(std::string_view what);

inline u64 mul(u64 a, u64 b, std::string_view what = "product") {
  u64 r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw_overflow(what);
  return r;
}
inline u64 add(u64 a, u64 b, std::string_view what = "sum") {
  u64 r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw_overflow(what);
  return r;
}
inline i64 mul(i64 a, i64 b, std::string_view what = "product") {
  i64 r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw_overflow(what);
  return r;
}
inline i64 add(i64 a, i64 b, std::string_view what = "sum") {
  i64 r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw_overflow(what);
  return r;
}
inline i64 sub(i64 a, i64 b, std::string_view what = "difference") {
  i64 r = 0;
  if (__builtin_sub_overflow(a, b, &r)) throw_overflow(what);
  return r;
}
/// ceil(a / b) for b > 0, without the (a + b - 1) overflow.
constexpr u64 ceil_div(u64 a, u64 b) { return a / b + (a % b != 0 ? 1 : 0); }

/// u128 -> u64, throwing when it does not fit.
inline u64 narrow(u128 v, std::string_view what) {
  if (v > static_cast<u128>(UINT64_MAX)) throw_overflow(what);
  return static_cast<u64>(v);
}
/// u64 -> i64, throwing when it does not fit.
inline i64 to_signed(u64 v, std::string_view what) {
  if (v > static_cast<u64>(INT64_MAX)) throw_overflow(what);
  return static_cast<i64>(v);
}

}  // namespace kvcap
