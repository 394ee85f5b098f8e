#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang + ASan + UBSan) and runs each for a bounded time over its
# seed corpus (tests/fuzz/corpus/<target>/). Fails when a target finds a crash, a sanitizer report, a leak
# or a timeout; the reproducer is left in $KVCAP_FUZZ_DIR/artifacts/. New corpus entries go to a scratch
# folder, so the checked-in seeds stay as they are.
# Usage: scripts/fuzz.sh [seconds per target, default 60] [target...]
# Needs clang-14 and libclang-rt-14-dev (scripts/install-deps.sh --fuzz).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(fuzz_model_yaml fuzz_hf_config fuzz_requirements fuzz_calibration fuzz_trace fuzz_escape)
build=${KVCAP_FUZZ_DIR:-$root/build-fuzz}
cxx=${KVCAP_FUZZ_CXX:-$(command -v clang++-14 || command -v clang++ || true)}
[[ -n "$cxx" ]] || { echo "fuzz: clang++ not found (scripts/install-deps.sh --fuzz)" >&2; exit 1; }
cmake -S "$root/tests/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
mkdir -p "$build/artifacts"
status=0
for t in "${targets[@]}"; do
  scratch="$build/corpus-$t"
  mkdir -p "$scratch"
  echo "fuzz: $t for ${seconds}s (seeds: tests/fuzz/corpus/$t)"
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: a memory blow-up is a failure too.
  if ! "$build/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$build/artifacts/$t-" -print_final_stats=1 \
        "$scratch" "$root/tests/fuzz/corpus/$t" > "$build/$t.log" 2>&1; then
    status=1
    echo "fuzz: $t FAILED; last lines of $build/$t.log:" >&2
    tail -40 "$build/$t.log" >&2
    ls "$build/artifacts" >&2
  else
    grep -E "^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)" "$build/$t.log" | tr '\n' ' '
    echo
  fi
done
exit $status
