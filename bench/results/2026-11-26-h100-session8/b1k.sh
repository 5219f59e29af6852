#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 8, one H100: the 1B-shaped batch package (decode_batch, 128 sessions), batch_bench with
# CUDA graphs and the CUPTI kernel-time phase (issue 25: replay <= 1.15x its kernels' GPU time).
set -u
cd "$(dirname "$0")/gb"
for f in ../../tests/data/*; do ln -sfn "$f" .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD
O=${OUT:-/tmp/out}; mkdir -p "$O"
[ -e /usr/local/cuda/lib64/libcublasLt.so.13 ] || export WHARF_CUBLASLT_LIBRARY=$(python3 -c 'import nvidia.cu13 as m; print(list(m.__path__)[0] + "/lib/libcublasLt.so.13")' 2>/dev/null)
T0=$(date +%s)
BATCHES=1,8,32,64,128 BATCH_HF=0 timeout 420 bash real_models/run.sh "$O/rm" 1b batch > "$O/batch.log" 2>&1; echo "export+batch rc=$? at $(( $(date +%s) - T0 ))s"
BATCH_BENCH_CAPACITY=128 timeout 120 ./batch_bench /tmp/wharf-real-models/1b-b128.wharf --batches 1,8,32,128 --graphs --min-len 256 --max-len 768 --steps 10 --kernel-time > "$O/kt_1b.txt" 2>&1; echo "kt rc=$? at $(( $(date +%s) - T0 ))s"
cd "$O" && tar czf all.tgz --exclude=all.tgz . 2>/dev/null
tail -25 batch.log; grep -A14 -i "^kernel time" kt_1b.txt | head -16
