#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# serve_update_bench A/B on the GPU machine (issue 26, serving while updating): the behaviour
# before the fixes ("old": WHARF_SERVING_WINDOW_MS=0 WHARF_DEFER_RUN_FREES=0) beside the
# defaults ("new") and one variant per switch, alternating in one call on one machine; each
# run takes 15-25 s. Logs go to $OUT (or /tmp/wharf-serve); a summary line per run at the end.
# usage: bash serve_update_ab.sh DIR [quick|more|all|key]
#   DIR: a gpu-bundle (make gpu-bundle) or build/bench; quick: old/new twice plus two variants
#   (~2.5 min); more: every other switch, mode and I/O variant, old/new once more (~6.5 min);
#   key: graphs old/new, graphs and eager with the old generation's memory kept (16 GiB), the
#   swap under running steps old/new (~2.5 min); all: quick and more (over the 10 minutes one device command may take: run quick and more apart).
set -uo pipefail
DIR=${1:?usage: serve_update_ab.sh DIR [quick|more|all]}
SET=${2:-quick}
cd "$DIR"
export LD_LIBRARY_PATH=$PWD:${LD_LIBRARY_PATH:-}
RES=${OUT:-/tmp/wharf-serve}
mkdir -p "$RES"
# The bench finds the package itself (packages/ in a bundle, else the source tree's tests/data).
B=(./serve_update_bench --idle-s 2 --serve-s 8)
OLD=(WHARF_SERVING_WINDOW_MS=0 WHARF_DEFER_RUN_FREES=0)
# The paced copies (off by default since the measurement in docs/performance.md).
NEW=(WHARF_SERVING_WINDOW_MS=100)
declare -a rows
run() {  # name, env assignments..., -- , bench arguments...
  local name=$1
  shift
  local -a envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    envs+=("$1")
    shift
  done
  shift
  echo
  echo "===== $name: ${envs[*]} ${B[*]} $*"
  env "${envs[@]}" "${B[@]}" --label "$name" "$@" > "$RES/$name.log" 2>&1
  local rc=$?
  sed -n '/^step latency/,/^  goal/p;/^big update/,/while serving \//p;/^checks:/p' "$RES/$name.log"
  local during alone serving
  during=$(grep -m1 '^  while updating' "$RES/$name.log" | awk '{print "p50 " $5 " p99 " $7 " max " $8 " (" $9 ")"}')
  alone=$(grep -m1 '^  alone ' "$RES/$name.log" | awk '{print $2}')
  serving=$(grep -m1 '^  while serving  ' "$RES/$name.log" | awk '{print $3}')
  rows+=("$(printf '%-26s rc %d  idle p99 %s  during %s  GB/s alone %s serving %s' "$name" "$rc" \
    "$(grep -m1 '^  idle (before)' "$RES/$name.log" | awk '{print $6}')" "$during" "${alone:--}" "${serving:--}")")
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | tee "$RES/device.txt"

if [ "$SET" = key ]; then
  # What a service would run (CUDA graphs), the old generation's memory kept for reuse, and
  # the swap under running steps.
  run old-graphs "${OLD[@]}" -- --mode big --graphs
  run new-graphs "${NEW[@]}" -- --mode big --graphs
  run new-graphs-pool-keep-16g "${NEW[@]}" WHARF_SERVING_POOL_KEEP_MIB=16384 -- --mode big --graphs
  run new-pool-keep-16g "${NEW[@]}" WHARF_SERVING_POOL_KEEP_MIB=16384 -- --mode big
  run old-self "${OLD[@]}" -- --mode self --pause-ms 5 --graphs
  run new-self "${NEW[@]}" -- --mode self --pause-ms 5 --graphs
fi
if [ "$SET" = quick ] || [ "$SET" = all ]; then
  run old-1 "${OLD[@]}" -- --mode big
  run new-1 "${NEW[@]}" -- --mode big
  run old-2 "${OLD[@]}" -- --mode big
  run new-2 "${NEW[@]}" -- --mode big
  run new-copy-threads-6 "${NEW[@]}" WHARF_SERVING_COPY_THREADS=6 -- --mode big
  run new-shim-pool-keep "${NEW[@]}" -- --mode big --default-pool-keep-mib 256
fi
if [ "$SET" = more ] || [ "$SET" = all ]; then
  run new-dma256-inflight512 "${NEW[@]}" WHARF_SERVING_DMA_KIB=256 WHARF_SERVING_INFLIGHT_KIB=512 -- --mode big
  run new-dma1024-inflight1024 "${NEW[@]}" WHARF_SERVING_DMA_KIB=1024 WHARF_SERVING_INFLIGHT_KIB=1024 -- --mode big
  run new-dma4096-inflight16384 "${NEW[@]}" WHARF_SERVING_DMA_KIB=4096 WHARF_SERVING_INFLIGHT_KIB=16384 -- --mode big
  run new-pieces-not-paced "${NEW[@]}" WHARF_SERVING_INFLIGHT_KIB=0 -- --mode big
  run new-spin-waits "${NEW[@]}" WHARF_SERVING_POLL_US=0 -- --mode big
  run new-pool-keep-16g "${NEW[@]}" WHARF_SERVING_POOL_KEEP_MIB=16384 -- --mode big
  run old-pinned-io "${OLD[@]}" -- --mode big --io pinned
  run new-pinned-io "${NEW[@]}" -- --mode big --io pinned
  run old-graphs "${OLD[@]}" -- --mode big --graphs
  run new-graphs "${NEW[@]}" -- --mode big --graphs
  run old-25pct "${OLD[@]}" -- --mode big --update-percent 25
  run new-25pct "${NEW[@]}" -- --mode big --update-percent 25
  run old-self "${OLD[@]}" -- --mode self --pause-ms 5
  run new-self "${NEW[@]}" -- --mode self --pause-ms 5
  run new-both-4-sessions "${NEW[@]}" -- --mode both --sessions 4
  # The transfer engine's profile line per update (pieces, paced waits, reads, waits) and the
  # container's phases, old and new.
  run old-debug-log "${OLD[@]}" WHARF_LOG_LEVEL=debug -- --mode big --serve-s 4
  run new-debug-log "${NEW[@]}" WHARF_LOG_LEVEL=debug -- --mode big --serve-s 4
  run old-3 "${OLD[@]}" -- --mode big
  run new-3 "${NEW[@]}" -- --mode big
fi
echo
echo "================ serve_update_bench A/B (${SET}) ================"
printf '%s\n' "${rows[@]}" | tee "$RES/summary.txt"
