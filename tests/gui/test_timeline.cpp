// The simulator timeline reader: exact header, typed columns, file:line errors.
#include <catch2/catch.hpp>
#include <sstream>

#include "kvcap/gui/timeline.hpp"

using namespace kvcap::gui;

TEST_CASE("timeline reader reads the simulator's CSV", "[gui][timeline]") {
  const Timeline t = read_timeline_csv(KVCAP_TEST_DATA "/timeline_small.csv");
  REQUIRE(t.samples.size() == 8);
  CHECK(t.num_replicas == 2);
  const TimelineSample& s = t.samples[5];  // 1.0,1,38,9,1000,1000,1,2
  CHECK(s.time_s == 1.0);
  CHECK(s.replica == 1);
  CHECK(s.running == 38);
  CHECK(s.waiting == 9);
  CHECK(s.kv_used_blocks == 1000);
  CHECK(s.kv_total_blocks == 1000);
  CHECK(s.kv_utilization == 1.0);
  CHECK(s.preemptions == 2);
  CHECK(t.samples[2].kv_utilization == Approx(0.24));
}

TEST_CASE("timeline reader names file, line and column of a bad row", "[gui][timeline]") {
  const std::string header = timeline_header() + "\n";
  auto error_of = [](const std::string& text) {
    std::istringstream in(text);
    try {
      parse_timeline_csv(in, "t.csv");
    } catch (const TimelineError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of(header + "0,0,1,0,10,100,0.1,0\n0.5,0,x,0,10,100,0.1,0\n") ==
        "t.csv:3: error: running: expected an integer >= 0, got 'x'");
  CHECK(error_of(header + "0,0,1,0,10,100,0.1\n") == "t.csv:2: error: expected 8 comma-separated fields, got 7");
  CHECK(error_of(header + "0,0,1,0,200,100,0.5,0\n") ==
        "t.csv:2: error: kv_used_blocks: exceeds kv_total_blocks (100), got '200'");
  CHECK(error_of(header + "0,0,1,0,10,100,1.5,0\n") ==
        "t.csv:2: error: kv_utilization: expected a fraction in [0, 1], got '1.5'");
  CHECK(error_of(header + "-1,0,1,0,10,100,0.1,0\n") ==
        "t.csv:2: error: time_s: expected a finite number >= 0, got '-1'");
  CHECK(error_of("time,replica\n").rfind("t.csv:1: error: header: expected 'time_s,replica,", 0) == 0);
  CHECK(error_of("").rfind("t.csv:1: error: empty file", 0) == 0);
  // CRLF line ends and blank lines are fine.
  std::istringstream crlf(header.substr(0, header.size() - 1) + "\r\n0,0,1,0,10,100,0.1,0\r\n\r\n");
  CHECK(parse_timeline_csv(crlf, "t.csv").samples.size() == 1);
  CHECK_THROWS_WITH(read_timeline_csv("/nonexistent/t.csv"),
                    "/nonexistent/t.csv: error: cannot open the timeline file");
  // A replica index no simulator writes (it would make the chart allocate a series per replica), and a device.
  CHECK(error_of(header + "0,4294967295,1,0,5,10,0.5,0\n") ==
        "t.csv:2: error: replica: expected a replica index below 100,000, got '4294967295'");
  CHECK_THROWS_WITH(read_timeline_csv("/dev/zero"), Catch::Contains("/dev/zero: error: not a regular file"));
}
