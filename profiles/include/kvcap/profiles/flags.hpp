#pragma once
// The deployment flags, vLLM's names and semantics (--tensor-parallel-size, --max-model-len, --kv-cache-dtype, ...),
// read from their text as typed: one reader for every front end (the CLI's plan, compare, simulate, sweep and
// check, and the dashboard's command line), so a value means the same everywhere ("1.5K", "32.06GiB").
#include <map>
#include <string>
#include <vector>

#include "kvcap/planner/deployment.hpp"
#include "kvcap/planner/dtype.hpp"

namespace kvcap::profiles {

/// Flag name without its dashes -> the text given ("tensor-parallel-size" -> "4"). A switch
/// (enable-expert-parallel, disable-hybrid-kv-cache-manager, hybrid-chunked-local) is on when present.
using FlagTexts = std::map<std::string, std::string>;

/// The deployment the flags describe; a flag that is absent keeps `base`'s value. InputError (units.hpp) naming
/// the flag ("--block-size: ...") for a malformed or contradictory value.
Deployment deployment_from_flags(const FlagTexts& flags, Deployment base = {});

/// The flags deployment_from_flags reads (names without dashes), and which of them are switches (no value).
/// Front ends that take a free-form flag string (the dashboard's --compare-with) refuse any other name.
bool is_deployment_flag(const std::string& name);
bool is_deployment_switch(const std::string& name);
/// The flags that take a value, and the switches, in the reader's table.
std::vector<std::string> deployment_value_flags();
std::vector<std::string> deployment_switches();

/// The flags of a free-form line as typed ("--kv-cache-dtype fp8 --max-model-len=32K --enable-expert-parallel"), words
/// split at white space: a deployment flag, or one of `extra` (taking a value, such as "gpu"), each once. InputError
/// for a word that is not a flag, an unknown flag, a switch given a value, a flag without one, a flag given twice. One
/// reader for the dashboard's --compare-with and the flags of kvcap compare's --deploy.
FlagTexts flag_texts_from_line(const std::string& line, const std::vector<std::string>& extra = {});

/// A dtype flag's value among those `accept` takes; InputError listing them otherwise.
DType parse_dtype_text(const std::string& text, const std::string& what, bool (*accept)(const DTypeInfo&));

/// The most GPUs any flag may name (a bound on work, far above any real cluster).
inline constexpr std::int64_t kMaxGpuCount = 100000;

}  // namespace kvcap::profiles
