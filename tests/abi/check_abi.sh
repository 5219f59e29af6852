#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compares the built library with the committed libabigail baseline, leaving out the
# experimental tier (functions of node WHARF_EXPERIMENTAL in wharf.map, which may change in
# any release). abidiff's exit status is a bit field: bit 3 (8) = an incompatible change,
# which fails this test; bit 2 (4) = compatible changes (e.g. added functions), which pass
# and are listed. The baseline itself must not hold experimental functions (regenerate it
# with tests/abi/make_baseline.sh).
# usage: check_abi.sh libwharf.so abi/libwharf.abi include/wharf [src/api/wharf.map]
set -uo pipefail
lib=$1; baseline=$2; headers=$3
map=${4:-$(cd "$(dirname "$0")/../.." && pwd)/src/api/wharf.map}
if ! command -v abidiff >/dev/null; then
  echo "abidiff not installed (abigail-tools); run scripts/install-deps.sh"; exit 1
fi
if [ ! -f "$baseline" ]; then
  echo "no ABI baseline at $baseline; create one with 'bash tests/abi/make_baseline.sh BUILD_DIR'"; exit 1
fi
if grep -q "version='WHARF_EXPERIMENTAL'" "$baseline"; then
  echo "$baseline holds experimental functions:"
  grep -o "elf-symbol name='[a-z0-9_]*' version='WHARF_EXPERIMENTAL'" "$baseline" | sed "s/elf-symbol name='\([a-z0-9_]*\)'.*/  \1/"
  echo "the experimental tier stays out of the baseline: regenerate it with 'bash tests/abi/make_baseline.sh BUILD_DIR'"
  exit 1
fi
supp=$(mktemp)
out=$(mktemp)
trap 'rm -f "$supp" "$out"' EXIT
bash "$(dirname "$0")/experimental_abignore.sh" "$map" > "$supp"
abidiff --headers-dir2 "$headers" --drop-private-types --exported-interfaces-only --suppressions "$supp" \
  "$baseline" "$lib" > "$out" 2>&1
rc=$?
cat "$out"
if [ $((rc & 1)) -ne 0 ]; then echo "abidiff failed to run (status $rc)"; exit 1; fi
if [ $((rc & 8)) -ne 0 ]; then echo "INCOMPATIBLE ABI change against $baseline (status $rc)"; exit 1; fi
echo "ABI compatible with the baseline, experimental tier left out (abidiff status $rc)"
