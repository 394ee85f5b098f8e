#include "kvcap/escape.hpp"

#include <cstdio>

namespace kvcap::escape {

namespace {
// Length of the valid UTF-8 sequence starting at s[i], or 0 (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
std::size_t utf8_len(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  if (n == 2 && c < 0xC2) return 0;
  if (n == 3) {
    const unsigned cp = ((c & 0x0Fu) << 12) | ((b(i + 1) & 0x3Fu) << 6) | (b(i + 2) & 0x3Fu);
    if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF) return 0;
  }
  if (n == 4) {
    const unsigned cp =
        ((c & 0x07u) << 18) | ((b(i + 1) & 0x3Fu) << 12) | ((b(i + 2) & 0x3Fu) << 6) | (b(i + 3) & 0x3Fu);
    if (cp < 0x10000 || cp > 0x10FFFF) return 0;
  }
  return n;
}

std::string hex_byte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", c);
  return buf;
}

// One control character (C0, DEL, or a C1 code point U+0080..U+009F encoded as C2 80..C2 9F) shown visibly.
std::string visible_control(unsigned char c) {
  switch (c) {
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      return hex_byte(c);
  }
}

void append_terminal(std::string& r, std::string_view s) {
  if (s.size() >= 2 && s[0] == ':' && s[1] == ':') r += '\\';
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_len(s, i);
    if (n == 0) {
      r += hex_byte(c);
      ++i;
    } else if (n == 1) {
      if (c < 0x20 || c == 0x7f)
        r += visible_control(c);
      else
        r += static_cast<char>(c);
      ++i;
    } else {
      const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      if (n == 2 && c == 0xC2 && c1 < 0xA0)
        r += "\\u00" + hex_byte(c1).substr(2);  // C1 control (CSI is U+009B)
      else
        r.append(s.substr(i, n));
      i += n;
    }
  }
}
}  // namespace

std::string csv_field(std::string_view s, bool always_quote) {
  std::string v;
  if (!s.empty() && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' || s[0] == '\r')) v = "'";
  v.append(s);
  if (!always_quote && v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string r = "\"";
  for (char c : v) r += c == '"' ? std::string("\"\"") : std::string(1, c);
  return r + "\"";
}

std::string xml_text(std::string_view s) {
  std::string r;
  r.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_len(s, i);
    if (n == 0) {
      r += '?';
      ++i;
      continue;
    }
    if (n > 1) {
      r.append(s.substr(i, n));
      i += n;
      continue;
    }
    switch (c) {
      case '&':
        r += "&amp;";
        break;
      case '<':
        r += "&lt;";
        break;
      case '>':
        r += "&gt;";
        break;
      case '"':
        r += "&quot;";
        break;
      case '\'':
        r += "&apos;";
        break;
      case '\n':
        r += "&#10;";
        break;  // kept in attributes (a raw newline would be normalised to a space)
      case '\t':
        r += "&#9;";
        break;
      case '\r':
        r += "&#13;";
        break;
      default:
        r += c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);
    }
    ++i;
  }
  return r;
}

std::string gh_data(std::string_view s) {
  std::string r;
  for (std::size_t i = 0; i < s.size();) {
    const char ch = s[i];
    const auto c = static_cast<unsigned char>(ch);
    const std::size_t n = utf8_len(s, i);
    if (n == 0) {
      r += hex_byte(c);  // not UTF-8: the workflow log is, so the byte is shown, as terminal_text does
      ++i;
      continue;
    }
    if (n > 1) {
      if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0)
        r += "\\u00" + hex_byte(static_cast<unsigned char>(s[i + 1])).substr(2);  // C1 control (8-bit CSI)
      else
        r.append(s.substr(i, n));
      i += n;
      continue;
    }
    if (ch == '%')
      r += "%25";
    else if (ch == '\r')
      r += "%0D";
    else if (ch == '\n')
      r += "%0A";
    else if (c < 0x20 || c == 0x7f)
      r += hex_byte(c);  // a log viewer renders ANSI escapes: show them instead
    else
      r += ch;
    ++i;
  }
  return r;
}

std::string gh_property(std::string_view s) {
  std::string r;
  for (char ch : gh_data(s)) {
    if (ch == ':')
      r += "%3A";
    else if (ch == ',')
      r += "%2C";
    else
      r += ch;
  }
  return r;
}

std::string terminal_text(std::string_view s) {
  std::string r;
  r.reserve(s.size());
  append_terminal(r, s);
  return r;
}

std::string terminal_lines(std::string_view s) {
  std::string r;
  r.reserve(s.size());
  std::size_t start = 0;
  while (true) {
    const auto p = s.find('\n', start);
    append_terminal(r, s.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start));
    if (p == std::string_view::npos) break;
    r += '\n';
    start = p + 1;
  }
  return r;
}

std::string json_string(std::string_view s) {
  std::string r = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_len(s, i);
    if (n == 0) {
      r += "\\ufffd";  // invalid UTF-8: the replacement character, as nlohmann's error_handler_t::replace
      ++i;
      continue;
    }
    if (n > 1) {
      r.append(s.substr(i, n));
      i += n;
      continue;
    }
    if (c == '"' || c == '\\')
      r += '\\', r += static_cast<char>(c);
    else if (c == '\n')
      r += "\\n";
    else if (c == '\t')
      r += "\\t";
    else if (c == '\r')
      r += "\\r";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      r += buf;
    } else
      r += static_cast<char>(c);
    ++i;
  }
  return r + "\"";
}

std::string shell_word(std::string_view s) {
  static constexpr std::string_view kPlain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@%";
  if (!s.empty() && s.find_first_not_of(kPlain) == std::string_view::npos) return std::string(s);
  // C0 controls, DEL, and the C1 controls as UTF-8 (0xC2 0x80-0x9F: U+009B is the 8-bit CSI).
  bool control = false;
  for (std::size_t i = 0; i < s.size() && !control; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const auto next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
    control = c < 0x20 || c == 0x7f || (c == 0xc2 && next >= 0x80 && next <= 0x9f);
  }
  std::string r;
  if (!control) {
    r = "'";
    for (const char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return r + "'";
  }
  r = "$'";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f || c == '\'' || c == '\\') {  // every non-ASCII byte too: bash rejoins them
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      r += buf;
    } else {
      r += ch;
    }
  }
  return r + "'";
}

}  // namespace kvcap::escape
