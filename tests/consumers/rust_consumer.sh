#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A Rust crate built outside the source tree against an installed prefix, as rust/README.md
# says: a path dependency on the wharf crate as `cargo package` packs it (the .crate a
# registry would serve, unpacked: no repository and no ../build beside it), the library
# found through pkg-config only (no WHARF_LIB_DIR), and the app's own build.rs embedding the
# rpath from DEP_WHARF_LIB_DIR, so its binary runs without LD_LIBRARY_PATH. The program
# (tests/consumers/rust/) loads model.safetensors, updates, swaps and reads through a run.
# Then the same against a copy of the prefix elsewhere.
# usage: rust_consumer.sh PREFIX SOURCE_DIR (common.sh)
source "$(dirname "$0")/common.sh"
CARGO=${CARGO:-$(command -v cargo || echo "$HOME/.cargo/bin/cargo")}
export CARGO_TARGET_DIR="$WORK/target"
unset WHARF_LIB_DIR
# The crate as published (rust/test.sh checks that `cargo package` verifies it).
(cd "$SRC/rust" && "$CARGO" package --offline --allow-dirty --no-verify --quiet)
mkdir -p "$WORK/crate"
tar -xzf "$WORK"/target/package/wharf-*.crate -C "$WORK/crate"
mv "$WORK"/crate/wharf-* "$WORK/wharf"
cp -r "$SRC/tests/consumers/rust" "$WORK/app"
cp "$SRC/tests/consumers/model.safetensors" "$WORK/"

build_and_run() { # prefix
  local pc out
  pc=$(dirname "$(find "$1" -name wharf.pc | head -n1)")
  (
    cd "$WORK/app"
    export PKG_CONFIG_PATH="$pc"
    "$CARGO" build --offline --quiet
    # The binary itself, without cargo: the rpath finds the library.
    out=$("$WORK/target/debug/wharf-consumer" "$WORK/model.safetensors")
    echo "$out"
    [[ "$out" == *"generation 2: w = [5.0, 6.0, 7.0, 8.0]" ]] || fail "unexpected output"
    # The rpath is the app's own, to the prefix, and the prefix's copy is what it loads.
    readelf -d "$WORK/target/debug/wharf-consumer" | grep -E "R(UN)?PATH" | grep "$1" >/dev/null ||
      fail "no rpath to $1 in the app"
    loads_from "$WORK/target/debug/wharf-consumer" "$1"
  )
}
build_and_run "$PREFIX"
# Cargo reruns both build scripts when PKG_CONFIG_PATH changes (rerun-if-env-changed).
cp -a "$PREFIX" "$WORK/moved"
build_and_run "$WORK/moved"
echo "rust consumer: the packaged crate by path, pkg-config, against $PREFIX (and a copy elsewhere): loaded, updated, swapped, ran"
