// Numbers with units (profiles/src/units.cpp): the one table both the YAML reader and the CLI flags use.
#include <catch2/catch.hpp>

#include "kvcap/profiles/units.hpp"

using namespace kvcap::profiles;

TEST_CASE("token text reads as vLLM reads --max-model-len", "[units]") {
  CHECK(parse_token_text("32K") == 32768);
  CHECK(parse_token_text("32k") == 32000);
  CHECK(parse_token_text(" 1M ") == 1048576);
  CHECK(parse_token_text("1.5k") == 1500);
  CHECK(parse_token_text("4096") == 4096);
  CHECK_FALSE(parse_token_text("1.5"));      // not a whole number of tokens
  CHECK_FALSE(parse_token_text("32KiB"));    // a byte unit is not a token unit
  CHECK_FALSE(parse_token_text("-4"));
  CHECK_FALSE(parse_token_text("1e300"));    // beyond any real context
  CHECK_FALSE(parse_token_text(""));
}

TEST_CASE("byte units keep GiB (2^30) and GB (10^9) apart", "[units]") {
  CHECK(*byte_unit_multiplier("GiB") == 1073741824.0);
  CHECK(*byte_unit_multiplier("GB") == 1e9);
  CHECK(*byte_unit_multiplier("") == 1.0);
  CHECK_FALSE(byte_unit_multiplier("Gb"));
}

TEST_CASE("durations", "[units]") {
  CHECK(*parse_seconds_text("40ms") == Approx(0.040));
  CHECK(*parse_seconds_text("800us") == Approx(800e-6));
  CHECK(*parse_seconds_text("2") == 2.0);
  CHECK(*parse_seconds_text("1.5 min") == 90.0);
  CHECK_FALSE(parse_seconds_text("2h"));
  CHECK_FALSE(parse_seconds_text("fast"));
}
