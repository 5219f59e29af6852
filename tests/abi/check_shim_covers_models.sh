#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every shim function a committed compiled model imports (aoti_torch_*, and Wharf's own
# custom-op shims wharf_aoti_*) is exported by libwharf_aoti_shim.so. Reads the models' dynamic
# symbol tables only, so it runs without a GPU and without loading them (their glibc may be
# newer than this machine's). With REQUIRED_LIST, also every function named there (one a
# line, '#' comments): the aten fallbacks Wharf implements for models compiled without
# max_autotune (tests/abi/shim_fallbacks.txt), which the committed models do not all import.
# usage: check_shim_covers_models.sh SHIM_SO MODELS_DIR [REQUIRED_LIST]
set -euo pipefail
SHIM=$1; MODELS=$2; REQUIRED=${3:-}
defined=$(nm -D --defined-only "$SHIM" | awk '{print $3}' | sed 's/@.*//' | sort -u)
status=0; n=0
if [ -n "$REQUIRED" ]; then
  want=$(sed 's/#.*//; s/[[:space:]]//g; /^$/d' "$REQUIRED" | sort -u)
  missing=$(comm -23 <(echo "$want") <(echo "$defined") | sed '/^$/d')
  if [ -n "$missing" ]; then
    echo "FAIL: libwharf_aoti_shim.so does not export these functions of $REQUIRED:"; echo "$missing" | sed 's/^/  /'
    status=1
  else
    echo "ok: $(echo "$want" | wc -l) functions of $REQUIRED exported"
  fi
fi
shopt -s nullglob
for so in "$MODELS"/*/*.so; do
  n=$((n + 1))
  need=$(nm -D --undefined-only "$so" | awk '{print $2}' | sed 's/@.*//' | grep -E '^(aoti_torch_|wharf_aoti_)' | sort -u || true)
  missing=$(comm -23 <(echo "$need") <(echo "$defined") | sed '/^$/d')
  count=$(echo "$need" | sed '/^$/d' | wc -l)
  if [ -n "$missing" ]; then
    echo "FAIL: $so imports shim functions libwharf_aoti_shim.so does not export:"; echo "$missing" | sed 's/^/  /'
    status=1
  else
    echo "ok: $so ($count shim functions, all exported)"
  fi
done
[ "$n" -gt 0 ] || { echo "FAIL: no compiled models under $MODELS"; exit 1; }
exit $status
