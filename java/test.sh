#!/usr/bin/env bash
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

OUT="$BUILD/java"
GEN="$OUT/gen"
rm -rf "$GEN" "$OUT/classes" "$OUT/test-classes" "$OUT/javadoc" "$OUT/libwharfjni.so"
mkdir -p "$GEN" "$OUT/classes" "$OUT/test-classes"

# --- JNI layer: SWIG, then the shared library --------------------------------------------
echo "== swig"
swig -java -package dev.wharf.jni -outdir "$GEN" -o "$GEN/wharf_wrap.c" -I"$ROOT/include" \
  "$ROOT/bindings/swig/wharf.i"

echo "== gcc -> $OUT/libwharfjni.so"
# -fno-strict-aliasing: SWIG's generated code converts pointers through jlong by punning.
gcc -std=c99 -O2 -g -fPIC -shared -fno-strict-aliasing \
  -Wall -Wextra -Wno-unused-parameter -Werror=incompatible-pointer-types \
  -Werror=implicit-function-declaration -Werror=discarded-qualifiers \
  -I"$JAVA_HOME/include" -I"$JAVA_HOME/include/linux" -I"$ROOT/include" \
  "$GEN/wharf_wrap.c" -o "$OUT/libwharfjni.so" \
  -L"$BUILD" -lwharf -Wl,-rpath,"$BUILD" -Wl,--no-undefined

# A library that exists but cannot be loaded because a library it needs is gone (as when
# libwharf.so.1 is missing), for the loader's error-message test.
BROKEN="$OUT/broken"
rm -rf "$BROKEN" && mkdir -p "$BROKEN"
printf 'int wharf_gone(void) { return 0; }\n' > "$BROKEN/gone.c"
printf 'int wharf_gone(void);\nint wharf_uses_gone(void) { return wharf_gone(); }\n' > "$BROKEN/broken.c"
gcc -shared -fPIC -o "$BROKEN/libgone.so" "$BROKEN/gone.c"
gcc -shared -fPIC -o "$BROKEN/libbroken.so" "$BROKEN/broken.c" -L"$BROKEN" -lgone
rm "$BROKEN/libgone.so"

# --- Java ---------------------------------------------------------------------------------
echo "== javac, javadoc"
"$JAVAC" -encoding UTF-8 -Xlint:all -d "$OUT/classes" "$GEN"/*.java
find "$ROOT/java/src/main/java" -name '*.java' > "$OUT/main-sources.txt"
"$JAVAC" -encoding UTF-8 -Xlint:all -Werror -Xdoclint:all/protected -cp "$OUT/classes" \
  -d "$OUT/classes" @"$OUT/main-sources.txt"
# The API's documentation, with every public item required to have a complete comment.
"$JAVA_HOME/bin/javadoc" -quiet -encoding UTF-8 -Xdoclint:all -Werror -cp "$OUT/classes" \
  -d "$OUT/javadoc" @"$OUT/main-sources.txt"
TEST_CP="$OUT/classes:$JUNIT_JAR:$HAMCREST_JAR"
find "$ROOT/java/src/test/java" -name '*.java' > "$OUT/test-sources.txt"
"$JAVAC" -encoding UTF-8 -Xlint:all -Werror -cp "$TEST_CP" -d "$OUT/test-classes" \
  @"$OUT/test-sources.txt"

# Every *Test.java is a test class; the runner fails when any of them cannot be loaded.
TEST_CLASSES=$(cd "$ROOT/java/src/test/java" && find . -name '*Test.java' | sed 's|^\./||; s|\.java$||; s|/|.|g' | sort)

echo "== tests"
LOG="$OUT/test-output.txt"
set +e
"$JAVA" -ea -Xcheck:jni -Dwharf.jni.path="$OUT/libwharfjni.so" \
  -Dwharf.test.unloadable="$BROKEN/libbroken.so" \
  -cp "$OUT/test-classes:$TEST_CP" dev.wharf.TestMain $TEST_CLASSES 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}
set -e
# -Xcheck:jni reports JNI misuse (calls with an exception pending, leaked local references)
# as warnings, not errors: treat them as failures.
if grep -qE "WARNING in native method|WARNING: JNI local refs" "$LOG"; then
  echo "error: -Xcheck:jni reported JNI misuse (see $LOG)" >&2
  [ "$status" -ne 0 ] || status=1
fi
exit "$status"
