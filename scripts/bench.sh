#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make bench`: runs every benchmark in BUILD_DIR/bench (they need a CUDA GPU; each prints
# one table: ours beside the baseline measured in the same run).
set -euo pipefail
BUILD=${1:-build}
shopt -s nullglob
benches=("$BUILD"/bench/*_bench)
if [ ${#benches[@]} -eq 0 ]; then
  echo "no benchmarks built (they need the CUDA backend: configure with WHARF_WITH_CUDA=ON)"; exit 1
fi
for b in "${benches[@]}"; do echo "== $b"; "$b"; done
