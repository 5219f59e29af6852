#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# C programs built outside the source tree against an installed prefix, the way the README
# says: `pkg-config --cflags --libs wharf`: the README's example, and consumer.c, which loads
# model.safetensors, updates, swaps and reads the update back through a run. The prefix is
# then moved, and the programs built again from the moved prefix (wharf.pc is relocatable).
# usage: pkgconfig_consumer.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd); SRC=$(cd "$2" && pwd)
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" >/dev/null
cp "$SRC/tests/abi/readme_example.c" "$WORK/app.c"
cp "$SRC/tests/consumers/consumer.c" "$SRC/tests/consumers/model.safetensors" "$WORK/"
cd "$WORK"
build_and_run() {  # prefix
  local pc="$1/lib/pkgconfig"
  [ -d "$pc" ] || pc=$(dirname "$(find "$1" -name wharf.pc | head -n1)")
  # shellcheck disable=SC2046
  cc -std=c99 -Wall -Werror app.c -o app $(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs wharf)
  LD_LIBRARY_PATH="$(PKG_CONFIG_PATH="$pc" pkg-config --variable=libdir wharf)" ./app
  # shellcheck disable=SC2046
  cc -std=c99 -Wall -Wextra -Werror consumer.c -o consumer $(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs wharf)
  local out
  out=$(LD_LIBRARY_PATH="$(PKG_CONFIG_PATH="$pc" pkg-config --variable=libdir wharf)" ./consumer model.safetensors)
  echo "$out"
  [[ "$out" == *"generation 2: w = [5, 6, 7, 8]" ]] || { echo "pkgconfig_consumer.sh: unexpected output" >&2; exit 1; }
}
build_and_run "$WORK/prefix"
mv "$WORK/prefix" "$WORK/moved"
build_and_run "$WORK/moved"
echo "pkg-config consumer: built and ran against an installed prefix, and after moving it"
