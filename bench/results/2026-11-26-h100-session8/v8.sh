#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 8, one H100: the quick suite (GPU + unit tests, compute-sanitizer), model_bench (the
# swap line), the CUPTI kernel-time phases, offload_bench --model.
set -u
cd "$(dirname "$0")/gb"
for f in ../../tests/data/*; do ln -sfn "$f" .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD
O=${OUT:-/tmp/out}; mkdir -p "$O"
[ -e /usr/local/cuda/lib64/libcublasLt.so.13 ] || export WHARF_CUBLASLT_LIBRARY=$(python3 -c 'import nvidia.cu13 as m; print(list(m.__path__)[0] + "/lib/libcublasLt.so.13")' 2>/dev/null)
T0=$(date +%s)
timeout 330 bash gpu-run.sh . quick > "$O/quick.log" 2>&1; echo "quick rc=$? at $(( $(date +%s) - T0 ))s"
timeout 60 ./model_bench --csv "$O/model_bench.csv" > "$O/model_bench.txt" 2>&1; echo "model_bench rc=$? at $(( $(date +%s) - T0 ))s"
timeout 40 ./model_bench --kernel-time-only > "$O/kt_model.txt" 2>&1; echo "kt model rc=$? at $(( $(date +%s) - T0 ))s"
timeout 40 ./batch_bench packages/tiny-llama-f32 --batches 1,2,4,8 --graphs --max-len 16 --steps 20 --kernel-time > "$O/kt_batch.txt" 2>&1; echo "kt batch rc=$? at $(( $(date +%s) - T0 ))s"
timeout 60 ./offload_bench --model - > "$O/offload_model.txt" 2>&1; echo "offload rc=$? at $(( $(date +%s) - T0 ))s"
cd "$O" && tar czf all.tgz --exclude=all.tgz . 2>/dev/null
grep -A12 "summary ====" quick.log | head -14; grep -E "FAILED|PASSED" quick.log | tail -5
grep -E "first step|serving path|host time|step after" model_bench.txt | head -8
grep -B2 -A8 -i "kernel time" kt_model.txt | tail -14; grep -A10 -i "kernel time" kt_batch.txt | tail -12; tail -14 offload_model.txt
