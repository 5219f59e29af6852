#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 8, one H100: compile the dynamic-rows offloaded tiny model (PyTorch AOTInductor) and run
# the offloaded-model graph tests over several input shapes, plain and under compute-sanitizer.
set -u
cd "$(dirname "$0")/gb"
for f in ../../tests/data/*; do ln -sfn "$f" .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s)
timeout 300 python3 aoti/compile_offload_model.py --dynamic-rows "$O/offload_tiny_dyn" > "$O/compile.log" 2>&1; echo "compile rc=$? at $(( $(date +%s) - T0 ))s"
export WHARF_OFFLOAD_DYN_MODEL_DIR=$O/offload_tiny_dyn
timeout 120 ./wharf_gpu_tests --gtest_filter='OffloadModelGraphGpuShapes.*:OffloadModelGraphGpu.*:OffloadModelGpu.*' > "$O/tests.log" 2>&1; echo "tests rc=$? at $(( $(date +%s) - T0 ))s"
{ timeout 150 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 ./wharf_gpu_tests --gtest_filter='OffloadModelGraphGpuShapes.*' 2>&1 | tail -4; } > "$O/memcheck.log"; echo "memcheck at $(( $(date +%s) - T0 ))s"
{ timeout 150 compute-sanitizer --tool racecheck --error-exitcode 1 ./wharf_gpu_tests --gtest_filter='OffloadModelGraphGpuShapes.*' 2>&1 | tail -4; } > "$O/racecheck.log"; echo "racecheck at $(( $(date +%s) - T0 ))s"
cd "$O" && tar czf all.tgz --exclude=all.tgz . 2>/dev/null
tail -5 compile.log; grep -E "^\[  (PASSED|FAILED)|FAILED  \]|SKIPPED|Failure" -A3 tests.log | head -30; cat memcheck.log racecheck.log
