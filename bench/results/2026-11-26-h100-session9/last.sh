#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The last GPU check of session 9, at main's final code: five consecutive update_bench runs on a
# freshly started machine, then the GPU and unit suites from the bundle.
cd "$(dirname "$0")/gb"
for f in ../../tests/data/*; do ln -sfn $f .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD
O=$OUT; mkdir -p $O/five
uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for i in 1 2 3 4 5; do
  timeout 110 ./update_bench --no-baselines --peer /none --csv $O/five/update_bench_$i.csv > $O/five/update_bench_$i.log 2>&1
  echo "run $i: $(grep -E 'vs ceiling' $O/five/update_bench_$i.log | awk '{print $(NF-2)}' | tr '\n' ' ')"
done
bash gpu-run.sh . quick > $O/quick.txt 2>&1; echo "quick rc=$?"; tail -6 $O/quick.txt
cd $O && tar czf all.tgz five quick.txt summary.txt 2>/dev/null; rm -rf five
