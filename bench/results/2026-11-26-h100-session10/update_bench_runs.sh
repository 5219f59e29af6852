# SPDX-License-Identifier: Apache-2.0
cd wip/ub
export LD_LIBRARY_PATH=$PWD
for i in 2 3 4 5; do timeout 100 ./update_bench --no-baselines --peer /none > $OUT/update_bench_$i.txt 2>&1; echo "run $i rc=$?"; done
cd $OUT && for f in update_bench_*.txt; do echo "$f: $(grep -E 'vs ceiling' $f | awk '{print $(NF-2)}' | paste -sd' ')"; done
