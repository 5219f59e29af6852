#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The `wharf` command line: its conventions (usage errors exit 2 with a message, an unknown
# command named and the commands listed, help and version three ways), inspect of several
# files as a table (plain names as they are, others quoted and escaped: nothing raw reaches
# the terminal) and as JSON, errors naming the file once, load with updates (summary lines
# when piped, a progress line updated in place on a terminal, --json), the reason CUDA is not
# used said once, and the demo's temporary model file removed.
# usage: cli_test.sh WHARF_BINARY
set -euo pipefail
W=$1
# The checks of stderr assume no WHARF_* variable is set (an unknown one is warned about; a
# log level changes what is said): the caller's are left out of every command here.
for v in $(compgen -e | grep '^WHARF_' || true); do unset "$v"; done
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "cli_test: $*" >&2; exit 1; }
# Runs the command with stdout and stderr in $T/out and $T/err; its exit status in $rc.
run() { rc=0; "$@" >"$T/out" 2>"$T/err" || rc=$?; }
# Usage errors: exit status 2 and a message on stderr saying what is wrong.
usage() {
  local want=$1; shift
  run "$W" "$@"
  [ "$rc" = 2 ] || fail "wharf $*: exit status $rc, expected 2 (usage error)"
  grep -qF -- "$want" "$T/err" || fail "wharf $*: expected '$want' on stderr: $(cat "$T/err")"
}
for v in --version -V version; do
  run "$W" $v
  [ "$rc" = 0 ] && grep -q "^wharf [0-9]*\.[0-9]*\.[0-9]* (ABI [0-9]*)$" "$T/out" || fail "wharf $v: $rc $(cat "$T/out")"
done
run "$W" help
[ "$rc" = 0 ] && grep -q "Usage: wharf" "$T/out" && grep -q "^  inspect " "$T/out" || fail "wharf help: $(cat "$T/out")"
run "$W" help inspect
[ "$rc" = 0 ] && grep -q "Usage: wharf inspect" "$T/out" || fail "wharf help inspect: $(cat "$T/out")"
"$W" inspect --help | grep -q "Usage: wharf inspect" || fail "inspect --help"
usage "a command is required; the commands are info, inspect, load, demo, generate, help, version"
usage "unknown command 'bogus'; the commands are info, inspect, load, demo, generate, help, version" bogus
usage "unknown command 'bogus'" help bogus
usage "unknown option '--bogus'" --bogus
usage "files is required" inspect
usage "not expected: --bogus" info --bogus
usage "--backend: foo not in {auto,cuda,host}" load --backend foo x
usage "Run 'wharf load --help'" load
usage "package is required" generate
usage "--prompt is required" generate "$T"
usage "--max-new-tokens is required" generate "$T" --prompt 1,2
usage "--prompt: 'a' is not a token id" generate "$T" --prompt 1,a --max-new-tokens 2
usage "--prompt: '' is not a token id" generate "$T" --prompt 1,,2 --max-new-tokens 2
usage "--prompt: '-3' is not a token id" generate "$T" --prompt -3 --max-new-tokens 2
usage "--max-new-tokens: Value 0 not in range" generate "$T" --prompt 1 --max-new-tokens 0
usage "--update requires --update-after" generate "$T" --prompt 1 --max-new-tokens 2 --update u.safetensors
usage "--update-after 2 is not before the last of --max-new-tokens 2" generate "$T" --prompt 1 --max-new-tokens 2 \
  --update u.safetensors --update-after 2
