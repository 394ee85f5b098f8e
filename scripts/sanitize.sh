#!/usr/bin/env bash
# Builds kvcap and its tests with AddressSanitizer + UndefinedBehaviorSanitizer (KVCAP_SANITIZE) into their
# own folder and runs every test under them: any sanitizer report aborts the test (-fno-sanitize-recover).
# Usage: scripts/sanitize.sh [extra cmake arguments]   (folder: $KVCAP_SANITIZE_DIR, default build-sanitize)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KVCAP_SANITIZE_DIR:-$root/build-sanitize}
# MPI off: Open MPI's own allocations at MPI_Init read as leaks to LeakSanitizer; the main build tests --mpi.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVCAP_SANITIZE=address,undefined \
  -DKVCAP_BUILD_TESTS=ON -DKVCAP_WITH_CUDA=OFF -DKVCAP_WITH_GUI=OFF -DKVCAP_WITH_MPI=OFF -DKVCAP_BUILD_BENCH=OFF "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
# detect_leaks: LeakSanitizer is part of ASan on x86-64 Linux; halt_on_error: fail at the first report.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
