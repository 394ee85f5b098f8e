// kvcap plan: where every byte of a GPU goes, and how many requests fit at each context length.
#include <iostream>
#include <optional>

#include "common.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/planner/engine.hpp"
#include "kvcap/planner/host_tier.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "report/host_tier.hpp"
#include "report/plan.hpp"

namespace kvcap::cli {

namespace {

/// kvcap plan --help.
const CommandHelp kHelp = {
    "kvcap plan --model M --gpu G [options]",
    "Memory per GPU (weights, activation peak, non-torch, KV cache), KV blocks and tokens, and the maximum\n"
    "number of concurrent requests at each context length, with vLLM V1's semantics.",
    "  kvcap plan --model llama-3.1-8b --gpu h100-sxm\n"
    "  kvcap plan --model llama-3.1-70b --gpu h100-sxm --tensor-parallel-size 4 --kv-cache-dtype fp8 --max-model-len "
    "32K\n"
    "  kvcap plan --model path/to/config.json --gpu a100-80gb --format json\n"
    "  kvcap plan --model llama-3.1-8b --gpu h100-sxm --batch 32 --prompt-tokens 2K --output-tokens 512\n"
    "  kvcap plan --model llama-3.1-8b --gpu h200 --batch 32 --calibration calibration.yaml\n"
    "  kvcap plan --model llama-3.1-8b --gpu h200 --kv-offloading-size 256 --calibration calibration.yaml\n"
    "  kvcap plan --model llama-3.1-70b --gpu h200 --tensor-parallel-size 4 --lmcache-cpu-size 64 --lmcache-disk-size "
    "500\n"
    "  kvcap plan --model deepseek-v2-lite --gpu l4 --tensor-parallel-size 2 --pipeline-parallel-size 2 \\\n"
    "             --kv-cache-memory 12.13GiB,11.33GiB --max-model-len 1024"};

// A usage error (KVCAP-E108: the shared prefix longer than the prompt, whose default is 1,024 tokens) is reported
// before anything is printed, whether or not the deployment fits.
void refuse_prefix_beyond_prompt(const MemoryPlan& plan, i64 batch, i64 prompt, i64 output, bool prompt_given) {
  if (plan.dep.d.shared_prefix_tokens <= prompt) return;
  for (const auto& f : check_batch(plan, batch, prompt, output))
    if (f.code == "KVCAP-E108")
      throw UsageError(f.code + ": " + f.message + (prompt_given ? "" : " (--prompt-tokens defaults to 1,024)"));
}

// The host tier of --kv-offloading-size: capacity, and reload against recompute at the curve's contexts up to
// max_model_len (planner/host_tier.hpp).
struct HostTierReport {
  HostTier tier;
  std::vector<HostReload> rows;
};
std::optional<HostTierReport> host_tier_from(const po::variables_map& vm, const ModelSpec& model, const GpuSpec& gpu,
                                             const MemoryPlan& plan, std::vector<Finding>& findings) {
  const HostTierFlags flags = host_tier_flags(vm);
  if (flags.any() && plan.dep.d.kv_eviction.on()) throw SpecError("kv_eviction", kEvictionWithHostTier);
  if (!flags.any() || !plan.fits()) return std::nullopt;
  const SpeedContext ctx = speed_context_from(vm, model, gpu, plan, &findings);
  HostTierReport r{flags.lmcache ? plan_lmcache_tier(plan, gpu, ctx.calibration, *flags.lmcache)
                                 : plan_host_tier(plan, gpu, ctx.calibration, flags.offloading_size_gib),
                   {}};
  if (r.tier.link)
    for (const auto& c : plan.curve)
      if (c.context_tokens <= plan.dep.max_model_len) r.rows.push_back(compare_reload(ctx, r.tier, c.context_tokens));
  return r;
}

// kvcap plan's options: the deployment, the speed model, the host tier, the output.
po::options_description plan_options() {
  auto desc = deployment_options();
  po::options_description out("Output");
  // clang-format off
  out.add_options()
    ("contexts", po::value<std::string>(), "context lengths for the curve (default 1K,2K,...,1M)")
    ("batch", po::value<std::string>(), "concurrent requests decoding together (speed: default 1)")
    ("prompt-tokens", po::value<std::string>(), "prompt length for TTFT (speed: default 1K)")
    ("output-tokens", po::value<std::string>(), "generated tokens per request (speed: default 256)")
    ("format,f", po::value<std::string>()->default_value("table"), "table (people), json or csv (the curve)")
    ("help,h", "show this help");
  // clang-format on
  po::options_description host_opts("Host KV tier");
  add_host_tier_options(host_opts);
  desc.add(speed_options());
  desc.add(host_opts);
  desc.add(out);
  return desc;
}

}  // namespace

int cmd_plan(const std::vector<std::string>& args) {
  const auto desc = plan_options();
  const auto parsed = parse_or_help(args, desc, kHelp);
  if (!parsed) return 0;
  const auto& vm = *parsed;
  if (!vm.count("model")) throw UsageError("--model is required (a built-in name such as llama-3.1-8b, a YAML profile, or a config.json)");
  if (!vm.count("gpu")) throw UsageError("--gpu is required (a built-in name such as h100-sxm, or a YAML profile)");
  const Format fmt = parse_format(vm["format"].as<std::string>());
  const Deployment dep = deployment_from(vm);
  const auto contexts = vm.count("contexts") ? parse_token_list(vm["contexts"].as<std::string>(), "--contexts") : default_contexts();
  const ModelSpec model = profiles::resolve_model(vm["model"].as<std::string>());
  const GpuSpec gpu = profiles::resolve_gpu(vm["gpu"].as<std::string>());
  const MemoryPlan plan = plan_memory(model, gpu, dep, contexts);
  // The plausibility policy (planner/plausibility.hpp): would vLLM start, does the batch fit.
  std::vector<Finding> findings = check_memory_plan(gpu, plan);
  std::optional<RequestEstimate> speed;
  std::optional<OperatingPoint> steady;  // the same batch as a serving steady state (planner/sizing.hpp)
  bool lockstep = false;                 // ... of a prefill-first engine (ReplicaModel::closed_loop_lockstep)
  if (vm.count("batch") || vm.count("prompt-tokens") || vm.count("output-tokens") || vm.count("calibration")) {
    const i64 batch = vm.count("batch") ? parse_int(vm["batch"].as<std::string>(), "--batch", 1) : 1;
    const i64 prompt = vm.count("prompt-tokens") ? parse_tokens(vm["prompt-tokens"].as<std::string>(), "--prompt-tokens") : 1024;
    const i64 output = vm.count("output-tokens") ? parse_tokens(vm["output-tokens"].as<std::string>(), "--output-tokens") : 256;
    refuse_prefix_beyond_prompt(plan, batch, prompt, output, vm.count("prompt-tokens") > 0);
    const SpeedContext ctx = speed_context_from(vm, model, gpu, plan, &findings);
    lockstep = ctx.options.prefill_first;
    speed = estimate_request(ctx, batch, prompt, output);
    if (plan.fits()) {
      const auto more = check_batch(plan, batch, prompt, output);
      findings.insert(findings.end(), more.begin(), more.end());
      if (vm.count("batch")) steady = closed_loop_steady_state(ctx, batch, prompt, output);
    }
  }
  const auto host = host_tier_from(vm, model, gpu, plan, findings);
  // A deployment vLLM would not start for lack of memory: the numbers and the smallest single-flag fixes.
  const auto advice = fit_advice(model, gpu, dep);
  switch (fmt) {
    case Format::table:
      report_plan_table(std::cout, model, gpu, plan);
      if (host) report_host_tier_table(std::cout, plan, host->tier, host->rows);
      if (speed)
        report_speed_table(std::cout, *speed, engine_profile(vm["engine"].as<std::string>()), steady, lockstep);
      break;
    case Format::json: {
      auto j = plan_json(model, gpu, plan, findings);
      if (host) j["host_tier"] = host_tier_json(plan, host->tier, host->rows);
      if (speed) j["speed"] = speed_json(*speed, steady);
      if (advice) j["fit_advice"] = fit_advice_json(*advice);
      std::cout << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
      break;
    }
    case Format::csv: report_plan_csv(std::cout, plan); break;
  }
  std::cout.flush();
  print_findings("plan", findings);
  if (advice) std::cerr << "kvcap plan: " << escape::terminal_text("why: " + advice->text()) << "\n";
  return exit_code(findings);
}

}  // namespace kvcap::cli
