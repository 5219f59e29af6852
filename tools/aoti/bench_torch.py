"""PyTorch on the tiny decoder, beside Wharf's model_bench figures (same machine, same run).

    python3 tools/aoti/bench_torch.py MODEL_DIR WHARF_CSV [OUT_CSV]

Measures one decode step (token and position to the GPU, forward, the argmax read back to
the host) for PyTorch eager and for PyTorch's own AOTInductor runner (a libtorch-linked
package compiled here from the same model and weights), medians of 480 steps with min and
max, and prints them beside Wharf's decode step from WHARF_CSV (model_bench --csv) with
ratios.
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


def main():
    model_dir, wharf_csv = sys.argv[1], sys.argv[2]
    out_csv = sys.argv[3] if len(sys.argv) > 3 else None
    from safetensors.torch import load_file

    m = td.TinyDecoder().cuda().eval()
    m.load_state_dict({k: v.cuda() for k, v in load_file(os.path.join(model_dir, "tiny_decoder.safetensors")).items()},
                      strict=False)
    rows = []
    with torch.no_grad():
        timed_decode(m, lambda: td.reset_caches(m))  # warm-up
        rows.append(row("pytorch eager decode step", timed_decode(m, lambda: td.reset_caches(m))))
        # PyTorch's own AOTInductor runner on the same model (libtorch-linked package).
        td.reset_caches(m)
        T = torch.export.Dim("T", min=1, max=td.MAX_SEQ)
        prompt = torch.tensor([[1, 7, 42, 99]], device="cuda")
        ep = torch.export.export(m, (prompt, torch.arange(4, device="cuda")), dynamic_shapes=({1: T}, {0: T}),
                                 strict=False)
        with tempfile.TemporaryDirectory() as tmp:
            pkg = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(tmp, "m.pt2"),
                                                           inductor_configs={"max_autotune": True,
                                                                             "max_autotune_gemm_backends": "TRITON"})
            runner = torch._inductor.aoti_load_package(pkg)

            def aoti(tokens, pos):
                return runner(tokens, pos)

            def aoti_reset():
                pass  # its buffers live inside the package; positions restart, as for the others

            timed_decode(aoti, aoti_reset)
            rows.append(row("pytorch AOTInductor runner decode step", timed_decode(aoti, aoti_reset)))
    wharf = {}
    with open(wharf_csv) as f:
        for r in csv.DictReader(f):
            wharf[r["metric"]] = r
    w = wharf["wharf_decode_step"]
    wrow = ("wharf decode step (same model, no libtorch)", float(w["median_us"]), float(w["min_us"]), float(w["max_us"]))
    print(f"decode step of the tiny decoder, {STEPS} steps, medians with min/max (torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()})")
    print(f"{'':46s} {'median':>10s} {'min':>10s} {'max':>10s} {'vs wharf':>9s}")
    for name, med, lo, hi in [wrow] + rows:
        print(f"{name:46s} {med:8.1f} us {lo:8.1f} us {hi:8.1f} us {med / wrow[1]:8.2f}x")
    print(f"{'wharf run overhead (begin+end)':46s} {float(wharf['wharf_run_overhead']['median_us']):8.2f} us")
    if out_csv:
        with open(out_csv, "w") as f:
            f.write("metric,median_us,min_us,max_us\n")
            for name, med, lo, hi in [wrow] + rows:
                f.write(f"{name},{med:.3f},{lo:.3f},{hi:.3f}\n")


if __name__ == "__main__":
    main()
