// kvcap compare: one concurrency-vs-context table for several deployments - the main job.
#include <algorithm>
#include <iostream>
#include <optional>
#include <sstream>

#include "common.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "report/compare.hpp"
#include "report/plan.hpp"

namespace kvcap::cli {

namespace {
struct Target {
  std::string spec, model, gpu;
  std::optional<i64> gpus;    ///< N of MODEL@NxGPU; absent for MODEL@GPU
  std::string flags_text;     ///< the deployment flags after the target, as typed ("" for none)
  profiles::FlagTexts flags;  ///< read from flags_text: this deployment's own, over the command's flags
};

// "MODEL@GPU" or "MODEL@NxGPU" (N GPUs per replica; target_deployment splits them), optionally followed by
// deployment flags of this row alone ("llama-3.1-8b@h200 --kv-cache-dtype int4"): the what-ifs side by side.
Target parse_target(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  const auto blank = text.find_first_of(" \t", first == std::string::npos ? 0 : first);
  const std::string s =
      first == std::string::npos ? "" : text.substr(first, blank == std::string::npos ? blank : blank - first);
  Target t{s, "", "", std::nullopt, "", {}};
  if (blank != std::string::npos) {
    const auto rest = text.find_first_not_of(" \t", blank);
    if (rest != std::string::npos) t.flags_text = text.substr(rest, text.find_last_not_of(" \t") + 1 - rest);
    try {
      t.flags = profiles::flag_texts_from_line(t.flags_text);
    } catch (const profiles::InputError& e) {
      throw UsageError("--deploy '" + text + "': " + e.what());
    }
    if (!t.flags_text.empty()) t.spec += " " + t.flags_text;
  }
  const auto at = target_split(s);
  if (at == std::string::npos || at == 0 || at + 1 == s.size())
    throw UsageError("--deploy: expected MODEL@GPU or MODEL@NxGPU (e.g. llama-3.1-70b@4xh100-sxm), got '" + s + "'");
  t.model = s.substr(0, at);
  std::string rest = s.substr(at + 1);
  const auto x = rest.find('x');
  if (x != std::string::npos && x > 0 && rest.find_first_not_of("0123456789") == x) {
    t.gpus = parse_int(rest.substr(0, x), "--deploy (GPU count in '" + s + "')", 1, kMaxGpuCount);
    rest = rest.substr(x + 1);
  }
  t.gpu = rest;
  return t;
}

// Every --deploy, each once (the same model, GPU and GPU count twice is a usage error, not a duplicate row).
std::vector<Target> parse_targets(const std::vector<std::string>& specs) {
  std::vector<Target> targets;
  for (const auto& s : specs) {
    Target t = parse_target(s);
    for (const auto& seen : targets)
      if (seen.model == t.model && seen.gpu == t.gpu && seen.gpus == t.gpus && seen.flags == t.flags)
        throw UsageError("--deploy '" + t.spec + "' is given twice (as '" + seen.spec +
                         "'); give each deployment once");
    targets.push_back(std::move(t));
  }
  return targets;
}

/// The deployment of one target: N of MODEL@NxGPU is the GPU count of one replica, tensor x pipeline
/// parallel. Without --tensor-parallel-size, N GPUs are N/PP-way tensor parallel; with it, N must equal
/// TP x PP (N x TP GPUs under the label N would misreport the deployment). MODEL@GPU takes TP and PP from
/// the flags, and the row is relabelled MODEL@NxGPU when that is more than one GPU.
Deployment target_deployment(Target& t, Deployment d, bool tp_given, i64 dp) {
  const i64 pp = d.pipeline_parallel_size;
  const bool dp_given = dp > 0;
  if (t.gpus && !tp_given) {
    if (*t.gpus % pp != 0)
      throw UsageError("--deploy '" + t.spec + "': " + std::to_string(*t.gpus) +
                       " GPUs do not split into --pipeline-parallel-size " + std::to_string(pp) + " stages");
    d.tensor_parallel_size = *t.gpus / pp;
  } else if (t.gpus && *t.gpus != d.tensor_parallel_size * pp) {
    throw UsageError("--deploy '" + t.spec + "': " + std::to_string(*t.gpus) + " GPUs, but --tensor-parallel-size " +
                     std::to_string(d.tensor_parallel_size) + " x --pipeline-parallel-size " + std::to_string(pp) +
                     " is " + std::to_string(d.tensor_parallel_size * pp) +
                     " per replica: give MODEL@GPU with the flags, or MODEL@NxGPU without --tensor-parallel-size");
  } else if (!t.gpus && d.tensor_parallel_size * pp > 1) {
    t.spec = t.model + "@" + std::to_string(d.tensor_parallel_size * pp) + "x" + t.gpu +
             (t.flags_text.empty() ? "" : " " + t.flags_text);
  }
  if (dp_given) d.num_gpus = dp * d.tensor_parallel_size * pp;
  return d;
}

/// A row's deployment: its own flags over the command's (what-ifs, formats or layouts side by side), then its target.
Deployment row_deployment(Target& t, const Deployment& base, bool tp_given, bool dp_given) {
  Deployment own = base;
  try {
    if (!t.flags.empty()) own = profiles::deployment_from_flags(t.flags, base);
  } catch (const profiles::InputError& e) {
    throw UsageError("--deploy '" + t.spec + "': " + e.what());
  }
  // --data-parallel-size counts replicas of each row's own TP x PP: read it where it was given (the row's flags, else
  // the command's), before a row's TP or PP changes what a GPU count means.
  const auto replicas = [](const Deployment& d) {
    return d.num_gpus / (d.tensor_parallel_size * d.pipeline_parallel_size);
  };
  const i64 dp = t.flags.count("data-parallel-size") ? replicas(own) : dp_given ? replicas(base) : 0;
  return target_deployment(t, own, tp_given || t.flags.count("tensor-parallel-size") > 0, dp);
}

/// Every row's memory plan: its deployment (row_deployment), each deployment once, a planner error naming its row.
std::vector<CompareRow> compare_rows(std::vector<Target>& targets, const Deployment& base,
                                     const std::vector<i64>& contexts, bool tp_given, bool dp_given) {
  std::vector<CompareRow> rows;
  std::vector<std::pair<const Target*, Deployment>> seen;  // one deployment spelled twice is one
  for (auto& t : targets) {
    const Deployment d = row_deployment(t, base, tp_given, dp_given);
    for (const auto& [other, od] : seen)
      if (other->model == t.model && other->gpu == t.gpu && od == d)
        throw UsageError("--deploy '" + t.spec + "' is the deployment of '" + other->spec +
                         "' again; give each deployment once");
    seen.emplace_back(&t, d);
    ModelSpec m = profiles::resolve_model(t.model);
    GpuSpec g = profiles::resolve_gpu(t.gpu);
    MemoryPlan p;
    try {
      p = plan_memory(m, g, d, contexts);
    } catch (const SpecError& e) {  // which row: a what-if or layout of one --deploy
      throw SpecError(e.field(), "--deploy '" + t.spec + "': " + e.reason(),
                      e.vllm_refuses() ? SpecError::Kind::vllm_refuses : SpecError::Kind::invalid);
    }
    auto findings = check_memory_plan(g, p);
    rows.push_back({t.spec, std::move(m), std::move(g), std::move(p), std::move(findings)});
  }
  return rows;
}

const std::vector<std::string> kDefaultTargets = {
    "llama-3.1-8b@h100-sxm",  "llama-3.1-70b@4xh100-sxm",   "llama-3.1-405b@8xh200", "mistral-7b-v0.1@h100-sxm",
    "mixtral-8x7b@2xh100-sxm", "deepseek-v2-lite@h100-sxm", "deepseek-v3@8xh200", "gpt-oss-20b@h100-sxm",
    "gemma-3-27b@2xh100-sxm"};
/// kvcap compare --help.
const CommandHelp kHelp = {
    "kvcap compare [--deploy MODEL@NxGPU ...] [options]",
    "Maximum concurrent requests per replica at each context length, for several model deployments side\n"
    "by side. Without --deploy: LLaMA 3.1 8B/70B/405B, Mistral 7B v0.1, Mixtral 8x7B, DeepSeek-V2-Lite,\n"
    "DeepSeek-V3, gpt-oss-20b and Gemma 3 27B on H100/H200 deployments (nine rows). Other flags apply to\n"
    "every deployment; max_model_len is the model's own unless given.",
    "  kvcap compare\n"
    "  kvcap compare --deploy llama-3.1-8b@h100-sxm --deploy mistral-7b-v0.1@h100-sxm --kv-cache-dtype fp8\n"
    "  kvcap compare --deploy llama-3.1-8b@h200 --deploy 'llama-3.1-8b@h200 --kv-eviction h2o:budget=0.2'\n"
    "  kvcap compare --format csv > curves.csv"};

}  // namespace

int cmd_compare(const std::vector<std::string>& args) {
  auto desc = deployment_options(false);
  po::options_description own("Compare");
  // clang-format off
  own.add_options()
    ("deploy,d", po::value<std::vector<std::string>>()->composing(), "MODEL@GPU or MODEL@NxGPU (N GPUs per replica: N/PP-way tensor parallel), then optionally this row's own deployment flags in the same word (\"llama-3.1-8b@h200 --kv-cache-dtype int4\"); repeatable")
    ("contexts", po::value<std::string>(), "context lengths (default 1K,2K,... up to the longest max_model_len, at most 1M)")
    ("format,f", po::value<std::string>()->default_value("table"), "table, json or csv")
    ("help,h", "show this help");
  // clang-format on
  desc.add(own);
  const auto parsed = parse_or_help(args, desc, kHelp);
  if (!parsed) return 0;
  const auto& vm = *parsed;
  const Format fmt = parse_format(vm["format"].as<std::string>());
  std::vector<Target> targets =
      parse_targets(vm.count("deploy") ? vm["deploy"].as<std::vector<std::string>>() : kDefaultTargets);
  auto contexts =
      vm.count("contexts") ? parse_token_list(vm["contexts"].as<std::string>(), "--contexts") : default_contexts();
  const Deployment base = deployment_from(vm);

  std::vector<CompareRow> rows = compare_rows(targets, base, contexts, !vm["tensor-parallel-size"].defaulted(),
                                              vm.count("data-parallel-size") > 0);
  // The default contexts stop at the longest max_model_len of the rows: beyond it every request is rejected.
  if (!vm.count("contexts")) {
    i64 longest = 0;
    for (const auto& r : rows) longest = std::max(longest, r.p.dep.max_model_len);
    std::vector<i64> kept;
    for (const i64 c : contexts)
      if (c <= longest || kept.empty()) kept.push_back(c);
    if (kept.size() < contexts.size()) {
      contexts = kept;
      rows = compare_rows(targets, base, contexts, !vm["tensor-parallel-size"].defaulted(),
                          vm.count("data-parallel-size") > 0);
    }
  }
  // The plausibility policy, as in kvcap plan: findings on stderr after the report, exit 3 when a deployment
  // would not start.
  std::vector<Finding> all;
  const auto finish = [&] {
    std::cout.flush();
    for (const auto& r : rows) {
      print_findings("compare", r.findings, r.spec);
      all.insert(all.end(), r.findings.begin(), r.findings.end());
    }
    return exit_code(all);
  };

  switch (fmt) {
    case Format::json:
      report_compare_json(std::cout, rows);
      break;
    case Format::csv:
      report_compare_csv(std::cout, rows);
      break;
    case Format::table:
      report_compare_table(std::cout, rows, contexts);
      break;
  }
  return finish();
}

}  // namespace kvcap::cli
