#include "reader.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kvcap/planner/text.hpp"

namespace kvcap::profiles {

std::string Diagnostic::format() const {
  std::string r = file;
  if (line > 0) r += ":" + std::to_string(line) + ":" + std::to_string(column > 0 ? column : 1);
  r += ": error: ";
  if (!key_path.empty()) r += key_path + ": ";
  return r + message;
}

namespace {
std::string join_all(const std::vector<Diagnostic>& d) {
  std::string r;
  for (const auto& x : d) r += (r.empty() ? "" : "\n") + x.format();
  return r;
}
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

ProfileError::ProfileError(std::vector<Diagnostic> d) : std::runtime_error(join_all(d)), diags_(std::move(d)) {}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  // Close enough: at most a third of the word wrong, or the candidate contains the word.
  const std::size_t close = std::max<std::size_t>(2, word.size() / 3);
  std::string best;
  std::size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    // The distance is at least the difference in length: a candidate that cannot be close is not measured
    // (the same answer, and bounded work for a hostile 64 KB key: no 64K x |candidate| table per candidate).
    const std::size_t length_gap = word.size() > c.size() ? word.size() - c.size() : c.size() - word.size();
    if (length_gap > close) continue;
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  if (best_d <= close) return best;
  for (const auto& c : candidates)
    if (word.size() >= 3 && (c.find(word) != std::string::npos || word.find(c) != std::string::npos)) return c;
  return "";
}

namespace detail {

void error_at_field(Ctx& c, const YAML::Node& root, const std::string& field, const std::string& message) {
  const std::string path = field.substr(0, field.find('['));
  YAML::Node at = root;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!at.IsMap() || !at[part].IsDefined()) break;
    at.reset(at[part]);  // reset, not operator=: assigning a Node writes through to the tree in yaml-cpp
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  c.error(at, field, message);
}

void Ctx::error_at(const YAML::Mark& m, const std::string& key_path, const std::string& message) {
  // A list of a million wrong values must not print a million lines: stop after kMaxDiagnostics.
  if (diags.size() > kMaxDiagnostics) return;
  if (diags.size() == kMaxDiagnostics) {
    diags.push_back({file, 0, 0, "", "too many errors; stopped after " + std::to_string(kMaxDiagnostics)});
    return;
  }
  Diagnostic d{file, m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0, key_path, message};
  diags.push_back(std::move(d));
}
void Ctx::error(const YAML::Node& at, const std::string& key_path, const std::string& message) {
  error_at(at.IsDefined() ? at.Mark() : YAML::Mark::null_mark(), key_path, message);
}
void Ctx::throw_if_any() {
  if (!diags.empty()) throw ProfileError(diags);
}

bool precheck_text(Ctx& c, const std::string& text) {
  if (text.size() > kMaxInputBytes) {
    c.diags.push_back({c.file, 0, 0, "", "file is " + std::to_string(text.size()) + " bytes; kvcap reads profiles of at most " +
                                             std::to_string(kMaxInputBytes) + " bytes (1 MiB)"});
    return false;
  }
  if (text.find('\0') != std::string::npos) {
    c.diags.push_back({c.file, 0, 0, "", "not a text file (contains NUL bytes); expected a YAML profile or config.json"});
    return false;
  }
  // Flow nesting depth ([ and { outside quotes and comments), so that "[[[[..." is refused in linear time
  // with a located error instead of going to the parser (yaml-cpp tokenises all of it before its own
  // depth guard trips). Quotes start only where a YAML scalar can start; a stray quote inside a plain
  // scalar can only hide brackets (yaml-cpp's own guard, caught below, still bounds the depth then).
  int depth = 0, line = 1, col = 0;
  char quote = 0;
  bool comment = false;
  char prev = '\n';  // last non-blank character on this line ('\n' at line start)
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    ++col;
    if (ch == '\n') {
      ++line, col = 0, comment = false, prev = '\n';
      continue;
    }
    if (comment) continue;
    if (quote) {
      if (quote == '"' && ch == '\\') ++i, ++col;
      else if (ch == quote) quote = 0;
      continue;
    }
    if (ch == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n')) comment = true;
    else if ((ch == '"' || ch == '\'') && (prev == '\n' || prev == ':' || prev == '-' || prev == '[' || prev == '{' ||
                                          prev == ',' || prev == '?'))
      quote = ch;
    else if (ch == '[' || ch == '{') {
      if (++depth > kMaxNestingDepth) {
        c.diags.push_back({c.file, line, col, "", "nesting deeper than " + std::to_string(kMaxNestingDepth) +
                                                      " levels; profiles nest at most a few levels"});
        return false;
      }
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      --depth;
    }
    if (ch != ' ' && ch != '\t' && ch != '\r') prev = ch;
  }
  return true;
}

namespace {
// Walks the documents of a stream with yaml-cpp's event parser and stops where it makes no progress.
// yaml-cpp 0.7 (Debian 12's) loops for ever in YAML::LoadAll on a token no node rule takes (a lone ',' for
// one): each HandleNextDocument reports a null document at the same place without consuming the token
// (fixed upstream in jbeder/yaml-cpp#1319, 2024, not in 0.7). Two documents starting at one position is that
// loop; it is reported as the syntax error it is, before LoadAll is called.
class StallGuard : public YAML::EventHandler {
 public:
  bool stalled = false;
  YAML::Mark at;
  void OnDocumentStart(const YAML::Mark& m) override {
    if (seen_ && m.pos == at.pos) stalled = true;
    seen_ = true;
    at = m;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  bool seen_ = false;
};

std::vector<YAML::Node> load_all_documents(const std::string& text) {
  {
    std::istringstream in(text);
    YAML::Parser parser(in);
    StallGuard guard;
    while (parser.HandleNextDocument(guard))
      if (guard.stalled) {
        const std::size_t pos = static_cast<std::size_t>(std::max(guard.at.pos, 0));
        const unsigned char ch = pos < text.size() ? static_cast<unsigned char>(text[pos]) : 0;
        throw YAML::ParserException(guard.at, std::isgraph(ch) != 0
                                                  ? std::string("unexpected '") + static_cast<char>(ch) + "'"
                                                  : std::string("unexpected token"));
      }
  }
  return YAML::LoadAll(text);
}
}  // namespace

YAML::Node parse_text(Ctx& c, const std::string& text) {
  if (!precheck_text(c, text)) return {};
  try {
    // Every document, not only the first: a file of several ('---') would otherwise be read as its first alone
    // (an empty one before a profile read as "empty", the later profiles silently ignored).
    // Empty documents (a bare trailing '---', or one before the profile) hold nothing and are passed over.
    std::vector<YAML::Node> docs;
    for (const YAML::Node& d : load_all_documents(text))
      if (d.IsDefined() && !d.IsNull()) docs.push_back(d);
    if (docs.size() > 1) {
      const YAML::Mark at = docs[1].Mark();
      c.diags.push_back({c.file, at.is_null() ? 0 : at.line + 1, at.is_null() ? 0 : at.column + 1, "",
                         "the file holds " + std::to_string(docs.size()) +
                             " YAML documents (separated by '---'); kvcap reads one profile per file: put each "
                             "in a file of its own"});
      return {};
    }
    YAML::Node n = docs.empty() ? YAML::Node() : docs.front();
    if (!n.IsDefined() || n.IsNull()) {
      c.diags.push_back({c.file, 0, 0, "", "the file is empty; expected a mapping of profile keys"});
      return {};
    }
    return n;
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp 0.7 says "bad file" here; say what is wrong.
    c.error_at(e.mark, "", "nesting too deep (more than " + std::to_string(e.depth() - 1) +
                               " levels of YAML structure); profiles nest at most a few levels");
    return {};
  } catch (const YAML::Exception& e) {
    c.error_at(e.mark, "", "YAML syntax error: " + e.msg);
    return {};
  }
}

std::optional<std::string> read_file(Ctx& c, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (fs::is_directory(st)) {
    c.diags.push_back({path, 0, 0, "", "is a directory; expected a profile file"});
    return std::nullopt;
  }
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    c.diags.push_back({path, 0, 0, "", "not a regular file (a device, FIFO or socket); expected a profile file"});
    return std::nullopt;
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    c.diags.push_back({path, 0, 0, "", std::string("cannot open file: ") + std::strerror(errno ? errno : ENOENT)});
    return std::nullopt;
  }
  // Read at most one byte past the limit, so a huge file is refused without reading all of it.
  std::string text(kMaxInputBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) {
    c.diags.push_back({path, 0, 0, "", std::string("cannot read file: ") + std::strerror(errno ? errno : EIO)});
    return std::nullopt;
  }
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxInputBytes) {
    c.diags.push_back({path, 0, 0, "", "file is larger than " + std::to_string(kMaxInputBytes) +
                                           " bytes (1 MiB); kvcap profiles are a few kilobytes"});
    return std::nullopt;
  }
  return text;
}

