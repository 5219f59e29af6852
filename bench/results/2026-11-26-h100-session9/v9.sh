#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Session 9, after the per-block ring slots: five consecutive update_bench runs on a freshly
# started machine, then the GPU and unit suites, then compute-sanitizer over the copy paths.
cd "$(dirname "$0")/gb"
for f in ../../tests/data/*; do ln -sfn $f .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD
O=$OUT; mkdir -p $O/five $O/san
uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for i in 1 2 3 4 5; do
  timeout 110 ./update_bench --no-baselines --peer /none --csv $O/five/update_bench_$i.csv > $O/five/update_bench_$i.log 2>&1
  echo "run $i: $(grep -E 'vs ceiling' $O/five/update_bench_$i.log | awk '{print $(NF-2)}' | tr '\n' ' ')"
done
head -1 /proc/stat
bash gpu-run.sh . quick > $O/quick.txt 2>&1; echo "quick rc=$?"; tail -6 $O/quick.txt
timeout 150 compute-sanitizer --tool memcheck --report-api-errors no ./wharf_gpu_tests --gtest_filter='CudaTest.*:GpuContainer.*' > $O/san/memcheck_gpu.log 2>&1; echo "memcheck gpu rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $O/san/memcheck_gpu.log | tail -3
timeout 100 compute-sanitizer --tool memcheck --report-api-errors no ./wharf_unit_tests --gtest_filter='*Slabs*:Transfer*' > $O/san/memcheck_unit.log 2>&1; echo "memcheck unit rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $O/san/memcheck_unit.log | tail -3
timeout 100 compute-sanitizer --tool racecheck ./wharf_gpu_tests --gtest_filter='CudaTest.Transfer*:CudaTest.CopyRoundTrip*' > $O/san/racecheck.log 2>&1; echo "racecheck rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $O/san/racecheck.log | tail -3
cd $O && tar czf all.tgz five san *.txt *.log 2>/dev/null
