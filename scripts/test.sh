#!/usr/bin/env bash
# Installs what is missing, builds everything with warnings as errors, and runs every test (ctest).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh" --gui
export KVCAP_WERROR=1
"$root/scripts/build.sh" -DKVCAP_WITH_GUI=ON -DKVCAP_BUILD_TESTS=ON
build=${KVCAP_BUILD_DIR:-$root/build}
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
# The dashboard is part of the product: a run in which no GUI test was built has not tested it.
gui_tests=$(ctest --test-dir "$build" -N -R '^gui\.' | sed -n 's/^Total Tests: //p')
if [[ "${gui_tests:-0}" -eq 0 ]]; then
  echo "test.sh: no GUI test was built (gui.*): the dashboard went untested" >&2
  exit 1
fi
echo "test.sh: ${gui_tests} GUI tests ran"
