// Tiny pass/fail bookkeeping for the self-tests (no test framework: kernels/ builds with the standard library alone).
#pragma once

#include <cmath>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>

namespace kvcap::kernels::detail {

class Checks {
 public:
  explicit Checks(std::ostream& log) : log_(log) {}
  void check(bool ok, const std::string& name, const std::string& detail = {}) {
    (ok ? passed_ : failed_) += 1;
    if (!ok && first_failure_.empty()) first_failure_ = name + (detail.empty() ? "" : ": " + detail);
    if (!ok) log_ << "FAIL " << name << (detail.empty() ? "" : ": " + detail) << "\n";
    else if (verbose_) log_ << "pass " << name << (detail.empty() ? "" : ": " + detail) << "\n";
  }
  // max |a - b| over n values must be <= atol + rtol * max |b|.
  template <class A, class B>
  double max_abs_diff(const A* a, const B* b, std::size_t n, double* max_ref = nullptr) {
    double m = 0, r = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double d = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
      if (std::isnan(d)) return INFINITY;  // NaN is a failure, whatever the tolerance
      m = std::fmax(m, d);
      r = std::fmax(r, std::fabs(static_cast<double>(b[i])));
    }
    if (max_ref) *max_ref = r;
    return m;
  }
  int passed() const { return passed_; }
  int failed() const { return failed_; }
  const std::string& first_failure() const { return first_failure_; }
  int finish(const std::string& what) {
    log_ << what << ": " << passed_ << " passed, " << failed_ << " failed\n";
    return failed_ == 0 ? 0 : 1;
  }
  void set_verbose(bool v) { verbose_ = v; }

 private:
  std::ostream& log_;
  int passed_ = 0, failed_ = 0;
  std::string first_failure_;
  bool verbose_ = false;
};

inline std::string fmt_err(double err, double tol) {
  std::ostringstream s;
  s << "max error " << err << " (tolerance " << tol << ")";
  return s.str();
}

}  // namespace kvcap::kernels::detail
