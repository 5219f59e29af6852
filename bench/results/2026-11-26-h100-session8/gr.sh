#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 27, 4 x H100, one machine: replica_bench before (0f28557) and after the in-process
# concurrent allocation (main), alternating, twice each.
set -u
cd "$(dirname "$0")/gr"
export NCCL_NVLS_ENABLE=0
O=${OUT:-/tmp/out}; mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$O/gpu.txt"
export WHARF_NCCL_LIBRARY=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0] + '/lib/libnccl.so.2')" 2>/dev/null)
T0=$(date +%s)
for i in 1 2; do for v in old new; do timeout 80 ./replica_bench_$v --gpus 4 --gib 8 --reps 5 > "$O/${v}_$i.txt" 2>&1; echo "$v $i rc=$? at $(( $(date +%s) - T0 ))s"; done; done
cd "$O" && tar czf all.tgz --exclude=all.tgz . 2>/dev/null
head -1 gpu.txt; for f in old_1 new_1 old_2 new_2; do echo "== $f"; grep -E "^(indep|group)" $f.txt; done
