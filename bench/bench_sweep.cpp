// bench_sweep: `kvcap sweep` over 10^6 grid points (4 models x 2 GPUs x 125 contexts x 1,000 batches),
// streamed as CSV into a byte-counting sink, against baselines measured in the same run: a plain loop of
// decode_step() over the same points (no TTFT, no output), and the naive way that rebuilds the memory
// plan and speed context at every point (timed on a sample, scaled to the grid).
#include <chrono>
#include <cstdio>
#include <ostream>
#include <streambuf>
#include <vector>

#include "kvcap/planner/sweep.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "report/sweep.hpp"

using namespace kvcap;
using Clock = std::chrono::steady_clock;

namespace {
class CountingBuf : public std::streambuf {
 public:
  std::size_t bytes = 0;

 protected:
  std::streamsize xsputn(const char*, std::streamsize n) override {
    bytes += static_cast<std::size_t>(n);
    return n;
  }
  int_type overflow(int_type c) override {
    ++bytes;
    return c;
  }
};
double since(Clock::time_point a) {
  return std::chrono::duration<double>(Clock::now() - a).count();
}
volatile double g_sink = 0;
}  // namespace

int main() {
  const char* models[] = {"llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3"};
  const char* gpus[] = {"h100-sxm", "h200"};
  std::vector<i64> contexts, batches;
  for (i64 i = 1; i <= 125; ++i) contexts.push_back(i * 1024);
  for (i64 b = 1; b <= 1000; ++b) batches.push_back(b);
  std::vector<SpeedContext> ctx;
  auto t0 = Clock::now();
  for (const char* m : models)
    for (const char* g : gpus) {
      Deployment d;
      d.tensor_parallel_size = 8;
      ctx.push_back(make_speed_context(profiles::resolve_model(m), profiles::resolve_gpu(g),
                                       plan_memory(profiles::resolve_model(m), profiles::resolve_gpu(g), d, {})));
    }
  const double setup = since(t0);
  const double points = static_cast<double>(ctx.size() * contexts.size() * batches.size());

  // The sweep as `kvcap sweep` runs it: memory plan once per deployment, TTFT once per context, CSV streamed.
  CountingBuf buf;
  std::ostream sink(&buf);
  t0 = Clock::now();
  std::size_t rows = 0;
  {
    cli::SweepWriter out(sink, false);
    for (const auto& c : ctx) {
      out.series({c.model.name, c.gpu.name, 8, 1, 1, 1, "bf16", "bf16"});
      sweep_grid(c, contexts, batches, [&](const SweepPoint& p) { out.point(p); });
    }
    out.finish();
    rows = out.rows();
  }
  const double sweep = since(t0);

  // Baseline 1: a plain loop of decode_step over the same points (no TTFT, no concurrency, no output).
  t0 = Clock::now();
  for (const auto& c : ctx)
    for (i64 s : contexts)
      for (i64 b : batches) g_sink = g_sink + decode_step(c, b, s).tpot_s;
  const double plain = since(t0);

  // Baseline 2: the naive sweep, a fresh memory plan and speed context per point (sampled: 2,000 points).
  const std::size_t sample = 2000;
  t0 = Clock::now();
  for (std::size_t i = 0; i < sample; ++i) {
    const auto& c = ctx[i % ctx.size()];
    Deployment d;
    d.tensor_parallel_size = 8;
    const auto fresh = make_speed_context(c.model, c.gpu, d);
    const i64 s = contexts[i % contexts.size()];
    g_sink = g_sink + decode_step(fresh, batches[i % batches.size()], s).tpot_s + ttft_s(fresh, s) +
             concurrency_at(fresh.model, fresh.plan, s);
  }
  const double naive = since(t0) / static_cast<double>(sample) * points;

  std::printf("kvcap sweep: %.0f grid points (%zu deployments x %zu contexts x %zu batches), %zu CSV rows, %.1f MB\n",
              points, ctx.size(), contexts.size(), batches.size(), rows, static_cast<double>(buf.bytes) / 1e6);
  std::printf("  setup (memory plans, speed contexts)   %8.3f s\n", setup);
  std::printf("  sweep + CSV                            %8.2f s   %9.0f points/s\n", sweep, points / sweep);
  std::printf("  baseline: plain decode_step loop       %8.2f s   %9.0f points/s   sweep / plain = %.2f\n", plain,
              points / plain, sweep / plain);
  std::printf("  baseline: plan + context per point     %8.1f s   (from %zu points)   naive / sweep = %.1f\n", naive,
              sample, naive / sweep);
  return 0;
}
