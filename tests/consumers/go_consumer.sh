#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A Go module built outside the source tree against an installed prefix, as go/README.md
# says: a copy of go/ named by a replace directive, libwharf found through pkg-config
# (PKG_CONFIG_PATH=<prefix>/lib/pkgconfig) and an rpath in CGO_LDFLAGS. The program
# (tests/consumers/go/) loads model.safetensors, updates, swaps and reads through a run.
# usage: go_consumer.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd); SRC=$(cd "$2" && pwd)
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" >/dev/null
LIBDIR=$(dirname "$(find "$WORK/prefix" -name 'libwharf.so.1' | head -n1)")
cp -r "$SRC/go" "$WORK/wharf"
cp -r "$SRC/tests/consumers/go" "$WORK/app"
cp "$SRC/tests/consumers/model.safetensors" "$WORK/"
cd "$WORK/app"
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig" CGO_LDFLAGS="-Wl,-rpath,$LIBDIR" CGO_ENABLED=1
export GOFLAGS=-mod=mod GOPROXY=off GOWORK=off GOCACHE="${GOCACHE:-$BUILD/go-cache}"
mkdir -p "$GOCACHE"
go build -o consumer .
out=$(env -u LD_LIBRARY_PATH ./consumer "$WORK/model.safetensors")
echo "$out"
if ldd ./consumer | grep -q "libwharf.so.1 => $BUILD/"; then
  echo "go_consumer.sh: the program loaded libwharf from the build tree" >&2
  exit 1
fi
[[ "$out" == *"generation 2: w = [5 6 7 8]" ]] || { echo "go_consumer.sh: unexpected output" >&2; exit 1; }
echo "go consumer: a module with replace, pkg-config, against an installed prefix: loaded, updated, swapped, ran"
