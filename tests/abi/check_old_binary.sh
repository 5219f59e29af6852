#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A binary built against the frozen 0.3.0 header (tests/abi/old_header_test.c compiled with
# tests/abi/wharf-0.3.0.h) runs against the library built now: it needs the symbol versions
# of 0.3.0 only (WHARF_0.3, never the experimental tier), the loader accepts it, and every
# check in it passes.
# usage: check_old_binary.sh OLD_BINARY LIBRARY_DIR WORK_DIR
set -uo pipefail
bin=$1; libdir=$2; work=$3
needed=$(objdump -T "$bin" | awk '$NF ~ /^wharf_/ {v = $(NF-1); gsub(/[()]/, "", v); print v}' | sort -u)
if [ "$needed" != "WHARF_0.3" ]; then
  echo "$bin needs symbol versions '$(echo $needed)'; a 0.3.0 binary needs WHARF_0.3 only"; exit 1
fi
out=$(LD_LIBRARY_PATH="$libdir" "$bin" "$work" 2>&1)
rc=$?
echo "$out"
if [ $rc -ne 0 ]; then
  echo "a binary built against the 0.3.0 header failed against this library (exit $rc)"; exit 1
fi
