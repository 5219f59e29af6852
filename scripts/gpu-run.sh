#!/usr/bin/env bash
# Runs on the GPU machine, from a bundle made by scripts/gpu-bundle.sh (or from a build dir):
# device info, the GPU test suite, compute-sanitizer (memcheck, racecheck, synccheck) over
# it, the unit suite with the CUDA backend available, the benchmarks, and a short table.
# usage: gpu-run.sh [DIR] [--quick]   (results also written under $OUT when it is set)
set -uo pipefail
DIR=${1:-$(dirname "$0")}; QUICK=${2:-}
cd "$DIR"
export LD_LIBRARY_PATH=$PWD:${LD_LIBRARY_PATH:-}
RES=${OUT:-/tmp/wharf-gpu}; mkdir -p "$RES"
declare -a rows
row() { rows+=("$(printf '%-34s %s' "$1" "$2")"); }
run() {  # name, command...
  local name=$1; shift
  echo; echo "===== $name: $*"
  local t0=$(date +%s.%N)
  "$@" > "$RES/$name.log" 2>&1; local rc=$?
  local dt=$(echo "$(date +%s.%N) - $t0" | bc)
  tail -n 25 "$RES/$name.log"
  local summary
  summary=$(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|ERROR SUMMARY|tests? ran' "$RES/$name.log" | tail -n 2 | tr '\n' ' ')
  row "$name" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL(rc=$rc)")  ${dt%.*}s  $summary"
  return $rc
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | tee "$RES/device.txt"
./wharf info | tee -a "$RES/device.txt"
status=0
run gpu_tests ./wharf_gpu_tests || status=1
[ -x ./wharf_unit_tests ] && { run unit_tests ./wharf_unit_tests || status=1; }
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck synccheck; do
    # Two tests make CUDA calls fail on purpose; the sanitizer would report those as errors.
    run "sanitizer_$tool" compute-sanitizer --tool $tool --error-exitcode 1 ./wharf_gpu_tests \
      --gtest_filter=-*DriverOutOfMemory*:*FailingCudaCall* || status=1
  done
else
  row sanitizer "compute-sanitizer not found"
fi
run demo ./wharf demo || status=1
if [ "$QUICK" != "--quick" ]; then
  for b in ./*_bench; do
    [ -x "$b" ] || continue
    n=$(basename "$b")
    run "$n" "$b" --csv "$RES/$n.csv" || status=1
  done
fi
echo; echo "================ summary ================"
printf '%s\n' "${rows[@]}" | tee "$RES/summary.txt"
exit $status
