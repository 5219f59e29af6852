#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the Go, Rust and Java binding tests against the built library, for each binding
# that exists in the tree, each followed by its consumer outside the source tree against an
# installed prefix (tests/consumers/<binding>_consumer.sh: a Go module, a Rust crate, a Java
# app with the installed jar, which java/test.sh has built). BUILD_DIR must be fully built
# (cmake --install installs the command-line program too).
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
for b in go rust java; do
  if [ -x "$ROOT/$b/test.sh" ]; then
    echo "== $b binding tests"
    bash "$ROOT/$b/test.sh" "$BUILD"
    echo "== $b consumer outside the tree, against an installed prefix"
    bash "$ROOT/tests/consumers/${b}_consumer.sh" "$BUILD" "$ROOT"
  fi
done
