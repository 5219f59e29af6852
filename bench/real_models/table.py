# SPDX-License-Identifier: Apache-2.0
"""Prints the real-model benchmark's table from run.sh's outputs in OUT_DIR (one row per shape).

    python3 table.py OUT_DIR
Decode: Wharf's step beside transformers eager, torch.compile(mode="reduce-overhead") and the
roofline (bytes a step must read / the measured D2D bandwidth); prefill of 512 tokens beside
eager and torch.compile; load beside transformers' from_pretrained. Goals (issue 24): decode
tokens/s >= 1.5x reduce-overhead's and within 1.4x of the roofline, prefill >= torch.compile's
throughput, load >= 5x the PyTorch path.
"""
import csv
import json
import os
import sys


def main():
    out = sys.argv[1]
    rows = []
    for shape in ("1b", "8b"):
        w, h = os.path.join(out, f"{shape}-wharf.csv"), os.path.join(out, f"{shape}-hf.json")
        if not (os.path.exists(w) and os.path.exists(h)):
            continue
        wh = {r["metric"]: r for r in csv.DictReader(open(w))}
        hf = json.load(open(h))
        ex = json.load(open(os.path.join(out, f"{shape}-export.json"))) if os.path.exists(
            os.path.join(out, f"{shape}-export.json")) else {}
        f = lambda r: f"{float(r['median']):.1f} ({float(r['min']):.1f}-{float(r['max']):.1f})"
        g = lambda d: f"{d['median']:.1f} ({d['min']:.1f}-{d['max']:.1f})" if d else "n/a"
        gp = os.path.join(out, f"{shape}-wharf-graphs.csv")
        gr = {r["metric"]: r for r in csv.DictReader(open(gp))} if os.path.exists(gp) else {}
        dec_eager = float(wh["decode_us"]["median"])
        dec = float(gr["decode_us"]["median"]) if gr else dec_eager
        pre = float(wh["prefill_us"]["median"])
        ro = hf.get("compiled_decode_us", {}).get("median")
        cp = hf.get("compiled_prefill_us", {}).get("median")
        rows.append([
            shape, hf["device"], f"{hf['weight_bytes'] / 2**30:.2f}",
            f"{ex.get('export_s', float('nan')):.0f}",
            f"{float(wh['load_s']['median']):.2f}", f"{hf['load_s']:.2f}",
            f"{hf['load_s'] / float(wh['load_s']['median']):.2f}x",
            f(wh["decode_us"]), f(gr["decode_us"]) if gr else "n/a", g(hf.get("eager_decode_us")), g(hf.get("compiled_decode_us")),
            f"{hf['roofline_decode_us']:.1f}",
            f"{ro / dec:.2f}x" if ro else "n/a", f"{dec / hf['roofline_decode_us']:.2f}x",
            f(wh["prefill_us"]), g(hf.get("eager_prefill_us")), g(hf.get("compiled_prefill_us")),
            f"{cp / pre:.2f}x" if cp else "n/a",
        ])
    head = ["shape", "GPU", "weights GiB", "export s", "Wharf load s", "HF load s", "load speed-up",
            "Wharf decode us (eager)", "Wharf decode us (graphs)", "HF eager decode us", "reduce-overhead decode us", "roofline us",
            "Wharf (graphs) tok/s vs reduce-overhead (goal >= 1.5x)", "Wharf (graphs) / roofline (goal <= 1.4x)",
            "Wharf prefill 512 us", "HF eager prefill us", "torch.compile prefill us",
            "prefill vs torch.compile (goal >= 1x)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
