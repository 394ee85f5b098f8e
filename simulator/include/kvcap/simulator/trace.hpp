#pragma once
// CSV traces: one request per row with its arrival time, prompt tokens and output tokens. Column names
// are auto-detected (the Azure LLM inference traces' TIMESTAMP,ContextTokens,GeneratedTokens and common
// alternatives) or given explicitly. Times are seconds (a number) or date-times such as
// "2023-11-16 18:15:46.6805900"; the trace is replayed relative to its earliest request, optionally
// sped up. Every bad row is an error naming the file, the line and the column.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kvcap/simulator/request.hpp"

namespace kvcap::sim {

/// A malformed trace: what() is "FILE:LINE: error: column 'NAME': reason" (line 0: the file itself).
class TraceError : public std::runtime_error {
 public:
  TraceError(std::string file, std::uint64_t line, const std::string& message);
  const std::string& file() const noexcept { return file_; }
  std::uint64_t line() const noexcept { return line_; }

 private:
  std::string file_;
  std::uint64_t line_;
};

struct TraceOptions {
  /// Column names TIME,PROMPT,OUTPUT (--trace-columns); empty: auto-detect.
  std::string time_column, prompt_column, output_column;
  double speedup = 1.0;  ///< arrival times divided by this (--trace-speedup)
};

struct Trace {
  std::vector<RequestSpec> requests;  ///< sorted by arrival, the first at 0
  std::string time_column, prompt_column, output_column;
  std::uint64_t reordered_rows = 0;   ///< rows that were earlier than a row above them (sorted, stable)
  double span_s = 0;                  ///< last arrival (after speed-up)
};

/// Parses "TIME,PROMPT,OUTPUT" for --trace-columns; throws std::invalid_argument.
TraceOptions parse_trace_columns(const std::string& spec, TraceOptions base = {});

Trace read_trace_csv(const std::string& path, const TraceOptions& o = {});
Trace parse_trace_csv(std::istream& in, const std::string& file, const TraceOptions& o = {});

/// A time field: seconds as a number, or "YYYY-MM-DD[ T]HH:MM:SS[.fraction][Z]". Returns
/// {whole seconds, fraction in [0, 1)} (date-times: seconds since 1970-01-01 UTC), nullopt when invalid.
struct TraceTime {
  std::int64_t seconds = 0;
  double fraction = 0;
  bool date_time = false;  ///< written as a date-time (else as seconds): one trace uses one of the two
};
std::optional<TraceTime> parse_trace_time(std::string_view s);

}  // namespace kvcap::sim
