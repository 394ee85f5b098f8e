// Workload generators (means and variability as specified) and the CSV trace reader (Azure traces,
// date-times, explicit columns, and errors that name the file, line and column).
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include "kvcap/simulator/trace.hpp"
#include "kvcap/simulator/workload.hpp"

using namespace kvcap;
using namespace kvcap::sim;
using Catch::Matchers::Contains;

TEST_CASE("length samplers have the distributions' means", "[sim][workload]") {
  for (const auto& d : {LengthDistribution::uniform_tokens(10, 1000), LengthDistribution::lognormal_tokens(800, 1.1, 16, 4000),
                        LengthDistribution::lognormal_tokens(300, 0.5), LengthDistribution::empirical_tokens({5, 50, 500}, {0.2, 0.5, 0.3}),
                        LengthDistribution::fixed_tokens(77)}) {
    LengthSampler s(d);
    Rng rng(99);
    double sum = 0;
    i64 lo = INT64_MAX, hi = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) {
      const i64 v = s.sample(rng);
      sum += static_cast<double>(v);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    INFO(to_string(d.kind) << ": sample mean " << sum / n << ", mean_tokens " << d.mean_tokens());
    CHECK(sum / n == Approx(d.mean_tokens()).epsilon(0.015));
    CHECK(lo >= 1);
    if (d.max_possible_tokens() > 0) CHECK(hi <= d.max_possible_tokens());
  }
}

TEST_CASE("arrival gaps: Poisson cv 1, gamma cv as asked, fixed rate constant", "[sim][workload]") {
  for (const auto& [kind, cv] : {std::pair{ArrivalProcess::Kind::poisson, 1.0}, std::pair{ArrivalProcess::Kind::gamma, 3.0},
                                 std::pair{ArrivalProcess::Kind::gamma, 0.5}, std::pair{ArrivalProcess::Kind::fixed_rate, 0.0}}) {
    ArrivalSampler a(ArrivalProcess::renewal(kind, 8.0, kind == ArrivalProcess::Kind::gamma ? cv : 1.0));
    Rng rng(5);
    double s = 0, s2 = 0;
    const int n = 400000;
    for (int i = 0; i < n; ++i) {
      const double g = a.gap_s(rng);
      s += g;
      s2 += g * g;
    }
    const double mean = s / n, sd = std::sqrt(std::max(0.0, s2 / n - mean * mean));
    INFO(to_string(kind) << " cv " << cv << ": mean " << mean << ", cv " << sd / mean);
    CHECK(mean == Approx(1.0 / 8).epsilon(0.02));
    CHECK(sd / mean == Approx(cv).epsilon(0.03).margin(1e-6));
  }
}

TEST_CASE("a synthetic source is reproducible and respects its limits", "[sim][workload]") {
  WorkloadSpec w;
  w.arrival = ArrivalProcess::renewal(ArrivalProcess::Kind::poisson, 10, 1);
  w.prompt = LengthDistribution::uniform_tokens(1, 100);
  w.output = LengthDistribution::fixed_tokens(3);
  auto a = synthetic_source(w, 1, {std::nullopt, 5.0});
  double last = 0;
  int n = 0;
  while (auto r = a->next()) {
    CHECK(r->arrival_s >= last);
    CHECK(r->arrival_s < 5.0);
    last = r->arrival_s;
    ++n;
  }
  CHECK(n > 30);
  CHECK(n < 80);
  auto b = synthetic_source(w, 1, {7, std::nullopt});
  auto c = synthetic_source(w, 1, {7, std::nullopt});
  for (int i = 0; i < 7; ++i) {
    const auto x = b->next(), y = c->next();
    REQUIRE(x);
    CHECK(x->arrival_s == y->arrival_s);
    CHECK(x->prompt_tokens == y->prompt_tokens);
  }
  CHECK(!b->next());
  CHECK_THROWS(synthetic_source(w, 1, {}));
}

TEST_CASE("date-times and seconds parse exactly", "[sim][trace]") {
  const auto t = parse_trace_time("2023-11-16 18:15:46.6805900");
  REQUIRE(t);
  CHECK(t->seconds == 1700158546);  // date -u -d '2023-11-16 18:15:46' +%s
  CHECK(t->fraction == Approx(0.68059));
  CHECK(parse_trace_time("2023-11-16T18:15:46Z"));
  CHECK(parse_trace_time("12.5")->fraction == 0.5);
  CHECK(!parse_trace_time("2023-13-16 18:15:46"));
  CHECK(!parse_trace_time("yesterday"));
  CHECK(!parse_trace_time("-3"));
  // A day the month does not have is no date (it was read as 2 March); 29 February only in a leap year.
  CHECK(!parse_trace_time("2023-02-30 00:00:00"));
  CHECK(!parse_trace_time("2023-02-29 00:00:00"));
  CHECK(parse_trace_time("2024-02-29 00:00:00"));
  CHECK(!parse_trace_time("2023-04-31 12:00:00"));
  CHECK(!parse_trace_time("2100-02-29 00:00:00"));
  CHECK(parse_trace_time("2000-02-29 00:00:00"));
  // Seconds are decimal: strtod's hexadecimal ("0x10" = 16) is refused.
  CHECK(!parse_trace_time("0x10"));
  CHECK(parse_trace_time("1e3")->seconds == 1000);
  CHECK(parse_trace_time("2023-11-16 18:15:46")->date_time);
  CHECK_FALSE(parse_trace_time("12.5")->date_time);
}

