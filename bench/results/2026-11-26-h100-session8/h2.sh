#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# H200 pair (issue 27): rank tests, the PyTorch sender, replica_bench with process groups (N = 1, 2) twice.
set -u
cd "$(dirname "$0")/gb"
for f in ../../tests/data/*; do ln -sfn "$f" .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD NCCL_NVLS_ENABLE=0
O=${OUT:-/tmp/out}; mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$O/gpu.txt"; nvidia-smi topo -m > "$O/topo.txt" 2>&1
export WHARF_NCCL_LIBRARY=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0] + '/lib/libnccl.so.2')" 2>/dev/null)
T0=$(date +%s)
for i in 1 2 3; do timeout 100 ./replica_bench --processes --gpus 2 --gib 8 --reps 5 --csv "$O/replica_bench_2_$i.csv" > "$O/replica_bench_2_$i.txt" 2>&1; echo "replica bench $i rc=$? at $(( $(date +%s) - T0 ))s"; done
timeout 100 ./wharf_gpu_tests --gtest_filter='RankGroupGpu*:ReplicaGroupGpu*:ReplicaGpu*' > "$O/rank_tests.log" 2>&1; echo "rank tests rc=$? at $(( $(date +%s) - T0 ))s"
timeout 80 bash ../../tests/gpu/two_process_sender_test.sh "$PWD" > "$O/sender.log" 2>&1; echo "sender rc=$? at $(( $(date +%s) - T0 ))s"
cd "$O" && tar czf all.tgz --exclude=all.tgz . 2>/dev/null
cat gpu.txt; grep -E "^\[  (PASSED|FAILED)|FAILED  \]|tests ran" rank_tests.log; tail -3 sender.log; for i in 1 2 3; do grep -v '^{' replica_bench_2_$i.txt | grep -E "^(replica_bench|indep|group)"; done
