#pragma once
// The verified sizing search split over MPI ranks (issue 18; docs/sizing.md, "At cluster scale: MPI"): `mpirun -np N
// kvcap size ... --verify --mpi`. Each rank simulates its share of the candidates (every N-th, from its rank) on its
// own pool of threads, rank 0 gathers the results and reports. Every candidate's simulations are seeded the same
// whatever rank runs them, so the report is the single-process one, bit for bit. The MPI calls live in
// mpi_session.cpp (built when CMake finds MPI; mpi_session_none.cpp otherwise); the rest here is pure.
#include <cstddef>
#include <string>
#include <vector>

#include "kvcap/simulator/verify.hpp"

namespace kvcap::cli {

/// MPI_Init on construction, MPI_Finalize on destruction. UsageError("--mpi ...") when kvcap was built without MPI.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Rank 0 receives every rank's text in rank order (its own first); the others receive nothing.
  std::vector<std::string> gather(const std::string& mine) const;

 private:
  int rank_ = 0, size_ = 1;
};

/// Whether this kvcap was built with MPI.
bool mpi_available();

/// The candidates rank `rank` of `size` simulates: those at positions rank, rank + size, ... of `candidates`.
std::vector<std::size_t> mpi_share(const std::vector<std::size_t>& candidates, int rank, int size);

/// A rank's results as text and back (JSON; doubles round-trip exactly). An error a rank met travels as
/// {"error": message} and decode throws it on rank 0 as a SpecError("mpi rank N", message).
std::string encode_verified(const std::vector<sim::VerifiedCandidate>& v);
std::string encode_error(const std::string& message);
std::vector<sim::VerifiedCandidate> decode_verified(const std::string& text, int rank);

/// verify_sizing over the session's ranks: rank 0 returns the results in the order of o.candidates, exactly what
/// verify_sizing(q, r, o) returns in one process; the other ranks return an empty list.
std::vector<sim::VerifiedCandidate> verify_sizing_mpi(const MpiSession& s, const SizingRequest& q,
                                                      const SizingResult& r, const sim::VerifyOptions& o);

}  // namespace kvcap::cli
