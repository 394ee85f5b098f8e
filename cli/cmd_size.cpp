// kvcap size: the cheapest deployments that serve a workload within TTFT and TPOT targets. Flags -> request
// (size_request.cpp) -> size_cluster (planner/sizing) -> a reporter (report/size.cpp). docs/sizing.md.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>

#include "common.hpp"
#include "distributed.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/planner/text.hpp"
#include "size_request.hpp"

namespace kvcap::cli {

namespace {

/// kvcap size --help.
const CommandHelp kHelp = {
    "kvcap size --model M (--workload FILE | --prompt-tokens P --output-tokens O) (--rate R | --concurrent-users U)\n"
    "                  --ttft-p T --tpot T [options]",
    "The cheapest deployments that serve a workload within a TTFT target (at a percentile) and a TPOT target.\n"
    "Searches GPU type x TP x PP x weight format x KV format x replicas; each candidate must fit in memory\n"
    "(vLLM V1 semantics) and meet the targets under the queueing its share of the load implies (Little's law\n"
    "for the decode batch, an M/G/1 prefill queue with Kingman's formula; docs/sizing.md). Cost = GPUs x price\n"
    "per GPU-hour; cost per million output tokens = cost per hour / output tokens per hour at the load.",
    "  kvcap size --model llama-3.1-70b --prompt-tokens 2K --output-tokens 256 --rate 10 --ttft-p 2s --tpot 50ms\n"
    "  kvcap size --model llama-3.1-8b --workload profiles/examples/workload-chat.yaml --gpus h100-sxm,l40s,l4\n"
    "  kvcap size --model mixtral-8x7b --prompt-tokens 1K --output-tokens 512 --concurrent-users 200 \\\n"
    "             --ttft-p 1s --ttft-percentile 99 --tpot 40ms --price h100-sxm=2.2 --explain\n"
    "  kvcap size --model deepseek-v3 --prompt-tokens 4K --output-tokens 1K --rate 2 --ttft-p 5s --tpot 80ms \\\n"
    "             --gpus h200,b200,mi300x --format csv"};

/// --verify / --trace: the best candidates simulated, with a progress line on a terminal; with --mpi over the ranks of
/// `mpi` (the others than rank 0 get an empty list).
void verify(const SizeCommand& c, const SizingResult& r, SizingReportOptions& report, const MpiSession* mpi) {
  sim::VerifyOptions o = *c.verify;
  // The best-ranked, then each GPU type's best, in rank order.
  for (std::size_t i = 0; i < std::min(c.verify_top, r.feasible); ++i) o.candidates.push_back(i);
  for (const std::size_t i : r.best_per_gpu)
    if (std::find(o.candidates.begin(), o.candidates.end(), i) == o.candidates.end()) o.candidates.push_back(i);
  std::sort(o.candidates.begin(), o.candidates.end());
  const auto start = std::chrono::steady_clock::now();
  if (c.progress)
    o.progress = [start](std::size_t done, std::size_t total) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double eta = done < total ? s / static_cast<double>(done) * static_cast<double>(total - done) : 0;
      std::cerr << "\rkvcap size: simulated " << done << "/" << total << " candidates, " << fixed(s, 1) << " s, about "
                << fixed(eta, 0) << " s left   " << std::flush;
    };
  report.verified = mpi ? verify_sizing_mpi(*mpi, c.request, r, o) : sim::verify_sizing(c.request, r, o);
  if (c.progress) std::cerr << "\r" << std::string(70, ' ') << "\r" << std::flush;
  const std::string per_run = o.trace
                                  ? grouped(static_cast<std::uint64_t>(o.trace->size())) + " trace requests replayed"
                              : o.limits.num_requests ? grouped(*o.limits.num_requests) + " requests"
                                                      : "the workload's phases";
  report.verified_how = per_run + " per run, least-outstanding-requests routing, seed " + std::to_string(o.seed) +
                        ", " + std::to_string(o.threads) + (o.threads == 1 ? " thread" : " threads");
}

}  // namespace

int cmd_size(const std::vector<std::string>& args) {
  const auto desc = size_options();
  const auto parsed = parse_or_help(args, desc, kHelp);
  if (!parsed) return 0;
  const auto& vm = *parsed;
  const SizeCommand c = size_command_from(vm);
  // --mpi: every rank searches (cheap, deterministic) and simulates its share; only rank 0 speaks.
  std::optional<MpiSession> mpi;
  if (c.mpi) mpi.emplace();
  if (mpi && mpi->rank() != 0) {
    const SizingResult r = size_cluster(c.request);
    SizingReportOptions quiet = c.report;
    SizeCommand mine = c;
    mine.progress = false;
    if (c.verify && r.feasible > 0 && !has_errors(c.report.findings)) verify(mine, r, quiet, &*mpi);
    return 0;
  }
  // An error of the plausibility policy (E104: no deployment serves the workload) ends it before the search; a
  // JSON consumer still gets a report, with no candidates and the finding.
  const auto& findings = c.report.findings;
  if (has_errors(findings)) {
    if (c.format == Format::json) {
      SizingResult none;
      none.diagnosis = std::find_if(findings.begin(), findings.end(), [](const Finding& f) {
                         return f.level == Finding::Level::error;
                       })->message;
      report_sizing_json(std::cout, c.request, none, c.report);
    }
    print_findings("size", findings);
    return exit_code(findings);
  }
  print_findings("size", findings);
  const SizingResult r = size_cluster(c.request);
  SizingReportOptions report = c.report;
  if (c.verify && r.feasible > 0) verify(c, r, report, mpi ? &*mpi : nullptr);
  switch (c.format) {
    case Format::table:
      report_sizing_table(std::cout, c.request, r, report);
      break;
    case Format::json:
      report_sizing_json(std::cout, c.request, r, report);
      break;
    case Format::csv:
      report_sizing_csv(std::cout, c.request, r, report);
      break;
  }
  if (r.feasible == 0) {
    std::cerr << "kvcap size: error: " << escape::terminal_lines(r.diagnosis) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace kvcap::cli
