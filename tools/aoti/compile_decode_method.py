# SPDX-License-Identifier: Apache-2.0
"""Compiles the tiny decoder's decode step as a method of its own (one token, static shapes).

A service exports prefill and decode as separate programs; Wharf loads both over one weight
store so the weights exist once. This script makes the decode program for the tests: the
same module and weights as compile_tiny_decoder.py (the weights are read back from its
committed tiny_decoder.safetensors, so both methods hold identical parameters), exported with
one token at one position, compiled with the same libtorch-free options.

Run on the GPU machine:
    python3 tools/aoti/compile_decode_method.py MODEL_DIR
MODEL_DIR holds tiny_decoder.safetensors; writes there:
    tiny_decoder_decode.so                 the compiled decode method
    tiny_decoder_decode.pt2                the package it came from (aoti_compile_and_package)
    tiny_decoder_decode_undefined.txt      what it needs from its host (aoti_torch_* shims, CUDA)
    tiny_decoder_decode_log.json           torch version, options, outcome, seconds
"""
import json
import os
import subprocess
import sys
import time
import zipfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compile_tiny_decoder as tiny  # noqa: E402


def main():
    out = sys.argv[1]
    from safetensors.torch import load_file

    m = tiny.TinyDecoder().to("cuda").eval()
    weights = load_file(os.path.join(out, "tiny_decoder.safetensors"), device="cuda")
    missing, unexpected = m.load_state_dict(weights, strict=False)
    assert not unexpected, unexpected
    assert all(k.endswith("_cache") for k in missing), missing  # the caches are state, not weights
    tiny.reset_caches(m)
    token = torch.tensor([[7]], device="cuda")
    pos = torch.tensor([8], device="cuda")
    ep = torch.export.export(m, (token, pos), strict=False)  # static: one token
    opts = {
        "aot_inductor.package_constants_in_so": False,
        "aot_inductor.embed_kernel_binary": True,
        "aot_inductor.use_runtime_constant_folding": True,
        "aot_inductor.link_libtorch": False,
        "max_autotune": True,
        "max_autotune_gemm_backends": "TRITON",
    }
    log = {"torch": torch.__version__, "cuda": torch.version.cuda, "options": {k: str(v) for k, v in opts.items()}}
    t0 = time.time()
    pkg = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(out, "decode.pt2"),
                                                   inductor_configs=opts)
    log["seconds"] = round(time.time() - t0, 1)
    so = os.path.join(out, "tiny_decoder_decode.so")
    with zipfile.ZipFile(pkg) as z:
        sos = [n for n in z.namelist() if n.endswith(".so")]
        with z.open(sos[0]) as f, open(so, "wb") as g:
            g.write(f.read())
    os.replace(pkg, os.path.join(out, "tiny_decoder_decode.pt2"))  # the package itself: Wharf loads it too
    und = subprocess.run(["nm", "-D", "--undefined-only", so], capture_output=True, text=True).stdout
    with open(os.path.join(out, "tiny_decoder_decode_undefined.txt"), "w") as f:
        f.write(und)
    log["undefined_aoti"] = sorted({l.split()[-1] for l in und.splitlines() if "aoti" in l})
    log["so_bytes"] = os.path.getsize(so)
    with open(os.path.join(out, "tiny_decoder_decode_log.json"), "w") as f:
        json.dump(log, f, indent=1)
    print(json.dumps({k: v for k, v in log.items() if k != "undefined_aoti"}, indent=1))


if __name__ == "__main__":
    main()
