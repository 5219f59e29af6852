# SPDX-License-Identifier: Apache-2.0
"""Wharf's Triton SDPA (wharf::sdpa) against PyTorch's own SDPA, on the GPU machine.

    python3 tools/export/bench_sdpa.py [--json OUT.json]

1. Correctness: wharf::sdpa against a float64 reference over the cases transformers produces
   (GQA, bool/additive masks, causal, sliding windows, Lq=1 decode, odd head dims, fp32/bf16).
2. Speed (bf16, GPU time of CUDA-graph replays, median of triton's do_bench_cudagraph): Llama-3.2-1B-like heads (32 query,
   8 KV, D=64) and Llama-3.1-8B-like (32/8, D=128):
   - prefill of 512 tokens at position 0 over a static cache of 1024 (what the exported model
     runs: a bool mask [1,1,512,1024]);
   - decode of one token over a cache of 1024 and of 4096 filled to its last position.
   PyTorch is measured as transformers calls it with a static cache (repeat_kv'd K/V and the
   bool mask: PyTorch picks its kernel, efficient attention or math) and, as its best case, with
   no mask over exactly the filled keys (is_causal for prefill, enable_gqa: the flash kernel).
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from triton.testing import do_bench_cudagraph

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wharf_sdpa  # noqa: E402


def rand(*shape, dtype):
    return torch.randn(*shape, device="cuda", dtype=torch.float32).to(dtype)


def repeat_kv(x, g):
    b, h, l, d = x.shape
    return x[:, :, None].expand(b, h, g, l, d).reshape(b, h * g, l, d)


def check():
    rows = []
    torch.manual_seed(0)
    cases = []
    for dtype in (torch.float32, torch.bfloat16):
        for hq, hkv, d in ((4, 2, 16), (8, 8, 64), (32, 8, 128), (8, 2, 96), (4, 1, 256)):
            for lq, lk, kind in ((7, 7, "causal"), (7, 64, "bool_cache"), (1, 64, "bool_cache"),
                                 (1, 1024, "bool_cache"), (1, 4096, "bool_cache"), (33, 300, "float_cache"),
                                 (20, 64, "sliding"), (130, 130, "none"), (512, 1024, "bool_cache")):
                cases.append((dtype, hq, hkv, d, lq, lk, kind))
    for dtype, hq, hkv, d, lq, lk, kind in cases:
        q, k, v = rand(1, hq, lq, d, dtype=dtype), rand(1, hkv, lk, d, dtype=dtype), rand(1, hkv, lk, d, dtype=dtype)
        mask, causal = None, False
        start = max(0, min(lk - lq, 5))  # the queries' first position in the cache
        qpos = torch.arange(start, start + lq, device="cuda")[:, None]
        kpos = torch.arange(lk, device="cuda")[None, :]
        if kind == "causal":
            causal = True
        elif kind in ("bool_cache", "float_cache", "sliding"):
            mask = (kpos <= qpos)
            if kind == "sliding":
                mask = mask & (kpos > qpos - 8)
            mask = mask[None, None]
            if kind == "float_cache":
                mask = torch.zeros(mask.shape, device="cuda", dtype=dtype).masked_fill(~mask, torch.finfo(dtype).min)
        scale = 0.3 if d == 96 else None
        out = wharf_sdpa.sdpa(q, k, v, mask, causal, scale)
        ref = wharf_sdpa.sdpa_reference(q, k, v, mask if mask is None or mask.dtype == torch.bool else mask,
                                        causal, scale)
        err = float((out.float() - ref.float()).abs().max())
        tol = 2e-5 if dtype == torch.float32 else 2e-2
        rows.append({"dtype": str(dtype)[6:], "hq": hq, "hkv": hkv, "d": d, "lq": lq, "lk": lk, "kind": kind,
                     "max_abs_err": err, "ok": err <= tol})
    bad = [r for r in rows if not r["ok"]]
    print(f"correctness: {len(rows) - len(bad)}/{len(rows)} cases within tolerance")
    for r in bad:
        print("  FAIL", r)
    return rows


def us(fn):
    """GPU time per call in microseconds: the calls replayed from a CUDA graph, as a compiled
    model's wrapper launches them, so Python and dispatcher overhead do not count."""
    try:
        fn()
        torch.cuda.synchronize()
        return do_bench_cudagraph(fn, rep=100, return_mode="median") * 1000.0
    except Exception as e:  # noqa: BLE001
        print("  bench failed:", type(e).__name__, str(e)[:200])
        return float("nan")


