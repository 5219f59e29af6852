#!/usr/bin/env bash
# Runs the Rust binding's checks against a built libwharf:
#   rust/test.sh BUILD_DIR      (BUILD_DIR holds libwharf.so; default: ../build)
# cargo fmt --check and clippy (when installed), then cargo test, all offline.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$HERE/../build}" && pwd)
if [ ! -e "$BUILD/libwharf.so" ]; then
  echo "rust/test.sh: $BUILD/libwharf.so not found; build the library first (make build)" >&2
  exit 1
fi
CARGO=${CARGO:-$(command -v cargo || echo "$HOME/.cargo/bin/cargo")}
export WHARF_LIB_DIR="$BUILD"
export CARGO_TARGET_DIR="$BUILD/rust-target"
cd "$HERE"
echo "rust: $("$CARGO" --version)"
if "$CARGO" fmt --version >/dev/null 2>&1; then
  "$CARGO" fmt --check
fi
if "$CARGO" clippy --version >/dev/null 2>&1; then
  "$CARGO" clippy --offline --all-targets -- -D warnings
else
  echo "rust/test.sh: clippy is not installed; skipping it"
fi
# No LD_LIBRARY_PATH: build.rs embeds an rpath to BUILD_DIR.
env -u LD_LIBRARY_PATH "$CARGO" test --offline
