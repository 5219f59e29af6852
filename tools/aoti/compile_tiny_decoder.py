# SPDX-License-Identifier: Apache-2.0
"""Compiles the tiny decoder used by Wharf's model tests with AOTInductor, libtorch-free.

Run on the GPU machine (it has PyTorch, Triton and safetensors):
    python3 tools/aoti/compile_tiny_decoder.py OUT_DIR [--autotune]
Writes to OUT_DIR:
    tiny_decoder.so            the compiled model (CUDA kernels embedded, constants not in the .so)
    tiny_decoder.safetensors   its weights (the state dict, by FQN; KV caches excluded)
    undefined_symbols.txt      what the .so needs from its host (aoti_torch_* shims, CUDA)
    constants.json             the model's own constant table as AOTInductor reports it
    reference.safetensors      prompt, greedy tokens and logits from PyTorch eager
    compile_log.json           torch version, the inductor options tried and each outcome
The model: embedding, RMSNorm, attention over KV-cache buffers it mutates with index_copy_,
SwiGLU MLP, LM head; dynamic sequence length (prefill T tokens, decode 1).
"""
import json
import os
import subprocess
import sys
import time
import traceback
import zipfile

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, DIM, HEADS, FFN, LAYERS, MAX_SEQ = 256, 64, 4, 128, 2, 64
HEAD_DIM = DIM // HEADS


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn_norm = RMSNorm(DIM)
        self.wq = nn.Linear(DIM, DIM, bias=False)
        self.wk = nn.Linear(DIM, DIM, bias=False)
        self.wv = nn.Linear(DIM, DIM, bias=False)
        self.wo = nn.Linear(DIM, DIM, bias=False)
        self.mlp_norm = RMSNorm(DIM)
        self.w1 = nn.Linear(DIM, FFN, bias=False)
        self.w3 = nn.Linear(DIM, FFN, bias=False)
        self.w2 = nn.Linear(FFN, DIM, bias=False)
        self.register_buffer("k_cache", torch.zeros(1, HEADS, MAX_SEQ, HEAD_DIM))
        self.register_buffer("v_cache", torch.zeros(1, HEADS, MAX_SEQ, HEAD_DIM))

    def forward(self, x, input_pos):
        b, t, _ = x.shape
        h = self.attn_norm(x)
        q = self.wq(h).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        k = self.wk(h).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        v = self.wv(h).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        self.k_cache.index_copy_(2, input_pos, k)
        self.v_cache.index_copy_(2, input_pos, v)
        mask = torch.arange(MAX_SEQ, device=x.device)[None, :] <= input_pos[:, None]
        scores = (q @ self.k_cache.transpose(-1, -2)) / (HEAD_DIM ** 0.5)
        scores = scores.masked_fill(~mask[None, None], float("-inf"))
        attn = torch.softmax(scores, dim=-1) @ self.v_cache
        x = x + self.wo(attn.transpose(1, 2).reshape(b, t, DIM))
        h = self.mlp_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class TinyDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.norm = RMSNorm(DIM)
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, tokens, input_pos):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x, input_pos)
        return self.lm_head(self.norm(x))


def reset_caches(m):
    for name, buf in m.named_buffers():
        if name.endswith("_cache"):
            buf.zero_()


def greedy(m, prompt, steps):
    reset_caches(m)
    logits = [m(prompt, torch.arange(prompt.shape[1], device=prompt.device))]
    tokens = [int(logits[-1][0, -1].argmax())]
    for i in range(steps - 1):
        pos = torch.tensor([prompt.shape[1] + i], device=prompt.device)
        logits.append(m(torch.tensor([[tokens[-1]]], device=prompt.device), pos))
        tokens.append(int(logits[-1][0, -1].argmax()))
    return tokens, logits


