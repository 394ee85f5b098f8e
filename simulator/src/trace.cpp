#include "kvcap/simulator/trace.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <istream>

#include "kvcap/planner/text.hpp"

namespace kvcap::sim {

TraceError::TraceError(std::string file, std::uint64_t line, const std::string& message)
    : std::runtime_error(file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": error: " + message),
      file_(std::move(file)),
      line_(line) {}

namespace {
/// A CSV field: blanks trimmed (planner/text), then one pair of surrounding double quotes taken off.
std::string_view unquote(std::string_view s) {
  s = trim(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

void split(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  std::size_t start = 0;
  while (true) {
    const auto comma = line.find(',', start);
    out.push_back(
        unquote(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
}

// Auto-detected names, case-insensitive, in order of preference.
const std::vector<std::string> kTimeNames = {"timestamp", "arrival_time_s", "arrival_time", "arrival_s",
                                             "time_s", "time", "arrived_at"};
const std::vector<std::string> kPromptNames = {"contexttokens", "prompt_tokens", "input_tokens", "num_prefill_tokens",
                                               "prompt_len", "input_len", "prompt_length"};
const std::vector<std::string> kOutputNames = {"generatedtokens", "output_tokens", "completion_tokens",
                                               "num_decode_tokens", "output_len", "output_length"};

std::string join_names(const std::vector<std::string_view>& h) {
  std::string r;
  for (std::size_t i = 0; i < h.size(); ++i) r += (i ? ", " : "") + std::string(h[i]);
  return r;
}

/// Column i, unless the header names it twice (case aside): which of the two holds the figures is not known.
std::size_t unique_column(const std::vector<std::string_view>& header, std::size_t i, const std::string& file,
                          std::uint64_t line) {
  for (std::size_t j = 0; j < header.size(); ++j)
    if (j != i && lowercase(header[j]) == lowercase(header[i]))
      throw TraceError(file, line,
                       "column '" + std::string(header[i]) + "' appears twice in the header (fields " +
                           std::to_string(std::min(i, j) + 1) + " and " + std::to_string(std::max(i, j) + 1) +
                           "); rename one");
  return i;
}

std::size_t find_column(const std::vector<std::string_view>& header, const std::string& given,
                        const std::vector<std::string>& candidates, const char* role, const std::string& file,
                        std::uint64_t line) {
  if (!given.empty()) {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == given) return unique_column(header, i, file, line);
    for (std::size_t i = 0; i < header.size(); ++i)
      if (lowercase(header[i]) == lowercase(given)) return unique_column(header, i, file, line);
    throw TraceError(file, line, "no column '" + given + "' (the " + role + " column given by --trace-columns); the header has: " +
                                  join_names(header));
  }
  for (const auto& c : candidates)
    for (std::size_t i = 0; i < header.size(); ++i)
      if (lowercase(header[i]) == c) return unique_column(header, i, file, line);
  std::string known;
  for (std::size_t i = 0; i < std::min<std::size_t>(3, candidates.size()); ++i) known += (i ? ", " : "") + candidates[i];
  throw TraceError(file, line, std::string("cannot tell which column holds the ") + role + " (looked for " + known +
                                ", ...); the header has: " + join_names(header) +
                                "; name the columns with --trace-columns TIME,PROMPT,OUTPUT");
}

bool parse_i64(std::string_view s, std::int64_t& v) {
  const char* b = s.data();
  const char* e = s.data() + s.size();
  auto [p, ec] = std::from_chars(b, e, v);
  return ec == std::errc() && p == e && !s.empty();
}

// days_from_civil (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms"): days since 1970-01-01.
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}
}  // namespace

std::optional<TraceTime> parse_trace_time(std::string_view s) {
  s = unquote(s);
  if (s.empty()) return std::nullopt;
  // Date-time: YYYY-MM-DD HH:MM:SS[.f+][Z]
  if (s.size() >= 19 && s[4] == '-' && s[7] == '-' && (s[10] == ' ' || s[10] == 'T') && s[13] == ':' && s[16] == ':') {
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
    if (!digits(s, 0, 4, y) || !digits(s, 5, 2, mo) || !digits(s, 8, 2, d) || !digits(s, 11, 2, h) ||
        !digits(s, 14, 2, mi) || !digits(s, 17, 2, se))
      return std::nullopt;
    // The month's days (the Gregorian leap rule): 2023-02-30 is no date, not 2 March.
    const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || h > 23 || mi > 59 || se > 60) return std::nullopt;
    if (d < 1 || d > kDays[mo - 1] + (mo == 2 && leap ? 1 : 0)) return std::nullopt;
    std::string_view rest = s.substr(19);
    if (!rest.empty() && rest.back() == 'Z') rest.remove_suffix(1);
    double frac = 0;
    if (!rest.empty()) {
      if (rest.front() != '.' || rest.size() < 2) return std::nullopt;
      double scale = 0.1;
      for (std::size_t i = 1; i < rest.size(); ++i) {
        if (!std::isdigit(static_cast<unsigned char>(rest[i]))) return std::nullopt;
        frac += (rest[i] - '0') * scale;
        scale /= 10;
      }
    }
    TraceTime t;
    t.seconds = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
                std::int64_t{h} * 3600 + std::int64_t{mi} * 60 + se;
    t.fraction = frac;
    t.date_time = true;
    return t;
  }
  // Seconds as a decimal number (strtod would also read hexadecimal, "0x10" as 16).
  const std::string str(s);
  errno = 0;
  char* end = nullptr;
  const double v = strtod_decimal(str.c_str(), &end);
  if (end != str.c_str() + str.size() || errno == ERANGE || !std::isfinite(v) || v < 0 || v > 9.0e15) return std::nullopt;
  TraceTime t;
  t.seconds = static_cast<std::int64_t>(std::floor(v));
  t.fraction = v - std::floor(v);
  return t;
}

TraceOptions parse_trace_columns(const std::string& spec, TraceOptions base) {
  std::vector<std::string_view> parts;
  split(spec, parts);
  if (parts.size() != 3 || parts[0].empty() || parts[1].empty() || parts[2].empty())
    throw std::invalid_argument("--trace-columns: expected three column names TIME,PROMPT,OUTPUT, got '" + spec + "'");
  base.time_column = std::string(parts[0]);
  base.prompt_column = std::string(parts[1]);
  base.output_column = std::string(parts[2]);
  return base;
}

Trace parse_trace_csv(std::istream& in, const std::string& file, const TraceOptions& o) {
  if (!(std::isfinite(o.speedup) && o.speedup > 0))
    throw TraceError(file, 0, "--trace-speedup must be a positive number");
  Trace t;
  std::string line;
  std::uint64_t line_no = 0;
  std::vector<std::string_view> f;
  // Header: the first non-empty line.
  std::string header;
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1 && line.size() >= 3 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);  // UTF-8 BOM
    if (!unquote(line).empty()) {
      header = line;
      break;
    }
  }
  if (header.empty()) throw TraceError(file, 0, "the trace is empty; expected a header line such as TIMESTAMP,ContextTokens,GeneratedTokens");
  const std::uint64_t header_line = line_no;
  std::vector<std::string_view> h;
  split(header, h);
  const std::size_t ti = find_column(h, o.time_column, kTimeNames, "arrival time", file, header_line);
  const std::size_t pi = find_column(h, o.prompt_column, kPromptNames, "prompt tokens", file, header_line);
  const std::size_t oi = find_column(h, o.output_column, kOutputNames, "output tokens", file, header_line);
  t.time_column = std::string(h[ti]);
  t.prompt_column = std::string(h[pi]);
  t.output_column = std::string(h[oi]);
  const std::size_t need = std::max({ti, pi, oi}) + 1;

