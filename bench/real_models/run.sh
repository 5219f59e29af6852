#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The real-model benchmark (issue 24), on the GPU machine, from the GPU bundle's folder:
#   bash real_models/run.sh OUT_DIR SHAPE [PHASE] [WORK_DIR]   SHAPE: 1b | 8b; PHASE: export | bench | all | batch
# For a Llama-3.2-1B- or Llama-3.1-8B-shaped checkpoint with random bf16 weights (made here,
# saved as transformers saves one): Wharf's export time (tools/export/wharf_export.py), then
# package_bench (load, prefill of 512 tokens, decode step) and hf_baselines.py (transformers
# load, eager and torch.compile(mode="reduce-overhead") decode and prefill, the D2D bandwidth
# and the decode roofline), all on this GPU in this run; real_models/table.py OUT_DIR prints
# the table. WORK_DIR (default /tmp/wharf-real-models) keeps checkpoints and packages between
# calls on a warm machine: a step whose output exists is not redone.
# PHASE batch (issue 26's table): a second package with decode_batch for BATCH_CAPACITY
# (default 128) sessions, batch_bench over N = BATCHES (default 1,8,32,64,128) sessions at
# ragged lengths 256..768 (mean 512) with CUDA graphs, beside N independent runs (N <= 8) and
# hf_baselines.py measure-batch (reduce-overhead over a StaticCache of N rows at 512).
set -uo pipefail
OUT=${1:?OUT_DIR}; SHAPE=${2:?SHAPE}; PHASE=${3:-all}; WORK=${4:-/tmp/wharf-real-models}
HERE=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT" "$WORK"
export LD_LIBRARY_PATH="$HERE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ckpt=$WORK/$SHAPE-hf pkg=$WORK/$SHAPE.wharf
if [ ! -f "$ckpt/config.json" ]; then
  python3 "$HERE/real_models/hf_baselines.py" make-checkpoint --shape "$SHAPE" --out "$ckpt" || exit 1
fi
if [ ! -f "$pkg/manifest.json" ]; then
  t0=$(date +%s.%N)
  python3 "$HERE/export/wharf_export.py" "$ckpt" --out "$pkg" --dtype bfloat16 --max-seq-len 1024 \
    ${WHARF_EXPORT_ARGS:-} > "$OUT/$SHAPE-export.log" 2>&1 || { tail -40 "$OUT/$SHAPE-export.log"; exit 1; }
  t1=$(date +%s.%N)
  python3 -c "import json,sys; json.dump({'export_s': $t1 - $t0}, open('$OUT/$SHAPE-export.json', 'w'))"
fi
[ "$PHASE" = export ] && exit 0
if [ "$PHASE" = batch ]; then
  cap=${BATCH_CAPACITY:-128} batches=${BATCHES:-1,8,32,64,128}
  pkgb=$WORK/$SHAPE-b$cap.wharf
  if [ ! -f "$pkgb/manifest.json" ]; then
    t0=$(date +%s.%N)
    python3 "$HERE/export/wharf_export.py" "$ckpt" --out "$pkgb" --dtype bfloat16 --max-seq-len 1024 \
      --session-capacity "$cap" ${WHARF_EXPORT_ARGS:-} > "$OUT/$SHAPE-b$cap-export.log" 2>&1 \
      || { tail -40 "$OUT/$SHAPE-b$cap-export.log"; exit 1; }
    t1=$(date +%s.%N)
    python3 -c "import json; json.dump({'export_s': $t1 - $t0}, open('$OUT/$SHAPE-b$cap-export.json', 'w'))"
  fi
  BATCH_BENCH_CAPACITY=$cap "$HERE/batch_bench" "$pkgb" --batches "$batches" --graphs --independent \
    --max-independent 8 --min-len 256 --max-len 768 --steps 30 --csv "$OUT/$SHAPE-batch-wharf.csv" || exit 1
  [ "${BATCH_HF:-1}" = 0 ] && exit 0  # the baseline in a later call (its compiles take minutes)
  python3 "$HERE/real_models/hf_baselines.py" measure-batch --model "$ckpt" --out "$OUT/$SHAPE-batch-hf.json" \
    --batches "$batches" --context 512 --steps 50 > "$OUT/$SHAPE-batch-hf.log" 2>&1 \
    || { tail -20 "$OUT/$SHAPE-batch-hf.log"; exit 1; }
  exit 0
fi
# Wharf eagerly, then with CUDA graphs (the decode method replayed), then the baselines.
"$HERE/package_bench" "$pkg" --prefill 512 --steps 200 --csv "$OUT/$SHAPE-wharf.csv" || exit 1
"$HERE/package_bench" "$pkg" --prefill 512 --steps 200 --graphs --csv "$OUT/$SHAPE-wharf-graphs.csv" || exit 1
python3 "$HERE/real_models/hf_baselines.py" measure --model "$ckpt" --out "$OUT/$SHAPE-hf.json" \
  > "$OUT/$SHAPE-hf.log" 2>&1 || { tail -20 "$OUT/$SHAPE-hf.log"; exit 1; }
python3 "$HERE/real_models/table.py" "$OUT"
