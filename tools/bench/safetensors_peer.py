#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The safetensors library's side of update_bench's file rows (run on the GPU machine).

update_bench starts this once, waits for "ready", then writes "go" before each repetition so
the library's loads interleave with Wharf's and share the machine's noise. Each "go" times
safetensors.torch.load_file(path, device="cuda") until the GPU has every tensor, prints the
seconds, and frees the tensors. Any other line (or EOF) ends it.

usage: safetensors_peer.py PATH
"""
import sys
import time


def main() -> int:
    path = sys.argv[1]
    try:
        import torch
        from safetensors.torch import load_file
    except Exception as e:  # reported by the bench as "not measured"
        print(f"unavailable: {type(e).__name__}: {e}", flush=True)
        return 0
    if not torch.cuda.is_available():
        print("unavailable: torch.cuda.is_available() is False", flush=True)
        return 0
    torch.empty(1, device="cuda")  # the context, outside the timing
    import safetensors
    print(f"ready safetensors {safetensors.__version__} torch {torch.__version__}", flush=True)
    for line in sys.stdin:
        if line.strip() != "go":
            break
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        tensors = load_file(path, device="cuda")
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        del tensors
        torch.cuda.empty_cache()
        print(f"{dt:.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
