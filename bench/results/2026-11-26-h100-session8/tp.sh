#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 26 tiny p99 while updating: I/O variants of serve_update_bench --graphs (one H100).
set -u
cd "$(dirname "$0")/gb"
for f in ../../tests/data/*; do ln -sfn "$f" .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD
O=${OUT:-/tmp/out}; mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$O/gpu.txt"
run() { local n=$1; shift; timeout 40 ./serve_update_bench --graphs --mode big --idle-s 3 --serve-s 6 --label $n "$@" > "$O/$n.txt" 2>&1; echo "$n rc=$?"; }
run def
run pinned --io pinned
run pin_dev --io pinned --input device
run pin_dev_t4 --io pinned --input device --copy-threads 4
run def2
cd "$O" && tar czf all.tgz --exclude=all.tgz . 2>/dev/null
cat gpu.txt
for n in def pinned pin_dev pin_dev_t4 def2; do echo "== $n"; grep -E "^  (idle|while updating)|^  (idle|updating, )" $n.txt; grep -A1 "while serving  " $n.txt | head -2; done
