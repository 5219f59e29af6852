#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A binary built against 0.1.0 (tests/abi/old_header_test.c compiled with wharf-0.1.0.h and
# linked like a 0.1.0 binary, needing symbol version WHARF_1) must be refused by the dynamic
# loader against the library built now, never run with misread structs (CHANGELOG.md, 0.3.0).
# usage: check_old_binary.sh OLD_BINARY LIBRARY_DIR WORK_DIR
set -uo pipefail
bin=$1; libdir=$2; work=$3
if ! objdump -p "$bin" | grep -q 'WHARF_1'; then
  echo "$bin does not need symbol version WHARF_1: it is not linked like a 0.1.0 binary"; exit 1
fi
out=$(LD_LIBRARY_PATH="$libdir" "$bin" "$work" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
  echo "a 0.1.0 binary ran against this library (exit 0); it must be refused at load:"; echo "$out"; exit 1
fi
if ! printf '%s\n' "$out" | grep -q "version \`WHARF_1' not found"; then
  echo "a 0.1.0 binary failed (exit $rc) without the loader's refusal:"; echo "$out"; exit 1
fi
echo "the 0.1.0 binary is refused at load, as 0.3.0 intends: $(printf '%s\n' "$out" | head -1)"
