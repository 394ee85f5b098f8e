// bench_verify: sizing verified by simulation (issue 17) on the Azure conversation trace: the 100 best candidates of
// Llama 3.1 70B over every built-in GPU, each settled by a replica search of trace replays, on 1 thread and on every
// hardware thread, in the same run. Prints candidates settled per second per core, simulations per second and the
// speed-up. Usage: bench_verify [TRACE.csv] (default ../shared/fixtures/traces/AzureLLMInferenceTrace_conv.csv).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "kvcap/profiles/profiles.hpp"
#include "kvcap/simulator/trace.hpp"
#include "kvcap/simulator/verify.hpp"

using namespace kvcap;

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "../shared/fixtures/traces/AzureLLMInferenceTrace_conv.csv";
  sim::Trace trace;
  try {
    trace = sim::read_trace_csv(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_verify: %s (give the trace's path)\n", e.what());
    return 1;
  }
  SizingRequest q;
  q.model = profiles::resolve_model("llama-3.1-70b");
  q.workload = sim::sizing_workload_of_trace(trace.requests);
  q.targets.ttft_s = 2;
  q.targets.ttft_percentile = 0.99;
  q.targets.tpot_s = 0.05;
  for (const auto& n : profiles::builtin_gpu_names()) q.space.gpus.push_back(profiles::resolve_gpu(n));
  const SizingResult r = size_cluster(q);
  sim::VerifyOptions o;
  o.trace = trace.requests;
  for (std::size_t i = 0; i < std::min<std::size_t>(100, r.feasible); ++i) o.candidates.push_back(i);
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  std::printf(
      "bench_verify: Llama 3.1 70B on %s (%zu requests, %.2f req/s), TTFT p99 <= 2 s, TPOT <= 50 ms;\n"
      "the %zu best of %zu feasible candidates (%zu searched), each settled by a replica search of replays.\n\n",
      path.c_str(), trace.requests.size(), q.workload.arrival_rate_per_s, o.candidates.size(), r.feasible,
      r.candidates.size());
  std::printf("%8s %10s %12s %14s %20s %10s\n", "threads", "wall s", "simulations", "simulations/s",
              "candidates/s/core", "speed-up");
  double one_s = 0;
  std::vector<sim::VerifiedCandidate> first;
  for (const unsigned threads : {1u, hw}) {
    o.threads = threads;
    const auto a = std::chrono::steady_clock::now();
    const auto v = sim::verify_sizing(q, r, o);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    int sims = 0;
    for (const auto& x : v) sims += x.simulations;
    if (threads == 1) one_s = s, first = v;
    bool same = v.size() == first.size();
    for (std::size_t i = 0; same && i < v.size(); ++i) same = v[i].replicas == first[i].replicas;
    std::printf("%8u %10.2f %12d %14.1f %20.2f %9.2fx%s\n", threads, s, sims, sims / s,
                static_cast<double>(v.size()) / s / threads, one_s / s, same ? "" : "  (results differ!)");
    if (hw == 1) break;
  }
  return 0;
}
