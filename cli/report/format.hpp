#pragma once
// The output formats every reporter of the CLI offers (--format).
#include <string>

namespace kvcap::cli {

enum class Format { table, json, csv };
/// --format's value; UsageError for anything else (csv only where `allow_csv`).
Format parse_format(const std::string& s, bool allow_csv = true);

}  // namespace kvcap::cli
