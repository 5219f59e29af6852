# SPDX-License-Identifier: Apache-2.0
"""PyTorch on the tiny decoder, beside Wharf's model_bench figures (same machine, same run).

    python3 tools/aoti/bench_torch.py MODEL_DIR WHARF_CSV [OUT_CSV]

Measures one decode step (token and position to the GPU, forward, the argmax read back to
the host) for PyTorch eager, torch.compile (dynamic, and mode="reduce-overhead": CUDA graphs)
and PyTorch's own AOTInductor runner (a libtorch-linked package compiled here from the same
model and weights), medians of 480 steps with min and max, and prints them beside Wharf's
decode step from WHARF_CSV (model_bench --csv), eager and with CUDA graphs, with ratios.
"""
import csv
import os
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compile_tiny_decoder as td  # noqa: E402

STEPS = 480


def timed_decode(fn, reset):
    us = []
    tok = 1
    for i in range(STEPS):
        if i % 48 == 0:
            reset()
            tok = 1
        t0 = time.perf_counter()
        tokens = torch.tensor([[tok]], device="cuda")
        pos = torch.tensor([i % 48], device="cuda")
        logits = fn(tokens, pos)
        tok = int(logits[0, -1].argmax())
        us.append((time.perf_counter() - t0) * 1e6)
    return us


def row(name, us):
    return name, statistics.median(us), min(us), max(us)


def load_model(model_dir):
    from safetensors.torch import load_file

    m = td.TinyDecoder().cuda().eval()
    m.load_state_dict({k: v.cuda() for k, v in load_file(os.path.join(model_dir, "tiny_decoder.safetensors")).items()},
                      strict=False)
    return m


def measure(kind, model_dir):
    """One baseline in this process; prints 'RESULT name median min max'."""
    import logging

    logging.disable(logging.WARNING)
    m = load_model(model_dir)
    with torch.no_grad():
        if kind == "eager":
            name, fn = "pytorch eager decode step", m
        elif kind == "compile":
            name, fn = "pytorch torch.compile decode step", torch.compile(m, dynamic=True)
        elif kind == "reduce":
            name, fn = "pytorch torch.compile reduce-overhead step", torch.compile(m, mode="reduce-overhead")
        else:  # PyTorch's own AOTInductor runner on the same model (libtorch-linked package)
            T = torch.export.Dim("T", min=1, max=td.MAX_SEQ)
            prompt = torch.tensor([[1, 7, 42, 99]], device="cuda")
            ep = torch.export.export(m, (prompt, torch.arange(4, device="cuda")), dynamic_shapes=({1: T}, {0: T}),
                                     strict=False)
            tmp = tempfile.mkdtemp()
            pkg = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(tmp, "m.pt2"),
                                                           inductor_configs={"max_autotune": True,
                                                                             "max_autotune_gemm_backends": "TRITON"})
            runner = torch._inductor.aoti_load_package(pkg)
            name, fn = "pytorch AOTInductor runner decode step", lambda t, p: runner(t, p)
        timed_decode(fn, lambda: td.reset_caches(m))  # warm-up (and compilation)
        _, med, lo, hi = row(name, timed_decode(fn, lambda: td.reset_caches(m)))
    print(f"RESULT|{name}|{med}|{lo}|{hi}", flush=True)


def main():
    if sys.argv[1] == "--measure":
        measure(sys.argv[2], sys.argv[3])
        return
    import subprocess

    model_dir, wharf_csv = sys.argv[1], sys.argv[2]
    out_csv = sys.argv[3] if len(sys.argv) > 3 else None
    rows, failures = [], []
    # Each baseline in its own process: a crash in one (PyTorch's runner) cannot take the
    # others down, and compilation state does not carry over.
    for kind in ("eager", "compile", "reduce", "aoti"):
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure", kind, model_dir],
                           capture_output=True, text=True)
        got = [l for l in p.stdout.splitlines() if l.startswith("RESULT|")]
        if p.returncode == 0 and got:
            _, name, med, lo, hi = got[-1].split("|")
            rows.append((name, float(med), float(lo), float(hi)))
        else:
            tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
            failures.append(f"{kind}: exit {p.returncode}: {tail[:300]}")
    wharf = {}
    with open(wharf_csv) as f:
        for r in csv.DictReader(f):
            wharf[r["metric"]] = r
    w = wharf["wharf_decode_step"]
    wrow = ("wharf decode step (same model, no libtorch)", float(w["median_us"]), float(w["min_us"]), float(w["max_us"]))
    if "wharf_graph_decode_step" in wharf:  # model_bench's CUDA graph rows (issue 25)
        g = wharf["wharf_graph_decode_step"]
        rows.insert(0, ("wharf decode step, CUDA graphs", float(g["median_us"]), float(g["min_us"]), float(g["max_us"])))
    print(f"decode step of the tiny decoder, {STEPS} steps, medians with min/max (torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()})")
    print(f"{'':46s} {'median':>10s} {'min':>10s} {'max':>10s} {'vs wharf':>9s}")
    for name, med, lo, hi in [wrow] + rows:
        print(f"{name:46s} {med:8.1f} us {lo:8.1f} us {hi:8.1f} us {med / wrow[1]:8.2f}x")
    print(f"{'wharf run overhead (begin+end)':46s} {float(wharf['wharf_run_overhead']['median_us']):8.2f} us")
    for f in failures:
        print("baseline not measured:", f)
    if out_csv:
        with open(out_csv, "w") as f:
            f.write("metric,median_us,min_us,max_us\n")
            for name, med, lo, hi in [wrow] + rows:
                f.write(f"{name},{med:.3f},{lo:.3f},{hi:.3f}\n")


if __name__ == "__main__":
    main()
