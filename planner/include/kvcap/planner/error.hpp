#pragma once
// Errors raised by the planner. Input boundaries (profiles/, cli/) add file:line:column context;
// the planner itself names the field and says what was expected.
#include <stdexcept>
#include <string>

namespace kvcap {

/// A value violates the model: names the field (a dotted key path) and the reason.
class SpecError : public std::runtime_error {
 public:
  /// invalid: the input itself is wrong (exit 1). vllm_refuses: a well-formed setting that vLLM's own config
  /// checks reject at start-up (heads not divisible by TP, nvfp4 KV without fp4 tensor cores, ...): the
  /// deployment would not start (exit 3, as for a model that does not fit; docs/exit-codes-and-warnings.md).
  enum class Kind { invalid, vllm_refuses };
  SpecError(std::string field, const std::string& reason, Kind kind = Kind::invalid)
      : std::runtime_error(field + ": " + reason), field_(std::move(field)), reason_(reason), kind_(kind) {}
  const std::string& field() const noexcept { return field_; }
  const std::string& reason() const noexcept { return reason_; }
  bool vllm_refuses() const noexcept { return kind_ == Kind::vllm_refuses; }

 private:
  std::string field_;
  std::string reason_;
  Kind kind_;
};

/// An integer result does not fit in 64 bits (cluster-scale products).
class OverflowError : public std::overflow_error {
 public:
  explicit OverflowError(const std::string& what) : std::overflow_error(what) {}
};

}  // namespace kvcap
