#pragma once
// Errors raised by the planner. Input boundaries (profiles/, cli/) add file:line:column context;
// the planner itself names the field and says what was expected.
#include <stdexcept>
#include <string>

namespace kvcap {

/// A value violates the model: names the field (a dotted key path) and the reason.
class SpecError : public std::runtime_error {
 public:
  SpecError(std::string field, const std::string& reason)
      : std::runtime_error(field + ": " + reason), field_(std::move(field)), reason_(reason) {}
  const std::string& field() const noexcept { return field_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string field_;
  std::string reason_;
};

/// An integer result does not fit in 64 bits (cluster-scale products).
class OverflowError : public std::overflow_error {
 public:
  explicit OverflowError(const std::string& what) : std::overflow_error(what) {}
};

}  // namespace kvcap
