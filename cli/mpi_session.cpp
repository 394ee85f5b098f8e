// MpiSession over MPI's C API (Debian's Open MPI, libopenmpi-dev): built when CMake finds MPI.
#include <mpi.h>

#include "distributed.hpp"
#include "kvcap/planner/error.hpp"

namespace kvcap::cli {

bool mpi_available() {
  return true;
}

MpiSession::MpiSession() {
  int provided = 0;
  // Only the main thread calls MPI; the verification's worker threads never do.
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    throw SpecError("mpi", "MPI_Init_thread failed");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  MPI_Finalize();
}

std::vector<std::string> MpiSession::gather(const std::string& mine) const {
  if (mine.size() > static_cast<std::size_t>(INT32_MAX)) throw SpecError("mpi", "a rank's results exceed 2 GiB");
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(rank_ == 0 ? static_cast<std::size_t>(size_) : 0);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(lens.size());
  long long total = 0;
  for (std::size_t k = 0; k < lens.size(); ++k) {
    offsets[k] = static_cast<int>(total);
    total += lens[k];
  }
  if (total > INT32_MAX) throw SpecError("mpi", "the gathered results exceed 2 GiB");
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (std::size_t k = 0; k < lens.size(); ++k)
    out.push_back(all.substr(static_cast<std::size_t>(offsets[k]), static_cast<std::size_t>(lens[k])));
  return out;
}

}  // namespace kvcap::cli
