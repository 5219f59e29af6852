#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the Go, Rust and Java binding tests against the built library, for each binding
# that exists in the tree, then the release archive of BUILD_DIR (scripts/dist.sh, with the
# jar java/test.sh has built) unpacked into an empty folder, its sums checked, and the five
# consumers built outside the source tree against it: C (pkg-config), CMake, a Go module, a
# Rust crate, a Java app (tests/consumers/dist_consumers.sh). BUILD_DIR must be fully built
# (cmake --install installs the command-line program too).
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
for b in go rust java; do
  if [ -x "$ROOT/$b/test.sh" ]; then
    echo "== $b binding tests"
    bash "$ROOT/$b/test.sh" "$BUILD"
  fi
done
echo "== the release archive of $BUILD, unpacked, and the five consumers built against it"
bash "$ROOT/tests/consumers/dist_consumers.sh" "$BUILD" "$ROOT"
