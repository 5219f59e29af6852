# SPDX-License-Identifier: Apache-2.0
"""Makes the reference safetensors file the unit tests read, with PyTorch's `safetensors`
package (a real client), and checks that a file Wharf wrote loads in PyTorch.

Run on a machine with torch and safetensors (the lent GPU machine has both):
    python3 tests/data/make_reference.py OUT_DIR [WHARF_WRITTEN.safetensors]
Writes OUT_DIR/torch_reference.safetensors and OUT_DIR/torch_reference.json (each tensor's
dtype, shape and SHA-256 of its little-endian bytes, as torch reports them).
"""
import hashlib
import json
import sys

import torch
from safetensors.torch import load_file, save_file


def tensor_bytes(t: torch.Tensor) -> bytes:
    t = t.contiguous().cpu()
    # view as uint8 to get the raw little-endian storage, whatever the dtype
    return t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""


def main() -> None:
    out = sys.argv[1]
    g = torch.Generator().manual_seed(1234)
    tensors = {
        "model.embed.weight": torch.randn(64, 32, generator=g, dtype=torch.float32),
        "model.layers.0.attn.qkv.weight": torch.randn(96, 32, generator=g).to(torch.bfloat16),
        "model.layers.0.mlp.up.weight": torch.randn(48, 32, generator=g).to(torch.float16),
        "model.layers.0.norm.weight": torch.ones(32, dtype=torch.float64),
        "model.rope.inv_freq": torch.arange(16, dtype=torch.int64),
        "model.mask": torch.tensor([True, False, True, True]),
        "model.scale": torch.tensor(0.5, dtype=torch.float32),  # zero-dimensional
        "model.empty": torch.zeros(0, 8, dtype=torch.int32),
        "model.q8": torch.arange(-8, 8, dtype=torch.int8).reshape(4, 4),
        "model.u8": torch.arange(0, 250, 10, dtype=torch.uint8),
        "model.i16": torch.arange(-4, 4, dtype=torch.int16),
    }
    if hasattr(torch, "float8_e4m3fn"):
        tensors["model.fp8_e4m3"] = torch.linspace(-2, 2, 8).to(torch.float8_e4m3fn)
        tensors["model.fp8_e5m2"] = torch.linspace(-2, 2, 8).to(torch.float8_e5m2)
    path = f"{out}/torch_reference.safetensors"
    save_file(tensors, path, metadata={"format": "pt", "producer": "make_reference.py"})
    ref = {}
    for name, t in load_file(path).items():
        ref[name] = {
            "dtype": str(t.dtype).replace("torch.", ""),
            "shape": list(t.shape),
            "sha256": hashlib.sha256(tensor_bytes(t)).hexdigest(),
            "hex": tensor_bytes(t).hex(),
        }
    with open(f"{out}/torch_reference.json", "w") as f:
        json.dump({"torch": torch.__version__, "tensors": ref}, f, indent=1, sort_keys=True)
    print(f"wrote {path} ({len(tensors)} tensors), torch {torch.__version__}")

    if len(sys.argv) > 2:  # a file Wharf wrote: PyTorch must load it
        loaded = load_file(sys.argv[2])
        total = sum(t.numel() * t.element_size() for t in loaded.values())
        print(f"torch loaded the Wharf-written {sys.argv[2]}: {len(loaded)} tensors, {total} bytes")


if __name__ == "__main__":
    main()
