#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 10 GPU check: the GPU suite and the unit suite (with CUDA) from the bundle.
cd wip/gb
for f in ../../tests/data/*; do ln -sfn "$f" .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t0=$SECONDS
timeout 230 ./wharf_gpu_tests --gtest_brief=1 > $OUT/gpu_tests.log 2>&1; echo "gpu tests rc=$? $((SECONDS-t0)) s"
tail -4 $OUT/gpu_tests.log
t1=$SECONDS
timeout 60 ./wharf_unit_tests --gtest_brief=1 > $OUT/unit_tests.log 2>&1; echo "unit tests rc=$? $((SECONDS-t1)) s"
tail -3 $OUT/unit_tests.log
grep -E "FAILED|GraphBuckets" $OUT/gpu_tests.log | head -20