std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

bool present(const YAML::Node& map, const char* key) {
  if (!map.IsMap()) return false;
  const YAML::Node n = map[key];
  return n.IsDefined() && !n.IsNull();
}

void check_keys(Ctx& c, const YAML::Node& map, const std::string& path, const std::vector<std::string>& allowed) {
  if (!map.IsMap()) return;
  std::vector<std::string> seen;
  for (const auto& kv : map) {
    std::string k;
    if (!kv.first.IsScalar()) {
      c.error(kv.first, path, "keys must be plain strings");
      continue;
    }
    k = kv.first.Scalar();
    if (std::find(seen.begin(), seen.end(), k) != seen.end()) {
      c.error(kv.first, join(path, k), "duplicate key");
      continue;
    }
    seen.push_back(k);
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    if (k == "<<") {  // yaml-cpp reads a merge key as a plain key: say so rather than suggest a near name
      c.error(kv.first, path.empty() ? k : path,
              "YAML merge keys (<<: *anchor) are not supported; write the keys out (a plain alias, key: *anchor, "
              "works)");
      continue;
    }
    std::string msg = "unknown key '" + k + "'";
    const std::string s = did_you_mean(k, allowed);
    if (!s.empty()) msg += "; did you mean '" + s + "'?";
    else {
      msg += "; expected one of: ";
      for (std::size_t i = 0; i < allowed.size(); ++i) msg += (i ? ", " : "") + allowed[i];
    }
    c.error(kv.first, join(path, k), msg);
  }
}

