#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Session 9 final GPU check at main (e8d428f): quick suites, memcheck over CudaTest/GpuContainer
# (the gated foreign-stream test included) and the graph suites, racecheck over the transfer
# tests, and one traced update_bench run.
cd "$(dirname "$0")/gb"
for f in ../../tests/data/*; do ln -sfn $f .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD
O=$OUT; mkdir -p $O/san $O/trace
bash gpu-run.sh . quick > $O/quick.txt 2>&1; echo "quick rc=$?"; tail -6 $O/quick.txt
./wharf_gpu_tests --gtest_filter='CudaTest.DeviceSynchronize*' > $O/gate_plain.log 2>&1; echo "gate plain rc=$?"; grep -E "OK \]|FAILED \]" $O/gate_plain.log | head
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 ./wharf_gpu_tests --gtest_filter='CudaTest.*:GpuContainer.*:-*DriverOutOfMemory*:*FailingCudaCall*' > $O/san/memcheck_cuda.log 2>&1; echo "memcheck cuda rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $O/san/memcheck_cuda.log | tail -3
timeout 200 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 ./wharf_gpu_tests --gtest_filter='ModelGraph*:OffloadModelGraphGpu*' > $O/san/memcheck_graphs.log 2>&1; echo "memcheck graphs rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $O/san/memcheck_graphs.log | tail -3
timeout 100 compute-sanitizer --tool racecheck --error-exitcode 1 ./wharf_gpu_tests --gtest_filter='CudaTest.Transfer*:CudaTest.CopyRoundTrip*' > $O/san/racecheck.log 2>&1; echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $O/san/racecheck.log | tail -2
timeout 120 ./update_bench --no-baselines --peer /none --reps 3 --trace-one --trace-dir $O/trace > $O/trace.log 2>&1; echo "traced update_bench rc=$?"; grep -E "vs ceiling" $O/trace.log | awk '{print $(NF-2)}' | tr '\n' ' '; echo; grep -A11 "traced: large-25, wharf update from pageable" $O/trace.log | grep -E "setup|host fills|vs the ceiling"
cd $O && tar czf all.tgz san trace *.txt *.log 2>/dev/null
