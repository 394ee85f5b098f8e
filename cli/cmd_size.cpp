// kvcap size: the cheapest deployments that serve a workload within TTFT and TPOT targets. Flags -> request
// (size_request.cpp) -> size_cluster (planner/sizing) -> a reporter (report/size.cpp). docs/sizing.md.
#include <algorithm>
#include <iostream>

#include "common.hpp"
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

}  // namespace

int cmd_size(const std::vector<std::string>& args) {
  const auto desc = size_options();
  const auto parsed = parse_or_help(args, desc, kHelp);
  if (!parsed) return 0;
  const auto& vm = *parsed;
  const SizeCommand c = size_command_from(vm);
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
  switch (c.format) {
    case Format::table:
      report_sizing_table(std::cout, c.request, r, c.report);
      break;
    case Format::json:
      report_sizing_json(std::cout, c.request, r, c.report);
      break;
    case Format::csv:
      report_sizing_csv(std::cout, c.request, r, c.report);
      break;
  }
  if (r.feasible == 0) {
    std::cerr << "kvcap size: error: " << r.diagnosis << "\n";
    return 1;
  }
  return 0;
}

}  // namespace kvcap::cli