YAML::Node get_map(Ctx& c, const YAML::Node& map, const std::string& path, const char* key, bool required) {
  if (!map.IsMap()) return {};
  const YAML::Node n = map[key];
  if (!n.IsDefined() || n.IsNull()) {
    if (required) c.error(map, join(path, key), "required mapping is missing");
    return {};
  }
  if (!n.IsMap()) {
    c.error(n, join(path, key), "expected a mapping of keys");
    return {};
  }
  return n;
}

namespace {
// Returns the scalar or records why not.
std::optional<std::string> scalar(Ctx& c, const YAML::Node& map, const std::string& path, const char* key,
                                  bool required, const char* expected) {
  if (!map.IsMap()) return std::nullopt;
  const YAML::Node n = map[key];
  if (!n.IsDefined() || n.IsNull()) {
    if (required) c.error(map, join(path, key), std::string("required key is missing; expected ") + expected);
    return std::nullopt;
  }
  if (!n.IsScalar()) {
    c.error(n, join(path, key), std::string("expected ") + expected + ", got a " + (n.IsMap() ? "mapping" : "list"));
    return std::nullopt;
  }
  if (c.json_types) {
    // yaml-cpp tags a quoted scalar "!" and a plain one "?".
    const bool quoted = n.Tag() == "!";
    const bool want_string = std::string(expected) == "a string";
    if (quoted && !want_string) {
      c.error(n, join(path, key), std::string("expected ") + expected + ", got the string \"" + n.Scalar() +
                                      "\" (write it without quotes)");
      return std::nullopt;
    }
    if (!quoted && want_string) {
      c.error(n, join(path, key), "expected a string, got " + n.Scalar());
      return std::nullopt;
    }
  }
  return n.Scalar();
}
}  // namespace

std::optional<std::int64_t> get_int(Ctx& c, const YAML::Node& map, const std::string& path, const char* key,
                                    bool required, std::int64_t min, std::int64_t max) {
  auto s = scalar(c, map, path, key, required, "an integer");
  if (!s) return std::nullopt;
  const YAML::Node n = map[key];
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s->c_str(), &end, 10);
  std::int64_t out = 0;
  if (end && *end == '\0' && !s->empty() && errno == 0) {
    out = v;
  } else {
    // Accept integral values written as 8.03e9 or 4096.0; reject fractions and overflow.
    errno = 0;
    const double d = strtod_decimal(s->c_str(), &end);
    // Whole, or beyond a double (1e400: out of range, said as such); an underflow (1e-400) is a fraction.
    const bool whole = std::isinf(d) || (errno != ERANGE && std::isfinite(d) && d == std::floor(d));
    if (s->empty() || !end || *end != '\0' || !whole) {
      c.error(n, join(path, key), "expected an integer, got '" + *s + "'");
      return std::nullopt;
    }
    if (std::fabs(d) > 9.2e18) {  // beyond 64 bits: out of range whatever the bounds
      c.error(n, join(path, key),
              "expected an integer between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + *s);
      return std::nullopt;
    }
    out = static_cast<std::int64_t>(d);
  }
  if (out < min || out > max) {
    std::string range = max == INT64_MAX ? ">= " + std::to_string(min)
                                         : "between " + std::to_string(min) + " and " + std::to_string(max);
    c.error(n, join(path, key), "expected an integer " + range + ", got " + *s);
    return std::nullopt;
  }
  return out;
}

