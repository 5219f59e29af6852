#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Java binding against a built libwharf and runs its JUnit 4 tests.
#
#   java/test.sh BUILD_DIR
#
# BUILD_DIR is a CMake build folder holding libwharf.so. Everything this script makes goes
# under BUILD_DIR/java: the SWIG output (gen/), the JNI library (libwharfjni.so), the
# compiled classes and the API docs (javadoc/). Needs swig, gcc, a JDK (javac found on
# PATH, or JAVA_HOME) and Debian's JUnit 4 and Hamcrest jars (override with JUNIT_JAR /
# HAMCREST_JAR). The last line printed is "N passed, N failed"; the exit status is non-zero
# on any failure.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "$1" && pwd)
if [ ! -e "$BUILD/libwharf.so" ]; then
  echo "error: $BUILD/libwharf.so not found; build the library first:" >&2
  echo "  cmake -S $ROOT -B $BUILD -DWHARF_WITH_CUDA=OFF && cmake --build $BUILD -j2" >&2
  exit 2
fi

# --- tools ------------------------------------------------------------------------------
if [ -z "${JAVA_HOME:-}" ] || [ ! -x "$JAVA_HOME/bin/javac" ]; then
  JAVAC_PATH=$(command -v javac || true)
  if [ -z "$JAVAC_PATH" ]; then
    echo "error: javac not found (install a JDK, e.g. openjdk-17-jdk-headless)" >&2
    exit 2
  fi
  JAVA_HOME=$(dirname "$(dirname "$(readlink -f "$JAVAC_PATH")")")
fi
JAVAC="$JAVA_HOME/bin/javac"
JAVA="$JAVA_HOME/bin/java"
for tool in swig gcc; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found" >&2; exit 2; }
done
first_existing() {
  for f in "$@"; do
    if [ -f "$f" ]; then echo "$f"; return 0; fi
  done
  return 1
}
JUNIT_JAR=${JUNIT_JAR:-$(first_existing /usr/share/java/junit4.jar /usr/share/java/junit4-*.jar || true)}
HAMCREST_JAR=${HAMCREST_JAR:-$(first_existing /usr/share/java/hamcrest-core.jar /usr/share/java/hamcrest.jar \
  /usr/share/java/hamcrest-all.jar || true)}
if [ -z "$JUNIT_JAR" ] || [ -z "$HAMCREST_JAR" ]; then
  echo "error: JUnit 4 / Hamcrest jars not found in /usr/share/java (apt-get install junit4)," \
       "or set JUNIT_JAR and HAMCREST_JAR" >&2
  exit 2
fi

# The JNI library, the classes and the jar (java/build.sh).
bash "$ROOT/java/build.sh" "$BUILD"
OUT="$BUILD/java"
JAR="$OUT/wharf.jar"
rm -rf "$OUT/test-classes" && mkdir -p "$OUT/test-classes"

# No path of the build tree may reach the JNI library's RUNPATH (it would be wrong everywhere
# else): only $ORIGIN.
runpath=$(readelf -d "$OUT/libwharfjni.so" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
if [ "$runpath" != '$ORIGIN' ]; then
  echo "error: libwharfjni.so has RUNPATH/RPATH '$runpath', expected only \$ORIGIN" >&2
  exit 1
fi

# A library that exists but cannot be loaded because a library it needs is gone (as when
# libwharf.so.1 is missing), for the loader's error-message test.
BROKEN="$OUT/broken"
rm -rf "$BROKEN" && mkdir -p "$BROKEN"
printf 'int wharf_gone(void) { return 0; }\n' > "$BROKEN/gone.c"
printf 'int wharf_gone(void);\nint wharf_uses_gone(void) { return wharf_gone(); }\n' > "$BROKEN/broken.c"
gcc -shared -fPIC -o "$BROKEN/libgone.so" "$BROKEN/gone.c"
gcc -shared -fPIC -o "$BROKEN/libbroken.so" "$BROKEN/broken.c" -L"$BROKEN" -lgone
rm "$BROKEN/libgone.so"

# The tests live in package dev.wharf (they reach package-private code), which the jar
# seals: they run against a copy of the jar whose manifest does not seal it, the same classes
# and native libraries. SealingTest checks the real jar ($JAR) in a child JVM.
TEST_JAR="$OUT/test-jar/wharf-unsealed.jar"
rm -rf "$OUT/test-jar" && mkdir -p "$OUT/test-jar/root"
(cd "$OUT/test-jar/root" && "$JAVA_HOME/bin/jar" --extract --file "$(readlink -f "$JAR")")
grep -q '^Sealed: true' "$OUT/test-jar/root/META-INF/MANIFEST.MF" || {
  echo "error: $JAR does not seal package dev.wharf" >&2
  exit 1
}
grep -v '^Sealed: \|^Name: dev/wharf/' "$OUT/test-jar/root/META-INF/MANIFEST.MF" > "$OUT/test-jar/manifest.txt"
rm "$OUT/test-jar/root/META-INF/MANIFEST.MF"
"$JAVA_HOME/bin/jar" --create --file "$TEST_JAR" --manifest "$OUT/test-jar/manifest.txt" -C "$OUT/test-jar/root" .
rm -rf "$OUT/test-jar/root"

# --- tests ----------------------------------------------------------------------------
TEST_CP="$TEST_JAR:$JUNIT_JAR:$HAMCREST_JAR"
find "$ROOT/java/src/test/java" -name '*.java' > "$OUT/test-sources.txt"
"$JAVAC" -encoding UTF-8 -Xlint:all -Werror -cp "$TEST_CP" -d "$OUT/test-classes" \
  @"$OUT/test-sources.txt"

# Every *Test.java is a test class; the runner fails when any of them cannot be loaded.
TEST_CLASSES=$(cd "$ROOT/java/src/test/java" && find . -name '*Test.java' | sed 's|^\./||; s|\.java$||; s|/|.|g' | sort)

echo "== tests"
LOG="$OUT/test-output.txt"
set +e
# The binding as a user gets it: the jar on the class path, its native libraries extracted
# at first use (no wharf.jni.path, no LD_LIBRARY_PATH).
env -u LD_LIBRARY_PATH "$JAVA" -ea -Xcheck:jni -Dwharf.test.bundled=true -Dwharf.test.root="$ROOT" \
  -Dwharf.test.unloadable="$BROKEN/libbroken.so" -Dwharf.test.sealedJar="$(readlink -f "$JAR")" \
  -Dwharf.test.classes="$OUT/test-classes" \
  -cp "$OUT/test-classes:$TEST_CP" dev.wharf.TestMain $TEST_CLASSES 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}
