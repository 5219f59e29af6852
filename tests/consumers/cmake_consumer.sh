#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A CMake project built outside the source tree against an installed prefix with
# find_package(wharf) (tests/consumers/cmake/ and consumer.c): it loads model.safetensors,
# updates, swaps and reads the update back through a run. No LD_LIBRARY_PATH: CMake gives the program an rpath
# to the imported library.
# usage: cmake_consumer.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd); SRC=$(cd "$2" && pwd)
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" >/dev/null
cp -r "$SRC/tests/consumers/cmake" "$WORK/app"
cp "$SRC/tests/consumers/consumer.c" "$WORK/app/"
cp "$SRC/tests/consumers/model.safetensors" "$WORK/"
cmake -S "$WORK/app" -B "$WORK/app/build" -DCMAKE_PREFIX_PATH="$WORK/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$WORK/app/build" >/dev/null
out=$(env -u LD_LIBRARY_PATH "$WORK/app/build/consumer" "$WORK/model.safetensors")
echo "$out"
# The installed library, not the build tree's.
if ldd "$WORK/app/build/consumer" | grep -q "libwharf.so.1 => $BUILD/"; then
  echo "cmake_consumer.sh: the program loaded libwharf from the build tree" >&2
  exit 1
fi
[[ "$out" == *"generation 2: w = [5, 6, 7, 8]" ]] || { echo "cmake_consumer.sh: unexpected output" >&2; exit 1; }
echo "cmake consumer: find_package(wharf) against an installed prefix: loaded, updated, swapped, ran"