std::optional<double> get_number(Ctx& c, const YAML::Node& map, const std::string& path, const char* key,
                                 bool required, double min, double max) {
  auto s = scalar(c, map, path, key, required, "a number");
  if (!s) return std::nullopt;
  const YAML::Node n = map[key];
  errno = 0;
  char* end = nullptr;
  const double d = strtod_decimal(s->c_str(), &end);
  if (s->empty() || !end || *end != '\0' || errno == ERANGE || !std::isfinite(d)) {
    c.error(n, join(path, key), "expected a finite number, got '" + *s + "'");
    return std::nullopt;
  }
  if (d < min || d > max) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "expected a number between %g and %g, got %s", min, max, s->c_str());
    c.error(n, join(path, key), buf);
    return std::nullopt;
  }
  return d;
}

std::optional<bool> get_bool(Ctx& c, const YAML::Node& map, const std::string& path, const char* key, bool required) {
  auto s = scalar(c, map, path, key, required, "true or false");
  if (!s) return std::nullopt;
  if (*s == "true" || *s == "True" || *s == "TRUE") return true;
  if (*s == "false" || *s == "False" || *s == "FALSE") return false;
  c.error(map[key], join(path, key), "expected true or false, got '" + *s + "'");
  return std::nullopt;
}

std::optional<std::string> get_string(Ctx& c, const YAML::Node& map, const std::string& path, const char* key,
                                      bool required) {
  return scalar(c, map, path, key, required, "a string");
}

std::optional<std::string> get_name(Ctx& c, const YAML::Node& root) {
  auto n = get_string(c, root, "", "name", true);
  if (n && n->find_first_not_of(" \t") == std::string::npos) {
    c.error(root["name"], "name", "must not be empty (it labels the profile in every report)");
    return std::nullopt;
  }
  return n;
}

std::optional<std::vector<std::string>> get_string_list(Ctx& c, const YAML::Node& map, const std::string& path,
                                                        const char* key, bool required) {
  if (!map.IsMap()) return std::nullopt;
  const YAML::Node n = map[key];
  if (!n.IsDefined() || n.IsNull()) {
    if (required) c.error(map, join(path, key), "required list is missing");
    return std::nullopt;
  }
  if (!n.IsSequence()) {
    c.error(n, join(path, key), "expected a list of strings");
    return std::nullopt;
  }
  std::vector<std::string> r;
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsScalar()) {
      c.error(n[i], join(path, key) + "[" + std::to_string(i) + "]", "expected a string");
      continue;
    }
    r.push_back(n[i].Scalar());
  }
  return r;
}

std::optional<std::int64_t> get_tokens(Ctx& c, const YAML::Node& map, const std::string& path, const char* key,
                                       bool required, std::int64_t min, std::int64_t max) {
  auto s = scalar(c, map, path, key, required, "a token count");
  if (!s) return std::nullopt;
  const auto t = parse_token_text(*s);
  // A count written well but beyond what any field takes (over 9e15 tokens) is out of range, not malformed.
  const auto nu = split_number_unit(*s);
  const auto mult = nu ? token_unit_multiplier(nu->second) : std::nullopt;
  const bool too_large = !t && mult && nu->first * *mult > 9.0e15;
  if (!t && !too_large) {
    c.error(map[key], join(path, key),
            "expected a token count such as 32768, 32K (x1024) or 32k (x1000), got '" + *s + "'");
    return std::nullopt;
  }
  if (too_large || *t < min || *t > max) {
    c.error(map[key], join(path, key),
            "expected a token count between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + *s);
    return std::nullopt;
  }
  return t;
}

std::optional<double> get_seconds(Ctx& c, const YAML::Node& map, const std::string& path, const char* key,
                                  bool required, double max) {
  auto s = scalar(c, map, path, key, required, "a duration");
  if (!s) return std::nullopt;
  const auto t = parse_seconds_text(*s);
  if (!t) {
    c.error(map[key], join(path, key), "expected a duration in seconds such as 0.04, 40ms or 800us, got '" + *s + "'");
    return std::nullopt;
  }
  if (!(*t > 0) || *t > max) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "expected a duration > 0 and at most %g s, got ", max);
    c.error(map[key], join(path, key), buf + *s);
    return std::nullopt;
  }
  return t;
}

}  // namespace detail
}  // namespace kvcap::profiles
