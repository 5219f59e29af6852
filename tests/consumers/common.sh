# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/consumers/*_consumer.sh: each builds a program outside the source tree
# against an installed (or unpacked) prefix, which it only reads.
#   usage: <lang>_consumer.sh PREFIX SOURCE_DIR
# PREFIX: `cmake --install BUILD --prefix PREFIX`, or the folder of an unpacked release
# archive (tests/consumers/dist_consumers.sh runs all five against `make dist`'s archive).
set -euo pipefail
if [ $# -ne 2 ] || [ ! -f "$1/include/wharf/wharf.h" ]; then
  echo "usage: $(basename "$0") PREFIX SOURCE_DIR   (PREFIX: an installed Wharf, with include/wharf/wharf.h)" >&2
  exit 2
fi
PREFIX=$(cd "$1" && pwd); SRC=$(cd "$2" && pwd)
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
ME=$(basename "$0")
fail() { echo "$ME: $*" >&2; exit 1; }
# Programs find the library through what they were built with (rpath), never through this.
unset LD_LIBRARY_PATH

# The program loads libwharf.so.1 from the given prefix, not from a build tree or a system
# copy.
loads_from() { # PROGRAM PREFIX
  local lib
  lib=$(ldd "$1" | awk '/libwharf\.so\.1 =>/ {print $3}')
  case "$(readlink -f "$lib")" in
    "$(readlink -f "$2")"/*) ;;
    *) fail "$1 loads libwharf.so.1 from '$lib', not from $2" ;;
  esac
}
