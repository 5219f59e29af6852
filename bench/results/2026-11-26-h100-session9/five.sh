#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Five consecutive update_bench runs on a freshly started GPU machine (issue 21 item 7).
cd "$(dirname "$0")/gb"
export LD_LIBRARY_PATH=$PWD
mkdir -p $OUT/five
uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; lscpu | grep -E "Model name|^CPU\(s\)|L3"
for i in 1 2 3 4 5; do
  timeout 110 ./update_bench --no-baselines --peer /none --csv $OUT/five/update_bench_$i.csv > $OUT/five/update_bench_$i.log 2>&1
  echo "run $i: $(grep -E 'vs ceiling' $OUT/five/update_bench_$i.log | awk '{print $(NF-2)}' | tr '\n' ' ')"
done
head -1 /proc/stat
grep "vs ceiling" $OUT/five/update_bench_1.log | awk '{$NF=""; print}'
