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

// ---- The value grammar of flags, dashboard fields and workload files (issue 12: one grammar) ------------------

TEST_CASE("flag values: one grammar, errors that name the flag and say what was expected", "[units][flags]") {
  CHECK(parse_tokens("1.5K", "--max-model-len") == 1536);
  CHECK(parse_tokens("32k", "--max-model-len") == 32000);
  CHECK(parse_bytes("4.7GiB", "--kv-cache-memory") == static_cast<std::uint64_t>(4.7 * 1073741824.0));
  CHECK(parse_bytes("80GB", "--kv-cache-memory") == 80'000'000'000ull);
  CHECK(parse_seconds("40ms", "--tpot") == Approx(0.040));
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message([] { parse_tokens("99999999999999999999K", "--shared-prefix-tokens"); }) ==
        "--shared-prefix-tokens: expected a token count of at most 9e15, got '99999999999999999999K'");
  CHECK(message([] { parse_tokens("-4", "--max-model-len"); }) ==
        "--max-model-len: expected a whole number of tokens >= 1, got '-4'");
  CHECK(message([] { parse_tokens("32KiB", "--max-model-len"); }).rfind("--max-model-len: unknown unit 'KiB'", 0) == 0);
  CHECK(message([] { parse_seconds("40", "--tpot"); }) ==
        "--tpot: '40' has no unit; write 40ms or 40s (a bare number is ambiguous)");
  // Zero or less: no unit would help, so the message does not suggest one ('0' was told to write 0ms).
  for (const char* v : {"0", "0ms", "-2s"})
    CHECK(message([&] { parse_seconds(v, "--tpot"); }) ==
          std::string("--tpot: expected a positive duration with a unit such as 2s or 50ms, got '") + v + "'");
  CHECK(message([] { parse_int("1e3", "--num-gpus", 1, 100000); }) ==
        "--num-gpus: expected an integer between 1 and 100000, got '1e3'");
  CHECK(split_list(" a, b,,c ") == std::vector<std::string>{"a", "b", "c"});
  CHECK(split_list("a,,b", ',', true) == std::vector<std::string>{"a", "", "b"});
}

TEST_CASE("length distributions: the text grammar of --prompt-tokens and of workload files", "[units][workload]") {
  const auto fixed = parse_length("2K", "--prompt-tokens");
  CHECK(fixed.kind == kvcap::LengthDistribution::Kind::fixed);
  CHECK(fixed.tokens == 2048);
  const auto u = parse_length("uniform:128-2K", "--prompt-tokens");
  CHECK(u.kind == kvcap::LengthDistribution::Kind::uniform);
  CHECK(u.min_tokens == 128);
  CHECK(u.max_tokens == 2048);
  CHECK(u.mean_tokens() == Approx(1088));
  const auto l = parse_length("lognormal:mean=1K,sigma=0.9,min=16,max=8K", "--prompt-tokens");
  CHECK(l.kind == kvcap::LengthDistribution::Kind::lognormal);
  CHECK(l.lognormal_mean_tokens == 1024);
  CHECK(l.sigma == 0.9);
  CHECK(l.min_tokens == 16);
  CHECK(l.max_tokens == 8192);
  const auto e = parse_length("empirical:128@0.25,1K@0.75", "--output-tokens");
  CHECK(e.values == std::vector<kvcap::i64>{128, 1024});
  CHECK(e.mean_tokens() == Approx(0.25 * 128 + 0.75 * 1024));
  CHECK_THROWS_WITH(parse_length("uniform:2K-128", "--prompt-tokens"), Catch::Contains("--prompt-tokens"));
  CHECK_THROWS_WITH(parse_length("normal:1K", "--prompt-tokens"),
                    Catch::StartsWith("--prompt-tokens: unknown distribution 'normal'"));
  CHECK_THROWS_WITH(parse_length("lognormal:mean=1K", "--prompt-tokens"),
                    Catch::StartsWith("--prompt-tokens: lognormal needs mean= and sigma="));
  CHECK_THROWS_WITH(parse_length("empirical:1K@0.5,2K", "--prompt-tokens"),
                    Catch::Contains("give a weight for every value or for none"));
  CHECK_THROWS_AS(parse_length("x", "--prompt-tokens"), InputError);
}

TEST_CASE("counts and sizes are decimal, and a list names each value once", "[units]") {
  using namespace kvcap::profiles;
  CHECK_THROWS_WITH(parse_tokens("0x1000", "--max-model-len"), Catch::Contains("in decimal, got '0x1000'"));
  CHECK_THROWS_WITH(parse_bytes("0x1p30", "--kv-cache-memory"), Catch::Contains("in decimal"));
  CHECK(parse_tokens("1e3", "--x") == 1000);  // an exponent is decimal
  CHECK_THROWS_WITH(parse_real("0x1p-1", "--gpu-memory-utilization", "a fraction"), Catch::Contains("in decimal"));
  CHECK(parse_real("0.5", "--gpu-memory-utilization", "a fraction") == 0.5);
  CHECK_THROWS_WITH(parse_token_list("1K,2K,1024", "--contexts"), Catch::Contains("1024 tokens given twice"));
  CHECK(parse_token_list("1K,2K", "--contexts") == std::vector<std::int64_t>{1024, 2048});
}
