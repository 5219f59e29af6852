#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A folder that runs the Java README's model example (java/README.md, "Models") on the lent GPU
# machine, which has no JDK: a jlink'ed Java runtime (java.base only, what the binding needs:
# `jdeps --print-module-deps` of the jar), the jar (JNI library, libwharf and the AOTInductor
# shim inside), the example compiled here, the committed tiny decoder, and the CUDA runtime
# the shim links. About 40 MiB.
# usage: scripts/gpu-java-bundle.sh BUILD_DIR OUT_DIR      (BUILD_DIR: a CUDA build)
# then, on the GPU machine: cd OUT_DIR && LD_LIBRARY_PATH=$PWD jre/bin/java -cp wharf.jar:classes Decode model
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd); OUT=${2:-gpu-java}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
JAVAC=$(readlink -f "$(command -v javac)")
JDK=$(dirname "$(dirname "$JAVAC")")
bash "$ROOT/java/build.sh" "$BUILD" >/dev/null
rm -rf "$OUT" && mkdir -p "$OUT/classes" "$OUT/model"
modules=$("$JDK/bin/jdeps" --print-module-deps --ignore-missing-deps "$BUILD/java/wharf.jar")
"$JDK/bin/jlink" --add-modules "$modules" --strip-debug --no-header-files --no-man-pages --compress=2 --output "$OUT/jre"
# The example exactly as the README shows it.
python3 - "$ROOT/java/README.md" "$OUT/Decode.java" <<'PY'
import re, sys
blocks = [b for b in re.findall(r"```java\n(.*?)```", open(sys.argv[1]).read(), re.S) if "public class Decode" in b]
assert len(blocks) == 1, "java/README.md should hold one Decode example"
open(sys.argv[2], "w").write(blocks[0])
PY
"$JAVAC" -Xlint:all -Werror -cp "$BUILD/java/wharf.jar" -d "$OUT/classes" "$OUT/Decode.java"
cp "$(readlink -f "$BUILD/java/wharf.jar")" "$OUT/wharf.jar"
cp "$ROOT"/tests/data/models/tiny_decoder/{tiny_decoder.so,tiny_decoder.safetensors,reference.safetensors} "$OUT/model/"
cudart=$(ldd "$BUILD/libwharf_aoti_shim.so" | awk '/libcudart/ {print $3}')
cp "$(readlink -f "$cudart")" "$OUT/$(basename "$cudart")"
du -sh "$OUT"
