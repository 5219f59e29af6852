#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 4 x H100 (issue 27): in-process groups with the other replicas allocating beside replica 0's reads.
set -u
cd "$(dirname "$0")/gbl"
for f in ../../tests/data/*; do ln -sfn "$f" .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD NCCL_NVLS_ENABLE=0
O=${OUT:-/tmp/out}; mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$O/gpu.txt"
export WHARF_NCCL_LIBRARY=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0] + '/lib/libnccl.so.2')" 2>/dev/null)
T0=$(date +%s)
for i in 1 2 3; do timeout 90 ./replica_bench --processes --gpus 4 --gib 8 --reps 5 --csv "$O/rb4_$i.csv" > "$O/rb4_$i.txt" 2>&1; echo "rb $i rc=$? at $(( $(date +%s) - T0 ))s"; done
timeout 100 ./wharf_gpu_tests --gtest_filter='RankGroupGpu*:ReplicaGroupGpu*:ReplicaGpu*' > "$O/rank_tests.log" 2>&1; echo "rank tests rc=$? at $(( $(date +%s) - T0 ))s"
cd "$O" && tar czf all.tgz --exclude=all.tgz . 2>/dev/null
cat gpu.txt | head -1; grep -E "^\[  (PASSED|FAILED)|FAILED  \]" rank_tests.log | tail -3
for i in 1 2 3; do echo "== $i"; grep -E "^(indep|group)" rb4_$i.txt; done
