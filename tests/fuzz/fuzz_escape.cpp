// libFuzzer: the escaping functions (cli/escape) keep their promises for any bytes: terminal text carries no
// control character and no line starts with "::"; workflow-command data no line break; XML text no markup
// character and no byte XML 1.0 cannot carry; a CSV field is quoted when it must be and starts with no formula; a
// shell word carries no control character and reads back (as bash reads it) as the bytes given.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

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
/// What bash makes of one word in the three forms shell_word writes: plain, '...' joined by \', $'...' with \xHH.
std::string shell_read(const std::string& w) {
  std::string r;
  std::size_t i = 0;
  if (w.rfind("$'", 0) == 0) {
    require(w.size() >= 3 && w.back() == '\'');
    for (i = 2; i + 1 < w.size(); ++i) {
      if (w[i] != '\\') {
        require(w[i] != '\'');
        r += w[i];
        continue;
      }
      require(i + 3 < w.size() && w[i + 1] == 'x');
      r += static_cast<char>(std::strtol(w.substr(i + 2, 2).c_str(), nullptr, 16));
      i += 3;
    }
    return r;
  }
  while (i < w.size()) {
    if (w[i] == '\'') {
      const auto end = w.find('\'', i + 1);
      require(end != std::string::npos);
      r += w.substr(i + 1, end - i - 1);
      i = end + 1;
    } else if (w[i] == '\\') {
      require(i + 1 < w.size());
      r += w[i + 1];
      i += 2;
    } else {
      require(std::string_view("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@%").find(w[i]) !=
              std::string_view::npos);
      r += w[i++];
    }
  }
  return r;
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
  const std::string w = shell_word(s);
  require(!has_control(w, false) && shell_read(w) == s);
  return 0;
}
