#!/usr/bin/env bash
# Compares the built library with the committed libabigail baseline. abidiff's exit status
# is a bit field: bit 3 (8) = an incompatible change, which fails this test; bit 2 (4) =
# compatible changes (e.g. added functions), which pass and are listed.
set -uo pipefail
lib=$1; baseline=$2; headers=$3
if ! command -v abidiff >/dev/null; then
  echo "abidiff not installed (abigail-tools); run scripts/install-deps.sh"; exit 1
fi
if [ ! -f "$baseline" ]; then
  echo "no ABI baseline at $baseline; create one with 'make abi-baseline'"; exit 1
fi
abidiff --headers-dir2 "$headers" --drop-private-types --exported-interfaces-only "$baseline" "$lib" > /tmp/wharf-abidiff.$$ 2>&1
rc=$?
cat /tmp/wharf-abidiff.$$; rm -f /tmp/wharf-abidiff.$$
if [ $((rc & 1)) -ne 0 ]; then echo "abidiff failed to run (status $rc)"; exit 1; fi
if [ $((rc & 8)) -ne 0 ]; then echo "INCOMPATIBLE ABI change against $baseline (status $rc)"; exit 1; fi
echo "ABI compatible with the baseline (abidiff status $rc)"