  struct Row {
    TraceTime time;
    i64 prompt, output;
  };
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    ++line_no;
    if (unquote(line).empty()) continue;
    split(line, f);
    // Fewer fields than the columns read, or more than the header names (a row whose fields are shifted, or a quoted
    // comma this reader does not take apart): the row is not what the header says.
    if (f.size() < need || f.size() > h.size())
      throw TraceError(file, line_no, "expected " + std::to_string(h.size()) + " comma-separated fields like the header, got " +
                                          std::to_string(f.size()));
    Row r{};
    const auto tt = parse_trace_time(f[ti]);
    if (!tt)
      throw TraceError(file, line_no, "column '" + t.time_column + "': expected seconds (e.g. 12.5) or a date-time (e.g. 2023-11-16 18:15:46.6805900), got '" +
                                          std::string(f[ti]) + "'");
    r.time = *tt;
    if (!rows.empty() && tt->date_time != rows.front().time.date_time)
      throw TraceError(file, line_no,
                       "column '" + t.time_column + "': '" + std::string(f[ti]) + "' is " +
                           (tt->date_time ? "a date-time" : "a number of seconds") + " where the first row's is " +
                           (tt->date_time ? "a number of seconds" : "a date-time") + "; a trace uses one of the two");
    auto tokens = [&](std::size_t i, const std::string& name, i64 min) {
      std::int64_t v = 0;
      if (!parse_i64(f[i], v) || v < min || v > 1'000'000'000)
        throw TraceError(file, line_no, "column '" + name + "': expected a whole number of tokens >= " + std::to_string(min) +
                                            ", got '" + std::string(f[i]) + "'");
      return v;
    };
    r.prompt = tokens(pi, t.prompt_column, 1);
    r.output = tokens(oi, t.output_column, 1);
    rows.push_back(r);
  }
  if (rows.empty()) throw TraceError(file, 0, "the trace has a header but no requests");
  auto earlier = [](const Row& a, const Row& b) {
    return a.time.seconds != b.time.seconds ? a.time.seconds < b.time.seconds : a.time.fraction < b.time.fraction;
  };
  for (std::size_t i = 1; i < rows.size(); ++i)
    if (earlier(rows[i], rows[i - 1])) ++t.reordered_rows;
  if (t.reordered_rows > 0) std::stable_sort(rows.begin(), rows.end(), earlier);
  const TraceTime t0 = rows.front().time;
  t.requests.reserve(rows.size());
  for (const auto& r : rows) {
    RequestSpec s;
    // Whole seconds and fractions subtracted separately: exact to the digits given, even for epoch times.
    s.arrival_s = (static_cast<double>(r.time.seconds - t0.seconds) + (r.time.fraction - t0.fraction)) / o.speedup;
    s.prompt_tokens = r.prompt;
    s.output_tokens = r.output;
    t.requests.push_back(s);
  }
  t.span_s = t.requests.back().arrival_s;
  return t;
}

Trace read_trace_csv(const std::string& path, const TraceOptions& o) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw TraceError(path, 0, "not a regular file (a directory, device, FIFO or socket); expected a trace CSV");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, 0, "cannot open the trace file");
  return parse_trace_csv(in, path, o);
}

}  // namespace kvcap::sim
