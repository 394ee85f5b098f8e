// One escaping function per output format (cli/escape): each tested with the hostile names.
#include <catch2/catch.hpp>

#include "kvcap/escape.hpp"

using namespace kvcap::escape;

TEST_CASE("csv_field: RFC 4180 quoting and formula neutralisation", "[cli][escape]") {
  CHECK(csv_field("llama-3.1-8b") == "llama-3.1-8b");
  CHECK(csv_field("a,b\"c") == "\"a,b\"\"c\"");
  CHECK(csv_field("line\nbreak") == "\"line\nbreak\"");
  CHECK(csv_field("cr\rx") == "\"cr\rx\"");
  CHECK(csv_field("=cmd|' /C calc'!A0") == "'=cmd|' /C calc'!A0");
  CHECK(csv_field("+1") == "'+1");
  CHECK(csv_field("-x") == "'-x");
  CHECK(csv_field("@SUM(A1)") == "'@SUM(A1)");
  CHECK(csv_field("\tx") == "'\tx");
  CHECK(csv_field("=a,b") == "\"'=a,b\"");
  CHECK(csv_field("") == "");
  CHECK(csv_field("plain", true) == "\"plain\"");
}

TEST_CASE("xml_text: markup, control characters and invalid UTF-8", "[cli][escape]") {
  CHECK(xml_text("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;");
  CHECK(xml_text("a & \"b\" 'c'") == "a &amp; &quot;b&quot; &apos;c&apos;");
  CHECK(xml_text(std::string("nul\0esc\x1b", 8)) == "nul?esc?");
  CHECK(xml_text("\xff") == "?");
  CHECK(xml_text("caf\xc3\xa9") == "caf\xc3\xa9");
}

TEST_CASE("gh_data / gh_property: GitHub workflow command escaping", "[cli][escape]") {
  CHECK(gh_data("x\n::error file=a::b") == "x%0A::error file=a::b");
  CHECK(gh_data("100%\r") == "100%25%0D");
  CHECK(gh_property("a:b,c\n") == "a%3Ab%2Cc%0A");
  CHECK(gh_data("\x1b[31mred") == "\\x1b[31mred");
  CHECK(gh_data("<\xc2\x9b" "31m") == "<\\u009b31m");  // C1 CSI: fuzz_escape's finding (docs/fuzzing.md)
  // Not UTF-8 (a lone continuation byte, a truncated sequence, an overlong '/'): each byte shown, UTF-8 kept.
  CHECK(gh_data("a\x80"
                "b\xe2\x82") == "a\\x80b\\xe2\\x82");
  CHECK(gh_data("\xc0\xaf") == "\\xc0\\xaf");
  CHECK(gh_data("\xe2\x82\xac 5%") == "\xe2\x82\xac 5%25");
  CHECK(gh_property("\xff:") == "\\xff%3A");
}

TEST_CASE("terminal_text: control characters visible, no workflow command at a line start", "[cli][escape]") {
  CHECK(terminal_text("Meta Llama 3.1 8B") == "Meta Llama 3.1 8B");
  CHECK(terminal_text("evil\n::error file=x::y") == "evil\\n::error file=x::y");
  CHECK(terminal_text("::error file=x::y") == "\\::error file=x::y");
  CHECK(terminal_text("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m");
  CHECK(terminal_text("tab\there\r") == "tab\\there\\r");
  CHECK(terminal_text("\x7f") == "\\x7f");
  CHECK(terminal_text("csi\xc2\x9b"
                      "31m") == "csi\\u009b31m");  // C1 CSI
  CHECK(terminal_text("\xff ok") == "\\xff ok");   // invalid UTF-8 byte
  CHECK(terminal_text("caf\xc3\xa9 \xe2\x89\xa5") == "caf\xc3\xa9 \xe2\x89\xa5");
}

TEST_CASE("terminal_lines keeps line breaks and escapes each line", "[cli][escape]") {
  CHECK(terminal_lines("a.yaml:3:1: error: x\n::error file=y::z\n\x1b]0;title\x07") ==
        "a.yaml:3:1: error: x\n\\::error file=y::z\n\\x1b]0;title\\x07");
}

TEST_CASE("json_string: RFC 8259 escapes", "[cli][escape]") {
  CHECK(json_string("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(json_string("x\ny\x01") == "\"x\\ny\\u0001\"");
  CHECK(json_string("\xff") == "\"\\ufffd\"");
}

TEST_CASE("shell_word: one word for a POSIX shell, control characters escaped", "[cli][escape]") {
  CHECK(shell_word("meta-llama/Llama-3.1-8B") == "meta-llama/Llama-3.1-8B");
  CHECK(shell_word("--max-model-len") == "--max-model-len");
  CHECK(shell_word("") == "''");
  CHECK(shell_word("a b") == "'a b'");
  CHECK(shell_word("$(rm -rf ~)") == "'$(rm -rf ~)'");
  CHECK(shell_word("it's") == "'it'\\''s'");
  CHECK(shell_word("a;b|c&d`e`") == "'a;b|c&d`e`'");
  CHECK(shell_word("x\ny") == "$'x\\x0ay'");
  CHECK(shell_word("\x1b[31m'") == "$'\\x1b[31m\\x27'");
  CHECK(shell_word("<\xc2\x9b"
                   "31m") == "$'<\\xc2\\x9b31m'");      // C1 CSI as UTF-8
  CHECK(shell_word("caf\xc3\xa9") == "'caf\xc3\xa9'");  // other UTF-8 kept, quoted
}
