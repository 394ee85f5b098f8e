#!/bin/sh
# Regenerates the dashboard screenshots in docs/img/ (linked from the README) at 1280x720 and 1920x1080:
# a model that does not fit, a comparison against a pinned baseline, what-ifs against it, the sizing view and a
# simulation.
# Usage: scripts/screenshots.sh [BUILD_DIR]   (default: build; needs kvcap-gui, offscreen: no display)
set -eu
build=${1:-build}
gui="$build/gui/kvcap-gui"
out=docs/img
[ -x "$gui" ] || { echo "screenshots: $gui not found; build with the GUI first (scripts/build.sh)" >&2; exit 1; }
for size in 1280x720 1920x1080; do
  "$gui" --models llama-3.1-8b,llama-3.1-70b,deepseek-v3 --gpu h100-sxm \
         --screenshot "$out/dashboard-not-fit-$size.png" --size "$size" 2>/dev/null
  "$gui" --models llama-3.1-70b,qwen3-32b,mixtral-8x7b --gpu h200 --tensor-parallel-size 4 \
         --compare-with "--kv-cache-dtype fp8" --screenshot "$out/dashboard-compare-$size.png" --size "$size" 2>/dev/null
  "$gui" --models llama-3.1-8b,qwen3-8b --gpu h200 \
         --compare-with "--kv-eviction streaming:sink=4,window=4092 --kv-cache-dtype fp8" \
         --screenshot "$out/dashboard-what-if-$size.png" --size "$size" 2>/dev/null
  "$gui" --view sizing --screenshot "$out/dashboard-sizing-$size.png" --size "$size" 2>/dev/null
  "$gui" --models llama-3.1-8b --gpu h100-sxm \
         --simulate rate=6,prompt=4K,output=512,duration=120s --simulate rate=12,prompt=4K,output=512,duration=120s \
         --screenshot "$out/dashboard-simulation-$size.png" --size "$size" 2>/dev/null
done
