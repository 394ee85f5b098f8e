// YAML workload files (`kind: workload`) -> planner WorkloadSpec. Keys in workload_keys(); every problem
// is a located diagnostic (file:line:col, key path, did-you-mean for unknown keys). Example:
// profiles/examples/workload-chat.yaml.
#include "kvcap/planner/workload.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "kvcap/planner/error.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/profiles/units.hpp"
#include "reader.hpp"

namespace kvcap::profiles {
using namespace detail;

const std::map<std::string, std::vector<std::string>>& workload_keys() {
  static const std::map<std::string, std::vector<std::string>> k = {
      {"",
       {"kind", "name", "description", "arrival", "prompt_tokens", "output_tokens", "shared_prefix", "conversation",
        "slo"}},
      {"arrival", {"process", "rate_per_s", "cv", "phases", "concurrency", "think_time_s", "think_time_distribution"}},
      {"arrival.phases[]", {"rate_per_s", "duration_s"}},
      {"prompt_tokens", {"distribution", "tokens", "min", "max", "mean", "sigma", "values", "weights"}},
      {"output_tokens", {"distribution", "tokens", "min", "max", "mean", "sigma", "values", "weights"}},
      {"shared_prefix", {"groups", "tokens", "fraction"}},
      {"conversation", {"turns", "users", "think_time_s", "think_time_distribution", "history"}},
      {"conversation.turns", {"distribution", "tokens", "min", "max", "mean", "sigma", "values", "weights"}},
      {"slo", {"ttft_s", "tpot_s"}},
  };
  return k;
}

namespace {
constexpr std::int64_t kMaxTokens = 1'000'000'000;

template <class T, class U>
void set(T& field, const std::optional<U>& v) {
  if (v) field = static_cast<T>(*v);
}

// Keys that a distribution kind uses; any other present key is an error (a typo'd kind silently
// ignoring `mean` would hide a mistake).
const std::vector<std::string>& keys_of(LengthDistribution::Kind k) {
  static const std::vector<std::string> fixed = {"distribution", "tokens"};
  static const std::vector<std::string> uniform = {"distribution", "min", "max"};
  static const std::vector<std::string> lognormal = {"distribution", "mean", "sigma", "min", "max"};
  static const std::vector<std::string> empirical = {"distribution", "values", "weights"};
  switch (k) {
    case LengthDistribution::Kind::fixed: return fixed;
    case LengthDistribution::Kind::uniform: return uniform;
    case LengthDistribution::Kind::lognormal: return lognormal;
    case LengthDistribution::Kind::empirical: return empirical;
  }
  return fixed;
}

template <class T>
std::optional<std::vector<T>> number_list(Ctx& c, const YAML::Node& map, const std::string& path, const char* key,
                                          bool required) {
  if (!map.IsMap()) return std::nullopt;
  const YAML::Node n = map[key];
  const std::string p = join(path, key);
  if (!n.IsDefined() || n.IsNull()) {
    if (required) c.error(map, p, "required list is missing");
    return std::nullopt;
  }
  if (!n.IsSequence()) {
    c.error(n, p, "expected a list of numbers, e.g. [128, 512, 2048]");
    return std::nullopt;
  }
  std::vector<T> r;
  bool ok = true;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string ip = p + "[" + std::to_string(i) + "]";
    if (!n[i].IsScalar()) {
      c.error(n[i], ip, "expected a number");
      ok = false;
      continue;
    }
    const std::string s = n[i].Scalar();
    errno = 0;
    char* end = nullptr;
    const double d = strtod_decimal(s.c_str(), &end);
    if (s.empty() || !end || *end != '\0' || errno == ERANGE || !std::isfinite(d)) {
      c.error(n[i], ip, "expected a number, got '" + s + "'");
      ok = false;
      continue;
    }
    if constexpr (std::is_integral_v<T>) {
      if (d != std::floor(d) || d < 1 || d > static_cast<double>(kMaxTokens)) {
        c.error(n[i], ip, "expected a whole number of tokens between 1 and " + std::to_string(kMaxTokens) + ", got " + s);
        ok = false;
        continue;
      }
      r.push_back(static_cast<T>(d));
    } else {
      if (d < 0) {
        c.error(n[i], ip, "expected a weight >= 0, got " + s);
        ok = false;
        continue;
      }
      r.push_back(static_cast<T>(d));
    }
  }
  if (ok && r.empty()) c.error(n, p, "the list is empty");
  if (!ok || r.empty()) return std::nullopt;
  return r;
}

/// `prompt_tokens: "lognormal:mean=1K,sigma=0.9"`: the text form, in the grammar of the CLI's --prompt-tokens
/// (profiles/units.hpp parse_length), so a workload reads the same in a file and on a command line.
LengthDistribution length_from_text(Ctx& c, const YAML::Node& n, const std::string& key) {
  try {
    return parse_length(n.Scalar(), key);
  } catch (const InputError& e) {
    std::string msg = e.what();
    if (msg.rfind(key + ": ", 0) == 0) msg = msg.substr(key.size() + 2);
    // The length grammar counts tokens; conversation.turns counts turns with it.
    if (key.ends_with(".turns"))
      for (const auto& [from, to] :
           {std::pair<std::string, std::string>{"a whole number of tokens", "a whole number of turns"},
            {"a token count such as 4096, 32K or 1M", "a number of turns such as 3"}})
        if (const auto at = msg.find(from); at != std::string::npos) msg.replace(at, from.size(), to);
    c.error(n, key, msg);
    return {};
  }
}

/// The length distribution at `key` of `root` (whose own path is `parent`, "" at the top level).
LengthDistribution length_from_yaml(Ctx& c, const YAML::Node& root, const char* key, const std::string& parent = "") {
  LengthDistribution d;
  const std::string path = join(parent, key);
  if (root.IsMap() && root[key] && root[key].IsScalar()) return length_from_text(c, root[key], path);
  if (root.IsMap() && root[key] && root[key].IsSequence()) {  // a list of lengths: the empirical form says how
    c.error(root[key], path,
            "expected a length (512, \"uniform:128-2K\", \"empirical:128@0.5,1K@0.5\") or a mapping with "
            "distribution:, not a list (for several lengths: {distribution: empirical, values: [...]})");
    return d;
  }
  const YAML::Node n = get_map(c, root, parent, key, true);
  if (!n.IsMap()) return d;
  check_keys(c, n, path, workload_keys().at(path));
  const auto kind = get_string(c, n, path, "distribution", true);
  if (!kind) return d;
  if (*kind == "fixed") d.kind = LengthDistribution::Kind::fixed;
  else if (*kind == "uniform") d.kind = LengthDistribution::Kind::uniform;
  else if (*kind == "lognormal") d.kind = LengthDistribution::Kind::lognormal;
  else if (*kind == "empirical") d.kind = LengthDistribution::Kind::empirical;
  else {
    std::string msg = "unknown distribution '" + *kind + "'";
    const std::string s = did_you_mean(*kind, {"fixed", "uniform", "lognormal", "empirical"});
    msg += s.empty() ? "; expected fixed, uniform, lognormal or empirical" : "; did you mean '" + s + "'?";
    c.error(n["distribution"], join(path, "distribution"), msg);
    return d;
  }
  const auto& used = keys_of(d.kind);
  for (const auto& kv : n) {
    if (!kv.first.IsScalar()) continue;
    const std::string k = kv.first.Scalar();
    const auto& all = workload_keys().at(path);
    if (std::find(all.begin(), all.end(), k) == all.end()) continue;  // reported by check_keys
    if (std::find(used.begin(), used.end(), k) == used.end()) {
      std::string expect;
      for (std::size_t i = 1; i < used.size(); ++i) expect += (i > 1 ? ", " : "") + used[i];
      c.error(kv.first, join(path, k), "not used by distribution '" + *kind + "' (it takes: " + expect + ")");
    }
  }
  switch (d.kind) {
    case LengthDistribution::Kind::fixed: set(d.tokens, get_int(c, n, path, "tokens", true, 1, kMaxTokens)); break;
    case LengthDistribution::Kind::uniform:
      set(d.min_tokens, get_int(c, n, path, "min", true, 1, kMaxTokens));
      set(d.max_tokens, get_int(c, n, path, "max", true, 1, kMaxTokens));
      break;
    case LengthDistribution::Kind::lognormal:
      set(d.lognormal_mean_tokens, get_number(c, n, path, "mean", true, 1, static_cast<double>(kMaxTokens)));
      set(d.sigma, get_number(c, n, path, "sigma", true, 0, 10));
      set(d.min_tokens, get_int(c, n, path, "min", false, 1, kMaxTokens));
      set(d.max_tokens, get_int(c, n, path, "max", false, 1, kMaxTokens));
      break;
    case LengthDistribution::Kind::empirical:
      if (auto v = number_list<i64>(c, n, path, "values", true)) d.values = *v;
      if (auto w = number_list<double>(c, n, path, "weights", false)) d.weights = *w;
      break;
  }
  return d;
}

/// `conversation: {turns, users, think_time_s, think_time_distribution, history}` (planner/workload.hpp
/// ConversationSpec).
void conversation_from_yaml(Ctx& c, const YAML::Node& root, ConversationSpec& cv) {
  const YAML::Node n = get_map(c, root, "", "conversation", false);
  check_keys(c, n, "conversation", workload_keys().at("conversation"));
  if (!n.IsMap()) return;
  if (present(n, "turns")) cv.turns = length_from_yaml(c, n, "turns", "conversation");
  set(cv.users, get_int(c, n, "conversation", "users", false, 1, 10'000'000));
  if (auto t = get_number(c, n, "conversation", "think_time_s", false, 0, 1e9)) cv.think_time_s = *t;
  if (auto td = get_string(c, n, "conversation", "think_time_distribution", false)) {
    if (*td == "exponential")
      cv.think_time_exponential = true;
    else if (*td != "fixed")
      c.error(n["think_time_distribution"], "conversation.think_time_distribution",
              "expected fixed or exponential, got '" + *td + "'");
  }
  if (auto h = get_string(c, n, "conversation", "history", false)) {
    if (*h == "repeat")
      cv.history = ConversationSpec::History::repeat;
    else if (*h != "accumulate")
      c.error(n["history"], "conversation.history", "expected accumulate or repeat, got '" + *h + "'");
  }
  if (!present(n, "turns") && !present(n, "users"))
    c.error(n, "conversation", "give turns (conversations started by the arrivals) or users (arrivals dealt to users)");
}

// A planner SpecError (field "prompt_tokens.max") becomes a diagnostic at the deepest existing key.
void planner_check(Ctx& c, const YAML::Node& root, const WorkloadSpec& w) {
  for (const auto& e : workload_problems(w)) error_at_field(c, root, e.field(), e.reason());
}

WorkloadSpec workload_from_yaml(Ctx& c, const YAML::Node& root) {
  WorkloadSpec w;
  if (!root.IsMap()) {
    c.error(root, "", "expected a mapping of workload keys at the top level");
    return w;
  }
  const auto& keys = workload_keys();
  check_keys(c, root, "", keys.at(""));
  if (auto kind = get_string(c, root, "", "kind", true); kind && *kind != "workload")
    c.error(root["kind"], "kind", "expected 'workload', got '" + *kind + "'");
  set(w.name, get_name(c, root));
  set(w.description, get_string(c, root, "", "description", false));

  const YAML::Node arr = get_map(c, root, "", "arrival", true);
  check_keys(c, arr, "arrival", keys.at("arrival"));
  if (auto p = get_string(c, arr, "arrival", "process", true)) {
    if (*p == "poisson") w.arrival.kind = ArrivalProcess::Kind::poisson;
    else if (*p == "gamma") w.arrival.kind = ArrivalProcess::Kind::gamma;
    else if (*p == "fixed_rate" || *p == "fixed") w.arrival.kind = ArrivalProcess::Kind::fixed_rate;
    else if (*p == "closed") w.arrival.kind = ArrivalProcess::Kind::closed;
    else {
      std::string msg = "unknown arrival process '" + *p + "'";
      const std::string s = did_you_mean(*p, {"poisson", "gamma", "fixed_rate", "closed"});
      msg += s.empty() ? "; expected poisson, gamma, fixed_rate or closed" : "; did you mean '" + s + "'?";
      c.error(arr["process"], "arrival.process", msg);
    }
  }
  const bool closed = w.arrival.kind == ArrivalProcess::Kind::closed;
  const bool phased = present(arr, "phases");
  if (closed) {
    // A closed loop (vllm bench serve --max-concurrency N): N clients, requests sent as clients free up.
    set(w.arrival.concurrency, get_int(c, arr, "arrival", "concurrency", true, 1, 10'000'000));
    if (auto t = get_number(c, arr, "arrival", "think_time_s", false, 0, 1e9)) w.arrival.think_time_s = *t;
    if (auto td = get_string(c, arr, "arrival", "think_time_distribution", false)) {
      if (*td == "exponential") w.arrival.think_time_exponential = true;
      else if (*td != "fixed")
        c.error(arr["think_time_distribution"], "arrival.think_time_distribution", "expected fixed or exponential, got '" + *td + "'");
    }
    w.arrival.rate_per_s = std::numeric_limits<double>::infinity();
    for (const char* k : {"rate_per_s", "phases"})
      if (present(arr, k)) c.error(arr[k], std::string("arrival.") + k, "does not apply to a closed loop (the clients pace the requests)");
  } else {
    for (const char* k : {"concurrency", "think_time_s", "think_time_distribution"})
      if (present(arr, k)) c.error(arr[k], std::string("arrival.") + k, "applies to process: closed only");
  }
  if (phased && !closed) {
    // Rate steps: each {rate_per_s, duration_s}; rate_per_s of the arrival is then the busiest phase's.
    const YAML::Node ph = arr["phases"];
    if (!ph.IsSequence() || ph.size() == 0) {
      c.error(ph, "arrival.phases", "expected a list of {rate_per_s, duration_s}");
    } else {
      for (std::size_t i = 0; i < ph.size(); ++i) {
        const std::string path = "arrival.phases[" + std::to_string(i) + "]";
        if (!ph[i].IsMap()) {
          c.error(ph[i], path, "expected a mapping {rate_per_s, duration_s}");
          continue;
        }
        check_keys(c, ph[i], path, keys.at("arrival.phases[]"));
        RatePhase r;
        // 0: an idle gap (a load test's pause); otherwise 1e-9 to 1e9 as every rate (planner validate()).
        set(r.rate_per_s, get_number(c, ph[i], path, "rate_per_s", true, 0, 1e9));
        set(r.duration_s, get_number(c, ph[i], path, "duration_s", true, 1e-9, 1e9));
        w.arrival.phases.push_back(r);
        w.arrival.rate_per_s = std::max(w.arrival.rate_per_s, r.rate_per_s);
      }
    }
    if (present(arr, "rate_per_s")) c.error(arr["rate_per_s"], "arrival.rate_per_s", "give the rate per phase, not beside phases");
  } else if (!closed) {
    set(w.arrival.rate_per_s, get_number(c, arr, "arrival", "rate_per_s", true, 1e-9, 1e9));
  }
  set(w.arrival.cv, get_number(c, arr, "arrival", "cv", w.arrival.kind == ArrivalProcess::Kind::gamma, 1e-6, 100));
  if (w.arrival.kind != ArrivalProcess::Kind::gamma && present(arr, "cv"))
    c.error(arr["cv"], "arrival.cv", "only the gamma process takes cv (Poisson gaps have cv 1, fixed_rate 0)");

  w.prompt = length_from_yaml(c, root, "prompt_tokens");
  w.output = length_from_yaml(c, root, "output_tokens");

  const YAML::Node sp = get_map(c, root, "", "shared_prefix", false);
  check_keys(c, sp, "shared_prefix", keys.at("shared_prefix"));
  if (sp.IsMap()) {
    set(w.shared_prefix.num_groups, get_int(c, sp, "shared_prefix", "groups", true, 1, 1'000'000));
    set(w.shared_prefix.tokens, get_int(c, sp, "shared_prefix", "tokens", true, 1, kMaxTokens));
    set(w.shared_prefix.fraction, get_number(c, sp, "shared_prefix", "fraction", false, 0, 1));
  }
  conversation_from_yaml(c, root, w.conversation);
  const YAML::Node slo = get_map(c, root, "", "slo", false);
  check_keys(c, slo, "slo", keys.at("slo"));
  if (slo.IsMap()) {
    if (auto v = get_number(c, slo, "slo", "ttft_s", false, 1e-9, 1e9)) w.slo.ttft_s = *v;
    if (auto v = get_number(c, slo, "slo", "tpot_s", false, 1e-9, 1e9)) w.slo.tpot_s = *v;
  }
  if (c.diags.empty()) planner_check(c, root, w);
  return w;
}
}  // namespace

WorkloadSpec parse_workload(const std::string& text, const std::string& file) {
  return parse_with(text, file, workload_from_yaml);
}

WorkloadSpec load_workload_file(const std::string& path) {
  return load_with(path, parse_workload);
}

}  // namespace kvcap::profiles
