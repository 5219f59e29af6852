#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The `wharf` command line: --version, per-command help, inspect of several files, --json,
# names from a file with escape sequences never reaching the terminal raw, and load with
# updates: summary lines only when piped, a progress line updated in place on a terminal.
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
# --json is valid JSON whatever happens: a file that cannot be read (here the first, and a
# missing one) is an error object in its place, and a file name that is not UTF-8 comes out
# with U+FFFD for its stray byte (one JSON writer, src/io/json.h). The exit status is 1.
printf 'not a safetensors file' >"$T/bad.bin"
cp "$T/evil.safetensors" "$T/"$'name\xff.safetensors'
rc=0
"$W" inspect --json "$T/bad.bin" "$T/"$'name\xff.safetensors' "$T/missing.safetensors" >"$T/inspect.json" 2>"$T/err" || rc=$?
[ "$rc" = 1 ] || fail "inspect --json of a bad file: exit status $rc, expected 1"
python3 - "$T" <<'PY' || fail "inspect --json with bad files: $(cat "$T/inspect.json")"
import json, sys
t = sys.argv[1]
d = json.load(open(t + "/inspect.json", "rb"))
assert [x["file"] for x in d] == [t + "/bad.bin", t + "/name\ufffd.safetensors", t + "/missing.safetensors"], d
assert d[0]["error"]["code"] == "DATA_CORRUPT" and "tensors" not in d[0], d[0]
assert d[1]["tensors"][0]["name"] == 'a\x1b[31m\n"b' and d[1]["total_bytes"] == 8 and "error" not in d[1], d[1]
assert d[2]["error"]["code"] == "NOT_FOUND" and "missing.safetensors" in d[2]["error"]["message"], d[2]
PY
"$W" info --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert "version" in d and "backend" in d' \
  || fail "info --json"
# load: a checkpoint into a container, then an update, each with a summary line on stdout.
# Piped, nothing else: no progress line on stderr.
python3 - "$T" <<'PY'
import json, struct, sys
def write(path, tensors):
    hdr, data = {}, b""
    for name, values in tensors:
        b = struct.pack("<%df" % len(values), *values)
        hdr[name] = {"dtype": "F32", "shape": [len(values)], "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
big = [float(i % 251) for i in range(3 << 20)]  # 12 MiB
write(sys.argv[1] + "/model.safetensors", [("a", big), ("b", big), ("c", [1, 2, 3, 4])])
write(sys.argv[1] + "/update.safetensors", [("b", big), ("c", [5, 6, 7, 8])])
write(sys.argv[1] + "/bad.safetensors", [("c", [5, 6, 7])])
# A sharded checkpoint: two shards and their index.
write(sys.argv[1] + "/s-1.safetensors", [("x", [1, 2])])
write(sys.argv[1] + "/s-2.safetensors", [("y", [3])])
json.dump({"metadata": {}, "weight_map": {"x": "s-1.safetensors", "y": "s-2.safetensors"}},
          open(sys.argv[1] + "/s.safetensors.index.json", "w"))
PY
"$W" load --backend host "$T/model.safetensors" --update "$T/update.safetensors" >"$T/out" 2>"$T/err" || fail "load"
[ ! -s "$T/err" ] || fail "load wrote to a piped stderr: $(cat -A "$T/err")"
grep -q '^loaded ".*model.safetensors": 3 tensors, 24.00 MiB in .* generation 1$' "$T/out" || fail "load summary: $(cat "$T/out")"
grep -q '^updated ".*update.safetensors": 2 tensors, 12.00 MiB in .* generation 2$' "$T/out" || fail "update summary: $(cat "$T/out")"
[ "$(wc -l <"$T/out")" = 2 ] || fail "load printed more than its two lines: $(cat "$T/out")"
if "$W" load --backend host "$T/model.safetensors" --update "$T/bad.safetensors" >"$T/out" 2>"$T/err"; then
  fail "an update of the wrong shape was accepted"
fi
grep -q "INVALID_ARGUMENT: constant 'c': shape \[4\] expected, got \[3\]" "$T/err" || fail "bad update: $(cat "$T/err")"
"$W" load --backend host "$T/s.safetensors.index.json" --update "$T/s-2.safetensors" >"$T/out" 2>"$T/err" || fail "load of an index"
grep -q '^loaded ".*s.safetensors.index.json": 2 tensors, 12 B in .* generation 1$' "$T/out" || fail "index summary: $(cat "$T/out")"
grep -q '^updated ".*s-2.safetensors": 1 tensor, 4 B in .* generation 2$' "$T/out" || fail "shard update summary: $(cat "$T/out")"
# On a terminal (script(1) gives the program a pseudo-terminal): a progress line on stderr,
# rewritten in place (carriage return, erase to the end of the line), reaching 100%.
if command -v script >/dev/null; then
  script -qc "'$W' load --backend host '$T/model.safetensors' --update '$T/update.safetensors'" /dev/null >"$T/tty"
  grep -q $'\r\033\[Kloaded ".*model.safetensors": 100% (24.00 MiB of 24.00 MiB)' "$T/tty" || fail "no load progress on a terminal: $(cat -A "$T/tty")"
  grep -q $'\r\033\[Kupdated ".*update.safetensors": 100% (12.00 MiB of 12.00 MiB)' "$T/tty" || fail "no update progress on a terminal: $(cat -A "$T/tty")"
  # The summary starts on a clean line: the progress line was erased before it.
  tr '\r' '\n' <"$T/tty" | sed 's/\x1b\[K//g' | grep -q '^loaded ".*model.safetensors": 3 tensors, .* generation 1$' \
    || fail "summary after the progress line: $(cat -A "$T/tty")"
else
  echo "cli_test: skipping the terminal case of load's progress: script(1) (util-linux) is not installed"
fi
echo "cli_test: ok"
