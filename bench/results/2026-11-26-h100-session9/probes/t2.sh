#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
cd "$(dirname "$0")"
mkdir -p $OUT/t2
timeout 200 ./update_bench --no-baselines --peer /none --reps 5 --trace-one --trace-dir $OUT/t2/trace > $OUT/t2/trace.log 2>&1
for t in 10 14 12; do
  timeout 200 ./update_bench --no-baselines --peer /none --reps 5 --copy-threads $t > $OUT/t2/t$t.log 2>&1
done
cd $OUT/t2 && tar czf ../t2.tgz . && cd ..
for f in $OUT/t2/*.log; do echo "== $f"; grep -E "pageable vs|file update_from" $f; done
grep -A12 "traced: large-25, wharf update from pageable" $OUT/t2/trace.log | head -14
