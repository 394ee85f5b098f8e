// The simulator's timeline CSV, read strictly: exact header, eight fields a row, numbers in range.
#include "kvcap/gui/timeline.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <istream>
#include <string_view>

#include "kvcap/planner/text.hpp"
#include "kvcap/simulator/timeline.hpp"

namespace kvcap::gui {

namespace {
std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> r;
  std::size_t start = 0;
  while (true) {
    const auto comma = line.find(',', start);
    r.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return r;
    start = comma + 1;
  }
}

/// The column names, from the header the simulator writes (views into sim::kTimelineHeader).
const std::vector<std::string_view>& columns() {
  static const std::vector<std::string_view> c = split(sim::kTimelineHeader);
  return c;
}

struct Row {
  const std::string& file;
  int line;
  const std::vector<std::string_view>& fields;

  [[noreturn]] void fail(std::size_t col, const std::string& what) const {
    throw TimelineError(file, line,
                        std::string(columns()[col]) + ": " + what + ", got '" + std::string(trim(fields[col])) + "'");
  }
  std::int64_t count(std::size_t col) const {
    const auto s = trim(fields[col]);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0) fail(col, "expected an integer >= 0");
    return v;
  }
  std::uint32_t index(std::size_t col) const {
    const std::int64_t v = count(col);
    if (v > static_cast<std::int64_t>(UINT32_MAX)) fail(col, "expected an index below 2^32");
    return static_cast<std::uint32_t>(v);
  }
  double number(std::size_t col) const {
    const auto s = trim(fields[col]);
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || v < 0)
      fail(col, "expected a finite number >= 0");
    return v;
  }
};
}  // namespace

TimelineError::TimelineError(const std::string& file, int line, const std::string& message)
    : std::runtime_error((line > 0 ? file + ":" + std::to_string(line) : file) + ": error: " + message), line_(line) {}

const std::string& timeline_header() {
  static const std::string h(sim::kTimelineHeader);
  return h;
}

Timeline parse_timeline_csv(std::istream& in, const std::string& file) {
  Timeline t;
  t.file = file;
  std::string text;
  int line_no = 0;
  bool header_seen = false;
  while (std::getline(in, text)) {
    ++line_no;
    const std::string_view line = trim(text);
    if (!header_seen) {
      if (line != timeline_header())
        throw TimelineError(file, line_no,
                            "header: expected '" + timeline_header() + "' (kvcap simulate --timeline), got '" +
                                std::string(line) + "'");
      header_seen = true;
      continue;
    }
    if (line.empty()) continue;
    const auto fields = split(line);
    if (fields.size() != columns().size())
      throw TimelineError(file, line_no,
                          "expected " + std::to_string(columns().size()) + " comma-separated fields, got " +
                              std::to_string(fields.size()));
    const Row r{file, line_no, fields};
    TimelineSample s;
    s.time_s = r.number(0);
    s.replica = r.index(1);
    // kvcap simulate runs at most 100,000 replicas (--replicas); a larger index is not a simulator's file and would
    // make the chart allocate a series per replica.
    if (s.replica >= 100'000) r.fail(1, "expected a replica index below 100,000");
    s.running = r.count(2);
    s.waiting = r.count(3);
    s.kv_used_blocks = r.count(4);
    s.kv_total_blocks = r.count(5);
    s.kv_utilization = r.number(6);
    s.preemptions = r.count(7);
    if (s.kv_used_blocks > s.kv_total_blocks)
      r.fail(4, "exceeds kv_total_blocks (" + std::to_string(s.kv_total_blocks) + ")");
    // 1e-6 tolerates a utilisation printed with a few digits and rounded up.
    if (s.kv_utilization > 1.0 + 1e-6) r.fail(6, "expected a fraction in [0, 1]");
    t.num_replicas = std::max(t.num_replicas, std::int64_t{s.replica} + 1);
    t.samples.push_back(s);
  }
  if (!header_seen)
    throw TimelineError(file, std::max(line_no, 1), "empty file: expected the header '" + timeline_header() + "'");
  return t;
}

Timeline read_timeline_csv(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw TimelineError(path, 0, "not a regular file (a directory, device, FIFO or socket); expected a timeline CSV");
  std::ifstream in(path);
  if (!in) throw TimelineError(path, 0, "cannot open the timeline file");
  return parse_timeline_csv(in, path);
}

}  // namespace kvcap::gui
