#include <cstring>
#include <stdexcept>

#include "cpu/parallel.h"
#include "kvcap/kernels/stream.h"

namespace kvcap::kernels {

namespace {
inline std::uint32_t fold(std::uint64_t x) { return static_cast<std::uint32_t>(x ^ (x >> 32)); }
}  // namespace

std::uint32_t stream_read_cpu(const void* src, std::size_t bytes, int num_threads) {
  if (bytes % 16 != 0) throw std::invalid_argument("stream read: bytes must be a multiple of 16");
  const auto* w = static_cast<const std::uint64_t*>(src);
  const auto words = static_cast<std::int64_t>(bytes / 8);
  const int t = detail::resolve_threads(num_threads);
  std::vector<std::uint64_t> partial(static_cast<std::size_t>(t), 0);
  // Ranges split [0, t) so each thread owns one slot; the XOR is order independent.
  detail::parallel_for(t, t, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t part = lo; part < hi; ++part) {
      const std::int64_t b = words * part / t, e = words * (part + 1) / t;
      std::uint64_t x0 = 0, x1 = 0, x2 = 0, x3 = 0;
      std::int64_t i = b;
      for (; i + 4 <= e; i += 4) {
        x0 ^= w[i];
        x1 ^= w[i + 1];
        x2 ^= w[i + 2];
        x3 ^= w[i + 3];
      }
      for (; i < e; ++i) x0 ^= w[i];
      partial[static_cast<std::size_t>(part)] = x0 ^ x1 ^ x2 ^ x3;
    }
  });
  std::uint64_t x = 0;
  for (auto v : partial) x ^= v;
  return fold(x);
}

void stream_copy_cpu(void* dst, const void* src, std::size_t bytes, int num_threads) {
  const int t = detail::resolve_threads(num_threads);
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  detail::parallel_for(t, t, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t part = lo; part < hi; ++part) {
      const std::size_t b = bytes * static_cast<std::size_t>(part) / static_cast<std::size_t>(t) / 64 * 64;
      const std::size_t e = part + 1 == t ? bytes : bytes * static_cast<std::size_t>(part + 1) / static_cast<std::size_t>(t) / 64 * 64;
      std::memcpy(d + b, s + b, e - b);
    }
  });
}

std::uint32_t stream_checksum_reference(const void* src, std::size_t bytes) {
  const auto* w = static_cast<const std::uint32_t*>(src);
  std::uint32_t x = 0;
  for (std::size_t i = 0; i < bytes / 4; ++i) x ^= w[i];
  return x;
}

}  // namespace kvcap::kernels
