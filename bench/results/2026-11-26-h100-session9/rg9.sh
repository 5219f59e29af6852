#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 2 x H100: multi-GPU rank/replica tests with the new staging shape, then replica_bench with
# the old shape (env) and the new, alternating.
set -u
cd "$(dirname "$0")/gb"
for f in ../../tests/data/*; do ln -sfn "$f" .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD NCCL_NVLS_ENABLE=0
O=${OUT:-/tmp/out}; mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$O/gpu.txt"
export WHARF_NCCL_LIBRARY=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0] + '/lib/libnccl.so.2')" 2>/dev/null)
T0=$(date +%s)
timeout 120 ./wharf_gpu_tests --gtest_filter='RankGroupGpu*:ReplicaGroupGpu*:ReplicaGpu*' > "$O/rank_tests.log" 2>&1; echo "rank tests rc=$? at $(( $(date +%s) - T0 ))s"
for i in 1 2; do
  timeout 80 ./replica_bench_old --gpus 2 --gib 8 --reps 5 > "$O/old_$i.txt" 2>&1; echo "old $i rc=$? at $(( $(date +%s) - T0 ))s"
  timeout 80 ./replica_bench --gpus 2 --gib 8 --reps 5 > "$O/new_$i.txt" 2>&1; echo "new $i rc=$? at $(( $(date +%s) - T0 ))s"
done
cd "$O" && tar czf all.tgz --exclude=all.tgz . 2>/dev/null
head -1 gpu.txt; grep -E "^\[  (PASSED|FAILED)|FAILED  \]|tests ran" rank_tests.log; for f in old_1 new_1 old_2 new_2; do echo "== $f"; grep -E "^(indep|group)|unknown|usage" $f.txt | head -8; done
