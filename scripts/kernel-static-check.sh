#!/usr/bin/env bash
# Static checks of the compiled CUDA kernels, with whatever CUDA toolkit is present (no GPU needed):
#   - no kernel uses local memory: 0 bytes of stack frame and of spill stores/loads (ptxas --resource-usage);
#   - registers per thread and static shared memory per block within what each kernel's launch configuration
#     assumes (the table below: the resident blocks per SM it is designed for);
#   - 128-bit global loads in the stream kernels and the 16-bit decode kernels (ld.global.nc.v4 in the PTX, and
#     LDG.E.128 in the SASS when cuobjdump is installed);
#   - fp8 e4m3 KV widened by the hardware conversion on sm_89+ (cvt.rn.f16x2.e4m3x2 in the PTX; F2FP in the SASS).
# A failing property prints "FAIL <kernel>: <property>: <measured value>"; each passing one "ok ...".
#
#   scripts/kernel-static-check.sh [--arch 90] [--nvcc PATH] [--build DIR] [--files a.cu ...]
#
# --files checks other sources against the same rules (the test that proves the checks fail on a spilling kernel and
# on scalar loads: tests/kernels/static_check_bad.cu). --build is accepted for scripts/gpu-check.sh and unused.
# Exit status: 0 all properties hold, 1 a property fails, 2 usage error or no nvcc.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
arch=90
nvcc=
files=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --arch) arch=${2:?--arch needs a value}; shift ;;
    --nvcc) nvcc=${2:?--nvcc needs a value}; shift ;;
    --build) shift ;;
    --files) shift; while [[ $# -gt 0 && $1 != --* ]]; do files+=("$1"); shift; done; continue ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "kernel-static-check: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[[ $arch =~ ^[0-9]+$ ]] || { echo "kernel-static-check: --arch expects a number such as 90 (got '$arch')" >&2; exit 2; }
if [[ -z $nvcc ]]; then
  nvcc=$(command -v nvcc || true)
  [[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
fi
[[ -n $nvcc && -x $nvcc ]] || { echo "kernel-static-check: nvcc not found (--nvcc PATH)" >&2; exit 2; }
ptxas=$(dirname "$nvcc")/ptxas
[[ -x $ptxas ]] || { echo "kernel-static-check: no ptxas beside $nvcc" >&2; exit 2; }
cuobjdump=$(dirname "$nvcc")/cuobjdump
[[ -x $cuobjdump ]] || cuobjdump=
[[ ${#files[@]} -eq 0 ]] && files=("$root"/kernels/src/cuda/*.cu)

# Kernel (demangled name, extended regex) | max registers per thread | max static shared memory per block (bytes) |
# the launch configuration that sets them. The first matching row applies; a kernel with no row fails.
limits=$(cat <<'EOF'
decode_team_kernel;128;58368;128 threads, 4 resident blocks per SM (decode_resident_blocks sizes the split by it): 16 warps
decode_kernel<;128;0;MLA tile kernel, 128 threads, 4 blocks per SM; its shared memory is dynamic (DecodeSmem)
decode_merge_kernel;64;16;128 threads, many blocks: at least 8 blocks per SM (static: the block reduction's 4 floats; the chunk weights are dynamic, at most 32 KiB)
stream_(read|copy)_kernel;32;0;256 threads, 8 blocks per SM: full occupancy (2048 threads x 32 registers)
fill_valid_kernel;32;0;256 threads, full occupancy
gemm_mma_kernel;128;81920;256 threads, 2 blocks per SM (128 x 128 tile, two cp.async stages)
prefill_tc_kernel;255;0;128 threads, 2 blocks per SM (87 KiB of dynamic shared memory each at d 128)
bad_;32;0;the deliberately bad kernels of tests/kernels/static_check_bad.cu
EOF
)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(-std=c++17 --expt-relaxed-constexpr -I"$root/kernels/include" -I"$root/kernels/src")
fails=0
oks=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ok() { echo "ok $*"; oks=$((oks + 1)); }
demangle() { if command -v c++filt >/dev/null; then c++filt; else cat; fi; }

for f in "${files[@]}"; do
  base=$(basename "$f" .cu)
  # PTX first, then ptxas on that PTX: the resource report, the PTX and the SASS describe the same compilation (the
  # mangled names of anonymous-namespace kernels differ between separate nvcc runs).
  if ! "$nvcc" -arch="sm_$arch" "${flags[@]}" -ptx "$f" -o "$tmp/$base.ptx" >"$tmp/$base.ru" 2>&1 ||
     ! "$ptxas" -arch="sm_$arch" -v "$tmp/$base.ptx" -o "$tmp/$base.cubin" >>"$tmp/$base.ru" 2>&1; then
    cat "$tmp/$base.ru"
    fail "$base.cu: does not compile for sm_$arch"
    continue
  fi
  # ptxas: "Function properties for NAME", "N bytes stack frame, N bytes spill stores, N bytes spill loads",
  # "Used N registers, ..., N bytes smem, ...". One line per kernel: mangled|stack|spill_st|spill_ld|regs|smem.
  awk '
    /Function properties for / { sub(/.*Function properties for /, ""); name = $0; next }
    /bytes stack frame/ { match($0, /[0-9]+ bytes stack frame/); st = substr($0, RSTART, RLENGTH) + 0
                          match($0, /[0-9]+ bytes spill stores/); ss = substr($0, RSTART, RLENGTH) + 0
                          match($0, /[0-9]+ bytes spill loads/); sl = substr($0, RSTART, RLENGTH) + 0; next }
    /Used [0-9]+ registers/ && name != "" {
      match($0, /Used [0-9]+ registers/); r = substr($0, RSTART + 5, RLENGTH - 15) + 0
      sm = 0; if (match($0, /[0-9]+ bytes smem/)) sm = substr($0, RSTART, RLENGTH) + 0
      print name "|" st "|" ss "|" sl "|" r "|" sm; name = "" }
  ' "$tmp/$base.ru" >"$tmp/$base.kernels"
  [[ -s $tmp/$base.kernels ]] || { fail "$base.cu: ptxas reported no kernels"; continue; }
  # PTX per entry: which kernels hold 128-bit global loads and hardware fp8 conversions.
  awk '
    /^(\.visible |\.weak )?\.entry / { sub(/^(\.visible |\.weak )?\.entry /, ""); sub(/\(.*/, ""); cur = $0; v4[cur] = 0; cvt[cur] = 0; next }
    cur != "" && /ld\.global(\.nc)?\.v4\./ { v4[cur]++ }
    cur != "" && /cvt\.rn\.f16x2\.e4m3x2/ { cvt[cur]++ }
    END { for (k in v4) print k "|" v4[k] "|" cvt[k] }
  ' "$tmp/$base.ptx" >"$tmp/$base.ptxinfo"
  sass=
  if [[ -n $cuobjdump ]]; then
    "$cuobjdump" -sass "$tmp/$base.cubin" >"$tmp/$base.sass" 2>/dev/null && sass=$tmp/$base.sass
  fi

  while IFS='|' read -r mangled stack spill_st spill_ld regs smem; do
    name=$(echo "$mangled" | demangle)
    short=$(echo "$name" | sed -E 's/\(kvcap::kernels::KvDtype\)0/bf16/g; s/\(kvcap::kernels::KvDtype\)1/fp16/g; s/\(kvcap::kernels::KvDtype\)2/fp8/g; s/\(bool\)1/true/g; s/kvcap::kernels::(\(anonymous namespace\)::)?//g; s/\(.*$//; s/^void //')
    if [[ $stack -ne 0 || $spill_st -ne 0 || $spill_ld -ne 0 ]]; then
      fail "$short: local memory: $stack bytes stack frame, $spill_st bytes spill stores, $spill_ld bytes spill loads (expected 0)"
    else
      ok "$short: no local memory"
    fi
    row=
    while IFS=';' read -r re maxr maxs why; do
      [[ -z $re ]] && continue
      if [[ $name =~ $re ]]; then row="$maxr;$maxs;$why"; break; fi
    done <<<"$limits"
    if [[ -z $row ]]; then
      fail "$short: no launch-configuration row in scripts/kernel-static-check.sh"
    else
      IFS=';' read -r maxr maxs why <<<"$row"
      if [[ $regs -gt $maxr ]]; then fail "$short: $regs registers per thread > $maxr ($why)"; else ok "$short: $regs registers <= $maxr"; fi
      if [[ $smem -gt $maxs ]]; then fail "$short: $smem bytes static shared memory > $maxs ($why)"; else ok "$short: $smem bytes static shared memory <= $maxs"; fi
    fi
    ptxline=$(grep -F "$mangled|" "$tmp/$base.ptxinfo" | head -n 1)
    IFS='|' read -r _ nv4 ncvt <<<"$ptxline"
    # 128-bit loads: the stream kernels, the MLA tile kernel, and the team kernels whose lanes load 16 bytes
    # (16-bit KV with at most 4 query heads per block; fp8 and 8-head blocks load 8 bytes per lane by design).
    want_v4=0
    [[ $short =~ ^stream_(read|copy)_kernel|^decode_kernel\<|^bad_scalar ]] && want_v4=1
    [[ $short =~ ^decode_team_kernel\<[0-9]+,\ [124],\ (bf16|fp16)\> ]] && want_v4=1
    if [[ $want_v4 -eq 1 ]]; then
      if [[ ${nv4:-0} -gt 0 ]]; then ok "$short: ${nv4} 128-bit global loads (PTX)"; else fail "$short: no 128-bit global loads (ld.global.v4) in the PTX"; fi
      if [[ -n $sass ]]; then
        n=$(awk -v k="$mangled" '/Function : / { on = index($0, k) > 0 } on && /LDG\.E\.128/ { c++ } END { print c + 0 }' "$sass")
        if [[ $n -gt 0 ]]; then ok "$short: $n LDG.E.128 (SASS)"; else fail "$short: no LDG.E.128 in the SASS"; fi
      fi
    fi
    if [[ $arch -ge 89 && $short =~ fp8 ]]; then
      if [[ ${ncvt:-0} -gt 0 ]]; then ok "$short: fp8 widened by cvt.rn.f16x2.e4m3x2 (PTX)"; else fail "$short: fp8 widened in software (no cvt.rn.f16x2.e4m3x2 in the PTX)"; fi
      if [[ -n $sass ]]; then
        n=$(awk -v k="$mangled" '/Function : / { on = index($0, k) > 0 } on && /F2FP/ { c++ } END { print c + 0 }' "$sass")
        if [[ $n -gt 0 ]]; then ok "$short: $n F2FP (SASS)"; else fail "$short: no F2FP conversion in the SASS"; fi
      fi
    fi
  done <"$tmp/$base.kernels"
done

echo "kernel-static-check: sm_$arch, ${#files[@]} source(s), $oks properties hold, $fails fail$([[ -z $cuobjdump ]] && echo ' (no cuobjdump: PTX checks only)')"
[[ $fails -eq 0 ]]