TEST_CASE("the Azure conversation trace loads, relative to its first request", "[sim][trace]") {
  const Trace t = read_trace_csv(KVCAP_FIXTURES "/traces/AzureLLMInferenceTrace_conv.csv");
  REQUIRE(t.requests.size() == 19366);
  CHECK(t.time_column == "TIMESTAMP");
  CHECK(t.prompt_column == "ContextTokens");
  CHECK(t.output_column == "GeneratedTokens");
  CHECK(t.requests[0].arrival_s == 0.0);
  CHECK(t.requests[0].prompt_tokens == 374);
  CHECK(t.requests[0].output_tokens == 44);
  CHECK(t.requests[1].arrival_s == Approx(50.9951690 - 46.6805900));
  CHECK(t.span_s == Approx(3501.721937).epsilon(1e-9));  // 18:15:46.6805900 to 19:14:08.4025270
  CHECK(t.reordered_rows == 0);
  TraceOptions fast;
  fast.speedup = 4;
  CHECK(read_trace_csv(KVCAP_FIXTURES "/traces/AzureLLMInferenceTrace_conv.csv", fast).span_s == Approx(3501.721937 / 4));
}

TEST_CASE("trace columns can be named, out-of-order rows are sorted", "[sim][trace]") {
  std::istringstream in("id,t,in,out\n1,5.0,10,2\n2,3.5,20,4\n3,9.25,30,6\n");
  const Trace t = parse_trace_csv(in, "x.csv", parse_trace_columns("t,in,out"));
  REQUIRE(t.requests.size() == 3);
  CHECK(t.reordered_rows == 1);
  CHECK(t.requests[0].prompt_tokens == 20);
  CHECK(t.requests[0].arrival_s == 0.0);
  CHECK(t.requests[1].arrival_s == 1.5);
  CHECK(t.requests[2].arrival_s == 5.75);
  CHECK_THROWS_AS(parse_trace_columns("a,b"), std::invalid_argument);
}

TEST_CASE("a trace with bad rows gets a clear error naming the line", "[sim][trace]") {
  const std::string head = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n";
  auto err = [](const std::string& text, const TraceOptions& o = {}) -> std::string {
    std::istringstream in(text);
    try {
      parse_trace_csv(in, "t.csv", o);
    } catch (const TraceError& e) {
      return e.what();
    }
    return "";
  };
  CHECK_THAT(err(head + "2023-11-16 18:15:50.9951690,39x,109\n"),
             Contains("t.csv:3: error: column 'ContextTokens'") && Contains("'39x'"));
  CHECK_THAT(err(head + "\n2023-11-16 18:15:50.9951690,396,0\n"),
             Contains("t.csv:4: error: column 'GeneratedTokens'") && Contains(">= 1"));
  CHECK_THAT(err(head + "2023-11-16 25:15:50,396,10\n"), Contains("t.csv:3: error: column 'TIMESTAMP'"));
  CHECK_THAT(err(head + "2023-11-16 18:15:50.9951690,396\n"), Contains("t.csv:3: error: expected 3 comma-separated fields"));
  // More fields than the header names: a shifted row (or a quoted comma), not what the header says.
  CHECK_THAT(err(head + "2023-11-16 18:15:50.9951690,396,20,garbage\n"),
             Contains("t.csv:3: error: expected 3 comma-separated fields like the header, got 4"));
  // Date-times and seconds in one trace: 1.7e9 s apart, which no trace means.
  CHECK_THAT(err(head + "5.0,396,20\n"),
             Contains("t.csv:3: error: column 'TIMESTAMP': '5.0' is a number of seconds where the first row's is a "
                      "date-time"));
  CHECK_THAT(err(head + "2023-02-30 00:00:00,396,20\n"), Contains("t.csv:3: error: column 'TIMESTAMP'"));
  CHECK_THAT(err("when,a,b\n1,2,3\n"), Contains("t.csv:1: error: cannot tell which column holds the arrival time") &&
                                           Contains("--trace-columns"));
  CHECK_THAT(err(head, parse_trace_columns("TIMESTAMP,Prompt,GeneratedTokens")),
             Contains("t.csv:1: error: no column 'Prompt'") && Contains("ContextTokens"));
  CHECK_THAT(err("TIMESTAMP,ContextTokens,GeneratedTokens,contexttokens\n0,1,2,3\n"),
             Contains("t.csv:1: error: column 'ContextTokens' appears twice in the header (fields 2 and 4)"));
  CHECK_THAT(err("t,in,out,out\n0,1,2,3\n", parse_trace_columns("t,in,out")), Contains("column 'out' appears twice"));
  CHECK_THAT(err(""), Contains("t.csv: error: the trace is empty"));
  CHECK_THAT(err("TIMESTAMP,ContextTokens,GeneratedTokens\n"), Contains("no requests"));
  CHECK_THROWS_WITH(read_trace_csv("/nonexistent/trace.csv"), Contains("/nonexistent/trace.csv: error: cannot open"));
}
