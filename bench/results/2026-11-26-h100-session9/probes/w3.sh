#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
cd "$(dirname "$0")"
mkdir -p $OUT/w3
head -1 /proc/stat
for i in 1 2; do
  for w in 0 -1 50; do
    WHARF_TRANSFER_WAIT_US=$w timeout 150 ./update_bench --no-baselines --peer /none --reps 5 > $OUT/w3/w${w}_$i.log 2>&1
    echo "wait $w run $i: $(grep -E 'pageable vs|update_from_file vs' $OUT/w3/w${w}_$i.log | awk '{print $(NF-2)}' | tr '\n' ' ')"
  done
done
head -1 /proc/stat
