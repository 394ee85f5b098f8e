#pragma once
// Deterministic random numbers, identical on every standard library: std::mt19937_64 (its output
// sequence is fixed by the C++ standard) with our own transforms, because std::*_distribution
// algorithms are implementation-defined and differ between libstdc++, libc++ and MSVC.
#include <cstdint>
#include <random>

namespace kvcap::sim {

/// SplitMix64 (Steele, Lea, Flood 2014): derives independent stream seeds from one user seed.
std::uint64_t splitmix64(std::uint64_t& state);
/// The seed of stream `stream` (arrivals, prompt lengths, ...) of a run seeded with `seed`.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream);

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  std::uint64_t next_u64() { return engine_(); }
  /// [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  /// (0, 1): never 0, for logarithms.
  double uniform_open01() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53; }
  /// Exponential with the given rate (mean 1/rate): inversion, -ln(U) / rate.
  double exponential(double rate);
  /// Standard normal: Box-Muller (one of the pair used, so each call consumes exactly two draws).
  double normal();
  /// Gamma(shape, scale): Marsaglia & Tsang (2000) for shape >= 1; shape < 1 via Gamma(shape + 1) x U^(1/shape).
  double gamma(double shape, double scale);
  /// Integer uniform on [lo, hi] (Lemire's nearly-divisionless method with rejection: unbiased).
  std::int64_t uniform_int(std::int64_t lo, std::int64_t hi);

 private:
  std::mt19937_64 engine_;
};

}  // namespace kvcap::sim
