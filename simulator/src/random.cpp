#include "kvcap/simulator/random.hpp"

#include <cmath>
#include <numbers>

namespace kvcap::sim {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t s = seed ^ (0x6a09e667f3bcc909ULL * (stream + 1));
  return splitmix64(s);
}

double Rng::exponential(double rate) { return -std::log(uniform_open01()) / rate; }

double Rng::normal() {
  const double u1 = uniform_open01(), u2 = uniform01();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double Rng::gamma(double shape, double scale) {
  if (shape < 1.0) {
    // Gamma(a) = Gamma(a + 1) x U^(1/a) (Marsaglia & Tsang 2000, section 6).
    const double g = gamma(shape + 1.0, 1.0);
    return g * std::pow(uniform_open01(), 1.0 / shape) * scale;
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x = 0, v = 0;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = uniform_open01();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v * scale;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v * scale;
  }
}

std::int64_t Rng::uniform_int(std::int64_t lo, std::int64_t hi) {
  const std::uint64_t range = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1;
  if (range == 0) return static_cast<std::int64_t>(engine_());  // the full 64-bit range
  // Lemire, "Fast random integer generation in an interval" (2019).
  __extension__ using u128 = unsigned __int128;
  std::uint64_t x = engine_();
  u128 m = static_cast<u128>(x) * range;
  std::uint64_t l = static_cast<std::uint64_t>(m);
  if (l < range) {
    const std::uint64_t t = (0 - range) % range;
    while (l < t) {
      x = engine_();
      m = static_cast<u128>(x) * range;
      l = static_cast<std::uint64_t>(m);
    }
  }
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + static_cast<std::uint64_t>(m >> 64));
}

}  // namespace kvcap::sim
