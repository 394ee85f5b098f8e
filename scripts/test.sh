#!/usr/bin/env bash
# Installs what is missing, builds everything with warnings as errors, and runs every test (ctest).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh" --gui
export KVCAP_WERROR=1
"$root/scripts/build.sh" -DKVCAP_BUILD_TESTS=ON
ctest --test-dir "${KVCAP_BUILD_DIR:-$root/build}" --output-on-failure -j "$(nproc)"
