#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One version everywhere: CMakeLists.txt's project VERSION, wharf.h's WHARF_VERSION_* macros
# (and WHARF_VERSION_NUMBER's encoding), rust/Cargo.toml, the Rust sys constants, the Go
# binding's BindingVersion, the Java binding's Wharf.BINDING_VERSION, a CHANGELOG.md entry,
# and, given the built library, its file name (libwharf.so.X.Y.Z). The library's own
# wharf_version()/wharf_version_number() are checked against the header by c99_api.
# usage: check_versions.sh REPO_ROOT [libwharf.so]
set -euo pipefail
root=$1; lib=${2:-}
fail=0
versions=()
add() {  # add WHERE VERSION
  if [ -z "$2" ]; then echo "$1: no version found"; fail=1; return; fi
  versions+=("$2  $1")
}

add "CMakeLists.txt project(VERSION)" \
  "$(sed -n 's/^project(wharf VERSION \([0-9]*\.[0-9]*\.[0-9]*\).*/\1/p' "$root/CMakeLists.txt")"
h="$root/include/wharf/wharf.h"
hv="$(awk '/^#define WHARF_VERSION_MAJOR/ {a=$3} /^#define WHARF_VERSION_MINOR/ {b=$3} /^#define WHARF_VERSION_PATCH/ {c=$3} END {if (a != "" && b != "" && c != "") print a "." b "." c}' "$h")"
add "include/wharf/wharf.h WHARF_VERSION_*" "$hv"
grep -q '^#define WHARF_VERSION_NUMBER (WHARF_VERSION_MAJOR \* 10000 + WHARF_VERSION_MINOR \* 100 + WHARF_VERSION_PATCH)$' "$h" ||
  { echo "wharf.h: WHARF_VERSION_NUMBER is not major * 10000 + minor * 100 + patch"; fail=1; }
add "rust/Cargo.toml" "$(awk '/^\[package\]/ {p=1; next} /^\[/ {p=0} p && /^version *=/ {gsub(/[" ]/, "", $0); sub(/^version=/, ""); print; exit}' "$root/rust/Cargo.toml")"
add "rust/src/sys.rs WHARF_VERSION_*" "$(awk '/pub const WHARF_VERSION_MAJOR: u32 =/ {a=$NF} /pub const WHARF_VERSION_MINOR: u32 =/ {b=$NF} /pub const WHARF_VERSION_PATCH: u32 =/ {c=$NF} END {gsub(/;/, "", a); gsub(/;/, "", b); gsub(/;/, "", c); if (a != "" && b != "" && c != "") print a "." b "." c}' "$root/rust/src/sys.rs")"
add "go/wharf.go BindingVersion" "$(sed -n 's/^const BindingVersion = "\([0-9.]*\)".*/\1/p' "$root/go/wharf.go")"
add "java Wharf.BINDING_VERSION" "$(sed -n 's/.*static final String BINDING_VERSION = "\([0-9.]*\)".*/\1/p' "$root/java/src/main/java/dev/wharf/Wharf.java")"
if [ -n "$lib" ]; then
  real=$(basename "$(readlink -f "$lib")")
  add "$real (the built library's file name)" "$(printf '%s\n' "$real" | sed -n 's/^libwharf\.so\.\([0-9]*\.[0-9]*\.[0-9]*\)$/\1/p')"
fi
grep -Eq "^## ${hv//./\\.}( |$)" "$root/CHANGELOG.md" || { echo "CHANGELOG.md: no '## $hv' entry"; fail=1; }

printf '%s\n' "${versions[@]}"
distinct=$(printf '%s\n' "${versions[@]}" | awk '{print $1}' | sort -u | wc -l)
if [ "$distinct" -ne 1 ]; then echo "versions disagree"; fail=1; fi
[ "$fail" -eq 0 ] || exit 1
echo "one version everywhere: $hv"
