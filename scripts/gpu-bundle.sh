#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Collects what the lent GPU machine needs into one small folder (< 64 MiB): libwharf.so,
# the CLI, the test and benchmark binaries, the test data, and the script that runs them all.
# Nothing in it refers to the build machine's folders.
# usage: scripts/gpu-bundle.sh BUILD_DIR OUT_DIR
set -euo pipefail
BUILD=${1:-build}; OUT=${2:-gpu-bundle}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$OUT"; mkdir -p "$OUT"
# The library as the loader finds it (libwharf.so -> libwharf.so.1 -> the real file); older
# versions left in the build dir stay behind.
cp -a "$BUILD"/libwharf.so "$BUILD"/libwharf.so.1 "$OUT"/
cp "$(readlink -f "$BUILD"/libwharf.so.1)" "$OUT"/
cp "$BUILD"/wharf "$OUT"/
# The AOTInductor shim library and the CUDA runtime it links (compiled models import both).
if [ -f "$BUILD"/libwharf_aoti_shim.so ]; then
  cp "$BUILD"/libwharf_aoti_shim.so "$OUT"/
  cudart=$(ldd "$BUILD"/libwharf_aoti_shim.so | awk '/libcudart/ {print $3}')
  [ -n "$cudart" ] && cp "$(readlink -f "$cudart")" "$OUT"/"$(basename "$cudart")"
fi
# Every test data file (tests/data: the compiled models, the reference implementations'
# safetensors files, PyTorch's references), laid out as there: the bundle is the tests' data
# folder (gpu-run.sh sets WHARF_TEST_DATA to it; tests/common/test_paths.h), and
# models/tiny_decoder is where the demo and the benchmarks look too.
cp -r "$ROOT"/tests/data/. "$OUT"/
# PyTorch's side of the model benchmark (run on the GPU machine, which has PyTorch).
mkdir -p "$OUT"/aoti
cp "$ROOT"/tools/aoti/*.py "$OUT"/aoti/
# The exporter (tools/export) and the real-model benchmark's PyTorch side and driver
# (bench/real_models/run.sh), both run with the GPU machine's PyTorch.
if [ -d "$ROOT"/tools/export ]; then
  mkdir -p "$OUT"/export
  cp "$ROOT"/tools/export/*.py "$OUT"/export/
fi
mkdir -p "$OUT"/real_models
cp "$ROOT"/bench/real_models/*.py "$ROOT"/bench/real_models/*.sh "$OUT"/real_models/
# The safetensors library's side of update_bench's file rows.
mkdir -p "$OUT"/peers
cp "$ROOT"/tools/bench/*.py "$OUT"/peers/
# Libraries that look like broken models (the model loader's error tests).
[ -d "$BUILD"/tests/fakes ] && cp -r "$BUILD"/tests/fakes "$OUT"/fakes
# Libraries with different code for the model library loader's unit tests (found beside
# wharf_unit_tests).
[ -d "$BUILD"/tests/unit-libs ] && cp -r "$BUILD"/tests/unit-libs "$OUT"/unit-libs
for t in tests/wharf_gpu_tests tests/wharf_unit_tests; do
  [ -x "$BUILD/$t" ] && cp "$BUILD/$t" "$OUT"/
done
# The README's model package example (gpu-run.sh runs it on a package of the tiny decoder).
[ -x "$BUILD"/tests/wharf_readme_package_example ] && cp "$BUILD"/tests/wharf_readme_package_example "$OUT"/readme_package_example
for b in "$BUILD"/bench/*_bench; do [ -x "$b" ] && cp "$b" "$OUT"/; done
# CUPTI (4 MiB) of the toolkit the benchmarks were built with, for model_bench's and
# batch_bench's --kernel-time: they open it at run time, from their own folder first
# (bench/kernel_timer.cpp), so the GPU machine's toolkit need not have it at a known place.
cupti=$(sed -n 's/^WHARF_CUPTI_LIBRARY:FILEPATH=//p' "$BUILD"/CMakeCache.txt 2>/dev/null || true)
if [ -n "$cupti" ] && [ -f "$cupti" ]; then cp "$(readlink -f "$cupti")" "$OUT"/"$(basename "$cupti")"; fi
cp "$ROOT"/scripts/gpu-run.sh "$OUT"/
[ -d "$ROOT"/tests/gpu/reference ] && cp -r "$ROOT"/tests/gpu/reference "$OUT"/
# Debug info and the executables' symbol tables would put the bundle over the 64 MiB the GPU
# machine takes (the libraries keep their symbol tables: only debug info goes).
strip --strip-unneeded "$OUT"/wharf "$OUT"/wharf_* "$OUT"/*_bench "$OUT"/readme_package_example 2>/dev/null || true
strip --strip-debug "$OUT"/libwharf.so.*.*.* "$OUT"/libwharf_aoti_shim.so 2>/dev/null || true
du -sh "$OUT"
ls -la "$OUT"
size=$(du -sb "$OUT" | cut -f1)
if [ "$size" -ge $((64 * 1024 * 1024)) ]; then
  echo "gpu-bundle: $OUT is $size bytes, over the 64 MiB the GPU machine takes" >&2
  exit 1
fi
