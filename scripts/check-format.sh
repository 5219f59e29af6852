#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The C++ and CUDA sources follow .clang-format (Google style at 120 columns, the style the
# code was written in): src/, tools/, bench/ and the C++ tests. Left out on purpose: the
# public C header and its copies (include/wharf/wharf.h, go/wharf.h, the frozen headers under
# tests/abi/), hand-aligned for readers of the ABI, and generated or vendored test data.
# clang-format's output differs between its major versions: this checks with the version the
# build machines install (scripts/install-deps.sh; Debian 12: clang-format 14).
#   scripts/check-format.sh         lists the files that differ; exit 1 if any
#   scripts/check-format.sh --fix   formats them in place
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CF=${CLANG_FORMAT:-clang-format}
command -v "$CF" >/dev/null || { echo "check-format: $CF not found (apt-get install clang-format)" >&2; exit 1; }
mapfile -t files < <(git ls-files 'src/*.cpp' 'src/*.h' 'src/*.cu' 'tools/*.cpp' 'tools/*.h' 'bench/*.cpp' 'bench/*.cu' \
  'bench/*.h' 'tests/unit/*.cpp' 'tests/unit/*.h' 'tests/gpu/*.cpp' 'tests/gpu/*.cu' 'tests/gpu/*.h' \
  'tests/gpu/fakes/*.cpp' 'tests/gpu/fakes/*.c' 'tests/fuzz/*.cpp' 'tests/common/*.h' 'tests/unit-libs/*.c' \
  'tests/unit-libs/*.cpp' 2>/dev/null)
[ ${#files[@]} -gt 0 ] || { echo "check-format: no sources found" >&2; exit 1; }
if [ "${1:-}" = --fix ]; then
  "$CF" -i --style=file "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! "$CF" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} of ${#files[@]} files differ from .clang-format (scripts/check-format.sh --fix formats them):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files follow .clang-format ($("$CF" --version | sed 's/.*version //'))"