def main():
    out = sys.argv[1]
    autotune = "--autotune" in sys.argv
    os.makedirs(out, exist_ok=True)
    log = {"torch": torch.__version__, "cuda": torch.version.cuda, "attempts": []}
    dev = "cuda"
    torch.manual_seed(0)
    m = TinyDecoder().to(dev).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(2.0)  # sharper logits: greedy tokens are robust to rounding
    from safetensors.torch import save_file

    weights = {k: v.detach().contiguous().cpu() for k, v in m.state_dict().items() if not k.endswith("_cache")}
    save_file(weights, os.path.join(out, "tiny_decoder.safetensors"))
    prompt = torch.tensor([[1, 7, 42, 99, 3, 250, 17, 64]], device=dev)
    with torch.no_grad():
        tokens, logits = greedy(m, prompt, 6)
    save_file({"prompt": prompt.cpu(), "tokens": torch.tensor(tokens),
               "prefill_logits": logits[0].cpu().contiguous(),
               "decode_logits": torch.cat([l[0, -1:] for l in logits[1:]]).cpu().contiguous()},
              os.path.join(out, "reference.safetensors"))
    log["reference_tokens"] = tokens

    cfg = torch._inductor.config
    log["config_keys"] = sorted(k for k in cfg.get_config_copy().keys()
                                if any(s in k for s in ("libtorch", "standalone", "embed_kernel", "package_constants",
                                                        "runtime_constant_folding", "cpp_wrapper")))
    T = torch.export.Dim("T", min=1, max=MAX_SEQ)
    reset_caches(m)
    ep = torch.export.export(m, (prompt, torch.arange(prompt.shape[1], device=dev)),
                             dynamic_shapes=({1: T}, {0: T}), strict=False)
    base = {
        "aot_inductor.package_constants_in_so": False,
        "aot_inductor.embed_kernel_binary": True,
        "aot_inductor.use_runtime_constant_folding": True,
    }
    variants = [
        ("standalone", {"aot_inductor_mode.compile_standalone": True}),
        ("link_libtorch_false", {"aot_inductor.link_libtorch": False}),
    ]
    if autotune:
        variants = [(n + "_autotune", dict(v, max_autotune=True, max_autotune_gemm_backends="TRITON"))
                    for n, v in variants] + variants
    done = False
    for name, extra in variants:
        opts = dict(base, **extra)
        t0 = time.time()
        attempt = {"name": name, "options": {k: str(v) for k, v in opts.items()}}
        try:
            pkg = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(out, f"{name}.pt2"),
                                                           inductor_configs=opts)
            attempt["seconds"] = round(time.time() - t0, 1)
            with zipfile.ZipFile(pkg) as z:
                names = z.namelist()
                attempt["package_files"] = names
                sos = [n for n in names if n.endswith(".so")]
                for n in names:  # the generated C++, to read what the model calls
                    if n.endswith("wrapper.cpp") or n.endswith("kernel.cpp"):
                        with z.open(n) as f, open(os.path.join(out, "tiny_decoder." + n.split(".")[-2] + ".cpp"),
                                                  "wb") as g:
                            g.write(f.read())
                if sos:
                    with z.open(sos[0]) as f, open(os.path.join(out, "tiny_decoder.so"), "wb") as g:
                        g.write(f.read())
            so = os.path.join(out, "tiny_decoder.so")
            und = subprocess.run(["nm", "-D", "--undefined-only", so], capture_output=True, text=True).stdout
            with open(os.path.join(out, "undefined_symbols.txt"), "w") as f:
                f.write(und)
            need = subprocess.run(["readelf", "-d", so], capture_output=True, text=True).stdout
            attempt["needed"] = [l.split("[")[1].rstrip("]") for l in need.splitlines() if "NEEDED" in l]
            attempt["undefined_aoti"] = sorted({l.split()[-1] for l in und.splitlines() if "aoti" in l})
            attempt["so_bytes"] = os.path.getsize(so)
            attempt["ok"] = True
            # Does PyTorch's own runner load it and agree with eager?
            try:
                runner = torch._inductor.aoti_load_package(pkg)
                runner.load_constants({k: v.to(dev) for k, v in m.state_dict().items()}, check_full_update=False)
                attempt["torch_runner"] = "loaded"
            except Exception as e:  # noqa: BLE001
                attempt["torch_runner"] = f"{type(e).__name__}: {str(e)[:400]}"
            done = True
            os.remove(pkg)  # everything needed was extracted
        except Exception as e:  # noqa: BLE001
            attempt["seconds"] = round(time.time() - t0, 1)
            attempt["ok"] = False
            attempt["error"] = f"{type(e).__name__}: {str(e)[:1500]}"
            attempt["trace"] = traceback.format_exc()[-3000:]
        log["attempts"].append(attempt)
        with open(os.path.join(out, "compile_log.json"), "w") as f:
            json.dump(log, f, indent=1)
        if done:
            break
    print(json.dumps({k: v for k, v in log.items() if k != "attempts"}, indent=1))
    for a in log["attempts"]:
        print(a["name"], a.get("ok"), a.get("seconds"), a.get("error", "")[:600])
        print("  needed:", a.get("needed"), " undefined aoti:", len(a.get("undefined_aoti", [])), "torch_runner:",
              a.get("torch_runner"))


if __name__ == "__main__":
    main()
