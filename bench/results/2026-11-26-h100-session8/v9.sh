#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 8, one H100, main at the helpers' landing: the quick suite (GPU + unit tests,
# compute-sanitizer), model_bench (swap line + kernel time), offload_bench --model, the update
# trace (issue 21 item 7) and the first-blocks ramp A/B.
set -u
cd "$(dirname "$0")/gb"
for f in ../../tests/data/*; do ln -sfn "$f" .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD
O=${OUT:-/tmp/out}; mkdir -p "$O"
[ -e /usr/local/cuda/lib64/libcublasLt.so.13 ] || export WHARF_CUBLASLT_LIBRARY=$(python3 -c 'import nvidia.cu13 as m; print(list(m.__path__)[0] + "/lib/libcublasLt.so.13")' 2>/dev/null)
T0=$(date +%s)
timeout 300 bash gpu-run.sh . quick > "$O/quick.log" 2>&1; echo "quick rc=$? at $(( $(date +%s) - T0 ))s"
timeout 70 ./model_bench --kernel-time --csv "$O/model_bench.csv" > "$O/model_bench.txt" 2>&1; echo "model_bench rc=$? at $(( $(date +%s) - T0 ))s"
timeout 60 ./offload_bench --model - > "$O/offload_model.txt" 2>&1; echo "offload rc=$? at $(( $(date +%s) - T0 ))s"
mkdir -p "$O/trace"
timeout 70 ./update_bench --no-baselines --peer /none --trace-one --trace-dir "$O/trace" > "$O/trace.log" 2>&1; echo "trace rc=$? at $(( $(date +%s) - T0 ))s"
for v in WHARF_TRANSFER_RAMP=0 WHARF_TRANSFER_RAMP=1; do env $v timeout 60 ./update_bench --no-baselines --peer /none --reps 5 > "$O/ab_$v.log" 2>&1; echo "ab $v rc=$? at $(( $(date +%s) - T0 ))s"; done
cd "$O" && tar czf all.tgz --exclude=all.tgz . 2>/dev/null
grep -A12 "summary ====" quick.log | head -14; grep -E "^\[  FAILED" quick.log | sort -u | head
grep -E "first step|serving path|step after|graphs host" model_bench.txt | head -8; grep -A3 "^mode " model_bench.txt | tail -3
tail -5 offload_model.txt; grep -A14 '^traced:' trace.log | head -30; grep -H "vs ceiling" ab_*.log
