#include "report/format.hpp"

#include <iomanip>
#include <sstream>

#include "common.hpp"

namespace kvcap::cli {

Format parse_format(const std::string& s, bool allow_csv) {
  if (s == "table") return Format::table;
  if (s == "json") return Format::json;
  if (s == "csv" && allow_csv) return Format::csv;
  throw UsageError("--format: expected table, json" + std::string(allow_csv ? " or csv" : "") + ", got '" + s + "'");
}

std::string csv_number(double v) {
  std::ostringstream s;
  s << std::setprecision(10) << v;
  return s.str();
}

}  // namespace kvcap::cli