def bench():
    results = []
    dtype = torch.bfloat16
    for cfg, hq, hkv, d in (("1B", 32, 8, 64), ("8B", 32, 8, 128)):
        g = hq // hkv
        # prefill 512 at position 0 over a static cache of 1024
        L, cache = 512, 1024
        q = rand(1, hq, L, d, dtype=dtype)
        kc, vc = rand(1, hkv, cache, d, dtype=dtype), rand(1, hkv, cache, d, dtype=dtype)
        mask = (torch.arange(cache, device="cuda")[None, :] <= torch.arange(L, device="cuda")[:, None])[None, None]
        kr, vr = repeat_kv(kc, g), repeat_kv(vc, g)
        r = {"config": cfg, "case": "prefill 512 (cache 1024)",
             "wharf_masked_cache_us": us(lambda: wharf_sdpa.sdpa(q, kc, vc, mask, False, None)),
             "wharf_causal_us": us(lambda: wharf_sdpa.sdpa(q, kc[:, :, :L], vc[:, :, :L], None, True, None)),
             "torch_hf_path_us": us(lambda: F.scaled_dot_product_attention(q, repeat_kv(kc, g), repeat_kv(vc, g),
                                                                           attn_mask=mask)),
             "torch_hf_path_no_repeat_cost_us": us(lambda: F.scaled_dot_product_attention(q, kr, vr, attn_mask=mask)),
             "torch_best_us": us(lambda: F.scaled_dot_product_attention(q, kc[:, :, :L], vc[:, :, :L], is_causal=True,
                                                                        enable_gqa=True))}
        flops = 4 * hq * d * L * L / 2
        r["wharf_masked_cache_tflops"] = flops / r["wharf_masked_cache_us"] / 1e6
        results.append(r)
        for cache in (1024, 4096):
            q = rand(1, hq, 1, d, dtype=dtype)
            kc, vc = rand(1, hkv, cache, d, dtype=dtype), rand(1, hkv, cache, d, dtype=dtype)
            pos = cache - 1
            mask = (torch.arange(cache, device="cuda") <= pos)[None, None, None]
            kr, vr = repeat_kv(kc, g), repeat_kv(vc, g)
            r = {"config": cfg, "case": f"decode (cache {cache}, full)",
                 "wharf_masked_cache_us": us(lambda: wharf_sdpa.sdpa(q, kc, vc, mask, False, None)),
                 "torch_hf_path_us": us(lambda: F.scaled_dot_product_attention(q, repeat_kv(kc, g), repeat_kv(vc, g),
                                                                               attn_mask=mask)),
                 "torch_hf_path_no_repeat_cost_us": us(lambda: F.scaled_dot_product_attention(q, kr, vr,
                                                                                              attn_mask=mask)),
                 "torch_best_us": us(lambda: F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True))}
            kv_bytes = 2 * hkv * cache * d * 2
            r["wharf_GBps"] = kv_bytes / r["wharf_masked_cache_us"] / 1e3
            results.append(r)
            # a quarter-filled cache: Wharf skips the empty tail
            pos = cache // 4 - 1
            mask = (torch.arange(cache, device="cuda") <= pos)[None, None, None]
            results.append({"config": cfg, "case": f"decode (cache {cache}, 1/4 filled)",
                            "wharf_masked_cache_us": us(lambda: wharf_sdpa.sdpa(q, kc, vc, mask, False, None)),
                            "torch_hf_path_us": us(lambda: F.scaled_dot_product_attention(
                                q, repeat_kv(kc, g), repeat_kv(vc, g), attn_mask=mask)),
                            "torch_best_us": us(lambda: F.scaled_dot_product_attention(
                                q, kc[:, :, :pos + 1], vc[:, :, :pos + 1], enable_gqa=True))})
    print(f"\n{'config':6s} {'case':28s} {'wharf':>9s} {'torch(HF)':>10s} {'torch(HF,kv pre-rep)':>21s} "
          f"{'torch best':>11s} {'wharf causal':>13s}")
    for r in results:
        def f(k):
            return f"{r[k]:.1f}" if k in r else "-"
        print(f"{r['config']:6s} {r['case']:28s} {f('wharf_masked_cache_us'):>9s} {f('torch_hf_path_us'):>10s} "
              f"{f('torch_hf_path_no_repeat_cost_us'):>21s} {f('torch_best_us'):>11s} {f('wharf_causal_us'):>13s}")
    print("(microseconds, median; bf16)")
    return results


