#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the Rust binding's checks against a built libwharf:
#   rust/test.sh BUILD_DIR      (BUILD_DIR holds libwharf.so; default: ../build)
# cargo fmt --check and clippy (when installed; default features and `experimental`),
# then cargo test --features experimental, all offline.
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
  "$CARGO" clippy --offline --all-targets --features experimental -- -D warnings
else
  "$CARGO" check --offline --all-targets
  echo "rust/test.sh: clippy is not installed; skipping it"
fi
# No LD_LIBRARY_PATH: build.rs embeds an rpath to BUILD_DIR.
# With the experimental tier (models, index access): every test, those of the default
# features included.
env -u LD_LIBRARY_PATH "$CARGO" test --offline --features experimental
# The crate as a registry would serve it: `cargo package` packs what Cargo.toml's include
# list names and builds the packed crate on its own (its build.rs with no repository beside
# it, no WHARF_LIB_DIR, no pkg-config path). --allow-dirty: a work tree under test may have
# uncommitted changes. The tests must stay out of it (they need the repository).
list=$(env -u WHARF_LIB_DIR -u PKG_CONFIG_PATH "$CARGO" package --offline --allow-dirty --quiet --list)
for f in Cargo.toml build.rs README.md LICENSE NOTICE src/lib.rs src/sys.rs; do
  grep -qx "$f" <<<"$list" || { echo "rust/test.sh: cargo package leaves out $f" >&2; exit 1; }
done
if grep -E '^(tests/|test\.sh)' <<<"$list"; then echo "rust/test.sh: cargo package packs the tests above" >&2; exit 1; fi
env -u WHARF_LIB_DIR -u PKG_CONFIG_PATH "$CARGO" package --offline --allow-dirty --quiet
# The packed crate used from another crate outside the tree, against the release archive:
# tests/consumers/rust_consumer.sh (scripts/run-binding-tests.sh runs it after this script).
