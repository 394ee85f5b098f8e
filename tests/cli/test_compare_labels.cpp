// kvcap compare: how a row names its deployment (cli/report/compare.hpp row_label).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "report/compare.hpp"

TEST_CASE("compare rows name a model file by its stem, a config.json by its folder", "[cli][compare]") {
  using kvcap::cli::row_label;
  CHECK(row_label("llama-3.1-8b@2xh100-sxm") == "llama-3.1-8b@2xh100-sxm");
  CHECK(row_label("/a/long/path/gpt-oss-120b.json@1xh100-sxm") == "gpt-oss-120b@1xh100-sxm");
  CHECK(row_label("models/Llama-3.1-8B/config.json@h200") == "Llama-3.1-8B/config@h200");
  CHECK(row_label("config.json@h200") == "config@h200");                  // no folder to name it by
  CHECK(row_label("profiles/my.yaml") == "my");                           // no '@'
  CHECK(row_label("m.yaml@gpus/h100@v2.yaml") == "m@gpus/h100@v2.yaml");  // split at the first '@', as parsed
}

TEST_CASE("MODEL@GPU splits after the model that exists: a built-in name or a file whose path holds an '@'",
          "[cli][compare]") {
  using kvcap::cli::target_split;
  CHECK(target_split("llama-3.1-8b@h200") == 12);
  CHECK(target_split("nothing-here") == std::string::npos);
  const auto dir = std::filesystem::temp_directory_path() / "kvcap-test-at@dir";
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "m.json").string();
  std::ofstream(model) << "{}";
  CHECK(target_split(model + "@h100-sxm") == model.size());
  CHECK(kvcap::cli::row_label(model + "@h100-sxm") == "m@h100-sxm");
  // No such model file: the first '@', whose error then names what was not found.
  CHECK(target_split("/no/such@dir/m.json@h200") == 8);
  std::filesystem::remove_all(dir);
}
