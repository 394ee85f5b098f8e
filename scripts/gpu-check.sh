#!/usr/bin/env bash
# The GPU step in one command, for a machine with an NVIDIA GPU and the CUDA toolkit (nvcc, cmake; no Debian
# packages needed): builds kernels/ standalone for this GPU's architecture, checks the compiled kernels
# (scripts/kernel-static-check.sh), runs every self-test (CPU twins vs naive references, CUDA kernels vs the twins),
# runs the calibration sweep, writes calibration.yaml, and prints the report: achieved vs datasheet bandwidth and
# FLOP/s, per-kernel efficiency and the verdict against the targets of docs/kernels.md; then times vLLM's reload of
# offloaded KV blocks beside kvcap's host-link model (kvcap-reload-check).
#
#   scripts/gpu-check.sh [--full] [--device N] [--gpu PROFILE] [--out DIR]
#
#   --full         the long sweep (default: quick, about a minute on an H100)
#   --device N     CUDA device ordinal (default 0)
#   --gpu PROFILE  kvcap GPU profile whose datasheet figures to judge against (default: from the device's name)
#   --out DIR      where calibration.yaml, report.txt and the logs go (default: gpu-check/ in the repository)
#   (environment) KVCAP_SOURCE_COMMIT  the commit to record in calibration.yaml when this tree is a copy whose git
#                  metadata is missing or stale (default: git rev-parse, "+dirty" with local changes)
#
# Exit status: 0 when the self-tests pass and calibration.yaml is written (the report says which performance
# targets were met); 1 when the build, a static check, a self-test or the calibration fails (the log names the
# kernel, the shape and the first mismatching element); 2 for a usage error or a missing tool; 77 when there is
# no CUDA device ("no CUDA device: nothing to measure"), so CTest and CI treat it as skipped.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=--quick
ordinal=0
profile=
out=$root/gpu-check
while [[ $# -gt 0 ]]; do
  case $1 in
    --full) mode=--full ;;
    --quick) mode=--quick ;;
    --device) ordinal=${2:?--device needs a value}; shift ;;
    --gpu) profile=${2:?--gpu needs a value}; shift ;;
    --out) out=${2:?--out needs a value}; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $ordinal =~ ^[0-9]+$ ]] || { echo "gpu-check: --device expects a device ordinal (0, 1, ...), got '$ordinal'" >&2; exit 2; }

# 1. Is there a GPU at all? nvidia-smi comes with the driver; without it (or with no GPU listed) there is nothing to do.
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "gpu-check: no CUDA device: nothing to measure"
  exit 77
fi
gpu_line=$(nvidia-smi -L | sed -n "$((ordinal + 1))p")
if [[ -z $gpu_line ]]; then
  echo "gpu-check: no CUDA device $ordinal: nothing to measure ($(nvidia-smi -L | wc -l) device(s) listed)"
  exit 77
fi
name=$(nvidia-smi --query-gpu=name --format=csv,noheader -i "$ordinal" | head -n 1)
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i "$ordinal" 2>/dev/null | head -n 1 | tr -d ' .')
[[ $cc =~ ^[0-9]+$ ]] || cc=90

for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do [[ -x $d/nvcc ]] && PATH=$PATH:$d; done
command -v nvcc >/dev/null || { echo "gpu-check: nvcc not found (install the CUDA toolkit, or put its bin/ on PATH)" >&2; exit 2; }
command -v cmake >/dev/null || { echo "gpu-check: cmake not found (3.24 or newer; the CUDA toolkit images carry it)" >&2; exit 2; }

# 2. The datasheet figures from kvcap's own GPU profile: by --gpu, else by the device's name.
if [[ -z $profile ]]; then
  case $name in
    *GB200*) profile=gb200 ;;
    *B200*) profile=b200 ;;
    *H200*) profile=h200 ;;
    *H100*NVL*) profile=h100-nvl ;;
    *H100*PCIe*) profile=h100-pcie ;;
    *H100*) profile=h100-sxm ;;
    *A100*40GB*) profile=a100-40gb ;;
    *A100*) profile=a100-80gb ;;
    *L40S*) profile=l40s ;;
    *L4) profile=l4 ;;
    *4090*) profile=rtx-4090 ;;
  esac