def sweep():
    """Prefill tile configurations and the mask-bounds scan against the per-tile test."""
    rows = []
    dtype = torch.bfloat16
    configs = [None, (64, 64, 4, 2), (64, 64, 4, 3), (128, 64, 8, 2), (128, 64, 8, 3), (128, 32, 4, 2),
               (64, 32, 4, 3), (128, 128, 8, 2), (64, 128, 4, 2), (32, 64, 4, 2)]
    for cfg, hq, hkv, d in (("1B", 32, 8, 64), ("8B", 32, 8, 128)):
        L, cache = 512, 1024
        q = rand(1, hq, L, d, dtype=dtype)
        kc, vc = rand(1, hkv, cache, d, dtype=dtype), rand(1, hkv, cache, d, dtype=dtype)
        mask = (torch.arange(cache, device="cuda")[None, :] <= torch.arange(L, device="cuda")[:, None])[None, None]
        ref = wharf_sdpa.sdpa_reference(q, kc, vc, mask)
        for scan in (True, False):
            for pc in configs:
                if not scan and pc is not None:
                    continue
                wharf_sdpa.SCAN_BOOL_MASKS, wharf_sdpa.PREFILL_CONFIG = scan, pc
                try:
                    err = float((wharf_sdpa.sdpa(q, kc, vc, mask, False, None).float() - ref.float()).abs().max())
                    t = us(lambda: wharf_sdpa.sdpa(q, kc, vc, mask, False, None))
                except Exception as e:  # noqa: BLE001
                    err, t = float("nan"), float("nan")
                    print("  config failed", pc, type(e).__name__, str(e)[:120])
                rows.append({"config": cfg, "scan": scan, "tile": pc, "us": t, "err": err})
                print(f"  sweep {cfg} prefill 512/1024 scan={scan} tile={pc}: {t:.1f} us err={err:.3g}")
        for cache in (1024, 4096):
            q = rand(1, hq, 1, d, dtype=dtype)
            kc, vc = rand(1, hkv, cache, d, dtype=dtype), rand(1, hkv, cache, d, dtype=dtype)
            for fill in (cache, cache // 4):
                mask = (torch.arange(cache, device="cuda") <= fill - 1)[None, None, None]
                for scan in (True, False):
                    wharf_sdpa.SCAN_BOOL_MASKS, wharf_sdpa.PREFILL_CONFIG = scan, None
                    t = us(lambda: wharf_sdpa.sdpa(q, kc, vc, mask, False, None))
                    rows.append({"config": cfg, "case": f"decode {fill}/{cache}", "scan": scan, "us": t})
                    print(f"  sweep {cfg} decode {fill}/{cache} scan={scan}: {t:.1f} us")
    wharf_sdpa.SCAN_BOOL_MASKS, wharf_sdpa.PREFILL_CONFIG = True, None
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--skip-check", action="store_true")
    ap.add_argument("--sweep", action="store_true", help="also compare prefill tiles and the mask-bounds scan")
    args = ap.parse_args()
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    if not args.skip_check:
        out["check"] = check()
    out["bench"] = bench()
    if args.sweep:
        out["sweep"] = sweep()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
