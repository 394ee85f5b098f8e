#pragma once
// Located diagnostics for profile files: file:line:column, the key path, and what was expected.
// The format is the one compilers use, so editors and CI annotators pick it up.
#include <stdexcept>
#include <string>
#include <vector>

namespace kvcap::profiles {

struct Diagnostic {
  std::string file;
  int line = 0;    ///< 1-based; 0 when unknown
  int column = 0;  ///< 1-based; 0 when unknown
  std::string key_path;  ///< dotted, e.g. "attention.num_kv_heads"
  std::string message;
  std::string format() const;  ///< "file:line:col: error: key: message"
};

/// One or more problems in a profile; what() lists them all, one per line.
class ProfileError : public std::runtime_error {
 public:
  explicit ProfileError(std::vector<Diagnostic> d);
  const std::vector<Diagnostic>& diagnostics() const noexcept { return diags_; }

 private:
  std::vector<Diagnostic> diags_;
};

/// The closest of `candidates` to `word` by edit distance, or "" when none is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace kvcap::profiles
