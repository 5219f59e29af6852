#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A Rust crate built outside the source tree against an installed prefix, as rust/README.md
# says: a path dependency on a copy of rust/ (no ../build beside it), the library found
# through pkg-config only (no WHARF_LIB_DIR), and the app's own build.rs embedding the rpath
# from DEP_WHARF_LIB_DIR, so its binary runs without LD_LIBRARY_PATH. The program
# (tests/consumers/rust/) loads model.safetensors, updates, swaps and reads through a run.
# The prefix is then moved and the app built and run again from the moved prefix.
# usage: rust_consumer.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd); SRC=$(cd "$2" && pwd)
CARGO=${CARGO:-$(command -v cargo || echo "$HOME/.cargo/bin/cargo")}
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" >/dev/null
mkdir -p "$WORK/wharf"
cp -r "$SRC/rust/Cargo.toml" "$SRC/rust/build.rs" "$SRC/rust/README.md" "$SRC/rust/src" "$WORK/wharf/"
cp -r "$SRC/tests/consumers/rust" "$WORK/app"
cp "$SRC/tests/consumers/model.safetensors" "$WORK/"

build_and_run() { # prefix
  local pc out
  pc=$(dirname "$(find "$1" -name wharf.pc | head -n1)")
  (
    cd "$WORK/app"
    export PKG_CONFIG_PATH="$pc" CARGO_TARGET_DIR="$WORK/target"
    env -u WHARF_LIB_DIR -u LD_LIBRARY_PATH "$CARGO" build --offline --quiet
    # The binary itself, without cargo and without LD_LIBRARY_PATH: the rpath finds the library.
    out=$(env -u LD_LIBRARY_PATH "$WORK/target/debug/wharf-consumer" "$WORK/model.safetensors")
    echo "$out"
    [[ "$out" == *"generation 2: w = [5.0, 6.0, 7.0, 8.0]" ]] || { echo "rust_consumer.sh: unexpected output" >&2; exit 1; }
    # The rpath is the app's own, to the installed prefix.
    readelf -d "$WORK/target/debug/wharf-consumer" | grep -E "R(UN)?PATH" | grep -q "$1" || {
      echo "rust_consumer.sh: no rpath to $1 in the app" >&2
      exit 1
    }
    # It loads the installed copy, not the build tree's.
    if ldd "$WORK/target/debug/wharf-consumer" | grep -q "libwharf.so.1 => $BUILD/"; then
      echo "rust_consumer.sh: the app loaded libwharf from the build tree" >&2
      exit 1
    fi
  )
}
build_and_run "$WORK/prefix"
mv "$WORK/prefix" "$WORK/moved"
rm -rf "$WORK/target"
build_and_run "$WORK/moved"
echo "rust consumer: a crate with a path dependency, pkg-config, against an installed prefix (and after moving it): loaded, updated, swapped, ran"
