// Built when CUDA is off: the cuda:N device and the GPU self-tests report that clearly.
#include <ostream>
#include <stdexcept>

#include "backend.h"

namespace kvcap::kernels {

bool built_with_cuda() { return false; }

int run_gpu_selftests(std::ostream& log, int /*device_ordinal*/, std::uint64_t /*seed*/, SelftestCounts* /*counts*/) {
  log << "GPU tests skipped: kvcap-kernels was built without CUDA\n";
  return 77;
}

namespace detail {
std::unique_ptr<Backend> make_cuda_backend(int ordinal, std::uint64_t /*seed*/) {
  throw std::runtime_error("cuda:" + std::to_string(ordinal) + ": kvcap-kernels was built without CUDA");
}
}  // namespace detail

}  // namespace kvcap::kernels
