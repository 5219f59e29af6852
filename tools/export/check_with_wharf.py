# SPDX-License-Identifier: Apache-2.0
"""Checks exported packages as Wharf runs them against transformers' own tokens.

    python3 tools/export/check_with_wharf.py WHARF PACKAGES_DIR [--json OUT]

WHARF is the `wharf` CLI; PACKAGES_DIR holds packages made by make_test_packages.py (each a
directory with manifest.json and reference.json). For each package, `wharf generate` runs the
reference's prompt (prefill, then greedy decode) three ways: eagerly, with CUDA graphs
(--graphs), and eagerly with the hot update of reference.json (update.safetensors bound
after `after_decode_steps` decode steps, same session). Each token list is compared with
transformers eager's: a token that differs where eager's own margin between its best and
second-best logit was under the dtype's tolerance (a near tie that rounding may flip) is
reported as a tie, not a failure; the rest of that sequence is not compared (it continues
from another token). Prints one row per package; exits 1 if any comparison failed.
"""
import argparse
import json
import os
import subprocess
import sys

TIE = {"float32": 1e-3, "bfloat16": 0.25, "float16": 0.05}


def generate(wharf, pkg, prompt, n, extra):
    cmd = [wharf, "generate", pkg, "--prompt", ",".join(map(str, prompt)), "--max-new-tokens", str(n), "--json"]
    p = subprocess.run(cmd + extra, capture_output=True, text=True, timeout=600)
    try:
        out = json.loads(p.stdout)
    except ValueError:
        return None, f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[-300:]}"
    if p.returncode != 0 or out.get("error"):
        return None, str(out.get("error") or p.stderr.strip()[-300:])
    return out, None


def compare(got, want, margins, tol):
    """'ok', 'tie@i' or 'FAIL@i got/want'."""
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            if i < len(margins) and margins[i] < tol:
                return f"tie@{i}"
            return f"FAIL@{i} {g}/{w}"
    if len(got) != len(want):
        return f"FAIL len {len(got)}/{len(want)}"
    return "ok"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("wharf")
    ap.add_argument("packages")
    ap.add_argument("--json")
    args = ap.parse_args()
    rows, failed = [], False
    for name in sorted(os.listdir(args.packages)):
        pkg = os.path.join(args.packages, name)
        ref_path = os.path.join(pkg, "reference.json")
        if not (os.path.isfile(ref_path) and os.path.isfile(os.path.join(pkg, "manifest.json"))):
            continue
        ref = json.load(open(ref_path))
        tol = TIE.get(ref.get("dtype"), 1e-3)
        prompt, n = ref["prompt"], ref["n_tokens"]
        row = {"package": name, "family": ref.get("family"), "dtype": ref.get("dtype")}
        runs = [("eager", [], ref["greedy_tokens"], ref.get("eager_margins", [])),
                ("graphs", ["--graphs"], ref["greedy_tokens"], ref.get("eager_margins", []))]
        hu = ref.get("hot_update")
        if hu:
            runs.append(("update", ["--update", os.path.join(pkg, hu["file"]),
                                    "--update-after", str(hu["after_decode_steps"] + 1)],
                         hu["tokens"], hu.get("eager_margins", [])))
        for tag, extra, want, margins in runs:
            out, err = generate(args.wharf, pkg, prompt, n, extra)
            if err:
                row[tag] = "ERROR " + err
                failed = True
                continue
            row[tag] = compare(out["tokens"], want, margins, tol)
            failed |= row[tag].startswith("FAIL")
            if tag == "eager":
                row["decode_us"] = out.get("decode_us_median")
            if tag == "graphs":
                row["graph_decode_us"] = out.get("decode_us_median")
                g = out.get("graphs") or {}
                if g.get("eager_runs"):
                    row["graphs"] += f" (eager runs {g.get('eager_runs')}: {g.get('last_eager_reason')})"
        rows.append(row)
        print(json.dumps(row), flush=True)
    print()
    print("| package | eager | graphs | hot update | decode us eager / graphs |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['package']} | {r.get('eager')} | {r.get('graphs')} | {r.get('update', '-')} | "
              f"{r.get('decode_us')} / {r.get('graph_decode_us')} |")
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)
    sys.exit(1 if failed or not rows else 0)


if __name__ == "__main__":
    main()
