#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install what is missing, build, and print the
# concurrency-versus-context table for the built-in LLaMA, Mistral and DeepSeek deployments, then the
# full memory plan of one of them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh" --gui
log=$(mktemp)
if ! "$root/scripts/build.sh" -DKVCAP_WITH_GUI=ON -DKVCAP_BUILD_TESTS=OFF -DKVCAP_BUILD_BENCH=OFF >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "quickstart: the build failed (whole log: $log)" >&2
  exit 1
fi
rm -f "$log"
kvcap="${KVCAP_BUILD_DIR:-$root/build}/cli/kvcap"
echo
"$kvcap" compare
echo
"$kvcap" plan --model llama-3.1-70b --gpu h100-sxm --tensor-parallel-size 4 --max-model-len 32K --contexts 4K,32K,128K
echo
echo "kvcap is at $kvcap  (try: $kvcap --help)"
gui="${KVCAP_BUILD_DIR:-$root/build}/gui/kvcap-gui"
echo "the dashboard is at $gui  (without a display: $gui --screenshot dashboard.png, or xvfb-run $gui)"
exit 0
