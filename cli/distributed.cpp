#include "distributed.hpp"

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>

#include "kvcap/planner/error.hpp"

namespace kvcap::cli {

std::vector<std::size_t> mpi_share(const std::vector<std::size_t>& candidates, int rank, int size) {
  std::vector<std::size_t> mine;
  if (size < 1 || rank < 0 || rank >= size) return mine;
  for (std::size_t i = static_cast<std::size_t>(rank); i < candidates.size(); i += static_cast<std::size_t>(size))
    mine.push_back(candidates[i]);
  return mine;
}

namespace {

nlohmann::json finding_json(const Finding& f) {
  return {{"code", f.code},
          {"level", f.level == Finding::Level::error ? "error" : "warning"},
          {"message", f.message},
          {"exit_code", f.exit_code},
          {"leaves", static_cast<int>(f.leaves)},
          {"impossible_input", f.impossible_input}};
}

Finding finding_of(const nlohmann::json& j) {
  Finding f;
  f.code = j.at("code").get<std::string>();
  f.level = j.at("level").get<std::string>() == "error" ? Finding::Level::error : Finding::Level::warning;
  f.message = j.at("message").get<std::string>();
  f.exit_code = j.at("exit_code").get<int>();
  f.leaves = static_cast<Finding::Leaves>(j.at("leaves").get<int>());
  f.impossible_input = j.at("impossible_input").get<bool>();
  return f;
}

}  // namespace

std::string encode_verified(const std::vector<sim::VerifiedCandidate>& v) {
  auto a = nlohmann::json::array();
  for (const auto& x : v) {
    auto findings = nlohmann::json::array();
    for (const auto& f : x.findings_at_analytic) findings.push_back(finding_json(f));
    a.push_back({{"index", x.index},
                 {"analytic_replicas", x.analytic_replicas},
                 {"replicas", x.replicas},
                 {"prefill_replicas", x.prefill_replicas},
                 {"gpus", x.gpus},
                 {"max_replicas", x.max_replicas},
                 {"ttft_s", x.ttft_s},
                 {"tpot_s", x.tpot_s},
                 {"ttft_at_analytic_s", x.ttft_at_analytic_s},
                 {"tpot_at_analytic_s", x.tpot_at_analytic_s},
                 {"findings_at_analytic", findings},
                 {"completed", x.completed},
                 {"rejected", x.rejected},
                 {"too_many_rejected", x.too_many_rejected},
                 {"simulations", x.simulations},
                 {"wall_s", x.wall_s}});
  }
  // replace: a message with invalid UTF-8 must not throw between MPI_Init and the gather (a rank that never reaches it
  // would leave the others waiting).
  return nlohmann::json{{"verified", a}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string encode_error(const std::string& message) {
  return nlohmann::json{{"error", message}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<sim::VerifiedCandidate> decode_verified(const std::string& text, int rank) {
  const std::string where = "mpi rank " + std::to_string(rank);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw SpecError(where, std::string("sent results that do not parse: ") + e.what());
  }
  if (j.contains("error")) throw SpecError(where, j.at("error").get<std::string>());
  std::vector<sim::VerifiedCandidate> out;
  try {
    for (const auto& x : j.at("verified")) {
      sim::VerifiedCandidate v;
      v.index = x.at("index").get<std::size_t>();
      v.analytic_replicas = x.at("analytic_replicas").get<i64>();
      v.replicas = x.at("replicas").get<i64>();
      v.prefill_replicas = x.at("prefill_replicas").get<i64>();
      v.gpus = x.at("gpus").get<i64>();
      v.max_replicas = x.at("max_replicas").get<i64>();
      v.ttft_s = x.at("ttft_s").get<double>();
      v.tpot_s = x.at("tpot_s").get<double>();
      v.ttft_at_analytic_s = x.at("ttft_at_analytic_s").get<double>();
      v.tpot_at_analytic_s = x.at("tpot_at_analytic_s").get<double>();
      for (const auto& f : x.at("findings_at_analytic")) v.findings_at_analytic.push_back(finding_of(f));
      v.completed = x.at("completed").get<std::uint64_t>();
      v.rejected = x.at("rejected").get<std::uint64_t>();
      v.too_many_rejected = x.at("too_many_rejected").get<bool>();
      v.simulations = x.at("simulations").get<int>();
      v.wall_s = x.at("wall_s").get<double>();
      out.push_back(std::move(v));
    }
  } catch (const nlohmann::json::exception& e) {
    throw SpecError(where, std::string("sent results without a field: ") + e.what());
  }
  return out;
}

std::vector<sim::VerifiedCandidate> verify_sizing_mpi(const MpiSession& s, const SizingRequest& q,
                                                      const SizingResult& r, const sim::VerifyOptions& o) {
  sim::VerifyOptions mine = o;
  mine.candidates = mpi_share(o.candidates, s.rank(), s.size());
  if (s.rank() != 0) mine.progress = nullptr;  // one progress line, rank 0's share
  std::string text;
  try {
    text = encode_verified(mine.candidates.empty() ? std::vector<sim::VerifiedCandidate>{}
                                                   : sim::verify_sizing(q, r, mine));
  } catch (const std::exception& e) {
    text = encode_error(e.what());  // every rank reaches the gather, so none waits for ever
  }
  const std::vector<std::string> all = s.gather(text);
  if (s.rank() != 0) return {};
  std::vector<sim::VerifiedCandidate> merged;
  for (std::size_t k = 0; k < all.size(); ++k) {
    auto part = decode_verified(all[k], static_cast<int>(k));
    merged.insert(merged.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  // verify_sizing's order: that of o.candidates.
  std::vector<sim::VerifiedCandidate> out;
  for (const std::size_t c : o.candidates) {
    const auto it = std::find_if(merged.begin(), merged.end(), [&](const auto& v) { return v.index == c; });
    if (it == merged.end()) throw SpecError("mpi", "candidate " + std::to_string(c) + " came back from no rank");
    out.push_back(*it);
  }
  return out;
}

}  // namespace kvcap::cli
