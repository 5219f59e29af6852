#!/usr/bin/env bash
# Runs the Go, Rust and Java binding tests against the built library, for each binding
# that exists in the tree.
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
for b in go rust java; do
  if [ -x "$ROOT/$b/test.sh" ]; then
    echo "== $b binding tests"
    bash "$ROOT/$b/test.sh" "$ROOT/$BUILD"
  fi
done
