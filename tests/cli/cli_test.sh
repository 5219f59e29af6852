#!/usr/bin/env bash
# The `wharf` command line: --version, per-command help, inspect of several files, --json,
# and names from a file with escape sequences never reaching the terminal raw.
# usage: cli_test.sh WHARF_BINARY
set -euo pipefail
W=$1
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "cli_test: $*" >&2; exit 1; }
"$W" --version | grep -q "^wharf [0-9]*\.[0-9]*\.[0-9]* (ABI [0-9]*)$" || fail "--version"
"$W" inspect --help | grep -q "Usage:" || fail "inspect --help"
if "$W" 2>/dev/null; then fail "no subcommand accepted"; fi
# A safetensors file whose tensor name holds ESC, a newline and a quote, written byte by byte.
python3 - "$T/evil.safetensors" <<'PY'
import json, struct, sys
name = 'a\x1b[31m\n"b'
hdr = json.dumps({name: {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
hdr += b" " * (-len(hdr) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(hdr)) + hdr + struct.pack("<2f", 1.0, 2.0))
PY
cp "$T/evil.safetensors" "$T/second.safetensors"
out=$("$W" inspect "$T/evil.safetensors" "$T/second.safetensors")
if printf '%s' "$out" | grep -q $'\x1b'; then fail "a raw ESC reached the output"; fi
[ "$(printf '%s\n' "$out" | grep -c '^== ')" = 2 ] || fail "inspect of two files"
printf '%s\n' "$out" | grep -qF '"a\u001b[31m\n\"b"' || fail "escaped name not shown: $out"
json=$("$W" inspect --json "$T/evil.safetensors")
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d[0]["tensors"][0]["name"]=="a\x1b[31m\n\"b", d' "$json" \
  || fail "--json is not valid JSON with the exact name"
"$W" info --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert "version" in d and "backend" in d' \
  || fail "info --json"
echo "cli_test: ok"
