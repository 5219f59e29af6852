#!/usr/bin/env bash
# The dynamic symbol table exports exactly wharf_* functions (nothing from C++, cudart or
# the STL leaks), the SONAME carries the ABI major, and each symbol resolves through dlopen.
set -euo pipefail
lib=$1; prog=$2
syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)
bad=$(printf '%s\n' "$syms" | grep -v '^wharf_' | grep -v '^WHARF_1$' || true)
if [ -n "$bad" ]; then
  echo "unexpected exported symbols:"; printf '%s\n' "$bad"; exit 1
fi
soname=$(objdump -p "$lib" | awk '/SONAME/{print $2}')
case "$soname" in libwharf.so.[0-9]*) ;; *) echo "bad SONAME '$soname'"; exit 1;; esac
ver=$(nm -D --defined-only "$lib" | grep -c '@@WHARF_1' || true)
[ "$ver" -gt 0 ] || { echo "symbols are not versioned WHARF_1"; exit 1; }
n=$(printf '%s\n' "$syms" | grep -c '^wharf_')
echo "exports: $n wharf_* symbols, SONAME $soname"
# shellcheck disable=SC2086
"$prog" "$lib" $(printf '%s\n' "$syms" | grep '^wharf_')
