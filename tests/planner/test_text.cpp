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
  // fixed_down: a capacity is cut, never rounded up across a whole request.
  CHECK(fixed_down(0.99984, 2) == "0.99");
  CHECK(fixed_down(2.3, 2) == "2.30");  // floor(2.3 x 100) is 229 in binary
  CHECK(fixed_down(848.1875, 1) == "848.1");
  CHECK(fixed_down(102.9453125, 0) == "102");
  CHECK(fixed_down(3.0, 0) == "3");
  CHECK(fixed_down(std::numeric_limits<double>::infinity(), 2) == "unbounded");
  // strtod_decimal: hexadecimal is not read at all (*end stays at the start); decimal is strtod's.
  const char* hex = "0x10";
  char* end = nullptr;
  CHECK(strtod_decimal(hex, &end) == 0);
  CHECK(end == hex);
  const char* dec = "12.5e1 rest";
  CHECK(strtod_decimal(dec, &end) == 125.0);
  CHECK(end == dec + 6);
  CHECK(looks_hexadecimal(" -0X1p4"));
  CHECK_FALSE(looks_hexadecimal("10x"));
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
