#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the safetensors libFuzzer target (ASan + UBSan) into $FUZZ_OUT (default build/fuzz)
# and runs it.
#
#   tests/fuzz/run.sh [seconds]     default 60; exits non-zero if the fuzzer finds a crash,
#                                   leak, sanitizer report or property violation.
#
# The target feeds every input to the safetensors reader, the sharded-checkpoint index parser,
# the ZIP reader of .pt2 packages and the model package manifest parser. New inputs accumulate
# in $FUZZ_OUT/corpus (kept between runs); crashing inputs land in $FUZZ_OUT/artifacts/. Reproduce one with: $FUZZ_OUT/safetensors_fuzz <file>.
# JOBS (default 2) objects are compiled at once; an unchanged source is not recompiled.
set -euo pipefail

seconds="${1:-60}"
case "$seconds" in
  ''|*[!0-9]*) echo "usage: $0 [seconds]" >&2; exit 2 ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
out="${FUZZ_OUT:-build/fuzz}"
mkdir -p "$out/corpus" "$out/seeds" "$out/artifacts" "$out/obj"

cxx="${FUZZ_CXX:-clang++}"
flags=(-std=c++17 -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -Isrc -Iinclude)
echo "building $out/safetensors_fuzz with $cxx" >&2
sources=(tests/fuzz/safetensors_fuzz.cpp src/io/*.cpp src/core/*.cpp src/models/manifest.cpp)
objects=()
stale=()
for src in "${sources[@]}"; do
  obj="$out/obj/$(echo "$src" | tr / _).o"
  objects+=("$obj")
  # Rebuilt when the source, or any header under src/ or include/, is newer than the object.
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$(find src include -name '*.h' -newer "$obj" -print -quit)" ]; then
    stale+=("$src")
  fi
done
if [ ${#stale[@]} -gt 0 ]; then
  printf '%s\n' "${stale[@]}" | xargs -P "${JOBS:-2}" -I{} sh -c \
    'o="$1/obj/$(echo "$2" | tr / _).o"; shift 2; exec "$@" -c "$0" -o "$o"' {} "$out" {} "$cxx" "${flags[@]}"
fi
"$cxx" -fsanitize=fuzzer,address,undefined "${objects[@]}" -o "$out/safetensors_fuzz"

# Seeds: valid files and the edges of every rule (regenerated each run), so the fuzzer starts
# past the length prefix and the JSON grammar instead of having to discover them.
rm -f "$out/seeds"/*
python3 - "$out/seeds" <<'PY'
import json, os, struct, sys

def image(header, data=b"", pad=True):
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data

# The reference's 22 dtypes and their bit sizes, in its enum (alignment) order.
DTYPES = [("BOOL", 8), ("F4", 4), ("F6_E2M3", 6), ("F6_E3M2", 6), ("U8", 8), ("I8", 8), ("F8_E5M2", 8),
          ("F8_E4M3", 8), ("F8_E8M0", 8), ("F8_E4M3FNUZ", 8), ("F8_E5M2FNUZ", 8), ("I16", 16), ("U16", 16),
          ("F16", 16), ("BF16", 16), ("I32", 32), ("U32", 32), ("F32", 32), ("C64", 64), ("F64", 64),
          ("I64", 64), ("U64", 64)]

def every_dtype():
    # 8 elements each (whole bytes for 4- and 6-bit dtypes), laid out as the reference writes.
    header, off = {}, 0
    for name, bits in reversed(DTYPES):
        n = bits  # 8 elements * bits / 8
        header["t." + name] = {"dtype": name, "shape": [2, 4], "data_offsets": [off, off + n]}
        off += n
    return image(header, bytes(range(256)) * (off // 256) + bytes(range(off % 256)))

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
    "every_dtype": every_dtype(),
    "sub_byte": image({
        "f4": {"dtype": "F4", "shape": [3, 2], "data_offsets": [0, 3]},
        "f6": {"dtype": "F6_E2M3", "shape": [4], "data_offsets": [3, 6]},
        "f6b": {"dtype": "F6_E3M2", "shape": [2, 2, 2], "data_offsets": [6, 12]},
    }, bytes(12)),
    "sub_byte_odd_bits": image({"f4": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, bytes(2)),
    "zero_size_at_boundaries": image({
        "z0": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]},
        "a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
        "z1": {"dtype": "U8", "shape": [0, 5], "data_offsets": [2, 2]},
        "b": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]},
        "z2": {"dtype": "BOOL", "shape": [5, 0], "data_offsets": [4, 4]},
    }, b"abcd"),
    "zero_size_inside": image({
        "a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
        "z": {"dtype": "U8", "shape": [0], "data_offsets": [2, 2]},
    }, b"abcd"),
    "hole": image({
        "b": {"dtype": "U8", "shape": [1, 1, 2], "data_offsets": [6, 8], "extra": [None, True]},
        "a": {"dtype": "I16", "shape": [2], "data_offsets": [0, 4]},
    }, b"abcdefgh", pad=False),
    "first_not_at_zero": image({"a": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}}, b"abcd"),
    "trailing_bytes": image({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}}, b"ab<html>"),
    "overlap": image({
        "a": {"dtype": "U8", "shape": [3], "data_offsets": [0, 3]},
        "b": {"dtype": "U8", "shape": [3], "data_offsets": [1, 4]},
    }, b"abcd"),
    "empty": image({}),
    "empty_with_data": image({}, b"x"),
    "metadata_null": image({"__metadata__": None, "w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, b"w"),
    "zero_huge_dims": image({
        "z": {"dtype": "F32", "shape": [0, 4294967296, 4294967296], "data_offsets": [0, 0]},
        "y": {"dtype": "U8", "shape": [4294967296, 0, 9223372036854775807], "data_offsets": [0, 0]},
    }),
    "overflow_before_zero": image({"z": {"dtype": "F32", "shape": [4294967296, 4294967296, 0], "data_offsets": [0, 0]}}),
    "unsupported_dtype": image({"w": {"dtype": "Q4_K", "shape": [4], "data_offsets": [0, 4]}}, b"abcd"),
    "unsupported_rank": image({"w": {"dtype": "U8", "shape": [1] * 9, "data_offsets": [0, 1]}}, b"a"),
    "unsupported_dim": image({"w": {"dtype": "U8", "shape": [18446744073709551615, 0], "data_offsets": [0, 0]}}),
    "escapes_in_names": image({
        "__metadata__": {"k\u001b[31m": "v\n"},
        "layers.0\n\u001b[31m\u009b\u202e": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
    }, b"x"),
    "index": json.dumps({
        "metadata": {"total_size": 12, "format": "pt", "nested": {"a": [1]}},
        "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "sub/model-00002-of-00002.safetensors"},
    }).encode(),
    "index_escape": json.dumps({"weight_map": {"a": "../x.safetensors", "b": "/etc/x", "c": "a/../../b"}}).encode(),
}
# .pt2-shaped ZIP archives (stored entries; one with ZIP64 records) for the ZIP reader.
import io, zipfile
def pt2(force_zip64):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        z.writestr("m/archive_format", b"pt2")
        with z.open("m/data/aotinductor/model/x.wrapper.so", "w", force_zip64=force_zip64) as f:
            f.write(b"\x7fELF" + bytes(60))
    return b.getvalue()
seeds["zip_stored"] = pt2(False)
seeds["zip_zip64"] = pt2(True)
# Model package manifests (docs/model-package.md): a full one (parameters, aliases, states
# with both initial forms, a per-session and a batched method with symbolic dims) and edges.
manifest = {
    "format": "wharf-model-package", "format_version": 1, "name": "tiny", "max_seq_len": 64,
    "weights": {
        "files": ["weights/model-00001-of-00002.safetensors", "weights/model-00002-of-00002.safetensors"],
        "parameters": [{"fqn": "embed.weight", "dtype": "float32", "shape": [8, 4]},
                       {"fqn": "norm.weight", "dtype": "bfloat16", "shape": [4]},
                       {"fqn": "lm_head.weight", "dtype": "F32", "shape": [8, 4]}],
        "aliases": {"model.embed_tokens.weight": "embed.weight"},
    },
    "state": [{"fqn": "cache.key_0", "dtype": "float32", "shape": [1, 2, 64, 2], "initial": "zeros"},
              {"fqn": "cache.pos", "dtype": "int64", "shape": [1], "initial": {"tensor": "pos0"}}],
    "state_file": "state.safetensors",
    "methods": [
        {"name": "prefill", "file": "methods/prefill.so",
         "inputs": [{"name": "input_ids", "dtype": "int64", "shape": [1, "T"]},
                    {"name": "cache_position", "dtype": "int64", "shape": ["T"]}],
         "outputs": [{"name": "logits", "dtype": "float32", "shape": [1, 1, 8]}],
         "dims": {"T": {"min": 1, "max": 64, "pad": "repeat"}}},
        {"name": "decode_batch", "file": "methods/decode_batch.so", "session_capacity": 8,
         "inputs": [{"name": "input_ids", "dtype": "int64", "shape": ["N", 1]},
                    {"name": "slots", "dtype": "int64", "shape": ["N"]}],
         "outputs": [{"name": "logits", "dtype": "float32", "shape": ["N", 1, 8]}],
         "dims": {"N": {"min": 1, "max": 8}}},
    ],
}
seeds["manifest"] = json.dumps(manifest, indent=1).encode()
def small(**over):
    m = {"format": "wharf-model-package", "format_version": 1, "name": "m",
         "weights": {"files": ["w.safetensors"], "parameters": [{"fqn": "w", "dtype": "F32", "shape": [2]}]},
         "methods": [{"name": "f", "file": "f.so", "inputs": [{"name": "x", "dtype": "int64", "shape": ["N"]}],
                      "outputs": [], "dims": {"N": {"min": 1, "max": 4}}}]}
    for k, v in over.items():
        m[k] = v
    return json.dumps(m).encode()
seeds["manifest_min"] = small()
# One broken rule each, the rest valid: the fuzzer starts at every refusal's edge.
def method(**over):
    f = {"name": "f", "file": "f.so", "inputs": [{"name": "x", "dtype": "int64", "shape": ["N"]}], "outputs": [],
         "dims": {"N": {"min": 1, "max": 4}}}
    f.update(over)
    return [f]
for i, path in enumerate(["../f.so", "a/../../f.so", "/abs/f.so", "a//f.so", "a/..", ""]):
    seeds["manifest_path_%d" % i] = small(methods=method(file=path))
seeds["manifest_weight_escape"] = small(weights={"files": ["x/../../w.safetensors"], "parameters": []})
seeds["manifest_state_escape"] = small(state_file="../s.safetensors",
                                       state=[{"fqn": "s", "dtype": "F32", "shape": [1], "initial": {"tensor": "s0"}}])
seeds["manifest_min_gt_max"] = small(methods=method(dims={"N": {"min": 5, "max": 2}}))
seeds["manifest_slots"] = small(methods=method(session_capacity=4, inputs=[{"name": "slots", "dtype": "int32", "shape": ["N"]}]))
seeds["manifest_twice"] = small(methods=method() + method())
seeds["manifest_alias"] = small(weights={"files": ["w.safetensors"], "parameters": [{"fqn": "w", "dtype": "F32", "shape": [2]}],
                                         "aliases": {"v": "nope"}})
seeds["manifest_newer"] = small(format_version=2)
seeds["manifest_name"] = small(name="m\u202e\n")
seeds["manifest_hostile_keys"] = small(weights={"files": ["w.safetensors"], "parameters": [{"fqn": "w", "dtype": "F32", "shape": [2]}],
                                                "aliases": {"a\n\u001b[31m": "w", "s": "w"}},
                                       state=[{"fqn": "s", "dtype": "F32", "shape": [1], "initial": "zeros"}],
                                       methods=method(inputs=[{"name": "x", "dtype": "int64", "shape": ["N\n"]}],
                                                      dims={"N\n": {"min": 9, "max": 1, "pad": "x\u001b"}}))
seeds["manifest_spellings"] = small(weights={"files": ["./w.safetensors", "w.safetensors"], "parameters": []},
                                    methods=method(file="./x//f.so"))

for name, data in seeds.items():
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.write(data)
PY

cat > "$out/safetensors.dict" <<'DICT'
"dtype"
"shape"
"data_offsets"
"__metadata__"
"weight_map"
"metadata"
"total_size"
".safetensors"
"../"
"/.."
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
"U16"
"U32"
"U64"
"C64"
"F8_E8M0"
"F8_E4M3FNUZ"
"F8_E5M2FNUZ"
"F4"
"F6_E2M3"
"F6_E3M2"
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
"100000000"
"-0"
"1e3"
"true"
"false"
"null"
"format"
"wharf-model-package"
"format_version"
"weights"
"files"
"parameters"
"aliases"
"fqn"
"state"
"state_file"
"initial"
"zeros"
"tensor"
"methods"
"file"
"inputs"
"outputs"
"dims"
"min"
"max"
"pad"
"repeat"
"session_capacity"
"slots"
"max_seq_len"
"int64"
"float32"
"bfloat16"
DICT

echo "fuzzing for ${seconds}s" >&2
if ! "$out/safetensors_fuzz" "$out/corpus" "$out/seeds" \
    -dict="$out/safetensors.dict" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -artifact_prefix="$out/artifacts/" -print_final_stats=1; then
  echo "FUZZER FOUND A PROBLEM: see the report above and the input in $out/artifacts/" >&2
  exit 1
fi
echo "no crashes in ${seconds}s" >&2
