// kvcap plot: rendering needs Qt, which kvcap does not link (issue 12: front ends as thin shells). The chart is
// drawn by kvcap-plot, built in gui/ with the dashboard; this subcommand runs it with the same arguments:
// next to this executable (an install), in the build tree's gui/ folder, then on PATH.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "common.hpp"

namespace kvcap::cli {

namespace {
std::vector<std::string> plot_candidates() {
  std::vector<std::string> r;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    r.push_back((self.parent_path() / "kvcap-plot").string());
    r.push_back((self.parent_path().parent_path() / "gui" / "kvcap-plot").string());
  }
#ifdef KVCAP_PLOT_BUILD_PATH
  r.push_back(KVCAP_PLOT_BUILD_PATH);
#endif
  return r;
}
}  // namespace

int cmd_plot(const std::vector<std::string>& args) {
  std::vector<std::string> argv_s = {"kvcap-plot"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(argv_s.size() + 1);
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  for (const auto& path : plot_candidates())
    if (::access(path.c_str(), X_OK) == 0) ::execv(path.c_str(), argv.data());
  ::execvp("kvcap-plot", argv.data());  // returns only when not found on PATH either
  std::cerr << "kvcap plot: error: the chart renderer kvcap-plot was not found (" << std::strerror(errno) << ").\n"
            << "kvcap links no Qt; kvcap-plot is built with the dashboard (cmake -DKVCAP_WITH_GUI=ON) as\n"
            << "build/gui/kvcap-plot and installed next to kvcap. Run it directly: kvcap-plot --out chart.png\n";
  return 1;
}

}  // namespace kvcap::cli
