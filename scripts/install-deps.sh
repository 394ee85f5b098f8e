#!/usr/bin/env bash
# Installs the Debian 12 packages kvcap needs, only those missing; as root, or through sudo.
# Usage: scripts/install-deps.sh [--gui] [--xvfb] [--fuzz] [--lint]
#   --gui: Qt 6 Widgets/Charts/Svg for kvcap-gui and `kvcap plot` (their tests run offscreen, no X server).
#          Qt6Charts' CMake package requires Qt6OpenGL (libqt6opengl6-dev), which qt6-charts-dev does not pull in.
#   --xvfb: a virtual X server, to look at kvcap-gui on a machine without a display (xvfb-run build/gui/kvcap-gui)
#   --fuzz: clang and libFuzzer for scripts/fuzz.sh
#   --lint: clang-format and clang-tidy for scripts/lint.sh
set -euo pipefail
# Open MPI: `kvcap size --verify --mpi` under mpirun (issue 18), and the test that compares it with one process.
pkgs=(cmake ninja-build g++ pkg-config libyaml-cpp-dev libboost-program-options-dev catch2 nlohmann-json3-dev python3
  libopenmpi-dev openmpi-bin)
if [[ " $* " == *" --fuzz "* ]]; then
  pkgs+=(clang-14 libclang-rt-14-dev)
fi
if [[ " $* " == *" --lint "* ]]; then
  pkgs+=(clang-format clang-tidy)
fi
if [[ " $* " == *" --gui "* ]]; then
  pkgs+=(qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev)
fi
if [[ " $* " == *" --xvfb "* ]]; then
  pkgs+=(xvfb xauth)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
as_root=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  as_root=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
