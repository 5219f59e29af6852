# SPDX-License-Identifier: Apache-2.0
"""PyTorch baselines for the real-model benchmark (bench/real_models/run.sh), on the GPU machine.

    python3 hf_baselines.py make-checkpoint --shape 1b|8b --out DIR
        A Llama-3.2-1B- or Llama-3.1-8B-shaped checkpoint with random bf16 weights, saved as
        transformers saves one (config.json, sharded safetensors + index): no download.
    python3 hf_baselines.py measure --model DIR --out JSON [--cache 1024] [--prefill 512]
        Loads it the PyTorch way (transformers from_pretrained onto the GPU, bf16), then
        measures, all in this process:
          load_s                     from_pretrained(device_map="cuda") until synchronized
          d2d_gbps                   device-to-device copy bandwidth (bytes read + written / s)
          eager_decode_us            one decode step, transformers eager, static KV cache
          compiled_decode_us         the same step under torch.compile(mode="reduce-overhead")
          eager_prefill_us / compiled_prefill_us   a prompt of --prefill tokens
        A step is: the forward for one token at the next position with logits of the last
        position only (logits_to_keep=1), then torch.cuda.synchronize(); the token is fixed
        (no argmax round trip), as in Wharf's package_bench. Medians with min and max.
    python3 hf_baselines.py measure-batch --model DIR --out JSON [--batches 1,8,32,64,128]
            [--cache 1024] [--context 512] [--steps 100]
        The batched baseline of issue 26: for each batch size B, a StaticCache of B rows, an
        eager prefill of B prompts of --context tokens, then decode steps of B tokens (one per
        row, fixed) under torch.compile(mode="reduce-overhead"): step_us (medians with min and
        max, synchronized each step as above), tokens_per_s = B / median step, compile_s. All
        rows sit at the same position (a transformers StaticCache has one position for the
        batch; ragged lengths need Wharf's batched method).
"""
import argparse
import inspect
import json
import os
import statistics
import time

import torch

SHAPES = {
    # Llama-3.2-1B: 16 layers, hidden 2048, 32 heads / 8 KV heads of 64, FFN 8192, tied head.
    "1b": dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
               num_attention_heads=32, num_key_value_heads=8, head_dim=64, tie_word_embeddings=True,
               rope_theta=500000.0, max_position_embeddings=131072, rms_norm_eps=1e-5),
    # Llama-3.1-8B: 32 layers, hidden 4096, 32 heads / 8 KV heads of 128, FFN 14336.
    "8b": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
               num_attention_heads=32, num_key_value_heads=8, head_dim=128, tie_word_embeddings=False,
               rope_theta=500000.0, max_position_embeddings=131072, rms_norm_eps=1e-5),
}


def make_checkpoint(shape, out):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(**SHAPES[shape], torch_dtype="bfloat16")
    torch.manual_seed(0)
    t0 = time.time()
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg)
    torch.set_default_dtype(torch.float32)
    model = model.to(torch.bfloat16)
    # Random weights of a realistic scale (transformers' init already draws N(0, 0.02)).
    model.save_pretrained(out, max_shard_size="2GB", safe_serialization=True)
    n = sum(p.numel() for p in model.parameters())
    print(json.dumps({"shape": shape, "parameters": n, "seconds": round(time.time() - t0, 1), "out": out}))


def stats(us):
    return {"median": statistics.median(us), "min": min(us), "max": max(us), "n": len(us)}


def static_cache(model, max_len, batch=1):
    from transformers import StaticCache

    params = inspect.signature(StaticCache.__init__).parameters
    kw = {"config": model.config, "max_cache_len": max_len}
    for k, v in (("max_batch_size", batch), ("batch_size", batch), ("device", "cuda"), ("dtype", model.dtype)):
        if k in params:
            kw[k] = v
    return StaticCache(**kw)


def timed(fn, reps, warmup, setup=None):
    for _ in range(warmup):
        if setup:
            setup()
        fn()
    torch.cuda.synchronize()
    us = []
    for _ in range(reps):
        if setup:
            setup()
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        us.append((time.perf_counter() - t0) * 1e6)
    return us


def d2d_gbps():
    n = 1 << 31  # 2 GiB
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    us = timed(lambda: b.copy_(a), 10, 3)
    return 2 * n / (statistics.median(us) * 1e-6) / 1e9


