#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes safetensors files with the reference implementation (the `safetensors` package, whose
serialize_file is the Rust crate's serializer) for tests/unit/safetensors_conformance_test.cpp.

    python3 tests/data/safetensors/make_reference.py [OUT_DIR]

Contents are a pure function of the dtype's position in the reference's Dtype enum (its
"alignment order"), so the C++ test recomputes every byte. Only the `safetensors` package is
needed (no torch): TensorSpec takes raw pointers and framework dtype names. Every dtype the
Python API names is written (20 of the 22: F6_E2M3 and F6_E3M2 have no Python name; the C++
tests cover them with files built byte by byte). F4 is given its storage shape (bytes) and the
package doubles the last dimension, as it does for torch.float4_e2m1fn_x2.
"""
import ctypes
import json
import os
import sys

import safetensors
from safetensors import TensorSpec, serialize, serialize_file

# The reference's Dtype enum, in order: (name, bits, the Python API's dtype name or None).
DTYPES = [("BOOL", 8, "bool"), ("F4", 4, "float4_e2m1fn_x2"), ("F6_E2M3", 6, None), ("F6_E3M2", 6, None),
          ("U8", 8, "uint8"), ("I8", 8, "int8"), ("F8_E5M2", 8, "float8_e5m2"), ("F8_E4M3", 8, "float8_e4m3fn"),
          ("F8_E8M0", 8, "float8_e8m0fnu"), ("F8_E4M3FNUZ", 8, "float8_e4m3fnuz"),
          ("F8_E5M2FNUZ", 8, "float8_e5m2fnuz"), ("I16", 16, "int16"), ("U16", 16, "uint16"),
          ("F16", 16, "float16"), ("BF16", 16, "bfloat16"), ("I32", 32, "int32"), ("U32", 32, "uint32"),
          ("F32", 32, "float32"), ("C64", 64, "complex64"), ("F64", 64, "float64"), ("I64", 64, "int64"),
          ("U64", 64, "uint64")]
RANK = {d[0]: i for i, d in enumerate(DTYPES)}
_alive = []


def pattern(rank, n):
    return bytes(((rank * 16 + i * 7 + 3) & 0xFF) for i in range(n))


def spec(dtype, shape):
    rank = RANK[dtype]
    _, bits, pyname = DTYPES[rank]
    numel = 1
    for d in shape:
        numel *= d
    data = pattern(rank, numel * bits // 8)
    buf = ctypes.create_string_buffer(data, max(1, len(data)))
    _alive.append(buf)
    storage = list(shape)
    if dtype == "F4":
        assert storage and storage[-1] % 2 == 0
        storage[-1] //= 2  # the package doubles it back
    s = TensorSpec(dtype=pyname, shape=storage, data_ptr=ctypes.addressof(buf), data_len=len(data))
    assert list(s.shape) == list(shape), (dtype, s.shape, shape)
    return s


def main(out):
    os.makedirs(out, exist_ok=True)
    writable = [d[0] for d in DTYPES if d[2] is not None]
    files = {
        # Every dtype the Python API names, [2, 4] (whole bytes for F4), given in name order.
        "every_dtype.safetensors": ({"t." + d: ("%s" % d, [2, 4]) for d in writable}, None),
        # Odd sizes that would misalign later tensors in the given order; scalars; empty tensors.
        "mixed.safetensors": ({
            "a.bool": ("BOOL", [3]), "b.u8": ("U8", [5]), "c.f16": ("F16", []), "d.f32": ("F32", [3, 1]),
            "e.f64": ("F64", [2]), "f.f4": ("F4", [6]), "g.u16": ("U16", [3]), "h.i64": ("I64", []),
            "z.empty_f32": ("F32", [0, 4]), "z.empty_u8": ("U8", [4, 0]),
        }, None),
        "metadata.safetensors": ({"w": ("F32", [2])}, {"format": "pt"}),
        "empty.safetensors": ({}, None),
    }
    manifest = {"safetensors_version": safetensors.__version__, "files": {}}
    for name, (tensors, metadata) in files.items():
        specs = {k: spec(dt, shape) for k, (dt, shape) in tensors.items()}
        path = os.path.join(out, name)
        serialize_file(specs, path, metadata=metadata)
        assert open(path, "rb").read() == serialize(specs, metadata=metadata), name
        manifest["files"][name] = {"tensors": {k: {"dtype": dt, "shape": sh} for k, (dt, sh) in tensors.items()},
                                   "metadata": metadata}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", sorted(files), "with safetensors", safetensors.__version__)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
