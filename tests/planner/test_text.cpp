// Numbers as people read them (planner/text.hpp): the one copy every room uses.
#include <catch2/catch.hpp>
#include <limits>

#include "kvcap/planner/text.hpp"

using namespace kvcap;

TEST_CASE("numbers for people", "[text]") {
  CHECK(grouped(0) == "0");
  CHECK(grouped(999) == "999");
  CHECK(grouped(1000) == "1,000");
  CHECK(grouped(420208) == "420,208");
  CHECK(grouped(18446744073709551615ull) == "18,446,744,073,709,551,615");
  CHECK(fixed(3.14159, 2) == "3.14");
  CHECK(fixed(std::numeric_limits<double>::infinity(), 1) == "unbounded");
  // amount: fixed within a table's width, 3 significant digits beyond it.
  CHECK(amount(1459.418, 3) == "1459.418");
  CHECK(amount(5.84e9, 3) == "5.84e+09");
  CHECK(amount(0.128, 0) == "0.128");  // would print as 0
  CHECK(amount(0.6, 0) == "1");
  CHECK(amount(0, 2) == "0.00");
  CHECK(amount(std::numeric_limits<double>::infinity(), 1) == "unbounded");
  CHECK(gib(1073741824.0 * 1.5) == "1.50");
  CHECK(gib_text(1073741824.0 * 71.27, 1) == "71.3 GiB");
  CHECK(human_bytes(80 * 1024) == "80.0 KiB");
  CHECK(human_bytes(512) == "512 B");
  CHECK(human_tokens(131072) == "128K");
  CHECK(human_tokens(1 << 20) == "1M");
  CHECK(human_tokens(1536) == "1536");
  CHECK(billions(70.55e9) == "70.55B");
  CHECK(trim(" \t a b \r\n") == "a b");
  CHECK(trim("   ").empty());
}