set -e

# A tiny app built and run outside the source and build trees with nothing but the jar: it
# writes and loads a safetensors file, updates, swaps and runs (java/consumer/). Then the same
# app with the override -Dwharf.jni.path (the JNI library of the build folder, libwharf.so.1
# through LD_LIBRARY_PATH).
echo "== consumer outside the tree"
APP=$(mktemp -d "${TMPDIR:-/tmp}/wharf-java-consumer.XXXXXX")
trap 'rm -rf "$APP"' EXIT
cp "$ROOT/java/consumer/ConsumerApp.java" "$APP/"
cp "$(readlink -f "$JAR")" "$APP/wharf.jar"
consumer_ok=1
(cd "$APP" && "$JAVAC" -Xlint:all -Werror -cp wharf.jar -d classes ConsumerApp.java) || consumer_ok=0
if [ "$consumer_ok" = 1 ]; then
  (cd "$APP" && env -i PATH=/usr/bin:/bin "$JAVA" -cp wharf.jar:classes ConsumerApp "$APP/model.safetensors") \
    > "$APP/out-jar.txt" 2>&1 || consumer_ok=0
  cat "$APP/out-jar.txt"
  grep -q "^loaded from .*wharf.jar!/native/linux-x86_64, extracted to " "$APP/out-jar.txt" || consumer_ok=0
  grep -q "^consumer: OK$" "$APP/out-jar.txt" || consumer_ok=0
fi
if [ "$consumer_ok" = 1 ]; then
  (cd "$APP" && env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$BUILD" "$JAVA" -Dwharf.jni.path="$OUT/libwharfjni.so" \
    -cp wharf.jar:classes ConsumerApp "$APP/model2.safetensors") > "$APP/out-path.txt" 2>&1 || consumer_ok=0
  cat "$APP/out-path.txt"
  grep -qxF "loaded from $OUT/libwharfjni.so" "$APP/out-path.txt" || consumer_ok=0
  grep -q "^consumer: OK$" "$APP/out-path.txt" || consumer_ok=0
fi
# The README's model example (it needs a GPU to run): it must compile against the jar.
if [ "$consumer_ok" = 1 ]; then
  awk '/^```java$/{block=""; inside=1; next} /^```$/{if (inside && block ~ /public class Decode/) printf "%s", block; inside=0; next}
       inside{block = block $0 "\n"}' "$ROOT/java/README.md" > "$APP/Decode.java"
  if [ -s "$APP/Decode.java" ] && (cd "$APP" && "$JAVAC" -Xlint:all -Werror -cp wharf.jar -d classes Decode.java); then
    echo "README model example: compiles"
  else
    echo "README model example: does not compile (or was not found in java/README.md)" >&2
    consumer_ok=0
  fi
fi
if [ "$consumer_ok" = 1 ]; then
  awk '/^```java$/{block=""; inside=1; next} /^```$/{if (inside && block ~ /public class Generate/) printf "%s", block; inside=0; next}
       inside{block = block $0 "\n"}' "$ROOT/java/README.md" > "$APP/Generate.java"
  if [ -s "$APP/Generate.java" ] && (cd "$APP" && "$JAVAC" -Xlint:all -Werror -cp wharf.jar -d classes Generate.java); then
    echo "README model package example: compiles"
  else
    echo "README model package example: does not compile (or was not found in java/README.md)" >&2
    consumer_ok=0
  fi
fi
if [ "$consumer_ok" = 1 ]; then
  echo "consumer: passed (jar only, and with -Dwharf.jni.path)"
else
  echo "consumer: FAILED" >&2
  [ "$status" -ne 0 ] || status=1
fi
# -Xcheck:jni reports JNI misuse (calls with an exception pending, leaked local references)
# as warnings, not errors: treat them as failures.
if grep -qE "WARNING in native method|WARNING: JNI local refs" "$LOG"; then
  echo "error: -Xcheck:jni reported JNI misuse (see $LOG)" >&2
  [ "$status" -ne 0 ] || status=1
fi
# The closing line counts the JUnit tests and the consumer as one more.
passed=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$LOG" | tail -1)
failed=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$LOG" | tail -1)
if [ "$consumer_ok" = 1 ]; then passed=$((${passed:-0} + 1)); else failed=$((${failed:-0} + 1)); fi
if [ "$status" -ne 0 ] && [ "${failed:-0}" -eq 0 ]; then failed=1; fi
echo "${passed:-0} passed, ${failed:-0} failed"
exit "$status"
