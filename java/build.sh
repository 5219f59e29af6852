#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Java binding against a built libwharf: the JNI library, the classes, the API
# docs and the jar.
#
#   java/build.sh BUILD_DIR
#
# BUILD_DIR is a CMake build folder holding libwharf.so. Everything goes under BUILD_DIR/java:
#   gen/                 the SWIG output (package-private classes of package dev.wharf)
#   libwharfjni.so       the JNI library; its only RUNPATH is $ORIGIN (no build-tree path)
#   classes/             the compiled classes
#   javadoc/             the API docs (every public item must have a complete comment)
#   wharf-VERSION.jar    the classes (package dev.wharf sealed), plus native/linux-x86_64/libwharfjni.so and (unless
#                        WHARF_JAR_LIBWHARF=0) libwharf.so.1 and, in a CUDA build,
#                        libwharf_aoti_shim.so, all stripped of debug info; the binding
#                        extracts them at first use (NativeLibrary.java)
# Needs swig (4.x), gcc, a JDK 17 (javac found on PATH, or JAVA_HOME) and binutils (strip).
# Plain javac and jar: no Maven or Gradle.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "$1" && pwd)
if [ ! -e "$BUILD/libwharf.so" ]; then
  echo "error: $BUILD/libwharf.so not found; build the library first:" >&2
  echo "  cmake -S $ROOT -B $BUILD -DWHARF_WITH_CUDA=OFF && cmake --build $BUILD -j2 --target wharf" >&2
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
for tool in swig gcc strip; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found" >&2; exit 2; }
done
VERSION=$(awk '/^#define WHARF_VERSION_(MAJOR|MINOR|PATCH) /{v = v (v == "" ? "" : ".") $3} END{print v}' \
  "$ROOT/include/wharf/wharf.h")

OUT="$BUILD/java"
GEN="$OUT/gen"
JAR="$OUT/wharf-$VERSION.jar"
rm -rf "$GEN" "$OUT/classes" "$OUT/javadoc" "$OUT/libwharfjni.so" "$OUT/jar-root" "$OUT"/wharf-*.jar
mkdir -p "$GEN" "$OUT/classes"

# --- JNI layer: SWIG, then the shared library --------------------------------------------
echo "== swig"
swig -java -package dev.wharf -outdir "$GEN" -o "$GEN/wharf_wrap.c" -I"$ROOT/include" \
  "$ROOT/bindings/swig/wharf.i"
# SWIG 4.1 writes the constants interface as public whatever the interface file says.
sed -i 's/^public interface WharfNativeConstants/interface WharfNativeConstants/' "$GEN/WharfNativeConstants.java"
if grep -l '^public ' "$GEN"/*.java; then
  echo "error: the generated classes above are public; the JNI layer must not be reachable from user code" >&2
  exit 1
fi

echo "== gcc -> $OUT/libwharfjni.so"
# -fno-strict-aliasing: SWIG's generated code converts pointers through jlong by punning.
# RUNPATH $ORIGIN: libwharf.so.1 is found beside the JNI library (as in the jar), else through
# LD_LIBRARY_PATH or the system's library folders; never through a path of this build tree.
gcc -std=c99 -O2 -g -fPIC -shared -fno-strict-aliasing \
  -Wall -Wextra -Wno-unused-parameter -Werror=incompatible-pointer-types \
  -Werror=implicit-function-declaration -Werror=discarded-qualifiers \
  -I"$JAVA_HOME/include" -I"$JAVA_HOME/include/linux" -I"$ROOT/include" \
  "$GEN/wharf_wrap.c" -o "$OUT/libwharfjni.so" \
  -L"$BUILD" -lwharf -Wl,-rpath,'$ORIGIN' -Wl,--enable-new-dtags -Wl,--no-undefined

# --- Java ---------------------------------------------------------------------------------
echo "== javac, javadoc"
"$JAVAC" -encoding UTF-8 -Xlint:all -d "$OUT/classes" "$GEN"/*.java
find "$ROOT/java/src/main/java" -name '*.java' > "$OUT/main-sources.txt"
"$JAVAC" -encoding UTF-8 -Xlint:all -Werror -Xdoclint:all/protected -cp "$OUT/classes" \
  -d "$OUT/classes" @"$OUT/main-sources.txt"
# The API's documentation, with every public item required to have a complete comment.
"$JAVA_HOME/bin/javadoc" -quiet -encoding UTF-8 -Xdoclint:all -Werror -cp "$OUT/classes" \
  -d "$OUT/javadoc" @"$OUT/main-sources.txt"

# --- the jar ------------------------------------------------------------------------------
echo "== jar -> $JAR"
NATIVE="$OUT/jar-root/native/linux-x86_64"
mkdir -p "$NATIVE"
cp -r "$OUT/classes/." "$OUT/jar-root/"
strip --strip-debug -o "$NATIVE/libwharfjni.so" "$OUT/libwharfjni.so"
if [ "${WHARF_JAR_LIBWHARF:-1}" != 0 ]; then
  strip --strip-debug -o "$NATIVE/libwharf.so.1" "$(readlink -f "$BUILD/libwharf.so.1")"
  if [ -e "$BUILD/libwharf_aoti_shim.so" ]; then
    strip --strip-debug -o "$NATIVE/libwharf_aoti_shim.so" "$BUILD/libwharf_aoti_shim.so"
  fi
fi
# The package is sealed: every class of dev.wharf must come from this jar, so no class
# declared in dev.wharf elsewhere (another jar or class folder) can reach the package-private
# JNI layer; the class loader refuses it with SecurityException "sealing violation".
cat > "$OUT/manifest.txt" <<EOF
Automatic-Module-Name: dev.wharf
Implementation-Title: Wharf Java binding
Implementation-Version: $VERSION

Name: dev/wharf/
Sealed: true
EOF
"$JAVA_HOME/bin/jar" --create --file "$JAR" --manifest "$OUT/manifest.txt" -C "$OUT/jar-root" .
rm -rf "$OUT/jar-root"
ln -sf "$(basename "$JAR")" "$OUT/wharf.jar"
echo "built $JAR ($(du -h "$JAR" | cut -f1)), with: $("$JAVA_HOME/bin/jar" --list --file "$JAR" | grep '^native/.*[^/]$' | tr '\n' ' ')"
