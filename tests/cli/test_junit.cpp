// The JUnit writer: text that XML 1.0 can carry, and the counts CI systems read (issue 4). The written
// files are also parsed with a standard XML parser by the cli.check.junit_* tests (tests/cli/check_junit.py).
#include <catch2/catch.hpp>
#include <sstream>

#include "report/junit.hpp"

using namespace kvcap::cli;

TEST_CASE("xml_escape: markup, control characters and invalid UTF-8", "[cli][junit]") {
  CHECK(xml_escape("a < b && c > \"d\" 'e'") == "a &lt; b &amp;&amp; c &gt; &quot;d&quot; &apos;e&apos;");
  CHECK(xml_escape("line1\nline2\ttab") == "line1&#10;line2&#9;tab");
  CHECK(xml_escape(std::string("nul\0bell\x07", 9)) == "nul?bell?");  // not representable in XML 1.0
  CHECK(xml_escape("caf\xc3\xa9 \xe2\x89\xa5 40 ms") == "caf\xc3\xa9 \xe2\x89\xa5 40 ms");  // valid UTF-8 kept
  CHECK(xml_escape("\xff\xfe x \xc3") == "?? x ?");                                           // invalid bytes replaced
  CHECK(xml_escape("\xed\xa0\x80") == "???");                                                 // a UTF-16 surrogate
  CHECK(xml_escape("\xc0\xaf") == "??");                                                      // overlong '/'
}

TEST_CASE("write_junit: counts per suite and in total", "[cli][junit]") {
  JUnitSuite s{"promises", "2026-01-01T00:00:00", {{"file", "r.yaml"}}, {}};
  s.cases.push_back({"kvcap.check.promises", "holds", 0.5, JUnitCase::Outcome::passed, "", "", "measured 26.5"});
  s.cases.push_back({"kvcap.check.promises", "broken <1>", 0.25, JUnitCase::Outcome::failure, "measured 13", "details", ""});
  s.cases.push_back({"kvcap.check.promises", "unknown", 0, JUnitCase::Outcome::error, "no deployment", "details", ""});
  std::ostringstream o;
  write_junit(o, "kvcap check", {s, s});
  const std::string x = o.str();
  CHECK(x.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"kvcap check\" tests=\"6\" failures=\"2\" errors=\"2\" time=\"1.500000\">", 0) == 0);
  CHECK(x.find("<testsuite name=\"promises\" tests=\"3\" failures=\"1\" errors=\"1\" skipped=\"0\" time=\"0.750000\" timestamp=\"2026-01-01T00:00:00\">") != std::string::npos);
  CHECK(x.find("<testcase name=\"broken &lt;1&gt;\" classname=\"kvcap.check.promises\" time=\"0.250000\">") != std::string::npos);
  CHECK(x.find("<failure message=\"measured 13\" type=\"PromiseBroken\">details</failure>") != std::string::npos);
  CHECK(x.find("<error message=\"no deployment\" type=\"EvaluationError\">details</error>") != std::string::npos);
  CHECK(x.find("<system-out>measured 26.5</system-out>") != std::string::npos);
  CHECK(x.find("<property name=\"file\" value=\"r.yaml\"/>") != std::string::npos);
  CHECK(x.ends_with("</testsuites>\n"));
}
