#!/usr/bin/env bash
# Runs the Go binding's checks against a built libwharf:
#   go/test.sh BUILD_DIR        (BUILD_DIR holds libwharf.so; default: ../build)
# gofmt, go vet, then go test with cgo's full pointer checks (GODEBUG=cgocheck=2).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$HERE/../build}" && pwd)
if [ ! -e "$BUILD/libwharf.so" ]; then
  echo "go/test.sh: $BUILD/libwharf.so not found; build the library first (make build)" >&2
  exit 1
fi
export CGO_ENABLED=1
# go's build cache does not hash headers outside the package: put the public header's hash
# in CGO_CFLAGS (which it does hash) so that a changed wharf.h rebuilds the cgo code instead
# of linking stale struct layouts against the new library.
HEADER_SUM=$(cat "$HERE"/../include/wharf/*.h | cksum | cut -d' ' -f1)
export CGO_CFLAGS="-I$HERE/../include -DWHARF_GO_HEADER_SUM=$HEADER_SUM"
export CGO_LDFLAGS="-L$BUILD -Wl,-rpath,$BUILD"
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
go vet ./...
GODEBUG=cgocheck=2 go test -count=1 ./...
