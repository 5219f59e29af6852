#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The release archive, as a user gets it: scripts/dist.sh packs BUILD_DIR (make test passes
# its test build, which java/test.sh has given the jar: no second tree is compiled), the
# archive is unpacked into an empty folder, its sum (NAME.tar.gz.sha256) and the sums inside
# (SHA256SUMS, which must list every file) are checked, its contents and the Java publishing
# files (sealed jar, sources and javadoc jars, POM coordinates) are checked, and the five
# consumers are built against the unpacked prefix and run: C through pkg-config, CMake
# through find_package, a Go module, a Rust crate, a Java app (tests/consumers/*_consumer.sh).
# The prefix must be unchanged afterwards.
# usage: dist_consumers.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
# (No `producer | grep -q` below: grep -q exits at the first match, the producer then dies of
# SIGPIPE, and pipefail turns a found match into a failure now and then.)
BUILD=$(cd "$1" && pwd); SRC=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
fail() { echo "dist_consumers.sh: $*" >&2; exit 1; }

bash "$SRC/scripts/dist.sh" "$BUILD" "$WORK/out"
archive=$(find "$WORK/out" -name 'wharf-*.tar.gz')
NAME=$(basename "$archive" .tar.gz)
(cd "$WORK/out" && sha256sum --quiet -c "$NAME.tar.gz.sha256") || fail "the archive's sum does not match"
mkdir "$WORK/clean"
tar -xzf "$archive" -C "$WORK/clean"
[ "$(ls -A "$WORK/clean")" = "$NAME" ] || fail "the archive holds $(ls -A "$WORK/clean" | tr '\n' ' ') instead of one folder $NAME"
P="$WORK/clean/$NAME"

check_sums() {
  (cd "$P" && sha256sum --quiet --strict -c SHA256SUMS) || fail "SHA256SUMS does not match the files $1"
  local listed present
  listed=$(awk '{print $2}' "$P/SHA256SUMS" | LC_ALL=C sort)
  present=$(cd "$P" && find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort)
  [ "$listed" = "$present" ] || fail "SHA256SUMS does not list exactly the files $1: $(diff <(echo "$listed") <(echo "$present") | grep '^[<>]' | tr '\n' ' ')"
}
check_sums "as unpacked"

# What a user downloads (README, "Release archive").
V=$(sed -n 's/^Version: //p' "$P/lib/pkgconfig/wharf.pc")
expect=(LICENSE NOTICE BUILDINFO SHA256SUMS bin/wharf include/wharf/wharf.h lib/libwharf.so.$V
        lib/pkgconfig/wharf.pc lib/cmake/wharf/wharfConfig.cmake lib/cmake/wharf/wharfConfigVersion.cmake
        lib/cmake/wharf/wharfTargets.cmake share/java/wharf-$V.jar share/java/wharf-$V-sources.jar
        share/java/wharf-$V-javadoc.jar share/java/wharf-$V.pom)
if [ -e "$BUILD/libwharf_aoti_shim.so" ]; then
  expect+=(lib/libwharf_aoti_shim.so)
  [[ "$NAME" == *-linux-* && "$NAME" != *-host ]] || fail "a CUDA build's archive is named $NAME"
else
  [[ "$NAME" == *-host ]] || fail "a build without CUDA gave $NAME (expected the -host suffix)"
fi
for f in "${expect[@]}"; do [ -f "$P/$f" ] || fail "$f is missing from the archive"; done
[ "$(readlink "$P/lib/libwharf.so.1")" = "libwharf.so.$V" ] || fail "lib/libwharf.so.1 is not the SONAME link to libwharf.so.$V"
[ "$(readlink "$P/lib/libwharf.so")" = libwharf.so.1 ] || fail "lib/libwharf.so is not a link to libwharf.so.1"
[ "$(readlink "$P/share/java/wharf.jar")" = "wharf-$V.jar" ] || fail "share/java/wharf.jar is not a link to wharf-$V.jar"
if readelf -S "$P/lib/libwharf.so.$V" | grep '\.debug_info' >/dev/null; then fail "lib/libwharf.so.$V is not stripped"; fi

# Java: the sealed package, a source for every top-level class, the docs, the coordinates.
unzip -p "$P/share/java/wharf-$V.jar" META-INF/MANIFEST.MF | tr -d '\r' | grep -A1 '^Name: dev/wharf/$' | grep '^Sealed: true' >/dev/null ||
  fail "the jar does not seal package dev.wharf"
classes=$(unzip -Z1 "$P/share/java/wharf-$V.jar" 'dev/wharf/*.class' | grep -v '\$' | sed 's/\.class$//' | LC_ALL=C sort)
sources=$(unzip -Z1 "$P/share/java/wharf-$V-sources.jar" 'dev/wharf/*.java' | sed 's/\.java$//' | grep -vx 'dev/wharf/package-info' | LC_ALL=C sort)
[ -n "$classes" ] && [ "$classes" = "$sources" ] ||
  fail "the sources jar does not hold exactly one source per class: $(diff <(echo "$classes") <(echo "$sources") | grep '^[<>]' | tr '\n' ' ')"
unzip -Z1 "$P/share/java/wharf-$V-javadoc.jar" | grep -x 'dev/wharf/Container.html' >/dev/null || fail "the javadoc jar has no dev/wharf/Container.html"
python3 - "$P/share/java/wharf-$V.pom" "$V" <<'PY' || fail "the POM's coordinates are not dev.wharf:wharf:$V"
import sys, xml.etree.ElementTree as ET
ns = {"m": "http://maven.apache.org/POM/4.0.0"}
root = ET.parse(sys.argv[1]).getroot()
got = [root.findtext("m:" + k, namespaces=ns) for k in ("groupId", "artifactId", "version", "packaging")]
sys.exit(0 if got == ["dev.wharf", "wharf", sys.argv[2], "jar"] else f"POM: {got}")
PY

# The five consumers against the unpacked prefix (Go shares go/test.sh's build cache).
export GOCACHE="${GOCACHE:-$BUILD/go-cache}"
mkdir -p "$GOCACHE"
for c in pkgconfig cmake go rust java; do
  echo "== $c consumer against the unpacked $NAME"
  bash "$HERE/${c}_consumer.sh" "$P" "$SRC"
done
check_sums "after the consumers ran (they must not write into the prefix)"
echo "dist: $NAME.tar.gz ($(du -h "$archive" | cut -f1)): sums verified, contents checked, 5 consumers built and ran against it"
