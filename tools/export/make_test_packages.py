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
package's weight files bound and one shared cache) give transformers' tokens; the prefill
padded by repeating its last token and position (Wharf's graph buckets) gives the unpadded
prefill's logits, cache and next decode steps (exported_prefill_pad, aoti_prefill_pad). With
--session-capacity S (default 8; 0: none) every package also has decode_batch, checked as
exported (by the exporter) and as compiled against each session's per-session decode and
transformers (wharf_export.batched_check; exported_batch, aoti_batch), and reference.json gets
a "batched" section (rows, steps, transformers' tokens and first-step logits).
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
SESSION_CAPACITY = 8  # decode_batch over an arena of 8 sessions

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


def run_job(family, dtype, out_dir, gemm, session_capacity=SESSION_CAPACITY):
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
                                           build_dir=build, name=name, session_capacity=session_capacity)
    except Exception as e:  # noqa: BLE001
        # Keep a usable package: transformers' eager attention needs no SDPA kernel.
        traceback.print_exc()
        res["sdpa_export_error"] = f"{type(e).__name__}: {str(e)[:1500]}"
        manifest, info = wx.export_package(src, pkg, dtype=dtype, max_seq_len=MAX_SEQ_LEN, gemm=gemm,
                                           build_dir=build, name=name, attention="eager",
                                           session_capacity=session_capacity)
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

    # 3. The prefill padded by repeating its last token and position (what Wharf's graph buckets
    # do; the manifest marks T "pad": "repeat"): its exported program (checked by the exporter)
    # and the compiled .so, each against the same method unpadded.
    if "prefill_pad_check" in info:
        checks["exported_prefill_pad"] = info["prefill_pad_check"]
    try:
        promote_libtorch()
        weights = load_package_weights(pkg, manifest, dev)
        fqns = [s["fqn"] for s in manifest["state"]]
        bound = {s["fqn"]: torch.zeros(s["shape"], dtype=wx.DTYPES[s["dtype"]], device=dev)
                 for s in manifest["state"]}
        runners = {}
        for m in ("prefill", "decode"):
            r = torch._inductor.aoti_load_package(info["pt2"][m])
            r.load_constants(dict(weights, **bound), check_full_update=True, user_managed=True)
            runners[m] = r
        runs = {m: wx.per_session_runner(lambda ids, pos, m=m: runners[m](torch.tensor(ids, device=dev),
                                                                         torch.tensor(pos, device=dev)),
                                         fqns, bound) for m in runners}
        t_dim = next(m for m in manifest["methods"] if m["name"] == "prefill")["dims"]["T"]
        with torch.no_grad():
            checks["aoti_prefill_pad"] = wx.prefill_padding_check(
                lambda sess, ids, pos: runs["prefill"](sess, [ids], pos),
                lambda sess, tok, pos: runs["decode"](sess, [[tok]], [pos]),
                lambda: {f: torch.zeros_like(t) for f, t in bound.items()},
                int(manifest["source"]["vocab_size"]), MAX_SEQ_LEN, min_len=t_dim["min"], dtype=dtype)
    except Exception as e:  # noqa: BLE001
        checks["aoti_prefill_pad"] = {"error": f"{type(e).__name__}: {str(e)[:800]}"}
        traceback.print_exc()

    # 4. The batched method: its exported program (checked by the exporter) and the compiled
    # .so against the per-session methods' .so, rows of sessions at ragged positions.
    batch = None
    if session_capacity:
        if "batch_check" in info:
            batch = info["batch_check"]
            checks["exported_batch"] = batch_summary(batch)
        try:
            promote_libtorch()
            weights = load_package_weights(pkg, manifest, dev)
            bound = {s["fqn"]: torch.zeros(s["shape"], dtype=wx.DTYPES[s["dtype"]], device=dev)
                     for s in manifest["state"]}
            arena = {s["fqn"]: torch.zeros([session_capacity] + s["shape"], dtype=wx.DTYPES[s["dtype"]], device=dev)
                     for s in manifest["state"]}
            runners = {}
            for m in ("prefill", "decode", "decode_batch"):
                r = torch._inductor.aoti_load_package(info["pt2"][m])
                r.load_constants(dict(weights, **(arena if m == "decode_batch" else bound)), check_full_update=True,
                                 user_managed=True)
                runners[m] = r

            def per_session(mname, sess, ids, pos):
                for f, t in sess.items():
                    bound[f].copy_(t)
                out = runners[mname](torch.tensor(ids, device=dev), torch.tensor(pos, device=dev))
                out = out[0] if isinstance(out, (list, tuple)) else out
                for f, t in sess.items():
                    t.copy_(bound[f])
                return out[0, -1]

            def run_batch(ids, pos, slots):
                out = runners["decode_batch"](ids.to(dev), pos.to(dev), slots.to(dev))
                out = out[0] if isinstance(out, (list, tuple)) else out
                return out[:, -1]

            with torch.no_grad():
                batch = wx.batched_check(
                    lambda sess, ids, pos: per_session("prefill", sess, [ids], pos),
                    lambda sess, tok, pos: per_session("decode", sess, [[tok]], [pos]), run_batch,
                    lambda: {f: torch.zeros_like(t) for f, t in bound.items()}, arena, session_capacity,
                    int(manifest["source"]["vocab_size"]), MAX_SEQ_LEN, hf_model=ref, dtype=dtype)
            checks["aoti_batch"] = batch_summary(batch)
        except Exception as e:  # noqa: BLE001
            checks["aoti_batch"] = {"error": f"{type(e).__name__}: {str(e)[:800]}"}
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
    if batch is not None and "tokens_match_eager" in batch:
        reference["batched"] = {
            "method": "decode_batch", "session_capacity": session_capacity,
            "protocol": "each row is a session in arena slot `slot`: prefill its prompt alone (prefill at "
                        "positions 0..L-1 -> token 0), then batched steps: step k runs decode_batch over the rows "
                        "steps[k] in that order (input_ids [N,1] = each row's last token, cache_position [N] = "
                        "its length so far, slots [N]); each row's greedy tokens are `tokens` (token 0 from its "
                        "prefill, then one per step it takes part in); first_step_logits: transformers' logits of "
                        "each row at step 0 (every row is in steps[0])",
            "steps": batch["plan"],
            "rows": [{"slot": row["slot"], "prompt": prompt, "tokens": row["eager_tokens"],
                      "eager_margins": row["eager_margins"], "first_step_logits": row["eager_first_step_logits"]}
                     for row, prompt in zip(batch["per_row"], batch["prompts"])],
        }
    with open(os.path.join(pkg, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
    return res


def batch_summary(b):
    """What reference.json and the summary keep of a batched_check result."""
    keys = ("rows", "capacity", "plan", "max_abs_diff", "max_rel_diff", "tolerance", "logits_ok",
            "other_slots_unchanged", "tokens_match_eager")
    out = {k: b[k] for k in keys if k in b}
    out["rows_detail"] = [{k: row.get(k) for k in ("slot", "prompt_length", "max_abs_diff", "max_rel_diff", "tokens",
                                                   "tokens_match_per_session", "tokens_match_eager")}
                          for row in b["per_row"]]
    mism = [compare(row["tokens"], row["eager_tokens"], row["eager_margins"]) for row in b["per_row"]
            if "eager_tokens" in row and row["tokens"] != row["eager_tokens"]]
    if mism:
        out["eager_mismatches"] = mism
    return out


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
    st = f"{fb}ep={s(ep)} aoti={s(ao)} upd={s(hu)}"
    ap = c.get("aoti_prefill_pad")
    if ap is not None:
        if "error" in ap:
            st += " pad=error"
        else:
            st += f" pad={'ok' if ap.get('ok') else 'DIFF'}({ap.get('max_rel_diff', 0):.1g},eq={ap.get('bit_equal')})"
    ab = c.get("aoti_batch")
    if ab is not None:
        if "error" in ab:
            st += " batch=error"
        else:
            ok = ab.get("logits_ok", True) and ab.get("other_slots_unchanged", True)
            st += f" batch={'ok' if ok else 'DIFF'}({ab.get('max_rel_diff', 0):.1g},tok={ab.get('tokens_match_eager')})"
    return st


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--jobs", type=int, default=6)
    ap.add_argument("--extra", default="", help="more family:dtype pairs to run besides families x dtypes")
    ap.add_argument("--gemm", default="auto", choices=["auto", "triton", "extern"])
    ap.add_argument("--session-capacity", type=int, default=SESSION_CAPACITY,
                    help="decode_batch over an arena of this many sessions (0: per-session methods only)")
    ap.add_argument("--job", help=argparse.SUPPRESS)  # family:dtype, run in this process
    ap.add_argument("--timeout", type=int, default=900, help="seconds per family x dtype")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    if args.job:
        family, dtype = args.job.split(":")
        try:
            res = run_job(family, dtype, out, args.gemm, args.session_capacity)
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
                                  "--gemm", args.gemm, "--session-capacity", str(args.session_capacity)],
                                 stdout=logf, stderr=subprocess.STDOUT, env=env)
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
    print("\ncompile seconds (prefill/decode/decode_batch), shims missing:")
    for (f, d), r in sorted(results.items()):
        cs = r.get("compile_seconds", {})
        miss = sorted({s for m in r.get("shims", {}).values() for s in m.get("missing", [])})
        other = sorted({s for m in r.get("shims", {}).values() for s in m.get("unresolved_other", [])})
        print(f"  {f}-{d}: {cs.get('prefill')}/{cs.get('decode')}/{cs.get('decode_batch')} gemm={r.get('gemm')} "
              f"missing={miss} other={other}")
    print("\ndecode_batch against the per-session decode (max |diff| / max |logit|; greedy tokens vs transformers):")
    for (f, d), r in sorted(results.items()):
        for tag in ("exported_batch", "aoti_batch"):
            b = r.get("checks", {}).get(tag)
            if b and "error" not in b:
                print(f"  {f}-{d} {tag}: max abs {b.get('max_abs_diff'):.3g} rel {b.get('max_rel_diff'):.3g} "
                      f"other slots unchanged {b.get('other_slots_unchanged')} tokens match {b.get('tokens_match_eager')}"
                      + (f" mismatches {b['eager_mismatches']}" if b.get("eager_mismatches") else ""))
            elif b:
                print(f"  {f}-{d} {tag}: {b['error'][:200]}")
    print("\nprefill padded by repeating its last row against the unpadded prefill (max |diff| / max |logit|):")
    for (f, d), r in sorted(results.items()):
        for tag in ("exported_prefill_pad", "aoti_prefill_pad"):
            b = r.get("checks", {}).get(tag)
            if b and "error" not in b:
                print(f"  {f}-{d} {tag}: rel {b.get('max_rel_diff'):.3g} bit-equal {b.get('bit_equal')} "
                      f"({len(b.get('cases', []))} cases; state bit-equal in "
                      f"{sum(c['state_bit_equal'] for c in b.get('cases', []))})")
            elif b:
                print(f"  {f}-{d} {tag}: {b['error'][:200]}")
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
