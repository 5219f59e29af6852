#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A Java app built outside the source tree against an installed prefix: compiled with
# `javac -cp <prefix>/share/java/wharf.jar` and run with `java -cp wharf.jar:.` and nothing
# else (no -Dwharf.jni.path, no LD_LIBRARY_PATH): the jar extracts its native libraries at
# first use. The program (tests/consumers/java/) loads model.safetensors, updates, swaps and
# reads through a run. BUILD_DIR must hold the jar (java/build.sh BUILD_DIR, or make jar):
# `cmake --install` installs it when it is there.
# usage: java_consumer.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd); SRC=$(cd "$2" && pwd)
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" >/dev/null
JAR=$(find "$WORK/prefix" -path '*/share/java/wharf.jar' | head -n1)
if [ -z "$JAR" ]; then
  echo "java_consumer.sh: no share/java/wharf.jar in the installed prefix (build the jar first: java/build.sh $BUILD)" >&2
  exit 1
fi
[ -L "$JAR" ] && [ -f "$(dirname "$JAR")/$(readlink "$JAR")" ] || {
  echo "java_consumer.sh: $JAR is not a link to the versioned jar beside it" >&2
  exit 1
}
cp "$SRC/tests/consumers/java/ConsumerApp.java" "$SRC/tests/consumers/model.safetensors" "$WORK/"
cd "$WORK"
javac -Xlint:all -Werror -cp "$JAR" -d classes ConsumerApp.java
out=$(env -i PATH=/usr/bin:/bin java -cp "$JAR:classes" ConsumerApp model.safetensors)
echo "$out"
# The native libraries came out of the installed jar.
want="generation 2: w = [5.0, 6.0, 7.0, 8.0] (native library from jar:file:$(readlink -f "$JAR")!/native/linux-x86_64"
[[ "$out" == *"$want"* ]] || { echo "java_consumer.sh: expected output with: $want" >&2; exit 1; }
echo "java consumer: an app with the installed jar only: loaded, updated, swapped, ran"
