#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Each release's header is frozen in tests/abi/wharf-X.Y.Z.h as it ships (abi_old_header runs
# a program built against it). Until the release ships (CHANGELOG.md lists it as
# "## X.Y.Z (unreleased)"), the frozen copy must be the current include/wharf/wharf.h: copy it
# again after changing the header (as go/wharf.h). Once released, it never changes, and the
# header of that version must exist.
# usage: check_frozen_headers.sh SOURCE_DIR
set -euo pipefail
root=$1
fail=0
shopt -s nullglob
frozen=("$root"/tests/abi/wharf-*.h)
if [ ${#frozen[@]} -eq 0 ]; then echo "no frozen header in $root/tests/abi"; exit 1; fi
for f in "${frozen[@]}"; do
  v=$(basename "$f" .h); v=${v#wharf-}
  if grep -q "^## $v (unreleased)" "$root/CHANGELOG.md"; then
    if ! cmp -s "$f" "$root/include/wharf/wharf.h"; then
      echo "$f differs from include/wharf/wharf.h while $v is unreleased: cp include/wharf/wharf.h $f"
      diff "$root/include/wharf/wharf.h" "$f" | head -20
      fail=1
    fi
  fi
done
[ "$fail" -eq 0 ] || exit 1
echo "frozen headers: ${#frozen[@]} ($(for f in "${frozen[@]}"; do basename "$f"; done | paste -sd' ' -)), the unreleased one equal to wharf.h"
