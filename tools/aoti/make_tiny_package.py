# SPDX-License-Identifier: Apache-2.0
"""Makes a Wharf model package (docs/model-package.md) from the committed tiny decoder and,
with --check, decodes with it through `wharf generate` (and the README's package example)
against PyTorch's reference tokens. Standard library only (the GPU bundle runs it anywhere).

    python3 make_tiny_package.py MODEL_DIR OUT_DIR [--check WHARF [README_EXAMPLE]]

MODEL_DIR holds tiny_decoder.so (prefill, dynamic length), tiny_decoder_decode.so (one token),
tiny_decoder.safetensors and reference.safetensors (tests/data/models/tiny_decoder). The
package's files are copies (a symbolic link out of a package is refused by the loader).
--check runs, each compared with the reference's tokens:
  - wharf generate PACKAGE --prompt P --max-new-tokens N --json;
  - the same with --update (the package's own weights file) --update-after 2: a store update
    and swap mid-conversation, which must not change the tokens but must move every later
    token's generation;
  - README_EXAMPLE PACKAGE P N (tests/abi/readme_package_example.c), when given.
"""
import json
import os
import shutil
import struct
import subprocess
import sys

DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64", "I32": "int32"}


def read_safetensors(path):
    """The header (name -> dtype, shape, offsets) and the data section's bytes."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    header.pop("__metadata__", None)
    return header, data


def i64_values(path, name):
    header, data = read_safetensors(path)
    t = header[name]
    b, e = t["data_offsets"]
    assert t["dtype"] == "I64", t
    return list(struct.unpack("<%dq" % ((e - b) // 8), data[b:e]))


def make(model_dir, out):
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out + "/methods")
    os.makedirs(out + "/weights")
    shutil.copyfile(model_dir + "/tiny_decoder.so", out + "/methods/prefill.so")
    shutil.copyfile(model_dir + "/tiny_decoder_decode.so", out + "/methods/decode.so")
    shutil.copyfile(model_dir + "/tiny_decoder.safetensors", out + "/weights/model.safetensors")
    header, _ = read_safetensors(model_dir + "/tiny_decoder.safetensors")
    params = [{"fqn": k, "dtype": DTYPES[v["dtype"]], "shape": v["shape"]} for k, v in header.items()]
    vocab = header["lm_head.weight"]["shape"][0]
    states = [{"fqn": "layers.%d.%s" % (l, kv), "dtype": "float32", "shape": [1, 4, 64, 16], "initial": "zeros"}
              for l in range(2) for kv in ("k_cache", "v_cache")]
    ids = lambda n: [{"name": "input_ids", "dtype": "int64", "shape": [1, n]},
                     {"name": "cache_position", "dtype": "int64", "shape": [n]}]
    manifest = {
        "format": "wharf-model-package", "format_version": 1, "name": "tiny-decoder", "dtype": "float32",
        "source": {"model_type": "tiny_decoder", "path": "tests/data/models/tiny_decoder"},
        "producer": {"tool": "tools/aoti/make_tiny_package.py"},
        "max_seq_len": 64,
        "weights": {"files": ["weights/model.safetensors"], "parameters": params},
        "state": states,
        "methods": [
            {"name": "prefill", "file": "methods/prefill.so", "inputs": ids("T"),
             "outputs": [{"name": "logits", "dtype": "float32", "shape": [1, "T", vocab]}],
             "dims": {"T": {"min": 1, "max": 64}}},
            {"name": "decode", "file": "methods/decode.so", "inputs": ids(1),
             "outputs": [{"name": "logits", "dtype": "float32", "shape": [1, 1, vocab]}]},
        ],
    }
    with open(out + "/manifest.json", "w") as f:
        json.dump(manifest, f, indent=1)


def check(model_dir, out, wharf, example):
    prompt = i64_values(model_dir + "/reference.safetensors", "prompt")
    want = i64_values(model_dir + "/reference.safetensors", "tokens")
    p = ",".join(map(str, prompt))
    n = str(len(want))
    ok = True

    def generate(*extra):
        r = subprocess.run([wharf, "generate", out, "--prompt", p, "--max-new-tokens", n, "--json", *extra],
                           capture_output=True, text=True)
        print(r.stdout.strip())
        if r.stderr.strip():
            print(r.stderr.strip())
        return r.returncode, json.loads(r.stdout)

    rc, d = generate()
    if rc != 0 or d["tokens"] != want or d["error"] is not None:
        print("FAIL: wharf generate: tokens %s, PyTorch's %s" % (d["tokens"], want))
        ok = False
    else:
        print("ok: wharf generate gives PyTorch's tokens %s (prefill %.0f us, decode median %.0f us)"
              % (want, d["prefill_us"], d["decode_us_median"]))
    rc, u = generate("--update", out + "/weights/model.safetensors", "--update-after", "2")
    g = u["generation"]
    if rc != 0 or u["tokens"] != want or len(g) != len(want) or not (g[1] == g[0] and all(x > g[0] for x in g[2:])):
        print("FAIL: wharf generate with a mid-conversation update: tokens %s, generations %s" % (u["tokens"], g))
        ok = False
    else:
        print("ok: an update + swap after 2 tokens: same tokens, generations %s, update %.1f ms" % (g, u["update"]["ms"]))
    if example:
        r = subprocess.run([example, out, p, n], capture_output=True, text=True)
        got = r.stdout.strip()
        if r.returncode != 0 or got != ",".join(map(str, want)):
            print("FAIL: %s: %r (rc %d) %s" % (example, got, r.returncode, r.stderr.strip()))
            ok = False
        else:
            print("ok: the README's package example gives PyTorch's tokens")
    return ok


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    model_dir, out = sys.argv[1], sys.argv[2]
    make(model_dir, out)
    print("package written to %s" % out)
    if "--check" in sys.argv:
        rest = sys.argv[sys.argv.index("--check") + 1:]
        return 0 if check(model_dir, out, rest[0], rest[1] if len(rest) > 1 else None) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
