// libFuzzer: the escaping functions (cli/escape) keep their promises for any bytes: terminal text carries no
// control character and no line starts with "::"; workflow-command data no line break; XML text no markup
// character and no byte XML 1.0 cannot carry; a CSV field is quoted when it must be and starts with no formula.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kvcap/escape.hpp"

namespace {
void require(bool ok) {
  if (!ok) std::abort();
}
bool has_control(const std::string& s, bool allow_newline) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && !(allow_newline && c == '\n')) || c == 0x7f) return true;
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) < 0xA0 &&
        static_cast<unsigned char>(s[i + 1]) >= 0x80)
      return true;  // C1 control
  }
  return false;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  using namespace kvcap::escape;
  const std::string t = terminal_text(s);
  require(!has_control(t, false) && t.rfind("::", 0) != 0);
  const std::string lines = terminal_lines(s);
  require(!has_control(lines, true));
  for (std::size_t p = 0; p != std::string::npos; p = lines.find('\n', p + 1))
    require(lines.compare(p == 0 ? 0 : p + 1, 2, "::") != 0 || (p == 0 && lines.rfind("::", 0) != 0));
  const std::string g = gh_data(s);
  require(g.find_first_of("\r\n") == std::string::npos && !has_control(g, false));
  require(gh_property(s).find_first_of(":,\r\n") == std::string::npos);
  const std::string x = xml_text(s);
  require(x.find_first_of("<>\"'") == std::string::npos);
  for (unsigned char c : x) require(c >= 0x20 || c == '\t' || c == '\n' || c == '\r');
  const std::string f = csv_field(s);
  const std::string body = !f.empty() && f[0] == '"' ? f.substr(1) : f;
  require(body.empty() || (body[0] != '=' && body[0] != '+' && body[0] != '-' && body[0] != '@'));
  if (s.find_first_of(",\"\r\n") != std::string::npos) require(f.size() >= 2 && f.front() == '"' && f.back() == '"');
  return 0;
}
