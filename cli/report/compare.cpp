// Reporters of `kvcap compare` (report/compare.hpp).
#include "report/compare.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kvcap/escape.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "report/format.hpp"
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
  // starts: whether the engine would start the deployment (no error finding, the rule of `kvcap plan`'s exit code);
  // errors: the codes of the findings that stop it, ';'-separated (docs/exit-codes-and-warnings.md). A deployment
  // that does not start still has its curve: the concurrency its memory would hold. beyond_max_model_len: the
  // engine rejects a request of this context (the table prints '-').
  out << "deploy,model,gpu,num_gpus,context_tokens,max_concurrency,beyond_max_model_len,starts,errors\n";
  for (const auto& r : rows) {
    std::string errors;
    for (const auto& f : r.findings)
      if (f.level == Finding::Level::error) errors += (errors.empty() ? "" : ";") + f.code;
    for (const auto& c : r.p.curve)
      out << escape::csv_field(r.spec) << "," << escape::csv_field(r.m.name) << "," << escape::csv_field(r.g.name)
          << "," << r.p.dep.d.num_gpus << "," << c.context_tokens << "," << csv_number(c.max_concurrency) << ","
          << (c.context_tokens > r.p.dep.max_model_len ? "true" : "false") << "," << (errors.empty() ? "true" : "false")
          << "," << escape::csv_field(errors) << "\n";
  }
}

std::size_t target_split(const std::string& spec) {
  const auto first = spec.find('@');
  const auto names = profiles::builtin_model_names();
  for (auto at = first; at != std::string::npos; at = spec.find('@', at + 1)) {
    const std::string model = spec.substr(0, at);
    std::error_code ec;
    if (std::find(names.begin(), names.end(), model) != names.end() || std::filesystem::is_regular_file(model, ec))
      return at;
  }
  return first;
}

std::string row_label(const std::string& spec) {
  const auto at = target_split(spec);  // where the target parser splits (cmd_compare.cpp parse_target)
  const std::string model = at == std::string::npos ? spec : spec.substr(0, at);
  const auto ext = std::filesystem::path(model).extension();
  if (model.find('/') == std::string::npos && ext != ".json" && ext != ".yaml" && ext != ".yml") return spec;
  // A model file (config.json or a YAML profile): its stem, as plots label it; a config.json by its folder.
  const std::filesystem::path path(model);
  std::string stem = path.stem().string();
  if (stem == "config" && !path.parent_path().filename().empty())
    stem = path.parent_path().filename().string() + "/config";
  return stem + (at == std::string::npos ? "" : spec.substr(at));
}

void report_compare_table(std::ostream& out, const std::vector<CompareRow>& rows, const std::vector<i64>& contexts) {
  const bool trtllm = std::any_of(rows.begin(), rows.end(),
                                  [](const CompareRow& r) { return r.p.dep.d.free_gpu_memory_fraction.has_value(); });
  out << "Maximum concurrent requests per replica, by context length (vLLM V1 semantics"
      << (trtllm ? ", TensorRT-LLM's KV budget where --free-gpu-memory-fraction is given" : "") << "; weights "
      << "and KV in each model's dtype unless set)\n\n";
  // Rows are named MODEL@NxGPU with a model file shown by its stem (never cut: rows must stay distinguishable).
  std::vector<std::string> names;
  std::size_t width = 32;
  std::vector<std::string> labels;
  labels.reserve(rows.size());
  names.reserve(rows.size());
  for (const auto& r : rows) labels.push_back(row_label(r.spec));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    // Two files with one stem (a/model.yaml, b/model.yaml) are shown by their whole specs.
    const bool shared = std::count(labels.begin(), labels.end(), labels[i]) > 1 && labels[i] != rows[i].spec;
    names.push_back(escape::terminal_text(shared ? rows[i].spec : labels[i]));
    width = std::max(width, names.back().size());
  }
  out << "  #  deployment" << std::string(width - 8, ' ') << "KV/token/GPU    KV tokens";
  for (auto c : contexts)
    out << std::string(8 - std::min<std::size_t>(7, human_tokens(c).size()), ' ') << human_tokens(c);
  out << "\n";
  int i = 0;
  bool beyond = false;
  for (const auto& r : rows) {
    const std::string& name = names[static_cast<std::size_t>(i)];
    std::string kv = human_bytes(static_cast<double>(r.p.kv_bytes_per_token_per_rank));
    const std::string cap = grouped(r.p.kv_capacity_tokens);
    out << "  " << ++i << "  " << name << std::string(width + 2 - name.size(), ' ')
        << std::string(12 - std::min<std::size_t>(12, kv.size()), ' ') << kv
        << std::string(13 - std::min<std::size_t>(12, cap.size()), ' ') << cap;
    for (const auto& c : r.p.curve) {
      // Rounded down: a capacity is whole requests and their fraction, and 0.997 shown as "1.0" would cross the
      // line below which one request does not fit. A context beyond max_model_len is a request vLLM rejects.
      beyond |= c.context_tokens > r.p.dep.max_model_len;
      const double x = c.max_concurrency;
      std::string v = c.context_tokens > r.p.dep.max_model_len ? "-" : x >= 100 ? fixed_down(x, 0) : fixed_down(x, 1);
      out << std::string(8 - std::min<std::size_t>(7, v.size()), ' ') << v;
    }
    out << "\n";
  }
  out << "\nBelow 1.0 a single request of that length does not fit (figures rounded down)."
      << (beyond ? "\n-: beyond the deployment's max_model_len (the engine rejects such requests)." : "")
      << "\nDetails: kvcap plan --model M --gpu G ...\n";
  for (const auto& r : rows)
    for (const auto& w : r.p.warnings)
      if (w.find("no memory left") != std::string::npos)
        out << "warning: " << escape::terminal_text(r.spec) << ": " << escape::terminal_text(w) << "\n";
}

}  // namespace kvcap::cli