fi
datasheet=()
if [[ -n $profile ]]; then
  yaml=$root/profiles/gpus/$profile.yaml
  [[ -f $yaml ]] || { echo "gpu-check: no GPU profile '$profile' (profiles/gpus/$profile.yaml)" >&2; exit 2; }
  # memory.bandwidth_bytes_per_s and compute.bf16_dense_flops: the first such key inside each block.
  bw=$(awk '/^memory:/{m=1;next} /^[a-z]/{m=0} m && $1=="bandwidth_bytes_per_s:"{print $2; exit}' "$yaml")
  fl=$(awk '/^compute:/{m=1;next} /^[a-z]/{m=0} m && $1=="bf16_dense_flops:"{print $2; exit}' "$yaml")
  [[ -n $bw ]] && datasheet+=(--datasheet-bandwidth "$bw")
  [[ -n $fl ]] && datasheet+=(--datasheet-bf16-flops "$fl")
  datasheet+=(--datasheet-gpu "$profile")
fi

mkdir -p "$out" || { echo "gpu-check: cannot create '$out'" >&2; exit 2; }
build=$out/build
echo "gpu-check: $gpu_line (sm_$cc), datasheet: ${profile:-none}, results in $out"

# 3. Build kernels/ alone: the CUDA toolkit and the C++ standard library, nothing else.
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if ! { cmake -S "$root/kernels" -B "$build" "${generator[@]}" -DKVCAP_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_CUDA_ARCHITECTURES="$cc" -DKVCAP_SOURCE_COMMIT="${KVCAP_SOURCE_COMMIT:-}" \
         && cmake --build "$build" -j "$(nproc)"; } >"$out/build.log" 2>&1; then
  tail -n 30 "$out/build.log" >&2
  echo "gpu-check: FAILED: the kernels did not build (whole log: $out/build.log)" >&2
  exit 1
fi
kk=$build/kvcap-kernels
status=0

# 4. Static checks of the compiled kernels (spills, registers and shared memory, vector loads, fp8 conversions).
if "$root/scripts/kernel-static-check.sh" --build "$build" --arch "$cc" >"$out/static-check.txt" 2>&1; then
  echo "gpu-check: static checks passed ($(grep -c '^ok ' "$out/static-check.txt") properties; $out/static-check.txt)"
else
  grep -v '^ok ' "$out/static-check.txt" >&2
  echo "gpu-check: FAILED: static checks of the compiled kernels ($out/static-check.txt)" >&2
  status=1
fi

# 5. Every self-test: CPU twins vs naive references, then each CUDA kernel vs its twin over randomised shapes.
"$kk" test >"$out/selftest.log" 2>&1
rc=$?
grep -E '^(cpu|gpu): ' "$out/selftest.log"
if [[ $rc -ne 0 ]]; then
  grep -E '^FAIL ' "$out/selftest.log" | head -n 20 >&2
  echo "gpu-check: FAILED: self-tests (each FAIL line names the kernel, shape and error; $out/selftest.log)" >&2
  status=1
fi

# 6. The calibration: it runs the self-tests again on this device and records them, sweeps, fits, and reports.
if ! "$kk" calibrate --device "cuda:$ordinal" "$mode" --out "$out/calibration.yaml" "${datasheet[@]}" \
       >"$out/report.txt" 2>"$out/calibrate.log"; then
  tail -n 20 "$out/calibrate.log" >&2
  status=1
fi
cat "$out/report.txt"

# 7. vLLM's reload of offloaded KV blocks (one copy per block and layer, scattered) against kvcap's host-link model.
h2d=$(awk '$1=="host_to_device:"{gsub(/[{},]/," "); for(i=1;i<=NF;i++){if($i=="per_copy_s:")p=$(i+1); if($i=="bandwidth_bytes_per_s:")b=$(i+1)} print p, b; exit}' "$out/calibration.yaml" 2>/dev/null)
if [[ $status -eq 0 && -x $build/kvcap-reload-check && -n $h2d ]]; then
  # shellcheck disable=SC2086  # two numbers
  if "$build/kvcap-reload-check" $h2d >"$out/reload-check.csv" 2>&1; then
    echo "reload check (measured vs model, $out/reload-check.csv):"
    column -s, -t <"$out/reload-check.csv" 2>/dev/null || cat "$out/reload-check.csv"
  else
    cat "$out/reload-check.csv" >&2
    echo "gpu-check: FAILED: the reload check" >&2
    status=1
  fi
fi
if [[ $status -eq 0 ]]; then
  echo "gpu-check: wrote $out/calibration.yaml; use it with: kvcap plan ... --gpu ${profile:-<profile>} --calibration $out/calibration.yaml"
else
  echo "gpu-check: FAILED (see above); do not use $out/calibration.yaml" >&2
fi
exit $status
