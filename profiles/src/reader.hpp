#pragma once
// Internal: typed, located reads from a yaml-cpp tree into planner values. Every failed read adds a
// Diagnostic (it never throws mid-way), so one pass reports every problem in a file.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvcap/profiles/diagnostics.hpp"
#include "kvcap/profiles/units.hpp"

namespace kvcap::profiles {
struct ProfileIndex;
}

namespace kvcap::profiles::detail {

/// Input limits: profiles are kilobytes; yaml-cpp 0.7 needs ~250 bytes of memory per input byte (16 MiB of
/// "- a" lines took 2.1 GB and 10 s), so larger inputs are refused before parsing, with a clear error.
inline constexpr std::size_t kMaxInputBytes = 1u << 20;  ///< 1 MiB per file
inline constexpr int kMaxNestingDepth = 64;              ///< flow/block nesting; profiles use at most 4
inline constexpr std::size_t kMaxDiagnostics = 200;      ///< per file; then one "too many errors" line

struct Ctx {
  std::string file;
  std::vector<Diagnostic> diags;
  /// JSON input (config.json): a quoted scalar is a string and never a number or boolean, an unquoted one
  /// never a string ("num_attention_heads": "32" is an error, as transformers would not read it as 32).
  bool json_types = false;
  void error(const YAML::Node& at, const std::string& key_path, const std::string& message);
  void error_at(const YAML::Mark& at, const std::string& key_path, const std::string& message);
  void throw_if_any();
};

/// Checks size, NUL bytes and nesting depth before any parser sees the text; false (with a diagnostic) when refused.
bool precheck_text(Ctx& c, const std::string& text);
/// Parses text into a node; syntax errors become diagnostics (returns a null node then).
YAML::Node parse_text(Ctx& c, const std::string& text);
/// Reads a file into text; a missing/unreadable/binary file becomes a diagnostic.
std::optional<std::string> read_file(Ctx& c, const std::string& path);

std::string join(const std::string& path, const std::string& key);
/// A planner check's failure (SpecError field "attention.num_kv_heads", "prompt_tokens.max") as a diagnostic
/// at the deepest key of that path that exists in `root` (list indices are not followed).
void error_at_field(Ctx& c, const YAML::Node& root, const std::string& field, const std::string& message);
/// Each key of `map` must be in `allowed`; unknown keys get a did-you-mean suggestion.
void check_keys(Ctx& c, const YAML::Node& map, const std::string& path, const std::vector<std::string>& allowed);
/// `map[key]` must be a mapping (or absent when !required).
YAML::Node get_map(Ctx& c, const YAML::Node& map, const std::string& path, const char* key, bool required);

std::optional<std::int64_t> get_int(Ctx& c, const YAML::Node& map, const std::string& path, const char* key,
                                    bool required, std::int64_t min = 0, std::int64_t max = INT64_MAX);
std::optional<double> get_number(Ctx& c, const YAML::Node& map, const std::string& path, const char* key,
                                 bool required, double min = 0, double max = 1e300);
std::optional<bool> get_bool(Ctx& c, const YAML::Node& map, const std::string& path, const char* key, bool required);
std::optional<std::string> get_string(Ctx& c, const YAML::Node& map, const std::string& path, const char* key,
                                      bool required);
/// The profile's `name`: a required string that is not blank (it labels the profile in every report).
std::optional<std::string> get_name(Ctx& c, const YAML::Node& root);
std::optional<std::vector<std::string>> get_string_list(Ctx& c, const YAML::Node& map, const std::string& path,
                                                        const char* key, bool required);
/// A token count: an integer, or a string as vLLM reads --max-model-len ("32K" = 32,768, "32k" = 32,000;
/// K/M/G binary, k/m/g decimal).
std::optional<std::int64_t> get_tokens(Ctx& c, const YAML::Node& map, const std::string& path, const char* key,
                                       bool required, std::int64_t min = 1, std::int64_t max = std::int64_t{1} << 50);
/// A duration in seconds: a number, or a string with a unit ("40ms", "800us", "1.5s").
std::optional<double> get_seconds(Ctx& c, const YAML::Node& map, const std::string& path, const char* key,
                                  bool required, double max = 1e9);
/// Parses `text` and reads the tree with `read(ctx, root)`; throws ProfileError with every diagnostic.
template <class Read>
auto parse_with(const std::string& text, const std::string& file, Read read) {
  Ctx c{file, {}};
  const YAML::Node root = parse_text(c, text);
  c.throw_if_any();
  auto value = read(c, root);
  c.throw_if_any();
  return value;
}
/// Reads the file at `path` (missing, unreadable, binary or oversized files are located errors) and
/// hands its text to `parse(text, path)`.
template <class Parse>
auto load_with(const std::string& path, Parse parse) {
  Ctx c{path, {}};
  auto text = read_file(c, path);
  c.throw_if_any();
  return parse(*text, path);
}
/// A scalar read as text for custom parsing (null or absent: nullopt).
bool present(const YAML::Node& map, const char* key);

/// Enters a parsed profile (`root`, a mapping with a scalar `name`) of `kind` model, gpu or deployment in
/// `index` under its name. Two files of one kind and name get an error at the later `name:`: a reference by name
/// would pick one of them silently. One file reached twice (overlapping folders, a link) is one profile. Other
/// kinds are passed over. Shared by `index_profiles` (check --profiles) and `validate_paths`.
void index_by_name(ProfileIndex& index, const std::string& kind, const YAML::Node& root, const std::string& path,
                   std::vector<Diagnostic>& diags);

}  // namespace kvcap::profiles::detail
