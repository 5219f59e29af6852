#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 4 x H100 (issue 27): groups of processes N = 1, 2, 4, defaults twice, then NCCL knobs.
set -u
cd "$(dirname "$0")/gb"
for f in ../../tests/data/*; do ln -sfn "$f" .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD NCCL_NVLS_ENABLE=0
O=${OUT:-/tmp/out}; mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$O/gpu.txt"; nvidia-smi topo -m > "$O/topo.txt" 2>&1
export WHARF_NCCL_LIBRARY=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0] + '/lib/libnccl.so.2')" 2>/dev/null)
T0=$(date +%s)
run() { local n=$1; shift; env "$@" timeout 90 ./replica_bench --processes --gpus 4 --gib 8 --reps 5 > "$O/$n.txt" 2>&1; echo "$n rc=$? at $(( $(date +%s) - T0 ))s"; }
run def1
run ch8 NCCL_MAX_NCHANNELS=8
run simple NCCL_PROTO=Simple
run ring NCCL_ALGO=Ring
run def2
cd "$O" && tar czf all.tgz --exclude=all.tgz . 2>/dev/null
cat gpu.txt
for n in def1 ch8 simple ring def2; do echo "== $n"; grep -E "^(indep|group)" $n.txt; done
