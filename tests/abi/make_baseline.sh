#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates the committed libabigail baseline (abi/libwharf.abi) from a built library,
# leaving out the experimental tier. Only on purpose, with a CHANGELOG.md entry.
# usage: tests/abi/make_baseline.sh BUILD_DIR   (run from the repository root)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: make_baseline.sh BUILD_DIR}
supp=$(mktemp)
trap 'rm -f "$supp"' EXIT
bash "$root/tests/abi/experimental_abignore.sh" "$root/src/api/wharf.map" > "$supp"
abidw --no-corpus-path --headers-dir "$root/include/wharf" --drop-private-types --exported-interfaces-only \
  --suppressions "$supp" --out-file "$root/abi/libwharf.abi" "$build/libwharf.so"
echo "abi/libwharf.abi regenerated from $build/libwharf.so (experimental tier left out): say why in CHANGELOG.md"
