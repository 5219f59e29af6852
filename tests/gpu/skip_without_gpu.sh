#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the GPU test binary for ctest and exits 77 (SKIP_RETURN_CODE: ctest reports the test as
# skipped, not passed) when no CUDA device was usable: then every test that needs a device
# skipped, and only the host-side checks of the no-device path ran. They must still pass: a
# failure is a failure. "No usable device" is what the suite itself found: the line
# CudaAvailability.ReportsReasonsAndNeverCrashes prints (tests/gpu/cuda_device_test.cpp).
# usage: skip_without_gpu.sh GPU_TEST_BINARY [ARGS...]
set -uo pipefail
out=$(mktemp); trap 'rm -f "$out"' EXIT
"$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] || exit "$rc"
reason=$(sed -n 's/^\[          \] no CUDA device: //p' "$out" | head -1)
if [ -n "$reason" ] && grep -q '^\[  SKIPPED \] [0-9]* tests\?, listed below' "$out"; then
  echo "gpu: skipped: no usable CUDA device ($reason); the checks that need none passed"
  exit 77
fi
exit 0
