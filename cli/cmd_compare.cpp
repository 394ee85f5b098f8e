// kvcap compare: one concurrency-vs-context table for several deployments - the main job.
#include <iostream>
#include <sstream>

#include "common.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "report/plan.hpp"

namespace kvcap::cli {

namespace {
struct Target {
  std::string spec, model, gpu;
  i64 tp = 1;
};

// "MODEL@GPU" or "MODEL@NxGPU" (N GPUs in tensor parallel).
Target parse_target(const std::string& s) {
  Target t{s, "", "", 1};
  const auto at = s.find('@');
  if (at == std::string::npos || at == 0 || at + 1 == s.size())
    throw UsageError("--deploy: expected MODEL@GPU or MODEL@NxGPU (e.g. llama-3.1-70b@4xh100-sxm), got '" + s + "'");
  t.model = s.substr(0, at);
  std::string rest = s.substr(at + 1);
  const auto x = rest.find('x');
  if (x != std::string::npos && x > 0 && rest.find_first_not_of("0123456789") == x) {
    t.tp = parse_int(rest.substr(0, x), "--deploy (GPU count in '" + s + "')", 1, kMaxGpuCount);
    rest = rest.substr(x + 1);
  }
  t.gpu = rest;
  return t;
}

const std::vector<std::string> kDefaultTargets = {
    "llama-3.1-8b@h100-sxm",  "llama-3.1-70b@4xh100-sxm",   "llama-3.1-405b@8xh200", "mistral-7b-v0.1@h100-sxm",
    "mixtral-8x7b@2xh100-sxm", "deepseek-v2-lite@h100-sxm", "deepseek-v3@8xh200", "gpt-oss-20b@h100-sxm",
    "gemma-3-27b@2xh100-sxm"};
}  // namespace

int cmd_compare(const std::vector<std::string>& args) {
  auto desc = deployment_options(false);
  po::options_description own("Compare");
  own.add_options()
    ("deploy,d", po::value<std::vector<std::string>>()->composing(), "MODEL@GPU or MODEL@NxGPU (N-way tensor parallel); repeatable")
    ("contexts", po::value<std::string>(), "context lengths (default 1K,2K,...,1M)")
    ("format,f", po::value<std::string>()->default_value("table"), "table, json or csv")
    ("help,h", "show this help");
  desc.add(own);
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    print_help("kvcap compare [--deploy MODEL@NxGPU ...] [options]",
               "Maximum concurrent requests per replica at each context length, for several model deployments side\n"
               "by side. Without --deploy: LLaMA 3.1 8B/70B/405B, Mistral 7B v0.1, Mixtral 8x7B, DeepSeek-V2-Lite\n"
               "and DeepSeek-V3 on H100/H200 deployments. Other flags apply to every deployment; max_model_len is\n"
               "the model's own unless given.",
               desc,
               "  kvcap compare\n"
               "  kvcap compare --deploy llama-3.1-8b@h100-sxm --deploy mistral-7b-v0.1@h100-sxm --kv-cache-dtype fp8\n"
               "  kvcap compare --format csv > curves.csv");
    return 0;
  }
  const Format fmt = parse_format(vm["format"].as<std::string>());
  std::vector<Target> targets;
  for (const auto& s : vm.count("deploy") ? vm["deploy"].as<std::vector<std::string>>() : kDefaultTargets)
    targets.push_back(parse_target(s));
  const auto contexts = vm.count("contexts") ? parse_token_list(vm["contexts"].as<std::string>(), "--contexts") : default_contexts();
  const Deployment base = deployment_from(vm);

  struct Row { Target t; ModelSpec m; GpuSpec g; MemoryPlan p; std::vector<Finding> findings; };
  std::vector<Row> rows;
  for (const auto& t : targets) {
    Deployment d = base;
    d.tensor_parallel_size = t.tp * base.tensor_parallel_size;
    ModelSpec m = profiles::resolve_model(t.model);
    GpuSpec g = profiles::resolve_gpu(t.gpu);
    MemoryPlan p = plan_memory(m, g, d, contexts);
    auto findings = check_memory_plan(g, p);
    rows.push_back({t, std::move(m), std::move(g), std::move(p), std::move(findings)});
  }
  // The plausibility policy, as in kvcap plan: findings on stderr after the report, exit 3 when a deployment
  // would not start.
  std::vector<Finding> all;
  const auto finish = [&] {
    std::cout.flush();
    for (const auto& r : rows) {
      print_findings("compare", r.findings, r.t.spec);
      all.insert(all.end(), r.findings.begin(), r.findings.end());
    }
    return exit_code(all);
  };

  if (fmt == Format::json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const auto& r : rows) {
      auto e = plan_json(r.m, r.g, r.p, r.findings);
      e["deploy"] = r.t.spec;
      j.push_back(e);
    }
    std::cout << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    return finish();
  }
  if (fmt == Format::csv) {
    std::cout << "deploy,model,gpu,num_gpus,context_tokens,max_concurrency\n";
    for (const auto& r : rows)
      for (const auto& c : r.p.curve)
        std::cout << escape::csv_field(r.t.spec) << "," << escape::csv_field(r.m.name) << ","
                  << escape::csv_field(r.g.name) << "," << r.p.dep.d.num_gpus << "," << c.context_tokens << ","
                  << c.max_concurrency << "\n";
    return finish();
  }
  std::cout << "Maximum concurrent requests per replica, by context length (vLLM V1 semantics; weights "
            << "and KV in each model's dtype unless set)\n\n";
  std::ostringstream head;
  head << "  #  deployment                        KV/token/GPU    KV tokens";
  std::cout << head.str();
  for (auto c : contexts) std::cout << std::string(8 - std::min<std::size_t>(7, human_tokens(c).size()), ' ') << human_tokens(c);
  std::cout << "\n";
  int i = 0;
  for (const auto& r : rows) {
    std::string name = escape::terminal_text(r.t.spec);
    if (name.size() > 32) name = name.substr(0, 31) + "~";
    std::string kv = human_bytes(static_cast<double>(r.p.kv_bytes_per_token_per_rank));
    const std::string cap = grouped(r.p.kv_capacity_tokens);
    std::cout << "  " << ++i << "  " << name << std::string(34 - name.size(), ' ') << std::string(12 - std::min<std::size_t>(12, kv.size()), ' ')
              << kv << std::string(13 - std::min<std::size_t>(12, cap.size()), ' ') << cap;
    for (const auto& c : r.p.curve) {
      std::string v = c.max_concurrency >= 100 ? fixed(c.max_concurrency, 0) : fixed(c.max_concurrency, 1);
      std::cout << std::string(8 - std::min<std::size_t>(7, v.size()), ' ') << v;
    }
    std::cout << "\n";
  }
  std::cout << "\nBelow 1.0 a single request of that length does not fit. Details: kvcap plan --model M --gpu G ...\n";
  for (const auto& r : rows)
    for (const auto& w : r.p.warnings)
      if (w.find("no memory left") != std::string::npos)
        std::cout << "warning: " << escape::terminal_text(r.t.spec) << ": " << escape::terminal_text(w) << "\n";
  return finish();
}

}  // namespace kvcap::cli
