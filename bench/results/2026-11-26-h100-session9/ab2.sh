#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
cd "$(dirname "$0")/gb"
export LD_LIBRARY_PATH=$PWD
mkdir -p $OUT/ab2
for i in 1 2; do
  WHARF_TRANSFER_CHUNK_KIB=4096 WHARF_TRANSFER_BLOCK_KIB=16384 timeout 100 ./update_bench --no-baselines --peer /none --staging-mib 96 > $OUT/ab2/old_$i.log 2>&1
  echo "old (4 MiB chunks, 96 MiB ring, 16 MiB DMAs) $i: $(grep -E 'vs ceiling' $OUT/ab2/old_$i.log | awk '{print $(NF-2)}' | tr '\n' ' ')"
  timeout 100 ./update_bench --no-baselines --peer /none > $OUT/ab2/new_$i.log 2>&1
  echo "new (512 KiB chunks, 48 MiB ring, 8 MiB DMAs) $i: $(grep -E 'vs ceiling' $OUT/ab2/new_$i.log | awk '{print $(NF-2)}' | tr '\n' ' ')"
done
timeout 120 ./update_bench --no-baselines --peer /none --trace-one --trace-dir $OUT/ab2/trace > $OUT/ab2/trace.log 2>&1
grep -A13 "traced:" $OUT/ab2/trace.log | grep -E "traced:|host fills|DMA  |vs the ceiling"
cd $OUT && tar czf ab2.tgz ab2 && rm -rf ab2
