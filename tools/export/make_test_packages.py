# SPDX-License-Identifier: Apache-2.0
"""Makes the tiny test packages of every supported family, each with a reference from
transformers, and checks the exported and compiled methods against it (GPU machine).

    python3 tools/export/make_test_packages.py OUT_DIR [--families llama,gemma2,...]
        [--dtypes float32,bfloat16] [--jobs 6] [--gemm auto|triton|extern]

For each family x dtype (2 layers, hidden 64, vocab 256, random weights with a fixed seed):
  OUT_DIR/src/<family>-<dtype>/     the checkpoint (transformers' save_pretrained: config.json,
                                    model.safetensors)
  OUT_DIR/<family>-<dtype>/         the Wharf package (wharf_export.py) plus
      reference.json                prompt, greedy tokens, prompt logits, hot-update tokens
      update.safetensors            the second random weight set of the hot update (FQN-keyed)
The reference is transformers' eager model (from_pretrained, default attention, its own
DynamicCache): prefill the prompt at positions 0..L-1 -> token 0, then decode token t at
position L+t (N=8 tokens). Hot update: after K=3 decode steps the parameters are replaced by
update.safetensors and decoding continues with the same cache.
Checks (recorded in reference.json["checks"]): the exported programs (before compilation) and
the AOTInductor-compiled methods (the package's .so, run by PyTorch's AOTI runner with the
package's weight files bound and one shared cache) give transformers' tokens.
Each family runs in its own process; a failure is logged (OUT_DIR/logs/) and the others go on.
The summary table is printed at the end and written to OUT_DIR/summary.json.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT = [1, 17, 42, 99, 3, 200]
N_TOKENS = 8
UPDATE_AFTER = 3
MAX_SEQ_LEN = 64
SEED, UPDATE_SEED = 1234, 4321

COMMON = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, max_position_embeddings=256, bos_token_id=1, eos_token_id=2,
              pad_token_id=0)
FAMILIES = {
    "llama": ("LlamaConfig", dict(COMMON, tie_word_embeddings=True)),
    "qwen2": ("Qwen2Config", dict(COMMON, tie_word_embeddings=False)),
    "qwen3": ("Qwen3Config", dict(COMMON, tie_word_embeddings=True)),
    "mistral": ("MistralConfig", dict(COMMON, sliding_window=8)),
    "gemma": ("GemmaConfig", dict(COMMON)),
    "gemma2": ("Gemma2Config", dict(COMMON, sliding_window=8, query_pre_attn_scalar=16,
                                    layer_types=["sliding_attention", "full_attention"])),
    "gemma3": ("Gemma3TextConfig", dict(COMMON, sliding_window=8, query_pre_attn_scalar=16,
                                        layer_types=["sliding_attention", "full_attention"])),
    "phi3": ("Phi3Config", dict({k: v for k, v in COMMON.items() if k != "head_dim"}, sliding_window=None)),
    "gpt2": ("GPT2Config", dict(vocab_size=256, n_embd=64, n_inner=128, n_layer=2, n_head=4, n_positions=256,
                                bos_token_id=1, eos_token_id=2)),
}


def make_config(family):
    import transformers

    cls_name, kw = FAMILIES[family]
    cls = getattr(transformers, cls_name)
    kw = dict(kw)
    while True:  # drop keywords a release does not know rather than fail the family
        try:
            return cls(**kw)
        except TypeError as e:
            bad = [k for k in kw if f"'{k}'" in str(e)]
            if not bad:
                raise
            kw.pop(bad[0])


def topk_margin(logits):
    top = logits.float().topk(2).values
    return float(top[0] - top[1])


def greedy(prefill, decode, prompt, n, update=None, update_after=None):
    logits0 = prefill(prompt)
    toks, margins = [int(logits0.argmax())], [topk_margin(logits0)]
    for i in range(n - 1):
        if update is not None and i == update_after:
            update()
        lg = decode(toks[-1], len(prompt) + i)
        toks.append(int(lg.argmax()))
        margins.append(topk_margin(lg))
    return toks, logits0, margins


def compare(tokens, ref_tokens, ref_margins):
    if tokens == ref_tokens:
        return {"match": True}
    i = next(k for k in range(len(tokens)) if tokens[k] != ref_tokens[k])
    return {"match": False, "first_mismatch": i, "tokens": tokens, "eager_margin_there": ref_margins[i]}


def promote_libtorch():
    """Makes libtorch's aoti_torch_* shims globally visible, so PyTorch's AOTI runner can load a
    libtorch-free .so (it imports the shims from whoever loads it, as it does from Wharf)."""
    import ctypes

    import torch

    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    for n in ("libtorch_cpu.so", "libtorch_cuda.so", "libtorch.so"):
        p = os.path.join(lib, n)
        if os.path.exists(p):
            ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)


def load_package_weights(pkg, manifest, device):
    from safetensors.torch import load_file

    out = {}
    for f in manifest["weights"]["files"]:
        out.update(load_file(os.path.join(pkg, f), device=device))
    return out


def run_job(family, dtype, out_dir, gemm):
    import torch
    from safetensors.torch import save_file

    sys.path.insert(0, HERE)
    import wharf_export as wx
    from transformers import AutoModelForCausalLM

    res = {"family": family, "dtype": dtype}
    tdtype = wx.DTYPES[dtype]
    dev = "cuda"
    name = f"{family}-{dtype}"
    src = os.path.join(out_dir, "src", name)
    pkg = os.path.join(out_dir, name)
    build = os.path.join(out_dir, "build", name)

    # The checkpoint: random weights saved the way transformers saves a model.
    config = make_config(family)
    model = AutoModelForCausalLM.from_config(config)
    wx.random_init_(model, SEED)
    model = model.to(tdtype)
    model.save_pretrained(src)
    upd_model = AutoModelForCausalLM.from_config(config)
    wx.random_init_(upd_model, UPDATE_SEED)
    upd_model = upd_model.to(tdtype)
    del model

    # Reference: transformers eager, default attention, its own cache.
    try:
        ref = AutoModelForCausalLM.from_pretrained(src, dtype=tdtype)
    except TypeError:
        ref = AutoModelForCausalLM.from_pretrained(src, torch_dtype=tdtype)
    ref = ref.to(dev).eval()
    res["hf_attn_implementation"] = getattr(ref.config, "_attn_implementation", None)
    state = {}

    def hf_prefill(prompt):
        out = ref(input_ids=torch.tensor([prompt], device=dev), use_cache=True)
        state["pkv"] = out.past_key_values
        return out.logits[0, -1].float()

    def hf_decode(tok, pos):
        out = ref(input_ids=torch.tensor([[tok]], device=dev), past_key_values=state["pkv"], use_cache=True)
        state["pkv"] = out.past_key_values
        return out.logits[0, -1].float()

    orig = {k: v.detach().clone() for k, v in ref.state_dict().items()}
    with torch.no_grad():
        ref_tokens, ref_logits, ref_margins = greedy(hf_prefill, hf_decode, PROMPT, N_TOKENS)
    res["eager_tokens"] = ref_tokens

    # Export (the exporter loads the checkpoint itself, as a user would run it).
    t0 = time.time()
    try:
        manifest, info = wx.export_package(src, pkg, dtype=dtype, max_seq_len=MAX_SEQ_LEN, gemm=gemm,
                                           build_dir=build, name=name)
    except Exception as e:  # noqa: BLE001
        # Keep a usable package: transformers' eager attention needs no SDPA kernel.
        traceback.print_exc()
        res["sdpa_export_error"] = f"{type(e).__name__}: {str(e)[:1500]}"
        manifest, info = wx.export_package(src, pkg, dtype=dtype, max_seq_len=MAX_SEQ_LEN, gemm=gemm,
                                           build_dir=build, name=name, attention="eager")
        res["exported_attention"] = "eager (fallback)"
    res["export_seconds"] = round(time.time() - t0, 1)
    res["compile_seconds"] = manifest["producer"]["compile_seconds"]
    res["gemm"] = manifest["producer"]["gemm"]
    res["sdpa"] = info["attention"]
    res["shims"] = info["shims"]
    params = [p["fqn"] for p in manifest["weights"]["parameters"]]
    update = {}
    for f in params:  # keyed like the package (a tied weight by the name the methods bind)
        try:
            update[f] = upd_model.get_parameter(f).detach().contiguous().cpu()
        except AttributeError:
            pass  # a buffer the methods bind: not part of the update
    save_file(update, os.path.join(pkg, "update.safetensors"), metadata={"format": "pt"})

    def apply_update_to(module_getter):
        def f():
            with torch.no_grad():
                for fqn, t in update.items():
                    module_getter(fqn).copy_(t.to(dev))
        return f

    with torch.no_grad():
        upd_tokens, _, upd_margins = greedy(hf_prefill, hf_decode, PROMPT, N_TOKENS,
                                            apply_update_to(ref.get_parameter), UPDATE_AFTER)
        ref.load_state_dict(orig)
    res["eager_update_tokens"] = upd_tokens

    checks = {}
    # 1. The exported programs (wharf::sdpa runs eagerly), one cache shared by copying.
    try:
        mods = {m: info["programs"][m].module() for m in ("prefill", "decode")}
        state_names = [s["fqn"] for s in manifest["state"]]
        for m in mods.values():
            for s in state_names:
                m.get_buffer(s).zero_()

        def run_ep(mname, ids, pos):
            a = mods[mname]
            out = a(torch.tensor(ids, device=dev), torch.tensor(pos, device=dev))
            other = mods["decode" if mname == "prefill" else "prefill"]
            for s in state_names:
                if other.get_buffer(s).data_ptr() != a.get_buffer(s).data_ptr():
                    other.get_buffer(s).copy_(a.get_buffer(s))
            return out[0, -1]

        with torch.no_grad():
            toks, lg, _ = greedy(lambda p: run_ep("prefill", [p], list(range(len(p)))),
                                 lambda t, pos: run_ep("decode", [[t]], [pos]), PROMPT, N_TOKENS)
        checks["exported_program"] = dict(compare(toks, ref_tokens, ref_margins),
                                          prefill_logits_max_abs_diff=float((lg - ref_logits).abs().max()))
    except Exception as e:  # noqa: BLE001
        checks["exported_program"] = {"error": f"{type(e).__name__}: {str(e)[:800]}"}
        traceback.print_exc()

    # 2. The compiled methods: the package's .so through PyTorch's AOTI runner.
    try:
        promote_libtorch()
        weights = load_package_weights(pkg, manifest, dev)
        cache = {s["fqn"]: torch.zeros(s["shape"], dtype=wx.DTYPES[s["dtype"]], device=dev)
                 for s in manifest["state"]}
        runners = {}
        for m in ("prefill", "decode"):
            r = torch._inductor.aoti_load_package(info["pt2"][m])
            r.load_constants(dict(weights, **cache), check_full_update=True, user_managed=True)
            runners[m] = r

        def run_aoti(mname, ids, pos):
            out = runners[mname](torch.tensor(ids, device=dev), torch.tensor(pos, device=dev))
            out = out[0] if isinstance(out, (list, tuple)) else out
            return out[0, -1]

        kept = []  # user-managed constants must outlive their binding

        def aoti_update():
            new = {f: t.to(dev) for f, t in update.items()}
            kept.append(new)
            for r in runners.values():
                r.load_constants(new, check_full_update=False, user_managed=True)

        with torch.no_grad():
            toks, lg, _ = greedy(lambda p: run_aoti("prefill", [p], list(range(len(p)))),
                                 lambda t, pos: run_aoti("decode", [[t]], [pos]), PROMPT, N_TOKENS)
            written = any(bool(t.count_nonzero()) for t in cache.values())
            for t in cache.values():
                t.zero_()
            for r in runners.values():  # back to the original weights (the update test swapped them)
                r.load_constants(weights, check_full_update=False, user_managed=True)
            utoks, _, _ = greedy(lambda p: run_aoti("prefill", [p], list(range(len(p)))),
                                 lambda t, pos: run_aoti("decode", [[t]], [pos]), PROMPT, N_TOKENS,
                                 aoti_update, UPDATE_AFTER)
        checks["aoti"] = dict(compare(toks, ref_tokens, ref_margins), cache_shared=written,
                              prefill_logits_max_abs_diff=float((lg - ref_logits).abs().max()),
                              hot_update=compare(utoks, upd_tokens, upd_margins))
    except Exception as e:  # noqa: BLE001
        checks["aoti"] = {"error": f"{type(e).__name__}: {str(e)[:800]}"}
        traceback.print_exc()
    res["checks"] = checks

    reference = {
        "format": "wharf-package-reference", "version": 1, "family": family, "dtype": dtype,
        "source": f"transformers {__import__('transformers').__version__} eager, attention "
                  f"'{res['hf_attn_implementation']}', DynamicCache",
        "protocol": "prefill prompt at positions 0..L-1 -> token 0 (argmax of the last position's logits); "
                    "decode token t at position L+t -> token t+1; hot_update: after after_decode_steps decode "
                    "steps bind update.safetensors' tensors and continue with the same cache",
        "prompt": PROMPT, "n_tokens": N_TOKENS, "greedy_tokens": ref_tokens, "eager_margins": ref_margins,
        "prefill_logits": [float(x) for x in ref_logits.cpu()],
        "hot_update": {"file": "update.safetensors", "after_decode_steps": UPDATE_AFTER, "tokens": upd_tokens,
                       "eager_margins": upd_margins},
        "checks": checks,
    }
    with open(os.path.join(pkg, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
    return res


def status_of(r):
    if "error" in r:
        return "error: " + r["error"].splitlines()[0][:60]
    fb = "[EAGER-ATTN] " if "sdpa_export_error" in r else ""
    c = r.get("checks", {})
    ep, ao = c.get("exported_program", {}), c.get("aoti", {})

    def s(x):
        if "error" in x:
            return "error"
        if x.get("match"):
            return "ok"
        return f"diff@{x.get('first_mismatch')}(m={x.get('eager_margin_there', 0):.2g})"

    hu = ao.get("hot_update", {}) if "error" not in ao else {"error": 1}
    return f"{fb}ep={s(ep)} aoti={s(ao)} upd={s(hu)}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--jobs", type=int, default=6)
    ap.add_argument("--extra", default="", help="more family:dtype pairs to run besides families x dtypes")
    ap.add_argument("--gemm", default="auto", choices=["auto", "triton", "extern"])
    ap.add_argument("--job", help=argparse.SUPPRESS)  # family:dtype, run in this process
    ap.add_argument("--timeout", type=int, default=900, help="seconds per family x dtype")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    if args.job:
        family, dtype = args.job.split(":")
        try:
            res = run_job(family, dtype, out, args.gemm)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            res = {"family": family, "dtype": dtype, "error": f"{type(e).__name__}: {str(e)[:1500]}"}
        with open(os.path.join(out, "logs", f"{family}-{dtype}.json"), "w") as f:
            json.dump(res, f, indent=1, default=str)
        return 0

    jobs = [(f, d) for f in args.families.split(",") for d in args.dtypes.split(",")]
    jobs += [tuple(x.split(":")) for x in args.extra.split(",") if x and tuple(x.split(":")) not in jobs]
    for f, _ in jobs:
        if f not in FAMILIES:
            sys.exit(f"unknown family {f!r}; known: {', '.join(FAMILIES)}")
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS=os.environ.get("TORCHINDUCTOR_COMPILE_THREADS", "4"),
               PYTHONUNBUFFERED="1")
    pending, running, results = list(jobs), {}, {}
    t0 = time.time()
    while pending or running:
        while pending and len(running) < args.jobs:
            f, d = pending.pop(0)
            logf = open(os.path.join(out, "logs", f"{f}-{d}.log"), "w")
            p = subprocess.Popen([sys.executable, os.path.abspath(__file__), out, "--job", f"{f}:{d}",
                                  "--gemm", args.gemm], stdout=logf, stderr=subprocess.STDOUT, env=env)
            running[(f, d)] = (p, time.time(), logf)
        time.sleep(1)
        for key, (p, start, logf) in list(running.items()):
            rc = p.poll()
            if rc is None and time.time() - start > args.timeout:
                p.kill()
                rc = "timeout"
            if rc is not None:
                logf.close()
                del running[key]
                path = os.path.join(out, "logs", f"{key[0]}-{key[1]}.json")
                if os.path.exists(path):
                    with open(path) as fh:
                        results[key] = json.load(fh)
                else:
                    results[key] = {"family": key[0], "dtype": key[1], "error": f"process ended ({rc}) without result"}
                print(f"[{time.time() - t0:6.0f} s] {key[0]:8s} {key[1]:9s} {status_of(results[key])}", flush=True)

    dtypes = sorted({d for _, d in jobs}, reverse=True)
    print("\nfamily    " + "".join(f"{d:58s}" for d in dtypes))
    for f in dict.fromkeys(f for f, _ in jobs):
        print(f"{f:10s}" + "".join(f"{status_of(results[(f, d)]) if (f, d) in results else '-':58s}" for d in dtypes))
    print("\ncompile seconds (prefill/decode), shims missing:")
    for (f, d), r in sorted(results.items()):
        cs = r.get("compile_seconds", {})
        miss = sorted({s for m in r.get("shims", {}).values() for s in m.get("missing", [])})
        other = sorted({s for m in r.get("shims", {}).values() for s in m.get("unresolved_other", [])})
        print(f"  {f}-{d}: {cs.get('prefill')}/{cs.get('decode')} gemm={r.get('gemm')} missing={miss} other={other}")
    print("\nwhat reached SDPA (first node of each method):")
    for (f, d), r in sorted(results.items()):
        for m, nodes in (r.get("sdpa") or {}).items():
            if nodes:
                n = nodes[0]
                print(f"  {f}-{d} {m}: {len(nodes)} nodes; attn={r.get('hf_attn_implementation')} q={n.get('q')} "
                      f"kv={n.get('kv')} mask={n.get('mask')} causal={n.get('is_causal')} gqa={n.get('enable_gqa')} "
                      f"scale={n.get('scale')} repeat_kv_stripped={n.get('repeat_kv_stripped', False)}")
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump({f"{f}-{d}": r for (f, d), r in results.items()}, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
