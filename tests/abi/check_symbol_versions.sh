#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every function and type of wharf.h says the release that added it ("Since 0.N." in the comment just
# above it; "Since 0.N (experimental)." in the experimental tier), and carries that release's
# symbol version: wharf.map lists it in node WHARF_0.N (WHARF_EXPERIMENTAL for the tier), and
# the built library exports it as name@@WHARF_0.N. Nothing is exported that the header does
# not declare, and no release is newer than the header's own version.
# usage: check_symbol_versions.sh include/wharf/wharf.h src/api/wharf.map libwharf.so
set -euo pipefail
header=$1; map=$2; lib=$3
fail=0
err() { echo "$*"; fail=1; }

# name since-version tier  (from the header)
decls=$(awk '
  /^#if defined\(WHARF_EXPERIMENTAL\)/ { in_exp = 1 }
  {
    line = $0
    is_comment = (line ~ /^[ \t]*(\/\*|\*|\/\/)/)
    if (is_comment || line ~ /WHARF_API/) {
      if (match(line, /Since [0-9]+\.[0-9]+/)) {
        since = substr(line, RSTART + 6, RLENGTH - 6)
        since_exp = (substr(line, RSTART + RLENGTH, 15) ~ /^ \(experimental\)/)
      }
    }
    if (line ~ /^WHARF_API/) {
      if (!match(line, /wharf_[a-z0-9_]+\(/)) { print "?? unparsed: " line; next }
      name = substr(line, RSTART, RLENGTH - 1)
      printf "%s %s %s %s\n", name, (since == "" ? "-" : since), (in_exp ? "experimental" : "stable"), (since_exp ? "tagged" : "untagged")
      since = ""; since_exp = 0
      next
    }
    if (!is_comment && line !~ /^[ \t]*$/) { since = ""; since_exp = 0 }
  }' "$header")
if printf '%s\n' "$decls" | grep -q '^??'; then err "$(printf '%s\n' "$decls" | grep '^??')"; fi

# Every type (struct, enum, handle, callback typedef) says its release too, "(experimental)"
# in the tier.
types=$(awk '
  /^#if defined\(WHARF_EXPERIMENTAL\)/ { in_exp = 1 }
  {
    line = $0
    if (line ~ /^[ \t]*(\/\*|\*|\/\/)/) {
      if (match(line, /Since [0-9]+\.[0-9]+/)) {
        since = substr(line, RSTART + 6, RLENGTH - 6)
        tagged = (substr(line, RSTART + RLENGTH, 15) ~ /^ \(experimental\)/)
      }
      next
    }
    if (line ~ /^typedef /) {
      if (match(line, /\(\*wharf_[a-z0-9_]+/)) name = substr(line, RSTART + 2, RLENGTH - 2)
      else { match(line, /wharf_[a-z0-9_]+/); name = substr(line, RSTART, RLENGTH) }
      printf "%s %s %s %s\n", name, (since == "" ? "-" : since), (in_exp ? "experimental" : "stable"), (tagged ? "tagged" : "untagged")
    }
    if (line !~ /^[ \t]*$/) { since = ""; tagged = 0 }
  }' "$header")
while read -r name since tier tagged; do
  [ -n "$name" ] || continue
  if [ "$since" = "-" ]; then err "type $name: no 'Since X.Y.' in the comment above it"; continue; fi
  if [ "$tier" = experimental ] && [ "$tagged" != tagged ]; then err "type $name: in the experimental tier, tag it 'Since $since (experimental).'"; fi
  if [ "$tier" = stable ] && [ "$tagged" = tagged ]; then err "type $name: tagged experimental outside the experimental tier"; fi
done <<< "$types"

# Every function returning a status is WHARF_NODISCARD (an ignored status warns).
while read -r line; do
  [ -n "$line" ] && err "returns a status without WHARF_NODISCARD: $line"
done <<< "$(grep -E '^WHARF_API +wharf_status *\*' "$header" || true)"

major=$(awk '/#define WHARF_VERSION_MAJOR/ {print $3}' "$header")
minor=$(awk '/#define WHARF_VERSION_MINOR/ {print $3}' "$header")

# name node  (from the version script)
nodes=$(awk '
  /^WHARF_[A-Za-z0-9_.]+ *\{/ { node = $1; sub(/\{.*/, "", node); next }
  /^[ \t]+wharf_[a-z0-9_]+;/ { n = $1; sub(/;.*/, "", n); print n, node }' "$map")
dups=$(printf '%s\n' "$nodes" | awk '{print $1}' | sort | uniq -d)
[ -z "$dups" ] || err "listed in more than one node of $map: $dups"

# name node  (from the library)
exported=$(nm -D --defined-only "$lib" | awk '$3 ~ /^wharf_/ {split($3, a, "@@"); print a[1], a[2]}')

n=0
while read -r name since tier tagged; do
  n=$((n + 1))
  if [ "$since" = "-" ]; then err "$name: no 'Since X.Y.' in the comment above its declaration"; continue; fi
  smaj=${since%%.*}; smin=${since#*.}
  if [ "$smaj" -gt "$major" ] || { [ "$smaj" -eq "$major" ] && [ "$smin" -gt "$minor" ]; }; then
    err "$name: Since $since is newer than the header ($major.$minor)"
  fi
  if [ "$tier" = experimental ]; then
    want=WHARF_EXPERIMENTAL
    [ "$tagged" = tagged ] || err "$name: in the experimental tier, tag it 'Since $since (experimental).'"
  else
    want=WHARF_$since
    [ "$tagged" = untagged ] || err "$name: tagged experimental outside the experimental tier"
  fi
  in_map=$(printf '%s\n' "$nodes" | awk -v n="$name" '$1 == n {print $2}')
  [ "$in_map" = "$want" ] || err "$name: wharf.map lists it in '${in_map:-no node}', expected $want (Since $since, $tier)"
  in_lib=$(printf '%s\n' "$exported" | awk -v n="$name" '$1 == n {print $2}')
  [ "$in_lib" = "$want" ] || err "$name: the library exports it as '${in_lib:-nothing}', expected $want"
done <<< "$decls"

# Nothing exported or listed that the header does not declare.
for name in $(printf '%s\n' "$exported" | awk '{print $1}') $(printf '%s\n' "$nodes" | awk '{print $1}'); do
  printf '%s\n' "$decls" | awk -v n="$name" '$1 == n {found = 1} END {exit !found}' ||
    err "$name: exported or listed in wharf.map but not declared in wharf.h"
done

[ "$fail" -eq 0 ] || exit 1
echo "symbol versions: $(printf '%s\n' "$types" | grep -c .) types tagged 'Since X.Y.'; $n functions, each tagged 'Since X.Y.' and exported with its release's node ($(printf '%s\n' "$decls" | awk '{print ($3 == "experimental" ? "WHARF_EXPERIMENTAL" : "WHARF_" $2)}' | sort | uniq -c | awk '{printf "%s%s %s", sep, $2, $1; sep = ", "}'))"