def measure(model_dir, out, cache_len, prefill_len, steps):
    from transformers import AutoModelForCausalLM

    res = {"model": model_dir, "torch": torch.__version__, "device": torch.cuda.get_device_name()}
    import transformers

    res["transformers"] = transformers.__version__
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16, device_map="cuda")
    torch.cuda.synchronize()
    res["load_s"] = time.perf_counter() - t0
    model.eval()
    cfg = model.config
    params = {id(p): p for p in model.parameters()}
    res["weight_bytes"] = sum(p.numel() * p.element_size() for p in params.values())
    res["d2d_gbps"] = d2d_gbps()
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    kv_bytes = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim * (prefill_len + 1) * 2
    # Bytes a decode step must read: every weight but the embedding table (one row is read),
    # unless the LM head is tied to it (then the head reads all of it), plus the filled KV.
    emb = model.get_input_embeddings().weight
    read = res["weight_bytes"] - (0 if cfg.tie_word_embeddings else emb.numel() * emb.element_size())
    res["step_read_bytes"] = read + kv_bytes
    res["roofline_decode_us"] = res["step_read_bytes"] / (res["d2d_gbps"] * 1e9) * 1e6

    prompt = torch.randint(0, cfg.vocab_size, (1, prefill_len), device="cuda")
    prompt_pos = torch.arange(prefill_len, device="cuda")
    tok = torch.tensor([[11]], device="cuda")
    pos = torch.tensor([prefill_len], device="cuda")

    def save():
        with open(out, "w") as f:
            json.dump(res, f, indent=1)

    cache = static_cache(model, cache_len)
    with torch.no_grad():
        def prefill(fwd):
            return lambda: fwd(input_ids=prompt, past_key_values=cache, cache_position=prompt_pos, use_cache=True,
                               logits_to_keep=1)

        def decode(fwd):
            return lambda: fwd(input_ids=tok, past_key_values=cache, cache_position=pos, use_cache=True,
                               logits_to_keep=1)

        # transformers 5's StaticCache appends at its own running length (cache_position does
        # not place keys), so each prefill starts from a reset cache, and decode steps follow
        # one eager prefill (which also allocates the cache outside any compiled region, as
        # transformers requires for CUDA graphs).
        res["eager_prefill_us"] = stats(timed(prefill(model.forward), 10, 3, setup=cache.reset))
        cache.reset()
        prefill(model.forward)()
        res["eager_decode_us"] = stats(timed(decode(model.forward), steps, 10))
        save()
        try:
            t0 = time.time()
            compiled = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
            cache.reset()
            prefill(model.forward)()
            res["compiled_decode_us"] = stats(timed(decode(compiled), steps, 10))
            res["compiled_decode_total_s"] = time.time() - t0
        except Exception as e:  # the table says why a baseline is missing
            res["compiled_decode_error"] = f"{type(e).__name__}: {e}"[:400]
        save()
        try:
            # Prefill compiled without CUDA graphs (transformers advises against graphing it).
            compiled_prefill = torch.compile(model.forward, fullgraph=True, dynamic=False)
            res["compiled_prefill_us"] = stats(timed(prefill(compiled_prefill), 10, 3, setup=cache.reset))
        except Exception as e:
            res["compiled_prefill_error"] = f"{type(e).__name__}: {e}"[:400]
        save()
    print(json.dumps(res))


def measure_batch(model_dir, out, batches, cache_len, context, steps):
    import transformers
    from transformers import AutoModelForCausalLM

    res = {"model": model_dir, "torch": torch.__version__, "device": torch.cuda.get_device_name(),
           "transformers": transformers.__version__, "cache": cache_len, "context": context, "steps": steps,
           "mode": "torch.compile(mode='reduce-overhead', fullgraph=True), StaticCache of B rows, all at one position",
           "batches": []}
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16, device_map="cuda").eval()
    vocab = model.config.vocab_size

    def save():
        with open(out, "w") as f:
            json.dump(res, f, indent=1)

    for B in batches:
        row = {"batch": B}
        try:
            if context + 1 + 10 + steps > cache_len:  # prefill, the compiling step, warm-up, timed steps
                raise ValueError(f"context {context} + {steps + 11} steps exceed the cache of {cache_len}")
            torch._dynamo.reset()  # one compilation (and CUDA graph pool) per batch size
            cache = static_cache(model, cache_len, batch=B)
            prompt = torch.randint(0, vocab, (B, context), device="cuda")
            tok = torch.full((B, 1), 11, dtype=torch.long, device="cuda")
            pos = torch.tensor([context], device="cuda")
            with torch.no_grad():
                # Eager prefill: allocates the cache outside the compiled region (see measure()).
                model(input_ids=prompt, past_key_values=cache, cache_position=torch.arange(context, device="cuda"),
                      use_cache=True, logits_to_keep=1)
                compiled = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)

                def step():
                    return compiled(input_ids=tok, past_key_values=cache, cache_position=pos, use_cache=True,
                                    logits_to_keep=1)

                t0 = time.time()
                step()  # compiles (the warm-up steps below record and replay the graph)
                torch.cuda.synchronize()
                row["compile_s"] = time.time() - t0
                us = timed(step, steps, 10)
            row["step_us"] = stats(us)
            row["tokens_per_s"] = B / (statistics.median(us) * 1e-6)
        except Exception as e:  # the table says why a batch size is missing
            row["error"] = f"{type(e).__name__}: {e}"[:400]
        finally:
            cache = compiled = None
            torch.cuda.empty_cache()
        res["batches"].append(row)
        print(json.dumps(row), flush=True)
        save()
    print(json.dumps(res))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("make-checkpoint")
    a.add_argument("--shape", choices=sorted(SHAPES), required=True)
    a.add_argument("--out", required=True)
    b = sub.add_parser("measure")
    b.add_argument("--model", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--cache", type=int, default=1024)
    b.add_argument("--prefill", type=int, default=512)
    b.add_argument("--steps", type=int, default=200)
    c = sub.add_parser("measure-batch")
    c.add_argument("--model", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--batches", default="1,8,32,64,128")
    c.add_argument("--cache", type=int, default=1024)
    c.add_argument("--context", type=int, default=512)
    c.add_argument("--steps", type=int, default=100)
    args = ap.parse_args()
    if args.cmd == "make-checkpoint":
        make_checkpoint(args.shape, args.out)
    elif args.cmd == "measure-batch":
        measure_batch(args.model, args.out, [int(b) for b in args.batches.split(",")], args.cache, args.context,
                      args.steps)
    else:
        measure(args.model, args.out, args.cache, args.prefill, args.steps)


if __name__ == "__main__":
    main()
