#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the Go binding's checks against a built libwharf:
#   go/test.sh BUILD_DIR        (BUILD_DIR holds libwharf.so; default: ../build)
# gofmt, go vet, then go test -race with cgo's full pointer checks (GODEBUG=cgocheck=2).
#
# The package finds libwharf through pkg-config (#cgo pkg-config: wharf). The wharf.pc of a
# build directory names the install prefix, so this script writes its own wharf.pc for
# BUILD_DIR (library directory plus an rpath) and puts it first on PKG_CONFIG_PATH.
# WHARF_GO_PLAIN=1 skips pkg-config instead: -tags wharf_no_pkg_config with the same flags
# in CGO_LDFLAGS.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$HERE/../build}" && pwd)
if [ ! -e "$BUILD/libwharf.so" ]; then
  echo "go/test.sh: $BUILD/libwharf.so not found; build the library first (make build)" >&2
  exit 1
fi
export CGO_ENABLED=1
PC_DIR="$BUILD/go-pkgconfig"
mkdir -p "$PC_DIR"
cat > "$PC_DIR/wharf.pc" <<PC
# Written by go/test.sh: libwharf of the build directory $BUILD
Name: wharf
Description: Wharf built in $BUILD (for the Go binding's tests)
Version: 0
Libs: -L$BUILD -Wl,-rpath,$BUILD -lwharf
Cflags:
PC
export PKG_CONFIG_PATH="$PC_DIR${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
TAGS=()
if [ "${WHARF_GO_PLAIN:-0}" = 1 ]; then
  TAGS=(-tags wharf_no_pkg_config)
  export CGO_LDFLAGS="-L$BUILD -Wl,-rpath,$BUILD"
fi
export LD_LIBRARY_PATH="$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GOFLAGS=-mod=mod
export GOPROXY=off
export GOCACHE="$BUILD/go-cache"
mkdir -p "$GOCACHE"
cd "$HERE"
echo "go: $(go version)"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "go/test.sh: gofmt would change: $unformatted" >&2
  exit 1
fi
go vet "${TAGS[@]}" ./...
# The other way of linking compiles too.
if [ "${WHARF_GO_PLAIN:-0}" = 1 ]; then
  go vet ./...
else
  CGO_LDFLAGS="-L$BUILD -Wl,-rpath,$BUILD" go vet -tags wharf_no_pkg_config ./...
fi
# The race detector too (WHARF_GO_RACE=0 leaves it out, for a toolchain without it).
RACE=(-race)
if [ "${WHARF_GO_RACE:-1}" = 0 ]; then RACE=(); fi
GODEBUG=cgocheck=2 go test "${TAGS[@]}" "${RACE[@]}" -count=1 ./...
