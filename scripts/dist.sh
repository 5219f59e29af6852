#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Packs a built tree into the archive a user downloads:
#
#   scripts/dist.sh BUILD_DIR [OUT_DIR]        (OUT_DIR: dist/ of the source tree)
#
# writes OUT_DIR/wharf-VERSION-linux-ARCH.tar.gz (wharf-VERSION-linux-ARCH-host.tar.gz for a
# build without the CUDA backend) and, beside it, its SHA-256 sum (NAME.tar.gz.sha256, for
# `sha256sum -c`). The archive holds one folder, an install prefix made by what `make
# install` runs (`cmake --install BUILD_DIR --strip`): bin/wharf, include/wharf/wharf.h,
# lib/libwharf.so* (and libwharf_aoti_shim.so in a CUDA build), lib/pkgconfig/wharf.pc,
# lib/cmake/wharf/, share/java/ (the jar, its link wharf.jar, the sources and javadoc jars
# and the POM: java/dist.sh), plus LICENSE, NOTICE, BUILDINFO (version, commit, CUDA
# toolkit, the driver it needs) and SHA256SUMS (every other file, `sha256sum -c SHA256SUMS`
# from inside the folder).
#
# BUILD_DIR must be built and hold the jar (java/build.sh BUILD_DIR): `make dist` uses a
# release build (build-install, as `make install`), `make test` its test build (build/), so
# the consumers are checked without compiling a second tree. The tar stream is deterministic:
# sorted entries, owner 0, every time stamp the commit's (SOURCE_DATE_EPOCH when set); the
# jars inside keep the times they were built at.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 BUILD_DIR [OUT_DIR]" >&2
  exit 2
fi
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "$1" && pwd)
OUT=${2:-$ROOT/dist}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
fail() { echo "dist.sh: $*" >&2; exit 1; }
[ -f "$BUILD/CMakeCache.txt" ] && [ -e "$BUILD/libwharf.so" ] ||
  fail "$BUILD is not a built Wharf build folder (no CMakeCache.txt or libwharf.so)"

STAGE=$(mktemp -d); trap 'rm -rf "$STAGE"' EXIT
# 1. The install prefix, exactly as `make install` makes it (stripped).
cmake --install "$BUILD" --strip --prefix "$STAGE/prefix" >/dev/null
P="$STAGE/prefix"
VERSION=$(sed -n 's/^Version: //p' "$P/lib/pkgconfig/wharf.pc")
[ -n "$VERSION" ] || fail "no Version in the installed wharf.pc"
# What CMake found when it configured the folder (CMakeFiles/<cmake version>/).
compiler_var() { # language variable
  sed -n "s/^set($2 \"\(.*\)\")$/\1/p" "$BUILD"/CMakeFiles/*/CMake"$1"Compiler.cmake 2>/dev/null | head -n1
}
cuda=$(compiler_var CUDA CMAKE_CUDA_COMPILER_VERSION)
NAME="wharf-$VERSION-linux-$(uname -m)"
if [ -e "$P/lib/libwharf_aoti_shim.so" ]; then
  [ -n "$cuda" ] || fail "a CUDA build without CMAKE_CUDA_COMPILER_VERSION in $BUILD/CMakeFiles/*/CMakeCUDACompiler.cmake"
else
  NAME="$NAME-host"
  cuda=""
fi

# 2. The Java binding: the jar (installed above when java/build.sh made it), its sources and
#    javadoc jars and the POM.
[ -f "$P/share/java/wharf-$VERSION.jar" ] ||
  fail "no Java jar in $BUILD/java (build it first: java/build.sh $BUILD)"
bash "$ROOT/java/dist.sh" "$BUILD" >/dev/null
cp "$BUILD/java/wharf-$VERSION-sources.jar" "$BUILD/java/wharf-$VERSION-javadoc.jar" \
  "$BUILD/java/wharf-$VERSION.pom" "$P/share/java/"

# 3. Nothing in it may point into this machine's build tree: every ELF file's RUNPATH is
#    $ORIGIN-relative or absent (cmake --install rewrites the build rpath).
while IFS= read -r -d '' f; do
  if head -c4 "$f" | grep -q 'ELF'; then
    rp=$(readelf -d "$f" | sed -n 's/.*R\(UN\)\?PATH.*\[\(.*\)\]/\2/p')
    case ":$rp:" in *:/*) fail "$f has the absolute rpath $rp" ;; esac
  fi
done < <(find "$P" -type f -print0)

# 4. License, notice, what was built, and the sums of everything else.
cp "$ROOT/LICENSE" "$ROOT/NOTICE" "$P/"
commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit (with uncommitted changes)"; fi
{
  echo "Wharf $VERSION for Linux $(uname -m), ABI 1 (libwharf.so.1)"
  echo "commit:      $commit"
  echo "build type:  $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")"
  echo "compiler:    $(compiler_var CXX CMAKE_CXX_COMPILER_ID) $(compiler_var CXX CMAKE_CXX_COMPILER_VERSION)"
  echo "needs:       glibc 2.34+, libstdc++ of GCC 12+"
  if [ -n "$cuda" ]; then
    echo "CUDA:        toolkit $cuda, runtime linked into libwharf.so (cudart_static)"
    case ${cuda%%.*} in
      13) driver="R580 or newer" ;;
      12) driver="R525 or newer (CUDA minor version compatibility)" ;;
      *) driver="see NVIDIA's CUDA compatibility table" ;;
    esac
    echo "             the CUDA backend needs an NVIDIA driver for CUDA ${cuda%%.*}: $driver;"
    echo "             without one, WHARF_BACKEND_AUTO uses the host backend"
    echo "             AOTInductor models also need libcudart.so.${cuda%%.*} on the library path"
  else
    echo "CUDA:        none (host backend only)"
  fi
} > "$P/BUILDINFO"
(cd "$P" && find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs -d '\n' sha256sum) > "$STAGE/SHA256SUMS"
mv "$STAGE/SHA256SUMS" "$P/SHA256SUMS"

# 5. The archive (a deterministic tar stream) and its sum beside it.
mv "$P" "$STAGE/$NAME"
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)}
rm -f "$OUT/$NAME.tar.gz" "$OUT/$NAME.tar.gz.sha256"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" --format=gnu \
  -C "$STAGE" -cf - "$NAME" | gzip -n > "$OUT/$NAME.tar.gz"
(cd "$OUT" && sha256sum "$NAME.tar.gz" > "$NAME.tar.gz.sha256")
echo "built $OUT/$NAME.tar.gz ($(du -h "$OUT/$NAME.tar.gz" | cut -f1), $(wc -l < "$STAGE/$NAME/SHA256SUMS") files), sum in $NAME.tar.gz.sha256"
