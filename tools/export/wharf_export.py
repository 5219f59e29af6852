# SPDX-License-Identifier: Apache-2.0
"""Exports a Hugging Face causal language model as a Wharf model package (docs/model-package.md).

Run where PyTorch, transformers, safetensors and Triton are (a CUDA GPU is needed):

    python3 tools/export/wharf_export.py MODEL_DIR --out OUT.wharf [--dtype bfloat16]
        [--max-seq-len 1024] [--gemm auto|triton|extern] [--name NAME] [--session-capacity S]
    python3 tools/export/wharf_export.py CONFIG.json --config-only --out OUT.wharf   # random weights

MODEL_DIR is a transformers checkpoint directory (config.json and safetensors shards). The
package holds the methods `prefill` (1..max_seq_len tokens) and `decode` (one token), both
compiled with AOTInductor without libtorch, their parameters keyed by the checkpoint's names,
and the KV cache declared as state. transformers' own modeling code computes every layer with
the attention implementation it picks by default (SDPA); only the KV cache container is
Wharf's (`wharf_cache.key_<layer>` / `value_<layer>` buffers the methods write in place at
`cache_position`). SDPA is replaced by Wharf's Triton kernel (wharf_sdpa.py) in the exported
graph so that the compiled `.so` needs only the shims Wharf implements; the exporter checks
that (`nm -D --undefined-only`) and warns naming any missing function. With
--session-capacity S the package also holds `decode_batch`, one decode step for up to S
sessions compiled over the state arena (wharf_slots.py), checked against `decode`.
"""
import argparse
import inspect
import json
import os
import re
import shutil
import sys
import tempfile
import time
import types
import zipfile

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wharf_sdpa  # noqa: E402  (registers wharf::sdpa)
import wharf_slots  # noqa: E402  (registers wharf::decode_slots)
from package_tools import check_shims, compiled_constants, find_repo_file, wharf_shims  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
WHARF_DTYPE = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16",
               torch.int64: "int64", torch.int32: "int32", torch.bool: "bool", torch.float64: "float64",
               torch.uint8: "uint8", torch.int8: "int8"}
SHARD_BYTES = 5 * 1024 ** 3  # random-weight checkpoints are sharded like transformers' save_pretrained


