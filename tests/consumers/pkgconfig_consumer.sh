#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# C programs built outside the source tree against an installed prefix, the way the README
# says: `pkg-config --cflags --libs wharf`: the README's example, and consumer.c, which loads
# model.safetensors, updates, swaps and reads the update back through a run. Then a copy of
# the prefix elsewhere, and the programs built again from the copy (wharf.pc is relocatable).
# usage: pkgconfig_consumer.sh PREFIX SOURCE_DIR (common.sh)
source "$(dirname "$0")/common.sh"
cp "$SRC/tests/abi/readme_example.c" "$WORK/app.c"
cp "$SRC/tests/consumers/consumer.c" "$SRC/tests/consumers/model.safetensors" "$WORK/"
cd "$WORK"
build_and_run() {  # prefix
  local pc="$1/lib/pkgconfig" libdir out
  [ -d "$pc" ] || pc=$(dirname "$(find "$1" -name wharf.pc | head -n1)")
  libdir=$(PKG_CONFIG_PATH="$pc" pkg-config --variable=libdir wharf)
  # shellcheck disable=SC2046
  cc -std=c99 -Wall -Werror app.c -o app $(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs wharf)
  LD_LIBRARY_PATH="$libdir" ./app
  # shellcheck disable=SC2046
  cc -std=c99 -Wall -Wextra -Werror consumer.c -o consumer $(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs wharf)
  out=$(LD_LIBRARY_PATH="$libdir" ./consumer model.safetensors)
  echo "$out"
  LD_LIBRARY_PATH="$libdir" loads_from ./consumer "$1"
  [[ "$out" == *"generation 2: w = [5, 6, 7, 8]" ]] || fail "unexpected output"
}
build_and_run "$PREFIX"
cp -a "$PREFIX" "$WORK/moved"
build_and_run "$WORK/moved"
echo "pkg-config consumer: built and ran against $PREFIX, and against a copy elsewhere"
