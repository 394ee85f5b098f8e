#include "kvcap/simulator/metrics.hpp"

#include <algorithm>
#include <cmath>

namespace kvcap::sim {

LogHistogram::LogHistogram() : buckets_(static_cast<std::size_t>(kPerOctave) * kOctaves + 1, 0) {}

void LogHistogram::add(double v, std::uint64_t n) {
  if (n == 0) return;
  if (!(v >= 0)) v = 0;  // NaN or negative never happens in a consistent run; count it at 0
  std::size_t i = 0;
  if (v >= kMin) {
    const double k = std::floor(std::log2(v / kMin) * kPerOctave);
    i = 1 + static_cast<std::size_t>(std::min(k, static_cast<double>(buckets_.size() - 2)));
  }
  buckets_[i] += n;
  if (count_ == 0 || v < min_) min_ = v;
  if (count_ == 0 || v > max_) max_ = v;
  count_ += n;
  sum_ += v * static_cast<double>(n);
}

double LogHistogram::quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // Nearest rank: the ceil(q x n)-th smallest (at least the first).
  const auto rank = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_))));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) {
      if (i == 0) return min_;  // below 1 ns: the smallest value seen (e.g. a zero queueing delay)
      const double mid = kMin * std::exp2((static_cast<double>(i) - 0.5) / kPerOctave);
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;
}

LatencySummary LogHistogram::summary() const {
  LatencySummary s;
  s.count = count_;
  s.mean = mean();
  s.p50 = quantile(0.50);
  s.p90 = quantile(0.90);
  s.p99 = quantile(0.99);
  s.max = max();
  return s;
}

}  // namespace kvcap::sim
