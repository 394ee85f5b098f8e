#pragma once
// The output formats every reporter of the CLI offers (--format).
#include <string>

namespace kvcap::cli {

enum class Format { table, json, csv };
/// --format's value; UsageError for anything else (csv only where `allow_csv`).
Format parse_format(const std::string& s, bool allow_csv = true);

/// `s` right-aligned in a table column of `w` characters (unchanged when longer).
inline std::string padl(const std::string& s, std::size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

/// A number for CSV: 10 significant digits (1304286, 20379.46875; not the stream's 1.30429e+06).
std::string csv_number(double v);

}  // namespace kvcap::cli
