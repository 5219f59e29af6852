#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A Java app built outside the source tree against an installed prefix: compiled with
# `javac -cp <prefix>/share/java/wharf.jar` and run with `java -cp wharf.jar:.` and nothing
# else (no -Dwharf.jni.path, no LD_LIBRARY_PATH): the jar extracts its native libraries at
# first use. The program (tests/consumers/java/) loads model.safetensors, updates, swaps and
# reads through a run. The prefix must hold the jar (`cmake --install` installs it when
# java/build.sh BUILD_DIR made it; the release archive always has it).
# usage: java_consumer.sh PREFIX SOURCE_DIR (common.sh)
source "$(dirname "$0")/common.sh"
JAR=$(find "$PREFIX" -path '*/share/java/wharf.jar' | head -n1)
[ -n "$JAR" ] || fail "no share/java/wharf.jar in $PREFIX (build the jar before installing: java/build.sh BUILD_DIR)"
[ -L "$JAR" ] && [ -f "$(dirname "$JAR")/$(readlink "$JAR")" ] || fail "$JAR is not a link to the versioned jar beside it"
cp "$SRC/tests/consumers/java/ConsumerApp.java" "$SRC/tests/consumers/model.safetensors" "$WORK/"
cd "$WORK"
javac -Xlint:all -Werror -cp "$JAR" -d classes ConsumerApp.java
out=$(env -i PATH=/usr/bin:/bin java -cp "$JAR:classes" ConsumerApp model.safetensors)
echo "$out"
# The native libraries came out of the installed jar.
want="generation 2: w = [5.0, 6.0, 7.0, 8.0] (native library from jar:file:$(readlink -f "$JAR")!/native/linux-x86_64"
[[ "$out" == *"$want"* ]] || fail "expected output with: $want"
echo "java consumer: an app with the jar of $PREFIX only: loaded, updated, swapped, ran"
