#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The dynamic symbol table exports exactly wharf_* functions (nothing from C++, cudart or
# the STL leaks), each with a release's symbol version, the SONAME carries the ABI major, and
# each symbol resolves through dlopen.
set -euo pipefail
lib=$1; prog=$2
syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)
# Besides wharf_* functions, the table holds one absolute symbol per version node.
bad=$(printf '%s\n' "$syms" | grep -v '^wharf_' | grep -Ev '^WHARF_([0-9]+\.[0-9]+|EXPERIMENTAL)$' || true)
if [ -n "$bad" ]; then
  echo "unexpected exported symbols:"; printf '%s\n' "$bad"; exit 1
fi
soname=$(objdump -p "$lib" | awk '/SONAME/{print $2}')
case "$soname" in libwharf.so.[0-9]*) ;; *) echo "bad SONAME '$soname'"; exit 1;; esac
# Every function carries the version node of the release that added it (or the experimental
# one); abi_symbol_versions checks which node against wharf.h and wharf.map.
unversioned=$(nm -D --defined-only "$lib" | awk '$3 ~ /^wharf_/ && $3 !~ /@@WHARF_([0-9]+\.[0-9]+|EXPERIMENTAL)$/ {print $3}')
[ -z "$unversioned" ] || { echo "functions without a WHARF_<major>.<minor> or WHARF_EXPERIMENTAL version:"; echo "$unversioned"; exit 1; }
n=$(printf '%s\n' "$syms" | grep -c '^wharf_')
echo "exports: $n wharf_* symbols, SONAME $soname"
# shellcheck disable=SC2086
"$prog" "$lib" $(printf '%s\n' "$syms" | grep '^wharf_')