def log(*a):
    print("[wharf-export]", *a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Shims: what a compiled method may import
# --------------------------------------------------------------------------------------------

# --------------------------------------------------------------------------------------------
# The model and its cache
# --------------------------------------------------------------------------------------------

def cache_geometry(config):
    """(num_layers, kv_heads, head_dim) per transformers' config conventions."""
    cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    n_layers = cfg.num_hidden_layers
    heads = cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return n_layers, kv, head_dim


class WharfCacheBuffers(nn.Module):
    """The KV cache as registered buffers (state FQNs wharf_cache.key_<i> / value_<i>)."""

    def __init__(self, n_layers, kv_heads, max_seq_len, head_dim, dtype, device, capacity=None):
        """Per-session buffers [1, kv_heads, max_seq_len, head_dim]; with `capacity` S the
        arena of S sessions, [S, 1, kv_heads, max_seq_len, head_dim] (slot-major)."""
        super().__init__()
        self.n_layers = n_layers
        shape = (1, kv_heads, max_seq_len, head_dim)
        if capacity is not None:
            shape = (capacity,) + shape
        for i in range(n_layers):
            self.register_buffer(f"key_{i}", torch.zeros(shape, dtype=dtype, device=device))
            self.register_buffer(f"value_{i}", torch.zeros(shape, dtype=dtype, device=device))


def make_hf_cache(config, buffers, max_seq_len, batched=False):
    """transformers' own StaticCache, every layer a full-length StaticLayer over Wharf's buffers.

    Sliding-window layers get a full-length layer too: the window is then applied by
    transformers' sliding-window mask over absolute positions (the ring buffer of
    StaticSlidingWindowLayer has data-dependent control flow that export cannot capture).
    The layers' `update` writes with index_copy_ at the position the wrapper sets for the call
    (no dependence on how a transformers release passes cache_position), and their mask sizes
    are the full cache: positions past the last written are masked by transformers' causal mask.

    batched: the buffers are arenas [S, 1, kv, T, D]; `update` writes row r's keys and values
    at (slots[r], 0, :, cache_position[r], :) with one index_put_ on the arena (the indices the
    wrapper sets for the call, `cache.wharf_rows`) and returns the arenas, which the
    "wharf_slots" attention function reads (wharf_slots.py).
    """
    from transformers import cache_utils

    cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    try:
        cache = cache_utils.StaticCache(config=cfg, max_cache_len=max_seq_len)
    except TypeError:
        cache = cache_utils.StaticCache(cfg, max_seq_len)
    n_layers = buffers.n_layers
    if len(cache.layers) != n_layers:
        raise RuntimeError(f"StaticCache has {len(cache.layers)} layers, the config {n_layers}")
    cache.wharf_position = None

    def update(layer, key_states, value_states, *args, **kwargs):
        pos = cache.wharf_position
        layer.keys.index_copy_(2, pos, key_states)
        layer.values.index_copy_(2, pos, value_states)
        return layer.keys, layer.values

    def update_rows(layer, key_states, value_states, *args, **kwargs):
        # key_states [N, kv, 1, D]; the indices broadcast to [N, kv], so the values are [N, kv, D].
        rows = cache.wharf_rows
        torch.ops.aten.index_put_(layer.keys, rows, key_states[:, :, 0, :])
        torch.ops.aten.index_put_(layer.values, rows, value_states[:, :, 0, :])
        return layer.keys, layer.values

    def mask_sizes(layer, *args, **kwargs):
        return max_seq_len, 0

    for i in range(n_layers):
        layer = cache_utils.StaticLayer(max_seq_len)
        k, v = buffers.get_buffer(f"key_{i}"), buffers.get_buffer(f"value_{i}")
        # Let the release set up whatever attributes its layer has (sizes, dtype, device, a
        # cumulative_length tensor in newer ones), then put Wharf's buffers in place.
        kk = k[0] if batched else k
        probe = torch.zeros(kk.shape[0], kk.shape[1], 1, kk.shape[3], dtype=k.dtype, device=k.device)
        try:
            layer.lazy_initialization(probe, probe)
        except TypeError:
            layer.lazy_initialization(probe)
        layer.keys, layer.values = k, v
        layer.is_initialized = True
        layer.update = types.MethodType(update_rows if batched else update, layer)
        layer.get_mask_sizes = types.MethodType(mask_sizes, layer)
        cache.layers[i] = layer
    return cache


# --------------------------------------------------------------------------------------------
# Masks at the rows' own positions
# --------------------------------------------------------------------------------------------

# The query positions of the per-session wrapper running now (a stack): while set, the mask
# functions transformers looks up build each query row's mask at cache_position[row].
_QUERY_POSITIONS = []
_MASK_CALLS = [0]  # masks built at those positions (the wrapper checks that its model built one)
MASKED_IMPLEMENTATIONS = ("sdpa", "eager")  # transformers' mask functions the exporter can export


def _at_query_positions(original):
    """Wraps one of transformers' mask-interface functions (sdpa_mask, eager_mask, keyword
    arguments batch_size, q_length, kv_length, q_offset, kv_offset, mask_function, ...): while
    a wrapper's positions are set, query row i is at cache_position[i] instead of q_offset + i.

    Why: transformers (5.x) places a chunk's query rows at `past_key_values.get_seq_length()
    + 0 .. T-1` (q_offset is the cache's length, which the wrapper can only give as one number,
    cache_position[0]), so a row's mask followed its place in the chunk, not its position. With
    positions taken from cache_position, row i attends to key j exactly when the model's mask
    function allows (j, cache_position[i]) (causal: j <= cache_position[i]; a sliding window:
    also j > cache_position[i] - window): a prefill padded by repeating its last token and
    position then computes, for every repeated row, what the real last row computes (Wharf's
    graph buckets pad prefills that way; docs/decisions.md, "Buckets with padding"). The mask
    function itself (causal, sliding window, a family's own) is transformers', called with the
    positions as query indices; outside a wrapper's forward the original runs unchanged."""
    if getattr(original, "_wharf_positional", False):
        return original

    def mask(*args, **kwargs):
        if not _QUERY_POSITIONS:
            return original(*args, **kwargs)
        pos = _QUERY_POSITIONS[-1]
        if args:
            raise RuntimeError(f"{getattr(original, '__name__', original)}: called with positional arguments; the "
                               f"exporter's positional masks expect transformers' keyword call (probe_hf.py)")
        kwargs = dict(kwargs)
        if "q_length" in kwargs and "mask_function" in kwargs:
            fn = kwargs["mask_function"]

            def at_positions(batch_idx, head_idx, q_idx, kv_idx):
                return fn(batch_idx, head_idx, pos[q_idx], kv_idx)

            kwargs["mask_function"] = at_positions
            kwargs["q_offset"] = 0  # q_idx is the row; its position comes from cache_position
        elif "cache_position" in kwargs:  # releases that build the mask from cache_position itself
            kwargs["cache_position"] = pos
        else:
            raise RuntimeError(f"{getattr(original, '__name__', original)}: neither q_length/mask_function nor "
                               f"cache_position among its arguments {sorted(kwargs)}: this transformers release "
                               f"builds masks another way (probe_hf.py)")
        # Never the is_causal shortcut: it would be top-left causal over the rows, not the positions.
        kwargs["allow_is_causal_skip"] = False
        _MASK_CALLS[0] += 1
        return original(**kwargs)

    mask._wharf_positional = True
    mask.__name__ = f"wharf_positional_{getattr(original, '__name__', 'mask')}"
    return mask


def install_positional_masks():
    """Wraps transformers' mask functions of MASKED_IMPLEMENTATIONS (once; a pass-through outside
    a per-session wrapper's forward, so transformers' own models are unaffected)."""
    try:
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface
    except ImportError as e:
        raise RuntimeError("this transformers release has no masking_utils.AttentionMaskInterface: the exporter "
                           "cannot build the prefill's masks from cache_position") from e
    for name in MASKED_IMPLEMENTATIONS:
        if name in ALL_MASK_ATTENTION_FUNCTIONS._global_mapping:
            AttentionMaskInterface.register(name, _at_query_positions(ALL_MASK_ATTENTION_FUNCTIONS._global_mapping[name]))


class query_positions:
    """Context: the masks built inside are at `positions` (cache_position [T]); counts them."""

    def __init__(self, positions):
        self.positions = positions

    def __enter__(self):
        install_positional_masks()
        _QUERY_POSITIONS.append(self.positions)
        self.calls_before = _MASK_CALLS[0]
        return self

    def __exit__(self, *exc):
        _QUERY_POSITIONS.pop()
        self.calls = _MASK_CALLS[0] - self.calls_before
        return False


class WharfCausalLM(nn.Module):
    """A transformers causal LM with the FQNs of its checkpoint (its children are this module's
    children: `model.layers.0...`, `lm_head.weight`) and Wharf's KV cache. forward(input_ids
    [1, T], cache_position [T]) writes the tokens' keys and values at cache_position, attends
    from each row at its own cache_position (so a run padded by repeating its last token and
    position computes the unpadded run's rows) and returns the float32 logits of the last
    position, [1, 1, vocab]."""

    def __init__(self, hf_model, max_seq_len):
        super().__init__()
        for name, child in hf_model.named_children():
            self.add_module(name, child)
        object.__setattr__(self, "_hf", hf_model)  # not a child: its parameters are ours already
        p = next(hf_model.parameters())
        n_layers, kv, head_dim = cache_geometry(hf_model.config)
        self.wharf_cache = WharfCacheBuffers(n_layers, kv, max_seq_len, head_dim, p.dtype, p.device)
        self.max_seq_len = max_seq_len
        object.__setattr__(self, "_cache", make_hf_cache(hf_model.config, self.wharf_cache, max_seq_len))
        params = inspect.signature(hf_model.forward).parameters
        base = getattr(hf_model, hf_model.base_model_prefix, None) if hasattr(hf_model, "base_model_prefix") else None
        base_params = inspect.signature(base.forward).parameters if base is not None else params
        self._pass_cache_position = "cache_position" in params and "cache_position" in base_params
        self._keep = "logits_to_keep" if "logits_to_keep" in params else (
            "num_logits_to_keep" if "num_logits_to_keep" in params else None)

    def forward(self, input_ids, cache_position):
        self._cache.wharf_position = cache_position
        for i, layer in enumerate(self._cache.layers):
            # The cache layers read the buffers through this module's attributes on every call:
            # torch.export substitutes a module's buffers there, and a tensor merely referenced
            # from elsewhere would be captured as a constant instead of as state.
            layer.keys = getattr(self.wharf_cache, f"key_{i}")
            layer.values = getattr(self.wharf_cache, f"value_{i}")
            # Releases that derive positions from the cache's length read it here: a value
            # computed from the input, not a mutated buffer (it would become state). One
            # number for the chunk: the masks take each row's position from cache_position
            # instead (query_positions below).
            cl = getattr(layer, "cumulative_length", None)
            if isinstance(cl, torch.Tensor):
                layer.cumulative_length = cache_position[:1].reshape(cl.shape).to(cl.dtype)
        kwargs = dict(input_ids=input_ids, past_key_values=self._cache, use_cache=True,
                      position_ids=cache_position.unsqueeze(0))
        if self._pass_cache_position:
            kwargs["cache_position"] = cache_position
        if self._keep:
            kwargs[self._keep] = 1
        # Each query row's mask at its own cache_position (see _at_query_positions): what makes a
        # prefill padded by repeating its last row compute the unpadded prefill's rows.
        with query_positions(cache_position) as q:
            out = self._hf(**kwargs)
        attn = getattr(self._hf.config, "_attn_implementation", None)
        if q.calls == 0 and attn in MASKED_IMPLEMENTATIONS:
            raise RuntimeError(f"{type(self._hf).__name__}: no attention mask was built through transformers' mask "
                               f"interface ({attn!r}): the exporter cannot place the rows' masks at cache_position")
        self._cache.wharf_mask_calls = q.calls  # (not a module attribute: export refuses assigning those)
        logits = out.logits if hasattr(out, "logits") else out[0]
        return logits[:, -1:, :].float()

    def reset_cache(self):
        for b in self.wharf_cache.buffers():
            b.zero_()


class WharfBatchedCausalLM(nn.Module):
    """The batched decode method over a state arena of `capacity` sessions (docs/model-package.md,
    `decode_batch`): the same transformers model and parameter FQNs as WharfCausalLM, the KV
    buffers `wharf_cache.key_<i>` / `value_<i>` as arenas [S, 1, kv, max_seq_len, head_dim].
    forward(input_ids [N, 1], cache_position [N], slots [N]) writes row r's keys and values at
    (slots[r], 0, :, cache_position[r], :), attends with wharf::decode_slots over that slot's
    positions 0..cache_position[r] (the layer's sliding window, if any, within them) and
    returns the float32 next-token logits [N, 1, vocab]. RoPE (and GPT-2's position embedding)
    gets position_ids = cache_position[:, None], per row.

    softcap: apply a layer's attention-logit softcapping (Gemma 2) in the kernel. The exporter
    sets it as the per-session methods compute: transformers' SDPA path ignores softcapping,
    its eager path applies it."""

    def __init__(self, hf_model, max_seq_len, capacity, softcap=False):
        super().__init__()
        wharf_slots.register()
        for name, child in hf_model.named_children():
            self.add_module(name, child)
        object.__setattr__(self, "_hf", hf_model)
        p = next(hf_model.parameters())
        n_layers, kv, head_dim = cache_geometry(hf_model.config)
        self.kv_heads = kv
        self.capacity = capacity
        self.wharf_cache = WharfCacheBuffers(n_layers, kv, max_seq_len, head_dim, p.dtype, p.device, capacity=capacity)
        self.max_seq_len = max_seq_len
        cache = make_hf_cache(hf_model.config, self.wharf_cache, max_seq_len, batched=True)
        cache.wharf_softcap = bool(softcap)
        object.__setattr__(self, "_cache", cache)
        params = inspect.signature(hf_model.forward).parameters
        self._keep = "logits_to_keep" if "logits_to_keep" in params else (
            "num_logits_to_keep" if "num_logits_to_keep" in params else None)

    def forward(self, input_ids, cache_position, slots):
        cache = self._cache
        rows = slots.unsqueeze(1)
        heads = torch.arange(self.kv_heads, device=slots.device, dtype=slots.dtype).unsqueeze(0)
        cache.wharf_rows = [rows, torch.zeros_like(rows), heads, cache_position.unsqueeze(1)]
        cache.wharf_slots = slots
        cache.wharf_lengths = cache_position + 1
        for i, layer in enumerate(cache.layers):
            layer.keys = getattr(self.wharf_cache, f"key_{i}")  # see WharfCausalLM.forward
            layer.values = getattr(self.wharf_cache, f"value_{i}")
            cl = getattr(layer, "cumulative_length", None)
            if isinstance(cl, torch.Tensor):
                layer.cumulative_length = cache_position[:1].reshape(cl.shape).to(cl.dtype)
        # No cache_position to transformers: its meaning there is one sequence's positions;
        # each row's position is in position_ids and in the rows the cache writes.
        kwargs = dict(input_ids=input_ids, past_key_values=cache, use_cache=True,
                      position_ids=cache_position.unsqueeze(1))
        if self._keep:
            kwargs[self._keep] = 1
        with wharf_slots.attn_implementation(self._hf, wharf_slots.ATTN_IMPLEMENTATION), wharf_slots.active(cache):
            out = self._hf(**kwargs)
        logits = out.logits if hasattr(out, "logits") else out[0]
        return logits[:, -1:, :].float()

    def reset_cache(self):
        for b in self.wharf_cache.buffers():
            b.zero_()


# --------------------------------------------------------------------------------------------
# Loading the source
# --------------------------------------------------------------------------------------------

def read_config(path):
    from transformers import AutoConfig

    if os.path.isdir(path):
        return AutoConfig.from_pretrained(path)
    with open(path) as f:
        d = json.load(f)
    model_type = d.pop("model_type")
    return AutoConfig.for_model(model_type, **d)


RESIDUAL_OUTPUTS = ("o_proj", "down_proj", "c_proj", "out_proj", "dense", "fc2")


def random_init_(model, seed):
    """Random weights that give decisive, varied greedy tokens (robust to rounding, yet not
    the input token repeated): weights N(0, 1/fan_in), the projections back into the residual
    stream 4x that (the layers outweigh the token's own embedding), an untied LM head 3x,
    embeddings N(0, 1), biases N(0, 0.1^2), norms as transformers made them."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    gpt2 = type(model).__name__.startswith("GPT2")
    tied = {id(p) for n, p in model.named_parameters(remove_duplicate=False) if "embed" in n or "wte" in n}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                if "embed" in name or "wte" in name or "wpe" in name:
                    t = torch.randn(p.shape, generator=g)
                else:
                    fan_in = p.shape[0] if gpt2 else p.shape[-1]  # GPT-2's Conv1D weights are [in, out]
                    gain = 4.0 if any(r in name for r in RESIDUAL_OUTPUTS) else (
                        3.0 if "lm_head" in name and id(p) not in tied else 1.0)
                    t = torch.randn(p.shape, generator=g) * (gain / fan_in ** 0.5)
            elif name.endswith("bias"):
                t = torch.randn(p.shape, generator=g) * 0.1
            else:
                continue  # norm weights
            p.copy_(t.to(p.dtype))


def load_model(src, dtype, device, config_only=False, seed=0, attention=None):
    import transformers
    from transformers import AutoModelForCausalLM

    extra = {"attn_implementation": attention} if attention else {}
    if config_only:
        config = read_config(src)
        try:
            model = AutoModelForCausalLM.from_config(config, dtype=dtype, **extra)
        except TypeError:
            model = AutoModelForCausalLM.from_config(config, torch_dtype=dtype, **extra)
        random_init_(model, seed)
    else:
        try:
            model = AutoModelForCausalLM.from_pretrained(src, dtype=dtype, **extra)
        except TypeError:
            model = AutoModelForCausalLM.from_pretrained(src, torch_dtype=dtype, **extra)
    if next(model.parameters()).dtype != dtype:  # a release that ignored the dtype keyword
        model = model.to(dtype)
    model = model.to(device).eval()
    log(f"loaded {type(model).__name__} (transformers {transformers.__version__}, attention "
        f"{getattr(model.config, '_attn_implementation', None)}) dtype {dtype}")
    return model


def source_weight_map(src):
    """{tensor name: file name} of a checkpoint directory (None for a config-only export)."""
    if src is None or not os.path.isdir(src):
        return None
    idx = os.path.join(src, "model.safetensors.index.json")
    if os.path.exists(idx):
        with open(idx) as f:
            return dict(json.load(f)["weight_map"])
    single = os.path.join(src, "model.safetensors")
    if os.path.exists(single):
        from safetensors import safe_open

        with safe_open(single, "pt") as f:
            return {k: "model.safetensors" for k in f.keys()}
    return None


# --------------------------------------------------------------------------------------------
# Checking the batched method against the per-session ones
# --------------------------------------------------------------------------------------------

BATCH_PROMPT_LENGTHS = (6, 1, 13, 27, 3)  # ragged, across a sliding window of 8 and a split of 64
BATCH_TOLERANCE = {"float32": 1e-4}  # max |batched - per-session| / max |per-session| over all logits


def batched_check(run_prefill, run_decode, run_batch, new_session, arena, capacity, vocab, max_seq_len,
                  hf_model=None, dtype="float32", seed=7):
    """Runs the batched method for rows of sessions at ragged positions and compares every
    row's logits with the per-session decode method's for that session.

    run_prefill(session, ids [T], pos [T]) / run_decode(session, token, pos) -> logits [vocab]
    run the per-session methods on `session` (a dict of per-session state tensors, from
    new_session()); run_batch(ids [N, 1], pos [N], slots [N]) -> logits [N, vocab] runs the
    batched method on `arena` (a dict of [S, ...] state tensors it writes in place).
    Rows: up to 5 sessions in slots spread over the arena; each prompt is prefilled per session
    and its filled positions copied into the row's slot; the arena's other contents are random
    (a read of another slot or of a position past a row's length changes its logits). Steps:
    all rows, every other row in reverse order, one row (N = 1), all rows again. Each row is
    fed the batched method's greedy token, and the per-session method gets the same token.
    With hf_model, each row's greedy tokens (prompt, then one per step it took part in) are
    compared with transformers' own greedy decoding of that prompt."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    R = min(len(BATCH_PROMPT_LENGTHS), capacity)
    order = list(range(capacity))[::-1]
    slots = (order[1::2] + order[0::2])[:R]
    plan = [list(range(R)), list(range(R))[::-2], [R // 2], list(range(R))]
    steps_of = [sum(r in rows for rows in plan) for r in range(R)]
    lengths = [max(1, min(L, max_seq_len - steps_of[r] - 1)) for r, L in enumerate(BATCH_PROMPT_LENGTHS[:R])]
    prompts = [torch.randint(3, vocab, (L,), generator=g).tolist() for L in lengths]
    with torch.no_grad():
        for t in arena.values():
            t.copy_(torch.randn(t.shape, generator=g).to(t.dtype))
        sessions, toks, pos = [], [], []
        for r in range(R):
            sess = new_session()
            lg = run_prefill(sess, prompts[r], list(range(lengths[r])))
            for fqn, t in sess.items():  # only the filled positions: the rest of the slot stays random
                arena[fqn][slots[r], ..., :lengths[r], :] = t[..., :lengths[r], :]
            sessions.append(sess)
            toks.append([int(lg.argmax())])
            pos.append(lengths[r])
        untouched = [s for s in range(capacity) if s not in slots]
        before = {fqn: t[untouched].clone() for fqn, t in arena.items()} if untouched else None
        max_abs, max_rel, per_row = 0.0, 0.0, [{"slot": slots[r], "prompt_length": lengths[r], "max_abs_diff": 0.0,
                                                "max_rel_diff": 0.0, "per_session_tokens": [toks[r][0]]}
                                               for r in range(R)]
        for rows in plan:
            ids = torch.tensor([[toks[r][-1]] for r in rows])
            p = torch.tensor([pos[r] for r in rows])
            sl = torch.tensor([slots[r] for r in rows])
            lb = run_batch(ids, p, sl)
            for i, r in enumerate(rows):
                ls = run_decode(sessions[r], toks[r][-1], pos[r])
                diff = float((lb[i].float() - ls.float()).abs().max())
                rel = diff / max(float(ls.float().abs().max()), 1e-30)
                row = per_row[r]
                row["max_abs_diff"] = max(row["max_abs_diff"], diff)
                row["max_rel_diff"] = max(row["max_rel_diff"], rel)
                row["per_session_tokens"].append(int(ls.argmax()))
                max_abs, max_rel = max(max_abs, diff), max(max_rel, rel)
                toks[r].append(int(lb[i].argmax()))
                pos[r] += 1
        res = {"rows": R, "capacity": capacity, "plan": plan, "max_abs_diff": max_abs, "max_rel_diff": max_rel,
               "per_row": per_row}
        if before is not None:
            res["other_slots_unchanged"] = all(torch.equal(before[f], arena[f][untouched]) for f in arena)
        tol = BATCH_TOLERANCE.get(dtype)
        if tol is not None:
            res["tolerance"] = tol
            res["logits_ok"] = max_rel <= tol
        for r in range(R):
            per_row[r]["tokens"] = toks[r]
            per_row[r]["tokens_match_per_session"] = toks[r] == per_row[r]["per_session_tokens"]
        if hf_model is not None:
            for r in range(R):
                ref, margins, logits = hf_greedy(hf_model, prompts[r], len(toks[r]))
                per_row[r]["eager_tokens"] = ref
                per_row[r]["eager_margins"] = margins
                # transformers' logits of the row's first batched step (plan[0] holds every row)
                per_row[r]["eager_first_step_logits"] = logits[1].tolist() if len(logits) > 1 else None
                per_row[r]["tokens_match_eager"] = toks[r] == ref
            res["tokens_match_eager"] = all(row["tokens_match_eager"] for row in per_row)
        res["prompts"] = prompts
    return res


def hf_greedy(model, prompt, n):
    """transformers' own greedy decoding (its default attention and cache): n tokens, the
    margin between the best and second-best logit at each, and the logits (float32, CPU)."""
    dev = next(model.parameters()).device
    out = model(input_ids=torch.tensor([prompt], device=dev), use_cache=True)
    toks, margins, logits = [], [], []
    for i in range(n):
        lg = out.logits[0, -1].float()
        top = lg.topk(2).values
        toks.append(int(lg.argmax()))
        margins.append(float(top[0] - top[1]))
        logits.append(lg.cpu())
        if i + 1 < n:
            out = model(input_ids=torch.tensor([[toks[-1]]], device=dev), past_key_values=out.past_key_values,
                        use_cache=True)
    return toks, margins, logits


def check_exported_batch(programs, state, capacity, vocab, max_seq_len, hf_model, dtype, device="cuda"):
    """batched_check on the exported programs (wharf::sdpa and wharf::decode_slots run eagerly)."""
    mods = {m: programs[m].module() for m in ("prefill", "decode", "decode_batch")}
    fqns = [s["fqn"] for s in state]

    def per_session(mname, sess, ids, pos):
        m = mods[mname]
        for f in fqns:
            m.get_buffer(f).copy_(sess[f])
        out = m(torch.tensor(ids, device=device), torch.tensor(pos, device=device))
        for f in fqns:
            sess[f].copy_(m.get_buffer(f))
        return out[0, -1]

    arena = {f: mods["decode_batch"].get_buffer(f) for f in fqns}
    return batched_check(
        lambda sess, ids, pos: per_session("prefill", sess, [ids], pos),
        lambda sess, tok, pos: per_session("decode", sess, [[tok]], [pos]),
        lambda ids, pos, slots: mods["decode_batch"](ids.to(device), pos.to(device), slots.to(device))[:, -1],
        lambda: {s["fqn"]: torch.zeros(s["shape"], dtype=DTYPES[s["dtype"]], device=device) for s in state},
        arena, capacity, vocab, max_seq_len, hf_model=hf_model, dtype=dtype)


# --------------------------------------------------------------------------------------------
# Checking the prefill padded by repeating its last row
# --------------------------------------------------------------------------------------------

# (start, length, bucket): a prefill of `length` tokens at positions start .. start+length-1
# (after an unpadded prefill of 0 .. start-1), run as is and padded to `bucket` rows by
# repeating its last token and position. Lengths across a sliding window of 8, from position 0
# and mid-conversation.
PAD_CASES = ((0, 1, 2), (0, 3, 4), (0, 5, 8), (0, 7, 8), (0, 13, 16), (0, 9, 32), (6, 5, 8), (6, 11, 16), (20, 3, 8))
PAD_TOLERANCE = {"float32": 1e-4}  # max |padded - unpadded| / max |unpadded logit|; other dtypes: 2e-2
PAD_DECODE_STEPS = 2


def prefill_padding_check(run_prefill, run_decode, new_state, vocab, max_seq_len, min_len=1, dtype="float32",
                          seed=11, cases=PAD_CASES):
    """Runs the prefill of each case twice, as is and padded by repeating its last token and
    position (what Wharf's graph buckets do, docs/decisions.md), and compares the last
    position's logits, the whole session state afterwards (the real positions' keys and values,
    and nothing else written: both lanes start from zeros) and the logits of PAD_DECODE_STEPS
    decode steps that follow (the unpadded lane's greedy tokens fed to both).

    run_prefill(state, ids [T], pos [T]) / run_decode(state, token, pos) -> logits [vocab] run
    the per-session methods on `state` (a dict of per-session state tensors from new_state(),
    written in place). Returns per-case differences (max abs, and whether bit-equal) and
    `max_rel_diff` (max |diff| / max |logit| over all logits), `bit_equal` (everything), and
    `ok` against PAD_TOLERANCE."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    out, max_rel, all_equal = [], 0.0, True
    with torch.no_grad():
        for start, length, bucket in cases:
            if bucket > max_seq_len or start + length + PAD_DECODE_STEPS > max_seq_len or length < min_len:
                continue
            prefix = torch.randint(3, vocab, (start,), generator=g).tolist()
            chunk = torch.randint(3, vocab, (length,), generator=g).tolist()
            pos = list(range(start, start + length))
            lanes = []
            for padded in (False, True):
                st = new_state()
                if start:
                    run_prefill(st, prefix, list(range(start)))
                ids, p = list(chunk), list(pos)
                if padded:
                    ids += [ids[-1]] * (bucket - length)
                    p += [p[-1]] * (bucket - length)
                lg = run_prefill(st, ids, p).float().clone()
                lanes.append([st, [lg]])
            toks = [int(lanes[0][1][0].argmax())]
            for k in range(PAD_DECODE_STEPS):
                for st, logits in lanes:
                    logits.append(run_decode(st, toks[-1], start + length + k).float().clone())
                toks.append(int(lanes[0][1][-1].argmax()))
            (sa, la), (sb, lb) = lanes
            scale = max(float(x.abs().max()) for x in la) or 1e-30
            case = {"start": start, "length": length, "bucket": bucket}
            case["logits_max_abs_diff"] = float((la[0] - lb[0]).abs().max())
            case["logits_bit_equal"] = bool(torch.equal(la[0], lb[0]))
            case["state_max_abs_diff"] = max(float((sa[f].float() - sb[f].float()).abs().max()) for f in sa)
            case["state_bit_equal"] = all(torch.equal(sa[f], sb[f]) for f in sa)
            case["decode_max_abs_diff"] = max(float((x - y).abs().max()) for x, y in zip(la[1:], lb[1:]))
            case["decode_bit_equal"] = all(torch.equal(x, y) for x, y in zip(la[1:], lb[1:]))
            case["same_greedy_token"] = int(la[0].argmax()) == int(lb[0].argmax())
            rel = max(case["logits_max_abs_diff"], case["decode_max_abs_diff"]) / scale
            case["max_rel_diff"] = rel
            max_rel = max(max_rel, rel)
            all_equal = all_equal and case["logits_bit_equal"] and case["state_bit_equal"] and case["decode_bit_equal"]
            out.append(case)
    tol = PAD_TOLERANCE.get(dtype, 2e-2)
    return {"cases": out, "max_rel_diff": max_rel, "bit_equal": all_equal, "tolerance": tol,
            "ok": bool(out) and max_rel <= tol}


def per_session_runner(run, fqns, buffers):
    """run_prefill / run_decode for prefill_padding_check and batched_check over a method whose
    state is `buffers` ({fqn: tensor} it reads and writes): the session's state is copied in,
    the method run, and the state copied back. run(ids, pos) -> logits [1, 1, vocab]."""
    def call(sess, ids, pos):
        for f in fqns:
            buffers[f].copy_(sess[f])
        out = run(ids, pos)
        out = out[0] if isinstance(out, (list, tuple)) else out
        for f in fqns:
            sess[f].copy_(buffers[f])
        return out[0, -1]
    return call


def check_exported_padding(programs, state, vocab, max_seq_len, min_len, dtype, device="cuda"):
    """prefill_padding_check on the exported prefill and decode programs."""
    mods = {m: programs[m].module() for m in ("prefill", "decode")}
    fqns = [s["fqn"] for s in state]
    runs = {m: per_session_runner(lambda ids, pos, m=m: mods[m](torch.tensor(ids, device=device),
                                                                torch.tensor(pos, device=device)),
                                  fqns, {f: mods[m].get_buffer(f) for f in fqns}) for m in mods}
    return prefill_padding_check(
        lambda sess, ids, pos: runs["prefill"](sess, [ids], pos),
        lambda sess, tok, pos: runs["decode"](sess, [[tok]], [pos]),
        lambda: {s["fqn"]: torch.zeros(s["shape"], dtype=DTYPES[s["dtype"]], device=device) for s in state},
        vocab, max_seq_len, min_len=min_len, dtype=dtype)


# --------------------------------------------------------------------------------------------
# Export and compile
# --------------------------------------------------------------------------------------------

def export_method(wrapper, name, example_len, max_seq_len, device):
    from torch.export import Dim

    ids = torch.ones(1, example_len, dtype=torch.long, device=device)
    pos = torch.arange(example_len, dtype=torch.long, device=device)
    if name == "decode":
        ep = torch.export.export(wrapper, (ids, pos), strict=False)
        return ep, None
    last_err = None
    for lo in (1, 2):  # transformers may branch on T > 1 (SDPA's is_causal): then prefill starts at 2
        T = Dim("T", min=lo, max=max_seq_len)
        try:
            ep = torch.export.export(wrapper, (ids, pos), dynamic_shapes=({1: T}, {0: T}), strict=False)
            return ep, {"min": lo, "max": max_seq_len}
        except Exception as e:  # noqa: BLE001
            last_err = e
            log(f"prefill export with T >= {lo} failed: {type(e).__name__}: {str(e)[:300]}")
    raise last_err


def export_batched(wrapper, capacity, device):
    """Exports a WharfBatchedCausalLM: input_ids [N, 1], cache_position [N], slots [N] with N a
    dynamic dimension 1..capacity. Returns (program, the manifest's dims)."""
    from torch.export import Dim

    n = min(capacity, 3)
    ids = torch.ones(n, 1, dtype=torch.long, device=device)
    pos = torch.arange(n, dtype=torch.long, device=device) + 1
    slots = torch.arange(n, dtype=torch.long, device=device)
    dims = {"min": 1, "max": capacity}
    if capacity == 1:
        return torch.export.export(wrapper, (ids, pos, slots), strict=False), dims
    N = Dim("N", min=1, max=capacity)
    ep = torch.export.export(wrapper, (ids, pos, slots), dynamic_shapes=({0: N}, {0: N}, {0: N}), strict=False)
    return ep, dims


def inductor_options(gemm, constant_folding):
    opts = {
        "aot_inductor.package_constants_in_so": False,
        "aot_inductor.embed_kernel_binary": True,
        "aot_inductor.link_libtorch": False,
        "aot_inductor.use_runtime_constant_folding": constant_folding,
    }
    if gemm == "triton":
        opts.update({"max_autotune": True, "max_autotune_gemm_backends": "TRITON"})
    return opts


def compile_method(ep, build_dir, name, opts):
    pt2 = os.path.join(build_dir, f"{name}.pt2")
    t0 = time.time()
    torch._inductor.aoti_compile_and_package(ep, package_path=pt2, inductor_configs=opts)
    seconds = time.time() - t0
    so = os.path.join(build_dir, f"{name}.so")
    wrapper_cpp = None
    with zipfile.ZipFile(pt2) as z:
        names = z.namelist()
        sos = [n for n in names if n.endswith(".so")]
        if len(sos) != 1:
            raise RuntimeError(f"{pt2}: expected one .so in the package, found {sos}")
        with z.open(sos[0]) as f, open(so, "wb") as g:
            g.write(f.read())
        for n in names:
            if n.endswith(".cpp"):
                path = os.path.join(build_dir, f"{name}.{os.path.basename(n)}")
                with z.open(n) as f, open(path, "wb") as g:
                    g.write(f.read())
                if n.endswith(".wrapper.cpp"):
                    wrapper_cpp = path
    return pt2, so, seconds, wrapper_cpp


# --------------------------------------------------------------------------------------------
# The package
# --------------------------------------------------------------------------------------------

def program_constants(ep):
    """(parameters, buffers and lifted tensor constants the program binds, mutated buffers) by
    name. With package_constants_in_so=False every one of them is bound by the loader."""
    sig = ep.graph_signature
    bound = (list(sig.inputs_to_parameters.values()) + list(sig.inputs_to_buffers.values())
             + list(getattr(sig, "inputs_to_lifted_tensor_constants", {}).values()))
    mutated = mutated_buffers(ep)
    consts = [fqn for fqn in bound if fqn not in mutated]
    return consts, sorted(mutated)


def mutated_buffers(ep):
    """Buffers the program writes: those of a functional graph's signature and, in the
    (non-functional) graph torch.export returns, the buffer inputs of in-place ops."""
    sig = ep.graph_signature
    mutated = set(sig.buffers_to_mutate.values())
    ph = dict(sig.inputs_to_buffers)
    ph.update(getattr(sig, "inputs_to_lifted_tensor_constants", {}))
    views = set()
    for n in ("view", "_unsafe_view", "alias", "slice", "select", "unsqueeze", "squeeze", "as_strided", "transpose",
              "permute", "t"):
        packet = getattr(torch.ops.aten, n, None)
        for ov in (packet.overloads() if packet is not None else []):
            views.add(getattr(packet, ov))
    for node in ep.graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        for i, arg in enumerate(node.target._schema.arguments):
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            val = node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)
            # an in-place op on a view of a buffer writes the buffer
            while isinstance(val, torch.fx.Node) and val.op == "call_function" and val.target in views:
                val = val.args[0]
            if isinstance(val, torch.fx.Node) and val.op == "placeholder" and val.name in ph:
                mutated.add(ph[val.name])
    return mutated


def constant_values(ep):
    vals = dict(ep.state_dict)
    vals.update(getattr(ep, "constants", {}) or {})
    return vals


def write_weights(pkg, fqns, weight_map, values, param_names, other_names):
    """Writes the bound constants keyed by FQN: parameters into files named like the source's
    shards (a tied weight goes where the source stored it under its other name), constants
    that are no checkpoint tensor (buffers, lifted constants) into
    weights/wharf_buffers.safetensors. Returns the manifest's files and parameters."""
    from safetensors.torch import save_file

    os.makedirs(os.path.join(pkg, "weights"), exist_ok=True)
    files = {}
    for fqn in fqns:
        t = values[fqn].detach().contiguous().cpu()
        fname = None
        if weight_map is not None:
            for n in [fqn] + other_names.get(fqn, []):
                if n in weight_map:
                    fname = weight_map[n]
                    break
        if fname is None and fqn not in param_names:
            fname = "wharf_buffers.safetensors"
        files.setdefault(fname, {})[fqn] = t
    unassigned = files.pop(None, {})
    if unassigned:
        if weight_map is not None:  # a parameter the source names otherwise: first shard
            first = sorted(set(weight_map.values()))[0]
            files.setdefault(first, {}).update(unassigned)
        else:
            total = sum(t.numel() * t.element_size() for t in unassigned.values())
            n = max(1, -(-total // SHARD_BYTES))
            if n == 1:
                files["model.safetensors"] = unassigned
            else:
                shard, size, k = {}, 0, 1
                for fqn, t in unassigned.items():
                    b = t.numel() * t.element_size()
                    if shard and size + b > SHARD_BYTES:
                        files[f"model-{k:05d}-of-{n:05d}.safetensors"] = shard
                        shard, size, k = {}, 0, k + 1
                    shard[fqn] = t
                    size += b
                files[f"model-{k:05d}-of-{n:05d}.safetensors"] = shard
                if k != n:  # name shards by the real count
                    renamed = {}
                    for name, content in files.items():
                        m = re.match(r"model-(\d+)-of-\d+\.safetensors", name)
                        renamed[f"model-{int(m.group(1)):05d}-of-{k:05d}.safetensors" if m else name] = content
                    files = renamed
    shard_names = sorted(f for f in files if f != "wharf_buffers.safetensors")
    for fname, content in files.items():
        save_file(content, os.path.join(pkg, "weights", fname), metadata={"format": "pt"})
    if len(shard_names) > 1 or (weight_map is not None and len(set(weight_map.values())) > 1):
        index = {"metadata": {"total_size": sum(t.numel() * t.element_size()
                                                for f in shard_names for t in files[f].values())},
                 "weight_map": {fqn: f for f in shard_names for fqn in sorted(files[f])}}
        with open(os.path.join(pkg, "weights", "model.safetensors.index.json"), "w") as f:
            json.dump(index, f, indent=2)
    params = []
    for fname in shard_names + (["wharf_buffers.safetensors"] if "wharf_buffers.safetensors" in files else []):
        for fqn, t in files[fname].items():
            params.append({"fqn": fqn, "dtype": WHARF_DTYPE[t.dtype], "shape": list(t.shape)})
    order = {f: i for i, f in enumerate(fqns)}
    params.sort(key=lambda p: order[p["fqn"]])
    file_list = [f"weights/{f}" for f in shard_names]
    if "wharf_buffers.safetensors" in files:
        file_list.append("weights/wharf_buffers.safetensors")
    return file_list, params


def _state_order(fqn):
    m = re.match(r"(.*?)(\d+)$", fqn)
    return (int(m.group(2)), m.group(1)) if m else (1 << 30, fqn)


def wharf_version():
    cm = find_repo_file("CMakeLists.txt")
    if cm:
        m = re.search(r"project\s*\(\s*wharf[^)]*VERSION\s+([0-9.]+)", open(cm).read(), flags=re.I)
        if m:
            return m.group(1)
    return "unknown"


def export_package(src, out, dtype="float32", max_seq_len=1024, gemm="auto", config_only=False, seed=0,
                   name=None, constant_folding=False, build_dir=None, shims_path=None, prefill_example=None,
                   model=None, attention=None, session_capacity=0, check_batch=True, check_padding=True):
    """Exports `src` into the package directory `out`. Returns (manifest, info) where info has
    the wrapper, the exported programs and the compiled .pt2 paths (for validation).
    session_capacity S > 0 adds the batched method `decode_batch` over an arena of S sessions
    and (check_batch) checks its exported program against the per-session ones and
    transformers (info["batch_check"]). check_padding: the exported prefill padded by repeating its
    last token and position must agree with the unpadded one (info["prefill_pad_check"]; the
    manifest marks T "pad": "repeat")."""
    import transformers

    device = "cuda"
    tdtype = DTYPES[dtype]
    shims, shim_file = wharf_shims(shims_path)
    if gemm == "auto":
        gemm = "extern" if shims and "aoti_torch_cuda_mm_out" in shims else "triton"
    if model is None:
        model = load_model(src, tdtype, device, config_only=config_only, seed=seed, attention=attention)
    wrapper = WharfCausalLM(model, max_seq_len).eval()
    config = model.config
    per_session_attention = getattr(config, "_attn_implementation", None)
    wrappers = {"prefill": wrapper, "decode": wrapper}
    if session_capacity:
        # Softcapping as the per-session methods compute it: transformers' eager attention
        # applies it, its SDPA path (replaced by wharf::sdpa) does not.
        wrappers["decode_batch"] = WharfBatchedCausalLM(model, max_seq_len, session_capacity,
                                                        softcap=per_session_attention == "eager").eval()
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(os.path.join(out, "methods"))
    own_build = build_dir is None
    build_dir = build_dir or tempfile.mkdtemp(prefix="wharf-export-")
    os.makedirs(build_dir, exist_ok=True)
    opts = inductor_options(gemm, constant_folding)
    methods, compile_seconds, programs, pt2s, sdpa_reports, shim_report = [], {}, {}, {}, {}, {}
    consts_all, state_all, values, constant_tables = [], set(), {}, {}
    example = prefill_example or min(8, max_seq_len)
    vocab = int(model.get_output_embeddings().weight.shape[0])
    slot_nodes = {}
    prefill_min, prefill_pad_check = 1, None
    for mname in wrappers:
        t0 = time.time()
        with torch.no_grad():
            if mname == "decode_batch":
                ep, dims = export_batched(wrappers[mname], session_capacity, device)
            else:
                ep, dims = export_method(wrapper, mname, example if mname == "prefill" else 1, max_seq_len, device)
        report = wharf_sdpa.replace_sdpa(ep.graph_module)
        sdpa_reports[mname] = report
        export_s = time.time() - t0
        log(f"{mname}: exported in {export_s:.1f} s; {len(report)} SDPA node(s) -> wharf::sdpa")
        if mname == "decode_batch":
            slot_nodes[mname] = sum(1 for n in ep.graph.nodes if n.op == "call_function"
                                    and n.target is torch.ops.wharf.decode_slots.default)
            n_layers = wrappers[mname].wharf_cache.n_layers
            if report or slot_nodes[mname] != n_layers:
                raise RuntimeError(f"decode_batch: {slot_nodes[mname]} wharf::decode_slots node(s) for {n_layers} "
                                   f"layers and {len(report)} SDPA node(s): the model's attention did not go "
                                   f"through the {wharf_slots.ATTN_IMPLEMENTATION!r} attention function")
            log(f"{mname}: {slot_nodes[mname]} wharf::decode_slots node(s)")
        consts, mutated = program_constants(ep)
        values.update({k: v for k, v in constant_values(ep).items() if not k.startswith("wharf_cache.")}
                      if mname == "decode_batch" else constant_values(ep))
        cache_fqns = {f"wharf_cache.{k}" for k, _ in wrappers[mname].wharf_cache.named_buffers()}
        if not cache_fqns <= set(mutated):
            raise RuntimeError(f"{mname}: the exported program does not write the cache buffers "
                               f"{sorted(cache_fqns - set(mutated))} (it mutates {mutated})")
        lifted = set(getattr(ep.graph_signature, "inputs_to_lifted_tensor_constants", {}).values())
        if lifted & set(mutated):
            raise RuntimeError(f"{mname}: the program writes tensors captured as constants: {sorted(lifted & set(mutated))}")
        state_all.update(mutated)
        pt2, so, secs, wrapper_cpp = compile_method(ep, build_dir, mname, opts)
        table = compiled_constants(wrapper_cpp)
        if table is not None:
            bound = [c["fqn"] for c in table if c["type"] in ("Parameter", "Buffer", "TensorConstant")
                     and not c["from_folded"] and c["fqn"] not in mutated]
            dropped = [c for c in consts if c not in bound]
            if dropped:
                log(f"{mname}: the compiled method does not bind {dropped} (folded into code or tied)")
            consts = bound
            constant_tables[mname] = table
        else:
            log(f"WARNING {mname}: no generated wrapper source; parameters taken from the exported program")
        for c in consts:
            if c not in consts_all:
                consts_all.append(c)
        compile_seconds[mname] = round(secs, 1)
        log(f"{mname}: compiled in {secs:.1f} s ({os.path.getsize(so)} bytes)")
        shutil.copy(so, os.path.join(out, "methods", f"{mname}.so"))
        needed, missing, other = check_shims(so, shims)
        shim_report[mname] = {"needed": needed, "missing": missing, "unresolved_other": other}
        if shims is None:
            log(f"WARNING {mname}: no shim sources found; imports not checked: {needed}")
        if missing:
            log(f"WARNING {mname}: needs shim functions Wharf lacks ({shim_file}): {', '.join(missing)}")
        if other:
            log(f"WARNING {mname}: unresolved symbols that are neither shims nor CUDA/libc: {', '.join(other)}")
        lost = [s for s in other if s.endswith("_start") or s.endswith("_end")]
        if lost:
            # Seen with runtime constant folding (torch 2.11): kernels that only the folding
            # graph launches are not embedded; see tools/export/README.md.
            raise RuntimeError(f"{mname}: kernels referenced but not embedded in the .so: {', '.join(lost)}"
                               + (" (runtime constant folding is on: export without --constant-folding)"
                                  if constant_folding else ""))
        programs[mname] = ep
        pt2s[mname] = pt2
        if mname == "decode_batch":
            m = {"name": mname, "file": f"methods/{mname}.so", "session_capacity": session_capacity,
                 "inputs": [{"name": "input_ids", "dtype": "int64", "shape": ["N", 1]},
                            {"name": "cache_position", "dtype": "int64", "shape": ["N"]},
                            {"name": "slots", "dtype": "int64", "shape": ["N"]}],
                 "outputs": [{"name": "logits", "dtype": "float32", "shape": ["N", 1, vocab]}],
                 "dims": {"N": dict(dims, pad="repeat")}}
            methods.append(m)
            continue
        T = "T" if mname == "prefill" else 1
        m = {"name": mname, "file": f"methods/{mname}.so",
             "inputs": [{"name": "input_ids", "dtype": "int64", "shape": [1, T]},
                        {"name": "cache_position", "dtype": "int64", "shape": [T]}],
             "outputs": [{"name": "logits", "dtype": "float32", "shape": [1, 1, vocab]}]}
        if dims:
            # "pad": "repeat": a run may be padded along T by repeating its last token and
            # position (each row's mask is at its own cache_position; checked below).
            m["dims"] = {"T": dict(dims, pad="repeat")}
            prefill_min = dims["min"]
        methods.append(m)

    if check_padding and "prefill" in programs and "decode" in programs:
        t0 = time.time()
        try:
            res = check_exported_padding(programs, [{"fqn": f"wharf_cache.{k}", "dtype": WHARF_DTYPE[b.dtype],
                                                     "shape": list(b.shape)}
                                                    for k, b in wrapper.wharf_cache.named_buffers()],
                                         vocab, max_seq_len, prefill_min, dtype, device)
        finally:
            wrapper.reset_cache()
        prefill_pad_check = res
        log(f"prefill padding check ({time.time() - t0:.1f} s, exported programs): {len(res['cases'])} cases, "
            f"max |padded - unpadded| / max |logit| {res['max_rel_diff']:.3g}, bit-equal: {res['bit_equal']}")
        if not res["ok"]:
            raise RuntimeError(f"prefill: padded by repeating its last token and position, it disagrees with the "
                               f"unpadded prefill (the manifest would mark T \"pad\": \"repeat\"): "
                               f"{json.dumps(res)[:2000]}")

    expected_state = {f"wharf_cache.{k}" for k, _ in wrapper.wharf_cache.named_buffers()}
    if state_all != expected_state:
        log(f"WARNING: mutated buffers {sorted(state_all - expected_state)} besides the cache; "
            f"cache buffers not mutated: {sorted(expected_state - state_all)}")
    weight_map = None if config_only else source_weight_map(src)
    for fqn in consts_all:
        if fqn not in values:
            try:
                values[fqn] = wrapper.get_parameter(fqn)
            except AttributeError:
                values[fqn] = wrapper.get_buffer(fqn)
    # A tied weight is one constant; Inductor may name it by either FQN. The checkpoint's other
    # name for the same tensor is recorded so that an update keyed by the checkpoint maps to it.
    aliases = {}
    by_tensor = {}
    for n, p in wrapper.named_parameters(remove_duplicate=False):
        by_tensor.setdefault(id(p), []).append(n)
    for names in by_tensor.values():
        bound = [n for n in names if n in consts_all]
        for n in names:
            if bound and n not in consts_all:
                aliases[n] = bound[0]
    other_names = {}
    for n, b in aliases.items():
        other_names.setdefault(b, []).append(n)
    param_names = {n for n, _ in wrapper.named_parameters(remove_duplicate=False)}
    files, params = write_weights(out, consts_all, weight_map, values, param_names, other_names)
    state, state_tensors = [], {}
    for fqn in sorted(state_all | expected_state, key=_state_order):
        t = wrapper.get_buffer(fqn)
        entry = {"fqn": fqn, "dtype": WHARF_DTYPE[t.dtype], "shape": list(t.shape), "initial": "zeros"}
        if bool(t.count_nonzero()):
            entry["initial"] = {"tensor": fqn}
            state_tensors[fqn] = t.detach().contiguous().cpu()
        state.append(entry)
    cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    manifest = {
        "format": "wharf-model-package",
        "format_version": 1,
        "name": name or os.path.basename(os.path.normpath(out)).removesuffix(".wharf"),
        "dtype": dtype,
        "source": {"model_type": cfg.model_type, "architectures": list(getattr(config, "architectures", None)
                                                                       or [type(model).__name__]),
                   "path": src, "random_weights": bool(config_only), "vocab_size": cfg.vocab_size,
                   "num_hidden_layers": cfg.num_hidden_layers},
        "producer": {"tool": "wharf-export", "wharf": wharf_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "cuda": torch.version.cuda,
                     "device": torch.cuda.get_device_name(), "attention": "wharf_triton_sdpa"
                     if any(sdpa_reports.values()) else "no_sdpa",
                     "hf_attn_implementation": getattr(config, "_attn_implementation", None),
                     "gemm": gemm, "runtime_constant_folding": constant_folding,
                     "compile_seconds": compile_seconds, "sdpa_nodes": {k: len(v) for k, v in sdpa_reports.items()},
                     **({"decode_slots_nodes": slot_nodes} if slot_nodes else {}),
                     "shims_needed": sorted({s for r in shim_report.values() for s in r["needed"]}),
                     "shims_missing": sorted({s for r in shim_report.values() for s in r["missing"]})},
        "max_seq_len": max_seq_len,
        "weights": {"files": files, "parameters": params, **({"aliases": aliases} if aliases else {})},
        "state": state,
        "methods": methods,
    }
    if state_tensors:
        from safetensors.torch import save_file

        save_file(state_tensors, os.path.join(out, "state.safetensors"))
        manifest["state_file"] = "state.safetensors"
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    info = {"wrapper": wrapper, "model": model, "programs": programs, "pt2": pt2s, "attention": sdpa_reports,
            "constant_tables": constant_tables,
            "shims": shim_report, "build_dir": build_dir, "own_build": own_build}
    if prefill_pad_check is not None:
        info["prefill_pad_check"] = prefill_pad_check
    if session_capacity and check_batch:
        t0 = time.time()
        try:
            res = check_exported_batch(programs, state, session_capacity, vocab, max_seq_len, model, dtype, device)
        finally:
            for w in wrappers.values():
                w.reset_cache()
        info["batch_check"] = res
        log(f"decode_batch check ({time.time() - t0:.1f} s, exported programs): {res['rows']} rows, logits max abs "
            f"diff {res['max_abs_diff']:.3g} (relative {res['max_rel_diff']:.3g}) against the per-session decode; "
            f"tokens match transformers: {res.get('tokens_match_eager')}; other slots unchanged: "
            f"{res.get('other_slots_unchanged')}")
        if res.get("logits_ok") is False or res.get("other_slots_unchanged") is False:
            raise RuntimeError(f"decode_batch: the batched method disagrees with the per-session ones: "
                               f"{json.dumps(res)[:2000]}")
    return manifest, info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", help="a transformers model directory, or a config.json with --config-only")
    ap.add_argument("--out", required=True, help="the package directory to write (replaced if it exists)")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bfloat16")
    ap.add_argument("--max-seq-len", type=int, default=1024, help="the KV cache's capacity in positions")
    ap.add_argument("--config-only", "--random-weights", dest="config_only", action="store_true",
                    help="use the config alone with random weights (seeded by --seed)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gemm", choices=["auto", "triton", "extern"], default="auto",
                    help="triton: every GEMM a Triton kernel (max_autotune; slower compile, no GEMM shims); "
                         "extern: aten mm/addmm/bmm through aoti_torch_cuda_*_out shims (cuBLAS); auto: extern "
                         "when Wharf's shims define aoti_torch_cuda_mm_out, else triton")
    ap.add_argument("--constant-folding", action="store_true",
                    help="AOTInductor runtime constant folding (off by default: see tools/export/README.md)")
    ap.add_argument("--name", help="the package's name (default: the directory's)")
    ap.add_argument("--attention", help="transformers' attention implementation (default: the one it picks, "
                                        "SDPA, replaced by Wharf's kernel); 'eager' computes attention with "
                                        "matmul and softmax")
    ap.add_argument("--session-capacity", type=int, default=0, metavar="S",
                    help="also emit decode_batch, one decode step for up to S sessions of a state arena of S "
                         "(docs/model-package.md), checked against decode and transformers (default 0: none)")
    ap.add_argument("--build-dir", help="keep the compiler's outputs (.pt2, generated C++) here")
    ap.add_argument("--shims", help="Wharf's shim sources, src/models/aoti (default: found from this script)")
    args = ap.parse_args(argv)
    if args.session_capacity < 0:
        ap.error(f"--session-capacity must be >= 0, got {args.session_capacity}")
    src = os.path.abspath(args.source) if os.path.exists(args.source) else args.source
    manifest, info = export_package(src, args.out, dtype=args.dtype, max_seq_len=args.max_seq_len, gemm=args.gemm,
                                    config_only=args.config_only, seed=args.seed, name=args.name,
                                    constant_folding=args.constant_folding, build_dir=args.build_dir,
                                    shims_path=args.shims, attention=args.attention,
                                    session_capacity=args.session_capacity)
    if info["own_build"]:
        shutil.rmtree(info["build_dir"], ignore_errors=True)
    p = manifest["producer"]
    print(json.dumps({"package": args.out, "compile_seconds": p["compile_seconds"], "gemm": p["gemm"],
                      "sdpa_nodes": p["sdpa_nodes"], "shims_missing": p["shims_missing"],
                      **({"decode_batch_check": {k: info["batch_check"].get(k) for k in
                                                 ("max_abs_diff", "max_rel_diff", "tokens_match_eager",
                                                  "other_slots_unchanged")}} if "batch_check" in info else {})}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
