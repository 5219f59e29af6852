#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 21 item 7 on one H100: the staging threads' count and the ring's size (does a ring that
# stays in L3 or more threads lift the pageable rows?), with the host's CPU and cache facts.
set -u
cd "$(dirname "$0")/gb"
export LD_LIBRARY_PATH=$PWD
O=${OUT:-/tmp/out}; mkdir -p "$O"
lscpu > "$O/lscpu.txt" 2>&1; nproc >> "$O/lscpu.txt"
T0=$(date +%s)
for v in "12 96" "15 96" "12 24" "15 24" "8 24"; do set -- $v
  timeout 60 ./update_bench --no-baselines --peer /none --reps 5 --copy-threads $1 --staging-mib $2 > "$O/t$1_r$2.txt" 2>&1; echo "t$1 r$2 rc=$? at $(( $(date +%s) - T0 ))s"; done
cd "$O" && tar czf all.tgz --exclude=all.tgz . 2>/dev/null
grep -E "Model name|L3|^CPU\(s\)|NUMA node\(s\)" lscpu.txt; for f in t*.txt; do echo "== $f"; grep -E "vs ceiling" $f | grep -v pinned; done
