// MpiSession where kvcap was built without MPI: --mpi says how to get it.
#include "common.hpp"
#include "distributed.hpp"

namespace kvcap::cli {

bool mpi_available() {
  return false;
}

MpiSession::MpiSession() {
  throw UsageError(
      "--mpi: this kvcap was built without MPI; install Debian's Open MPI (apt-get install libopenmpi-dev "
      "openmpi-bin) and rebuild, or leave --mpi out (the verification then uses this machine's threads)");
}

MpiSession::~MpiSession() = default;

std::vector<std::string> MpiSession::gather(const std::string& mine) const {
  return {mine};
}

}  // namespace kvcap::cli
