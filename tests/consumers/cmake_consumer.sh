#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A CMake project built outside the source tree against an installed prefix with
# find_package(wharf) (tests/consumers/cmake/ and consumer.c): it loads model.safetensors,
# updates, swaps and reads the update back through a run. No LD_LIBRARY_PATH: CMake gives the
# program an rpath to the imported library.
# usage: cmake_consumer.sh PREFIX SOURCE_DIR (common.sh)
source "$(dirname "$0")/common.sh"
cp -r "$SRC/tests/consumers/cmake" "$WORK/app"
cp "$SRC/tests/consumers/consumer.c" "$WORK/app/"
cp "$SRC/tests/consumers/model.safetensors" "$WORK/"
cmake -S "$WORK/app" -B "$WORK/app/build" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$WORK/app/build" >/dev/null
out=$("$WORK/app/build/consumer" "$WORK/model.safetensors")
echo "$out"
loads_from "$WORK/app/build/consumer" "$PREFIX"
[[ "$out" == *"generation 2: w = [5, 6, 7, 8]" ]] || fail "unexpected output"
echo "cmake consumer: find_package(wharf) against $PREFIX: loaded, updated, swapped, ran"
