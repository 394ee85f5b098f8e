// Reporters of `kvcap compare` (report/compare.hpp).
#include "report/compare.hpp"

#include <nlohmann/json.hpp>
#include <sstream>

#include "kvcap/escape.hpp"
#include "kvcap/planner/text.hpp"
#include "report/plan.hpp"

namespace kvcap::cli {

void report_compare_json(std::ostream& out, const std::vector<CompareRow>& rows) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    auto e = plan_json(r.m, r.g, r.p, r.findings);
    e["deploy"] = r.spec;
    j.push_back(e);
  }
  out << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
}

void report_compare_csv(std::ostream& out, const std::vector<CompareRow>& rows) {
  out << "deploy,model,gpu,num_gpus,context_tokens,max_concurrency\n";
  for (const auto& r : rows)
    for (const auto& c : r.p.curve)
      out << escape::csv_field(r.spec) << "," << escape::csv_field(r.m.name) << "," << escape::csv_field(r.g.name)
          << "," << r.p.dep.d.num_gpus << "," << c.context_tokens << "," << c.max_concurrency << "\n";
}

void report_compare_table(std::ostream& out, const std::vector<CompareRow>& rows, const std::vector<i64>& contexts) {
  out << "Maximum concurrent requests per replica, by context length (vLLM V1 semantics; weights "
      << "and KV in each model's dtype unless set)\n\n";
  std::ostringstream head;
  head << "  #  deployment                        KV/token/GPU    KV tokens";
  out << head.str();
  for (auto c : contexts)
    out << std::string(8 - std::min<std::size_t>(7, human_tokens(c).size()), ' ') << human_tokens(c);
  out << "\n";
  int i = 0;
  for (const auto& r : rows) {
    std::string name = escape::terminal_text(r.spec);
    if (name.size() > 32) name = name.substr(0, 31) + "~";
    std::string kv = human_bytes(static_cast<double>(r.p.kv_bytes_per_token_per_rank));
    const std::string cap = grouped(r.p.kv_capacity_tokens);
    out << "  " << ++i << "  " << name << std::string(34 - name.size(), ' ')
        << std::string(12 - std::min<std::size_t>(12, kv.size()), ' ') << kv
        << std::string(13 - std::min<std::size_t>(12, cap.size()), ' ') << cap;
    for (const auto& c : r.p.curve) {
      std::string v = c.max_concurrency >= 100 ? fixed(c.max_concurrency, 0) : fixed(c.max_concurrency, 1);
      out << std::string(8 - std::min<std::size_t>(7, v.size()), ' ') << v;
    }
    out << "\n";
  }
  out << "\nBelow 1.0 a single request of that length does not fit. Details: kvcap plan --model M --gpu G ...\n";
  for (const auto& r : rows)
    for (const auto& w : r.p.warnings)
      if (w.find("no memory left") != std::string::npos)
        out << "warning: " << escape::terminal_text(r.spec) << ": " << escape::terminal_text(w) << "\n";
}

}  // namespace kvcap::cli
