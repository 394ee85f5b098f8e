#!/usr/bin/env bash
# The code habits CI checks (issue 12):
#   1. clang-format (.clang-format): every C++ line added or changed since the check began (commit
#      $KVCAP_FORMAT_BASE) is formatted; older code is reformatted when it is next touched.
#   2. clang-tidy (.clang-tidy, cli/.clang-tidy): bug-prone and performance checks and the function-size budgets,
#      over every translation unit of the libraries, the CLI and the GUI, with no finding.
# Usage: scripts/lint.sh [format|tidy|all]   (needs a configured build for tidy: $KVCAP_BUILD_DIR, default build/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
what=${1:-all}
base=${KVCAP_FORMAT_BASE:-6706a88}

format_check() {
  if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
    # A shallow clone: check what its newest commit changed (at least that much, never nothing unsaid).
    echo "lint: format base $base is not in this clone's history (a shallow clone?); checking HEAD's own change" >&2
    if ! base=$(git rev-parse -q --verify HEAD~1); then
      echo "lint: a clone of one commit has no change to check: clang-format check not run" >&2
      return 0
    fi
  fi
  local diff
  diff=$(git diff -U0 --no-color "$base" -- '*.cpp' '*.hpp' '*.h' '*.cu' | clang-format-diff -p1 -style=file || true)
  if [[ -n "$diff" ]]; then
    echo "$diff"
    echo "lint: lines changed since $base are not clang-formatted (above: the change clang-format wants);" >&2
    echo "      apply it with: git diff -U0 $base | clang-format-diff -p1 -style=file -i" >&2
    return 1
  fi
  echo "lint: clang-format: every line changed since $base is formatted"
}

tidy_check() {
  local build=${KVCAP_BUILD_DIR:-$root/build}
  if [[ ! -f "$build/compile_commands.json" ]]; then
    echo "lint: $build/compile_commands.json missing: configure the build first (scripts/build.sh)" >&2
    return 1
  fi
  # The project's own sources (not tests, which Catch2's macros make noisy, nor CUDA, which clang-tidy 14 cannot
  # parse with this nvcc), each once.
  mapfile -t files < <(python3 - "$build/compile_commands.json" <<'PY'
import json, sys, os
seen = set()
for e in json.load(open(sys.argv[1])):
    f = os.path.normpath(os.path.join(e["directory"], e["file"]))
    rel = os.path.relpath(f, os.getcwd())
    if rel.startswith(("planner/", "profiles/", "simulator/", "cli/", "gui/", "kernels/")) and rel.endswith(".cpp") \
            and "autogen" not in rel and rel not in seen:
        seen.add(rel)
        print(rel)
PY
)
  echo "lint: clang-tidy over ${#files[@]} files"
  local out rc=0
  out=$(printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p "$build" --quiet 2>&1) || rc=$?
  if [[ $rc -ne 0 ]] || grep -qE "(warning|error):" <<<"$out"; then
    grep -E -A3 "(warning|error):" <<<"$out" || echo "$out"
    echo "lint: clang-tidy found the problems above (exit $rc)" >&2
    return 1
  fi
  echo "lint: clang-tidy: no finding"
}

case $what in
  format) format_check ;;
  tidy) tidy_check ;;
  all) format_check && tidy_check ;;
  *) echo "usage: scripts/lint.sh [format|tidy|all]" >&2; exit 2 ;;
esac
