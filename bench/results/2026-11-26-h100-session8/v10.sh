#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 8, one H100, the last call (main at 5ac957f's code): compute-sanitizer over the graph,
# offloaded-graph and batch suites; update_bench with the default 12 staging threads and with 15,
# alternating, twice each (issue 21 item 7).
set -u
cd "$(dirname "$0")/gb"
for f in ../../tests/data/*; do ln -sfn "$f" .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD
O=${OUT:-/tmp/out}; mkdir -p "$O"
[ -e /usr/local/cuda/lib64/libcublasLt.so.13 ] || export WHARF_CUBLASLT_LIBRARY=$(python3 -c 'import nvidia.cu13 as m; print(list(m.__path__)[0] + "/lib/libcublasLt.so.13")' 2>/dev/null)
T0=$(date +%s)
{ WHARF_BATCH_FUZZ_STEPS=100 timeout 200 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 ./wharf_gpu_tests --gtest_filter='ModelGraph*:OffloadModelGraphGpu*:GraphBuckets*:*PackageBatch*:CudaTest.Transfer*:CudaTest.Timing*' 2>&1 | tail -5; } > "$O/memcheck.log"; echo "memcheck at $(( $(date +%s) - T0 ))s"
{ timeout 150 compute-sanitizer --tool racecheck --error-exitcode 1 ./wharf_gpu_tests --gtest_filter='GpuOffload*:OffloadModelGpu*:OffloadModelGraphGpu.ReplaysEqual*' 2>&1 | tail -4; } > "$O/racecheck.log"; echo "racecheck at $(( $(date +%s) - T0 ))s"
for i in 1 2; do for t in 12 15; do timeout 60 ./update_bench --no-baselines --peer /none --reps 5 --copy-threads $t > "$O/u_t${t}_$i.txt" 2>&1; echo "u t$t $i rc=$? at $(( $(date +%s) - T0 ))s"; done; done
cd "$O" && tar czf all.tgz --exclude=all.tgz . 2>/dev/null
cat memcheck.log racecheck.log; for f in u_t*.txt; do echo "== $f"; grep -E "vs ceiling" $f | grep -v pinned; done
