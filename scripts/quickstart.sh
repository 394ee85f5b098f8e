#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install what is missing, build, and print the
# concurrency-versus-context table for the built-in LLaMA, Mistral and DeepSeek deployments, then the
# full memory plan of one of them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh" --gui
"$root/scripts/build.sh" -DKVCAP_BUILD_TESTS=OFF -DKVCAP_BUILD_BENCH=OFF >/dev/null
kvcap="${KVCAP_BUILD_DIR:-$root/build}/cli/kvcap"
echo
"$kvcap" compare
echo
"$kvcap" plan --model llama-3.1-70b --gpu h100-sxm --tensor-parallel-size 4 --max-model-len 32K --contexts 4K,32K,128K
echo
echo "kvcap is at $kvcap  (try: $kvcap --help)"
gui="${KVCAP_BUILD_DIR:-$root/build}/gui/kvcap-gui"
[[ -x "$gui" ]] && echo "the dashboard is at $gui  (without a display: $gui --screenshot dashboard.png)"
exit 0
