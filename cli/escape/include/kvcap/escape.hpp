#pragma once
// One escaping function per output format. Every reporter that writes text it did not compose itself
// (model, GPU, file and promise names; user titles; messages quoting input) passes it through here.
//
//   csv_field       RFC 4180 section 2 quoting, plus spreadsheet formula neutralisation (OWASP "CSV Injection":
//                   a cell starting with = + - @ TAB or CR is prefixed with a single quote)
//   xml_text        XML 1.0 character data and attribute values (SVG, JUnit)
//   gh_data /       GitHub Actions workflow commands (actions/toolkit packages/core/src/command.ts escapeData,
//   gh_property     escapeProperty); other control characters (ESC: the log viewer renders ANSI) shown as \x1b
//   terminal_text   one line for people: control characters shown as \n, \x1b, ...; a leading "::" (a GitHub
//                   workflow command when at the start of a line) shown as "\::"
//   terminal_lines  several lines: as terminal_text for each line, line breaks kept
//   json_string     a JSON string literal (RFC 8259 section 7), for streaming writers that do not use nlohmann
//   shell_word      one word of a POSIX shell command line: as is when it holds only characters no shell
//                   interprets, else in single quotes ('it'\''s'); with a control character, bash's $'...' with
//                   \xHH escapes, so a pasted launch command never runs what a profile smuggled into it
#include <string>
#include <string_view>

namespace kvcap::escape {

/// `always_quote`: quote even when RFC 4180 does not require it (columns that were always quoted).
std::string csv_field(std::string_view s, bool always_quote = false);
std::string xml_text(std::string_view s);
std::string gh_data(std::string_view s);
std::string gh_property(std::string_view s);
std::string terminal_text(std::string_view s);
std::string terminal_lines(std::string_view s);
std::string json_string(std::string_view s);
std::string shell_word(std::string_view s);

}  // namespace kvcap::escape
