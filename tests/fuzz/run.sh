#!/usr/bin/env bash
# Builds the safetensors libFuzzer target (ASan + UBSan) into build/fuzz/ and runs it.
#
#   tests/fuzz/run.sh [seconds]     default 60; exits non-zero if the fuzzer finds a crash,
#                                   leak, sanitizer report or property violation.
#
# New inputs accumulate in build/fuzz/corpus (kept between runs); crashing inputs land in
# build/fuzz/artifacts/. Reproduce one with: build/fuzz/safetensors_fuzz <file>.
set -euo pipefail

seconds="${1:-60}"
case "$seconds" in
  ''|*[!0-9]*) echo "usage: $0 [seconds]" >&2; exit 2 ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
out=build/fuzz
mkdir -p "$out/corpus" "$out/seeds" "$out/artifacts"

cxx="${FUZZ_CXX:-clang++}"
echo "building $out/safetensors_fuzz with $cxx" >&2
"$cxx" -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Isrc -Iinclude tests/fuzz/safetensors_fuzz.cpp src/io/*.cpp src/core/*.cpp \
  -o "$out/safetensors_fuzz"

# Seeds: a few valid files (regenerated each run) so the fuzzer starts past the length prefix
# and the JSON grammar instead of having to discover them.
python3 - "$out/seeds" <<'PY'
import json, os, struct, sys

def image(header, data=b"", pad=True):
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data

seeds = {
    "two_tensors_meta": image({
        "__metadata__": {"format": "pt", "note": "caf\u00e9 \"q\""},
        "layers.0.w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
        "layers.0.b": {"dtype": "BF16", "shape": [2], "data_offsets": [16, 20]},
    }, bytes(range(20))),
    "scalar_and_empty": image({
        "s": {"dtype": "I64", "shape": [], "data_offsets": [0, 8]},
        "e": {"dtype": "F16", "shape": [0, 3], "data_offsets": [8, 8]},
    }, b"\x01" * 8),
    "every_dtype": image({
        name: {"dtype": name, "shape": [1], "data_offsets": [i * 8, i * 8 + size]}
        for i, (name, size) in enumerate([("F32", 4), ("F16", 2), ("BF16", 2), ("F64", 8),
            ("F8_E4M3", 1), ("F8_E5M2", 1), ("I8", 1), ("U8", 1), ("I16", 2), ("I32", 4),
            ("I64", 8), ("BOOL", 1)])
    }, bytes(96)),
    "gaps_unpadded": image({
        "b": {"dtype": "U8", "shape": [1, 1, 2], "data_offsets": [6, 8], "extra": [None, True]},
        "a": {"dtype": "I16", "shape": [2], "data_offsets": [0, 4]},
    }, b"abcdefghij", pad=False),
    "empty": image({}),
    "zero_huge_dims": image({
        "z": {"dtype": "F32", "shape": [4294967296, 4294967296, 0], "data_offsets": [0, 0]},
        "y": {"dtype": "U8", "shape": [0, 9223372036854775807, 4], "data_offsets": [0, 0]},
    }),
    "escapes_in_names": image({
        "__metadata__": {"k\u001b[31m": "v\n"},
        "layers.0\n\u001b[31m\u009b\u202e": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
    }, b"x"),
}
for name, data in seeds.items():
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.write(data)
PY

cat > "$out/safetensors.dict" <<'DICT'
"dtype"
"shape"
"data_offsets"
"__metadata__"
"F32"
"F16"
"BF16"
"F64"
"F8_E4M3"
"F8_E5M2"
"I8"
"U8"
"I16"
"I32"
"I64"
"BOOL"
"\\u"
"\\uD83D\\uDE00"
"\\u0000"
"\\u001b"
"\\u009b"
"\\u202e"
"\xc0\xaf"
"\xed\xa0\x80"
"9223372036854775807"
"18446744073709551615"
"9223372036854775808"
"4294967296"
"-0"
"1e3"
"true"
"false"
"null"
DICT

echo "fuzzing for ${seconds}s" >&2
if ! "$out/safetensors_fuzz" "$out/corpus" "$out/seeds" \
    -dict="$out/safetensors.dict" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -artifact_prefix="$out/artifacts/" -print_final_stats=1; then
  echo "FUZZER FOUND A PROBLEM: see the report above and the input in $out/artifacts/" >&2
  exit 1
fi
echo "no crashes in ${seconds}s" >&2
