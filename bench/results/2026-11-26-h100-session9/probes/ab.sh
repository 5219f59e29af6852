#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A/B: the staging ring's old shape (4 MiB chunks, 16 MiB blocks, 96 MiB ring) vs the new default.
cd "$(dirname "$0")"
mkdir -p $OUT/ab
for i in 1 2; do
  WHARF_TRANSFER_CHUNK_KIB=4096 WHARF_TRANSFER_BLOCK_KIB=16384 timeout 200 ./update_bench --no-baselines --peer /none --reps 5 --staging-mib 96 > $OUT/ab/old_$i.log 2>&1
  timeout 200 ./update_bench --no-baselines --peer /none --reps 5 > $OUT/ab/new_$i.log 2>&1
done
for f in $OUT/ab/*.log; do echo "== $f"; sed -n '/^target/,$p' $f; done
