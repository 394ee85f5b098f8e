// kvcap list: the built-in profiles.
#include <algorithm>
#include <iostream>

#include "common.hpp"
#include "kvcap/planner/params.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/profiles.hpp"

namespace kvcap::cli {

int cmd_list(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  // clang-format off
  desc.add_options()("help,h", "show this help");
  // clang-format on
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    print_help("kvcap list", "Lists the built-in model and GPU profiles with their key figures.", desc, "  kvcap list");
    return 0;
  }
  // The name column fits the longest built-in name (21 at least, the GPUs' column).
  std::size_t w = 21;
  for (const auto& n : profiles::builtin_model_names()) w = std::max(w, n.size() + 1);
  std::cout << "Models" << std::string(w - 4, ' ')
            << "params    active  layers  attention             KV dtype  max len\n";
  for (const auto& n : profiles::builtin_model_names()) {
    const auto m = profiles::resolve_model(n);
    const auto pc = param_counts(m);
    std::string att = m.attention == AttentionType::mla ? "MLA " + std::to_string(m.mla.kv_lora_rank) + "+" + std::to_string(m.mla.qk_rope_head_dim)
                                                         : "GQA " + std::to_string(m.num_heads) + "/" + std::to_string(m.num_kv_heads) + "x" + std::to_string(m.head_dim);
    if (m.sliding_window > 0) att += " sw" + std::to_string(m.sliding_window);
    std::string p = billions(static_cast<double>(pc.total)), a = billions(static_cast<double>(pc.active));
    std::cout << "  " << n << std::string(w - n.size(), ' ') << std::string(8 - std::min<std::size_t>(8, p.size()), ' ')
              << p << std::string(10 - std::min<std::size_t>(10, a.size()), ' ') << a
              << std::string(8 - std::to_string(m.num_layers).size(), ' ') << m.num_layers << "  " << att
              << std::string(22 - std::min<std::size_t>(21, att.size()), ' ') << name(m.dtype) << "      "
              << human_tokens(m.max_position_embeddings) << "\n";
  }
  std::cout << "\nGPUs                   memory (CUDA)   HBM B/W     BF16 dense   FP8 dense   $/GPU-h\n";
  for (const auto& n : profiles::builtin_gpu_names()) {
    const auto g = profiles::resolve_gpu(n);
    std::string mem = gib(static_cast<double>(g.memory_bytes)) + " GiB";
    std::string bw = fixed(g.memory_bandwidth_bytes_per_s / 1e12, 2) + " TB/s";
    std::string bf = fixed(g.bf16_dense_flops / 1e12, 0) + " TF";
    std::string f8 = g.fp8_dense_flops > 0 ? fixed(g.fp8_dense_flops / 1e12, 0) + " TF" : "-";
    const std::string price =
        g.price_per_gpu_hour_usd > 0 ? fixed(g.price_per_gpu_hour_usd, 2) : "-";  // no published price
    std::cout << "  " << n << std::string(21 - std::min<std::size_t>(20, n.size()), ' ')
              << std::string(13 - std::min<std::size_t>(13, mem.size()), ' ') << mem
              << std::string(12 - std::min<std::size_t>(12, bw.size()), ' ') << bw
              << std::string(13 - std::min<std::size_t>(13, bf.size()), ' ') << bf
              << std::string(12 - std::min<std::size_t>(12, f8.size()), ' ') << f8
              << std::string(10, ' ').substr(0, 10 - std::min<std::size_t>(10, price.size())) << price << "\n";
  }
  return 0;
}

}  // namespace kvcap::cli
