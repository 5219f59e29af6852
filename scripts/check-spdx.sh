#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source file starts with its license: the line `SPDX-License-Identifier: Apache-2.0`
# as the first comment line (line 2 after a shebang), in the file's comment syntax.
#   scripts/check-spdx.sh                  lists the source files without it; exit 1 if any
#   scripts/check-spdx.sh --fix [FILE...]  inserts the line in place into the given files (by
#                                          default every source file without it); nothing else
#                                          in a file changes
# Source files: the files git tracks that are C, C++, CUDA, headers, SWIG, Go, Rust, Java,
# shell (also extensionless scripts with a #! line), Python, CMake or Makefiles. Not: test
# data and generated code (tests/data/models/: AOTInductor's output for the test model), the
# 0.3.0 header frozen as it was released (tests/abi/wharf-0.3.0.h), and go/wharf.h, a copy of
# include/wharf/wharf.h (refresh it with cp; go/header_test.go checks that they are equal).
# Outside a git checkout there is no list of tracked files: exit 77 (ctest: skipped).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
LINE='SPDX-License-Identifier: Apache-2.0'

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check-spdx: $ROOT is not a git checkout: no list of tracked files to check"
  exit 77
fi

# The comment that carries the line in `file`, or nothing for a file that is not source.
comment_for() {
  local f=$1
  case "$f" in
    go/wharf.h | tests/abi/wharf-0.3.0.h | tests/data/models/*) return ;;
    *.c | *.h | *.i) echo "/* $LINE */" ;;
    *.cpp | *.cc | *.cu | *.cuh | *.hpp | *.go | *.rs | *.java) echo "// $LINE" ;;
    *.sh | *.py | *.cmake | *.cmake.in | CMakeLists.txt | */CMakeLists.txt | Makefile | */Makefile) echo "# $LINE" ;;
    *) # Another extension: not source. No extension: a script when it starts with #!.
       case "${f##*/}" in *.*) return ;; esac
       if [ "$(head -c 2 "$f")" = '#!' ]; then echo "# $LINE"; fi ;;
  esac
}

# Whether the line is where it belongs: line 1, or line 2 after a shebang; any comment style.
has_line() {
  local f=$1 n=1
  [ "$(head -c 2 "$f")" = '#!' ] && n=2
  sed -n "${n}p" "$f" | grep -qE "^(//|/\*|#) SPDX-License-Identifier: Apache-2\.0( \*/)?$"
}

missing=()
if [ "${1:-}" = --fix ] && [ $# -gt 1 ]; then
  missing=("${@:2}")
else
  while IFS= read -r f; do
    [ -f "$f" ] && [ -n "$(comment_for "$f")" ] && ! has_line "$f" && missing+=("$f")
  done < <(git ls-files)
fi

if [ "${1:-}" != --fix ]; then
  if [ ${#missing[@]} -gt 0 ]; then
    printf 'check-spdx: no "%s" line at the top of:\n' "$LINE" >&2
    printf '  %s\n' "${missing[@]}" >&2
    echo "check-spdx: add it with scripts/check-spdx.sh --fix FILE..." >&2
    exit 1
  fi
  echo "check-spdx: every source file carries $LINE"
  exit 0
fi

for f in "${missing[@]}"; do
  c=$(comment_for "$f")
  if [ -z "$c" ]; then echo "check-spdx: $f is not a source file this script knows; skipped" >&2; continue; fi
  if has_line "$f"; then continue; fi
  if [ "$(head -c 2 "$f")" = '#!' ]; then
    sed -i "1a $c" "$f"
  elif [ ! -s "$f" ]; then
    printf '%s\n' "$c" >"$f"
  elif [[ "$f" == *.go ]]; then
    # A blank line after it, so it never joins a package doc comment or a //go:build block.
    sed -i "1i $c\n" "$f"
  else
    sed -i "1i $c" "$f"
  fi
  echo "check-spdx: added to $f"
done
