#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Ring slots k mod B (old, c3f80ee) vs per block (new), with staging threads stalled on purpose:
# every 800th fill sleeps 3 ms (about five stalls per 2 GiB update, as the busy host's trace
# showed), and without stalls; the two builds alternating.
cd "$(dirname "$0")"
O=$OUT/stall; mkdir -p $O
run() { timeout 100 ./update_bench_$1 --no-baselines --peer /none --reps 5 $3 > $O/$2.log 2>&1; echo "$2: $(grep -E 'vs ceiling' $O/$2.log | awk '{print $(NF-2)}' | tr '\n' ' ')"; }
echo "columns: l-25 pinned, l-25 pageable, l-100 pinned, l-100 pageable, small pageable, small pinned, file load, update_from_file"
run old old_nostall ""
run new new_nostall ""
for i in 1 2; do
  run old old_stall_$i "--stall-every 800 --stall-ms 3"
  run new new_stall_$i "--stall-every 800 --stall-ms 3"
done
cd $OUT && tar czf stall.tgz stall && rm -rf stall