# A safetensors file whose tensor name holds ESC, a newline and a quote, written byte by byte.
python3 - "$T/evil.safetensors" <<'PY'
import json, struct, sys
name = 'a\x1b[31m\n"b'
hdr = json.dumps({name: {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
hdr += b" " * (-len(hdr) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(hdr)) + hdr + struct.pack("<2f", 1.0, 2.0))
PY
cp "$T/evil.safetensors" "$T/second.safetensors"
mkdir "$T/demo"
# A file of plain names and a name with a space, as the reference writes them.
python3 - "$T/plain.safetensors" <<'PY'
import json, struct, sys
hdr = json.dumps({"__metadata__": {"format": "pt", "note": "two words"},
                  "layers.0.weight": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                  "my bias": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}).encode()
hdr += b" " * (-len(hdr) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(hdr)) + hdr + struct.pack("<3f", 1.0, 2.0, 3.0))
PY
out=$("$W" inspect "$T/evil.safetensors" "$T/second.safetensors" "$T/plain.safetensors")
if printf '%s' "$out" | grep -q $'\x1b'; then fail "a raw ESC reached the output"; fi
[ "$(printf '%s\n' "$out" | grep -c '^== ')" = 3 ] || fail "inspect of three files"
printf '%s\n' "$out" | grep -qxF "== $T/plain.safetensors" || fail "a plain path was quoted: $out"
printf '%s\n' "$out" | grep -qF "'a\u001b[31m\n\"b' " || fail "escaped name not shown: $out"
printf '%s\n' "$out" | grep -q '^layers\.0\.weight  *F32  *\[2\]  *8$' || fail "a plain name was quoted: $out"
printf '%s\n' "$out" | grep -q "^'my bias'  *F32" || fail "a name with a space was not quoted: $out"
printf '%s\n' "$out" | grep -qx "metadata: format = pt" || fail "plain metadata was quoted: $out"
printf '%s\n' "$out" | grep -qx "metadata: note = 'two words'" || fail "metadata with a space: $out"
# An error names the file once (the library's message names it already).
printf 'not a safetensors file' >"$T/bad.bin"
run "$W" inspect "$T/bad.bin"
[ "$rc" = 1 ] || fail "inspect of a bad file: exit status $rc"
[ "$(grep -o "bad\.bin" "$T/err" | wc -l)" = 1 ] || fail "the error does not name the file once: $(cat "$T/err")"
grep -q "^wharf: DATA_CORRUPT: safetensors file '$T/bad.bin': " "$T/err" || fail "inspect error: $(cat "$T/err")"
# --json is valid JSON whatever happens: a file that cannot be read (here the first, and a
# missing one) is an error object in its place, and a file name that is not UTF-8 comes out
# with U+FFFD for its stray byte (one JSON writer, src/io/json.h). The exit status is 1.
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
# info lists the WHARF_* switches set (what an A/B run ran with) and names one Wharf does not
# read, with the closest known name, once (not again as a log warning on stderr).
run env WHARF_TRANSFER_RAMP=0 WHARF_SERVING_WINDOW=100 "$W" info
[ "$rc" = 0 ] || fail "info with switches set: exit status $rc"
grep -qF "environment:   WHARF_SERVING_WINDOW='100' (Wharf reads no such variable; did you mean WHARF_SERVING_WINDOW_MS?)" "$T/out" \
  || fail "info does not name the unknown variable: $(cat "$T/out")"
grep -qE "^ +WHARF_TRANSFER_RAMP='0'$" "$T/out" || fail "info does not list WHARF_TRANSFER_RAMP: $(cat "$T/out")"
[ ! -s "$T/err" ] || fail "info warned on stderr too: $(cat "$T/err")"
env WHARF_SERVING_WINDOW=100 "$W" info --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["environment"]["WHARF_SERVING_WINDOW"] == "100", d
assert d["unknown_environment"] == [{"name": "WHARF_SERVING_WINDOW", "closest": "WHARF_SERVING_WINDOW_MS"}], d' \
  || fail "info --json environment"
run env $'WHARF_\e[2J=1' "$W" info
grep -qF "environment:   'WHARF_\u001b[2J'='1'" "$T/out" || fail "info printed a variable's name raw: $(cat -v "$T/out")"
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
grep -q "^loaded $T/model.safetensors: 3 tensors, 24.00 MiB in .* generation 1$" "$T/out" || fail "load summary: $(cat "$T/out")"
grep -q "^updated $T/update.safetensors: 2 tensors, 12.00 MiB in .* generation 2$" "$T/out" || fail "update summary: $(cat "$T/out")"
[ "$(wc -l <"$T/out")" = 2 ] || fail "load printed more than its two lines: $(cat "$T/out")"
if "$W" load --backend host "$T/model.safetensors" --update "$T/bad.safetensors" >"$T/out" 2>"$T/err"; then
  fail "an update of the wrong shape was accepted"
fi
# The message does not name the file: the program does, once.
grep -qx "wharf: $T/bad.safetensors: INVALID_ARGUMENT: constant 'c': shape \[4\] expected, got \[3\]" "$T/err" \
  || fail "bad update: $(cat "$T/err")"
# load --json: one object, a step per file, the error (null, or the failed file's).
run "$W" load --json --backend host "$T/model.safetensors" --update "$T/update.safetensors"
[ "$rc" = 0 ] || fail "load --json: exit status $rc: $(cat "$T/err")"
python3 - "$T" <<'PY' || fail "load --json: $(cat "$T/out")"
import json, sys
t = sys.argv[1]
d = json.load(open(t + "/out"))
assert d["backend"] == "host" and d["error"] is None, d
assert [(s["action"], s["file"], s["tensors"], s["bytes"], s["generation"]) for s in d["steps"]] == [
    ("loaded", t + "/model.safetensors", 3, 24 << 20 | 16, 1), ("updated", t + "/update.safetensors", 2, 12 << 20 | 16, 2)], d
assert all(s["ms"] >= 0 and s["gb_per_s"] >= 0 for s in d["steps"]), d
PY
run "$W" load --json --backend host "$T/model.safetensors" --update "$T/bad.safetensors"
[ "$rc" = 1 ] || fail "load --json of a bad update: exit status $rc"
[ ! -s "$T/err" ] || fail "load --json wrote the error to stderr too: $(cat "$T/err")"
python3 - "$T" <<'PY' || fail "load --json of a bad update: $(cat "$T/out")"
import json, sys
t = sys.argv[1]
d = json.load(open(t + "/out"))
assert len(d["steps"]) == 1 and d["steps"][0]["action"] == "loaded", d
assert d["error"] == {"file": t + "/bad.safetensors", "code": "INVALID_ARGUMENT",
                      "message": "constant 'c': shape [4] expected, got [3]"}, d
PY
"$W" load --backend host "$T/s.safetensors.index.json" --update "$T/s-2.safetensors" >"$T/out" 2>"$T/err" || fail "load of an index"
grep -q "^loaded $T/s.safetensors.index.json: 2 tensors, 12 B in .* generation 1$" "$T/out" || fail "index summary: $(cat "$T/out")"
grep -q "^updated $T/s-2.safetensors: 1 tensor, 4 B in .* generation 2$" "$T/out" || fail "shard update summary: $(cat "$T/out")"
# On a terminal (script(1) gives the program a pseudo-terminal): a progress line on stderr,
# rewritten in place (carriage return, erase to the end of the line), reaching 100%.
if command -v script >/dev/null; then
  script -qc "'$W' load --backend host '$T/model.safetensors' --update '$T/update.safetensors'" /dev/null >"$T/tty"
  grep -q $'\r\033\[Kloaded '"$T"'/model.safetensors: 100% (24.00 MiB of 24.00 MiB)' "$T/tty" || fail "no load progress on a terminal: $(cat -A "$T/tty")"
  grep -q $'\r\033\[Kupdated '"$T"'/update.safetensors: 100% (12.00 MiB of 12.00 MiB)' "$T/tty" || fail "no update progress on a terminal: $(cat -A "$T/tty")"
  # The summary starts on a clean line: the progress line was erased before it.
  tr '\r' '\n' <"$T/tty" | sed 's/\x1b\[K//g' | grep -q "^loaded $T/model.safetensors: 3 tensors, .* generation 1$" \
    || fail "summary after the progress line: $(cat -A "$T/tty")"
else
  echo "cli_test: skipping the terminal case of load's progress: script(1) (util-linux) is not installed"
fi
# generate: a model package is checked whole before its methods need the device. On the host
# backend a valid package stops at its first method (UNSUPPORTED: AOTInductor methods run on
# CUDA), a bad one earlier, naming the field; --json reports the error in its object.
python3 - "$T" <<'PY'
import json, os, struct, sys
d = sys.argv[1] + "/pkg.wharf"
os.makedirs(d + "/methods")
hdr = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
hdr += b" " * (-len(hdr) % 8)
open(d + "/weights.safetensors", "wb").write(struct.pack("<Q", len(hdr)) + hdr + struct.pack("<2f", 1, 2))
for m in ("prefill", "decode"):
    open(d + "/methods/%s.so" % m, "w").write("placeholder")
ids = lambda shape: [{"name": "input_ids", "dtype": "int64", "shape": [1, shape]},
                     {"name": "cache_position", "dtype": "int64", "shape": [shape]}]
out = [{"name": "logits", "dtype": "float32", "shape": [1, 1, 8]}]
json.dump({"format": "wharf-model-package", "format_version": 1, "name": "tiny", "max_seq_len": 16,
           "weights": {"files": ["weights.safetensors"], "parameters": [{"fqn": "w", "dtype": "float32", "shape": [2]}]},
           "methods": [{"name": "prefill", "file": "methods/prefill.so", "inputs": ids("T"), "outputs": out,
                        "dims": {"T": {"min": 1, "max": 16}}},
                       {"name": "decode", "file": "methods/decode.so", "inputs": ids(1), "outputs": out}]},
          open(d + "/manifest.json", "w"))
PY
run "$W" generate --backend host "$T/pkg.wharf" --prompt 1,2,3 --max-new-tokens 4
[ "$rc" = 1 ] || fail "generate on the host backend: exit status $rc"
grep -q "^wharf: generate: UNSUPPORTED: model package '$T/pkg.wharf': method 'prefill': .*CUDA backend" "$T/err" \
  || fail "generate on the host backend: $(cat "$T/err")"
sed -i 's/"float32", "shape": \[2\]/"float32", "shape": [3]/' "$T/pkg.wharf/manifest.json"
run "$W" generate --backend host --json "$T/pkg.wharf" --prompt 1,2,3 --max-new-tokens 4
[ "$rc" = 1 ] || fail "generate --json of a bad package: exit status $rc"
python3 - "$T" <<'PY' || fail "generate --json of a bad package: $(cat "$T/out")"
import json, sys
t = sys.argv[1]
d = json.load(open(t + "/out"))
assert d["tokens"] == [] and d["prompt"] == [1, 2, 3] and d["backend"] == "host", d
assert d["error"]["code"] == "INVALID_ARGUMENT", d
assert "weight file 'weights.safetensors': tensor 'w' is F32 [2], the manifest declares F32 [3]" in d["error"]["message"], d
PY
# Why CUDA is not used is said once: by `info` on its own line (no log warning beside it),
# and once in the demo. Without an NVIDIA driver (no libcuda.so.1) a CUDA build says so.
run "$W" info
[ "$rc" = 0 ] || fail "info: exit status $rc"
why=$(sed -n 's/^cuda: *not used: //p' "$T/out")
if [ -n "$why" ]; then
  [ ! -s "$T/err" ] || fail "info repeated the reason CUDA is not used on stderr: $(cat "$T/err")"
  if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' && ! printf '%s' "$why" | grep -q "has no CUDA backend"; then
    printf '%s' "$why" | grep -q "no NVIDIA driver" || fail "no driver here, but info says: $why"
  fi
  run env TMPDIR="$T/demo" "$W" demo --readers 1
else
  run env TMPDIR="$T/demo" "$W" demo --host --readers 1
fi
[ "$rc" = 0 ] || fail "demo: exit status $rc: $(cat "$T/out" "$T/err")"
n=$(cat "$T/out" "$T/err" | grep -c "not usable\|chose the host backend" || true)
[ -z "$why" ] || [ "$n" = 1 ] || fail "the demo said why CUDA is not used $n times: $(cat "$T/out" "$T/err")"
# The demo's temporary model file is gone when it ends.
grep -q "written to $T/demo/wharf-demo-model.safetensors" "$T/out" || fail "demo model file: $(cat "$T/out")"
[ -z "$(ls -A "$T/demo")" ] || fail "the demo left files behind: $(ls -A "$T/demo")"
echo "cli_test: ok"
