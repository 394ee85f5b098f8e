// The MPI split of the verified sizing search (cli/distributed.hpp): every candidate goes to exactly one rank, a rank's
// results survive the trip as text exactly (doubles bit for bit), and an error on a rank reaches rank 0 by name.
#include <catch2/catch.hpp>
#include <cmath>

#include "distributed.hpp"
#include "kvcap/planner/error.hpp"

using namespace kvcap;
using namespace kvcap::cli;

TEST_CASE("the candidates are dealt round-robin over the ranks, each exactly once", "[cli][mpi]") {
  const std::vector<std::size_t> c = {0, 1, 2, 4, 7, 9, 12};
  for (int size = 1; size <= 9; ++size) {
    std::vector<int> seen(13, 0);
    std::size_t total = 0;
    for (int rank = 0; rank < size; ++rank) {
      const auto mine = mpi_share(c, rank, size);
      total += mine.size();
      for (std::size_t k = 0; k < mine.size(); ++k) {
        ++seen[mine[k]];
        CHECK(mine[k] == c[static_cast<std::size_t>(rank) + k * static_cast<std::size_t>(size)]);
      }
    }
    CHECK(total == c.size());
    for (std::size_t i : c) CHECK(seen[i] == 1);
  }
  CHECK(mpi_share(c, 3, 2).empty());  // no such rank
  CHECK(mpi_share(c, 0, 0).empty());
}

TEST_CASE("a rank's verified candidates survive the trip as text, doubles bit for bit", "[cli][mpi]") {
  sim::VerifiedCandidate v;
  v.index = 17;
  v.analytic_replicas = 3;
  v.replicas = 4;
  v.prefill_replicas = 2;
  v.gpus = 10;
  v.max_replicas = 100000;
  v.ttft_s = 0.1 + 0.2;  // not a short decimal
  v.tpot_s = std::nextafter(0.025, 1.0);
  v.ttft_at_analytic_s = 1.0 / 3.0;
  v.tpot_at_analytic_s = 2.5e-310;  // subnormal
  Finding f;
  f.code = "KVCAP-W202";
  f.message = "offered \"load\" beyond\nwhat is served";
  f.leaves = Finding::Leaves::only_fits;
  v.findings_at_analytic = {f};
  v.completed = 123456789012ull;
  v.rejected = 5;
  v.too_many_rejected = true;
  v.simulations = 7;
  v.wall_s = 0.75;
  const auto back = decode_verified(encode_verified({v, sim::VerifiedCandidate{}}), 1);
  REQUIRE(back.size() == 2);
  const auto& b = back[0];
  CHECK(b.index == 17);
  CHECK(b.analytic_replicas == 3);
  CHECK(b.replicas == 4);
  CHECK(b.prefill_replicas == 2);
  CHECK(b.gpus == 10);
  CHECK(b.max_replicas == 100000);
  CHECK(b.ttft_s == v.ttft_s);
  CHECK(b.tpot_s == v.tpot_s);
  CHECK(b.ttft_at_analytic_s == v.ttft_at_analytic_s);
  CHECK(b.tpot_at_analytic_s == v.tpot_at_analytic_s);
  REQUIRE(b.findings_at_analytic.size() == 1);
  CHECK(b.findings_at_analytic[0].code == f.code);
  CHECK(b.findings_at_analytic[0].message == f.message);
  CHECK(b.findings_at_analytic[0].leaves == Finding::Leaves::only_fits);
  CHECK(b.completed == 123456789012ull);
  CHECK(b.rejected == 5);
  CHECK(b.too_many_rejected);
  CHECK(b.simulations == 7);
  CHECK(b.wall_s == 0.75);
  CHECK(back[1].index == 0);
}

TEST_CASE("an error on a rank reaches rank 0 naming the rank, and a garbled message is refused", "[cli][mpi]") {
  try {
    decode_verified(encode_error("max_model_len: one request does not fit"), 3);
    FAIL("no error");
  } catch (const SpecError& e) {
    CHECK(e.field() == "mpi rank 3");
    CHECK_THAT(e.reason(), Catch::Contains("does not fit"));
  }
  CHECK_THROWS_AS(decode_verified("{\"verified\": [{\"index\": 1}]}", 1), SpecError);
  CHECK_THROWS_AS(decode_verified("not json", 2), SpecError);
}
