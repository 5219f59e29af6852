#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A Go module built outside the source tree against an installed prefix, as go/README.md
# says: a copy of go/ named by a replace directive (then by a go.work), libwharf found through pkg-config
# (PKG_CONFIG_PATH=<prefix>/lib/pkgconfig) and an rpath in CGO_LDFLAGS. The program
# (tests/consumers/go/) loads model.safetensors, updates, swaps and reads through a run.
# GOCACHE, when set, is shared (dist_consumers.sh passes go/test.sh's).
# usage: go_consumer.sh PREFIX SOURCE_DIR (common.sh)
source "$(dirname "$0")/common.sh"
LIBDIR=$(dirname "$(find "$PREFIX" -name 'libwharf.so.1' | head -n1)")
cp -r "$SRC/go" "$WORK/wharf"
cp -r "$SRC/tests/consumers/go" "$WORK/app"
cp "$SRC/tests/consumers/model.safetensors" "$WORK/"
cd "$WORK/app"
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig" CGO_LDFLAGS="-Wl,-rpath,$LIBDIR" CGO_ENABLED=1
export GOFLAGS=-mod=mod GOPROXY=off GOWORK=off
go build -o consumer .
out=$(./consumer "$WORK/model.safetensors")
echo "$out"
loads_from ./consumer "$PREFIX"
[[ "$out" == *"generation 2: w = [5 6 7 8]" ]] || fail "unexpected output"
# The other local way go/README.md gives: the module's go.mod as it will be with a tagged
# release (require, no replace), and a go.work naming the local copy.
sed -i '/^replace /d' go.mod
go work init . ../wharf
rm consumer
GOFLAGS= GOWORK="$WORK/app/go.work" go build -o consumer .
[[ "$(./consumer "$WORK/model.safetensors")" == *"generation 2: w = [5 6 7 8]" ]] || fail "unexpected output with go.work"
echo "go consumer: a module with replace, and with go.work, pkg-config, against $PREFIX: loaded, updated, swapped, ran"
