#include <algorithm>

#include "kvcap/profiles/profiles.hpp"

namespace kvcap::profiles {
namespace detail {
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_files();
}

std::string builtin_text(std::string_view relative_path) {
  for (const auto& [path, text] : detail::embedded_files())
    if (path == relative_path) return std::string(text);
  return {};
}

namespace {
std::vector<std::string> names_under(std::string_view folder) {
  std::vector<std::string> r;
  for (const auto& [path, text] : detail::embedded_files()) {
    if (!path.starts_with(folder) || !path.ends_with(".yaml")) continue;
    std::string_view n = path.substr(folder.size());
    n.remove_suffix(5);
    r.emplace_back(n);
  }
  std::sort(r.begin(), r.end());
  return r;
}
}  // namespace

std::vector<std::string> builtin_model_names() { return names_under("models/"); }
std::vector<std::string> builtin_gpu_names() { return names_under("gpus/"); }

}  // namespace kvcap::profiles
