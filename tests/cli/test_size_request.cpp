// kvcap size's flags as a request (cli/size_request.hpp): what --verify simulates.
#include <catch2/catch.hpp>

#include "size_request.hpp"

namespace {
kvcap::cli::SizeCommand size_command(std::vector<const char*> args) {
  args.insert(args.begin(), "size");
  namespace po = boost::program_options;
  po::variables_map vm;
  po::store(po::parse_command_line(static_cast<int>(args.size()), args.data(), kvcap::cli::size_options()), vm);
  po::notify(vm);
  return kvcap::cli::size_command_from(vm);
}
}  // namespace

TEST_CASE("size --verify simulates a workload file's think time, with its clients or the flag's", "[cli][size]") {
  const std::string file = std::string(KVCAP_TEST_DATA) + "/workload_closed.yaml";  // 8 clients, 1 s think
  for (const bool users_flag : {false, true}) {
    std::vector<const char*> args = {"--model", "llama-3.1-8b", "--workload", file.c_str(), "--ttft-p", "1s",
                                     "--tpot",  "50ms",         "--gpus",     "h100-sxm",   "--verify", "1"};
    if (users_flag) args.insert(args.end(), {"--concurrent-users", "16"});
    const auto c = size_command(args);
    REQUIRE(c.verify);
    const auto& a = c.verify->workload.arrival;
    CHECK(a.kind == kvcap::ArrivalProcess::Kind::closed);
    CHECK(a.concurrency == (users_flag ? 16 : 8));
    CHECK(a.think_time_s == 1.0);  // it was dropped: the simulation ran the clients always busy
    CHECK_FALSE(a.think_time_exponential);
  }
}
