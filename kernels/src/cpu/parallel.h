// A minimal fork-join loop over std::thread: static contiguous ranges, the caller runs the last range.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace kvcap::kernels::detail {

inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

// Calls f(begin, end) on disjoint ranges covering [0, n).
template <class F>
void parallel_for(std::int64_t n, int num_threads, F&& f) {
  const int t = static_cast<int>(std::min<std::int64_t>(resolve_threads(num_threads), std::max<std::int64_t>(n, 1)));
  if (t <= 1) {
    f(std::int64_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(t - 1));
  const auto range = [&](int i) { return std::pair<std::int64_t, std::int64_t>{n * i / t, n * (i + 1) / t}; };
  for (int i = 0; i < t - 1; ++i) {
    const auto [b, e] = range(i);
    pool.emplace_back([&f, b = b, e = e] { f(b, e); });
  }
  const auto [b, e] = range(t - 1);
  f(b, e);
  for (auto& th : pool) th.join();
}

}  // namespace kvcap::kernels::detail
