#pragma once
// The deployment flags, vLLM's names and semantics (--tensor-parallel-size, --max-model-len, --kv-cache-dtype, ...),
// read from their text as typed: one reader for every front end (the CLI's plan, compare, simulate, sweep and
// check, and the dashboard's command line), so a value means the same everywhere ("1.5K", "32.06GiB").
#include <map>
#include <string>

#include "kvcap/planner/deployment.hpp"
#include "kvcap/planner/dtype.hpp"

namespace kvcap::profiles {

/// Flag name without its dashes -> the text given ("tensor-parallel-size" -> "4"). A switch
/// (enable-expert-parallel, disable-hybrid-kv-cache-manager, hybrid-chunked-local) is on when present.
using FlagTexts = std::map<std::string, std::string>;

/// The deployment the flags describe; a flag that is absent keeps `base`'s value. InputError (units.hpp) naming
/// the flag ("--block-size: ...") for a malformed or contradictory value.
Deployment deployment_from_flags(const FlagTexts& flags, Deployment base = {});

/// A dtype flag's value among those `accept` takes; InputError listing them otherwise.
DType parse_dtype_text(const std::string& text, const std::string& what, bool (*accept)(const DTypeInfo&));

/// The most GPUs any flag may name (a bound on work, far above any real cluster).
inline constexpr std::int64_t kMaxGpuCount = 100000;

}  // namespace kvcap::profiles
