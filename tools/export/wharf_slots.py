# SPDX-License-Identifier: Apache-2.0
"""Batched decode attention over a state arena: `wharf::decode_slots`, a Triton kernel that
AOTInductor embeds in a model's `.so`, and the transformers attention hook that calls it.

A batched decode step (the package method `decode_batch`, docs/model-package.md) runs one
token for each of N rows, row r belonging to the session in arena slot `slots[r]` at position
`cache_position[r]`. The KV cache of every layer is the whole arena, [S, 1, Hkv, T, D]
(slot-major, Wharf's StateArena layout). Row r attends over arena[slots[r], 0, :, lo_r ..
lengths[r]-1] where lengths[r] = cache_position[r] + 1 and lo_r = max(0, lengths[r] - window)
for a sliding-window layer (transformers' window: key k is seen from query q when
q - window < k <= q), else 0. Only those positions are read, never the rest of the capacity
and never another row's slot.

The kernel: GQA without repeating K/V (the G query heads of a KV head share each K/V tile
load); the keys of a row are split over a fixed number of programs in proportion to that
row's own length (flash-decoding), and a second kernel combines the partial results; scores,
softmax and the output accumulate in float32 (IEEE products for float32 inputs). Optional
logit softcapping (Gemma 2's `softcap * tanh(s / softcap)`), applied only where the
per-session methods apply it (see wharf_export.py: transformers' SDPA path ignores it).

The hook: an attention implementation "wharf_slots" registered with transformers'
AttentionInterface (and a mask function that builds no mask, so no [N, T] masks exist in
the graph). While a batched wrapper runs, `active(cache)` names the cache whose
`wharf_slots` / `wharf_lengths` / `wharf_softcap` the hook passes to the kernel; the cache's
layers return the arena tensors themselves as keys and values.
"""
import contextlib
import math

import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

from wharf_sdpa import LOG2E, _attn_combine, _pow2_at_least

ATTN_IMPLEMENTATION = "wharf_slots"
# Splits of a row's keys: enough programs to fill an H100 at small N (N * Hkv * SPLITS), few
# enough that the combine step stays small. A row's keys are divided by its own length, so a
# short row's splits are short (or empty), not a fixed slice of the capacity.
MAX_SPLITS = 16


@triton.jit
def _decode_slots_fwd(Q, K, V, Slots, Lengths, Out, PartO, PartML,
                      stride_qn, stride_qh, stride_qd,
                      stride_ks, stride_kh, stride_kt, stride_kd,
                      stride_vs, stride_vh, stride_vt, stride_vd,
                      stride_on, stride_oh, stride_od,
                      Hkv, Hq, n_rows, n_splits,
                      SCALE: tl.constexpr, SOFTCAP: tl.constexpr, WINDOW: tl.constexpr,
                      G: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SPLIT: tl.constexpr, IEEE: tl.constexpr):
    pid = tl.program_id(0)  # row * Hkv + kv head
    pid_s = tl.program_id(1)  # split of the row's keys
    r = pid // Hkv
    hkv = pid % Hkv
    slot = tl.load(Slots + r).to(tl.int64)
    length = tl.load(Lengths + r).to(tl.int64)
    lo = length * 0
    if WINDOW > 0:
        lo = tl.maximum(length - WINDOW, 0)
    per_split = tl.cdiv(tl.cdiv(length - lo, n_splits), BLOCK_N) * BLOCK_N
    start = lo + pid_s * per_split
    end = tl.minimum(start + per_split, length)

    offs_m = tl.arange(0, BLOCK_M)
    h = hkv * G + offs_m
    row_ok = offs_m < G
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < HEAD_DIM
    q = tl.load(Q + r.to(tl.int64) * stride_qn + h[:, None] * stride_qh + offs_d[None, :] * stride_qd,
                mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    k_base = K + slot * stride_ks + hkv * stride_kh
    v_base = V + slot * stride_vs + hkv * stride_vh
    for n0 in range(start, end, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        n_ok = offs_n < end
        k = tl.load(k_base + offs_n[None, :] * stride_kt + offs_d[:, None] * stride_kd,
                    mask=n_ok[None, :] & d_ok[:, None], other=0.0)
        if IEEE:
            s = tl.dot(q, k, input_precision="ieee")
        else:
            s = tl.dot(q, k)
        s = s * SCALE
        if SOFTCAP > 0:
            # softcap * tanh(s / softcap), tanh(x) = 1 - 2 / (exp(2x) + 1): exact limits at +-inf
            s = SOFTCAP * (1.0 - 2.0 / (tl.exp(s * (2.0 / SOFTCAP)) + 1.0))
        s = tl.where(n_ok[None, :], s * 1.4426950408889634, float("-inf"))  # log2 units
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.math.exp2(s - m_safe[:, None])
        alpha = tl.math.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + offs_n[:, None] * stride_vt + offs_d[None, :] * stride_vd,
                    mask=n_ok[:, None] & d_ok[None, :], other=0.0)
        if IEEE:
            pv = tl.dot(p.to(v.dtype), v, input_precision="ieee")
        else:
            pv = tl.dot(p.to(v.dtype), v)
        acc = acc * alpha[:, None] + pv
        m_i = m_new

    if SPLIT:
        row_id = r.to(tl.int64) * Hq + h
        tl.store(PartO + (pid_s * n_rows + row_id[:, None]) * HEAD_DIM + offs_d[None, :], acc,
                 mask=row_ok[:, None] & d_ok[None, :])
        tl.store(PartML + (pid_s * 2) * n_rows + row_id, m_i, mask=row_ok)
        tl.store(PartML + (pid_s * 2 + 1) * n_rows + row_id, l_i, mask=row_ok)
    else:
        out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
        tl.store(Out + r.to(tl.int64) * stride_on + h[:, None] * stride_oh + offs_d[None, :] * stride_od,
                 out.to(Out.dtype.element_ty), mask=row_ok[:, None] & d_ok[None, :])


def _splits(T, block_n):
    return max(1, min(MAX_SPLITS, triton.cdiv(T, block_n)))


@triton_op("wharf::decode_slots", mutates_args={})
def decode_slots(query: torch.Tensor, key_arena: torch.Tensor, value_arena: torch.Tensor, slots: torch.Tensor,
                 lengths: torch.Tensor, scale: float, window: int, softcap: float) -> torch.Tensor:
    """query [N, Hq, 1, D]; key_arena / value_arena [S, 1, Hkv, T, D] (or [S, Hkv, T, D]);
    slots, lengths int64 [N]. Returns [N, Hq, 1, D] in the query's dtype."""
    N, Hq, _, D = query.shape
    if key_arena.dim() == 5:
        ks = (key_arena.stride(0), key_arena.stride(2), key_arena.stride(3), key_arena.stride(4))
        vs = (value_arena.stride(0), value_arena.stride(2), value_arena.stride(3), value_arena.stride(4))
        Hkv, T = key_arena.shape[2], key_arena.shape[3]
    else:
        ks, vs = key_arena.stride(), value_arena.stride()
        Hkv, T = key_arena.shape[1], key_arena.shape[2]
    G = Hq // Hkv
    out = torch.empty((N, Hq, 1, D), device=query.device, dtype=query.dtype)
    BLOCK_D = _pow2_at_least(D, 16)
    BLOCK_M = _pow2_at_least(G, 16)
    BLOCK_N = 64 if BLOCK_D <= 128 else 32
    n_splits = _splits(T, BLOCK_N)
    ieee = query.dtype == torch.float32
    qs, os_ = query.stride(), out.stride()
    n_rows = N * Hq
    consts = dict(SCALE=float(scale), SOFTCAP=float(softcap), WINDOW=int(window), G=G, HEAD_DIM=D, BLOCK_D=BLOCK_D,
                  BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, IEEE=ieee, num_warps=4, num_stages=2)
    if n_splits == 1:
        wrap_triton(_decode_slots_fwd)[(N * Hkv, 1)](
            query, key_arena, value_arena, slots, lengths, out, out, out,
            qs[0], qs[1], qs[3], ks[0], ks[1], ks[2], ks[3], vs[0], vs[1], vs[2], vs[3], os_[0], os_[1], os_[3],
            Hkv, Hq, n_rows, 1, SPLIT=False, **consts)
        return out
    part_o = torch.empty((n_splits, n_rows, D), device=query.device, dtype=torch.float32)
    part_ml = torch.empty((n_splits, 2, n_rows), device=query.device, dtype=torch.float32)
    wrap_triton(_decode_slots_fwd)[(N * Hkv, n_splits)](
        query, key_arena, value_arena, slots, lengths, out, part_o, part_ml,
        qs[0], qs[1], qs[3], ks[0], ks[1], ks[2], ks[3], vs[0], vs[1], vs[2], vs[3], os_[0], os_[1], os_[3],
        Hkv, Hq, n_rows, n_splits, SPLIT=True, **consts)
    # The split-K combine of wharf::sdpa, with one query position per row.
    wrap_triton(_attn_combine)[(n_rows,)](
        part_o, part_ml, out, n_rows, Hq, 1, n_splits, os_[0], os_[1], os_[2], os_[3],
        HEAD_DIM=D, BLOCK_D=BLOCK_D, BLOCK_S=_pow2_at_least(n_splits, 2), num_warps=4)
    return out


def decode_slots_reference(query, key_arena, value_arena, slots, lengths, scale, window=0, softcap=0.0):
    """float64 math reference of wharf::decode_slots (tests and the exporter's checks)."""
    if key_arena.dim() == 5:
        key_arena, value_arena = key_arena[:, 0], value_arena[:, 0]
    N, Hq, _, D = query.shape
    G = Hq // key_arena.shape[1]
    out = torch.empty_like(query)
    for r in range(N):
        n = int(lengths[r])
        lo = max(0, n - window) if window else 0
        k = key_arena[int(slots[r]), :, lo:n].double().repeat_interleave(G, 0)
        v = value_arena[int(slots[r]), :, lo:n].double().repeat_interleave(G, 0)
        s = (query[r].double() @ k.transpose(-1, -2)) * scale
        if softcap:
            s = softcap * torch.tanh(s / softcap)
        out[r] = (torch.softmax(s, -1) @ v).to(query.dtype)
    return out


# --------------------------------------------------------------------------------------------
# The transformers hook
# --------------------------------------------------------------------------------------------

_ACTIVE = []  # the cache of the batched wrapper running now (a stack: export traces nest nothing)


@contextlib.contextmanager
def active(cache):
    _ACTIVE.append(cache)
    try:
        yield
    finally:
        _ACTIVE.pop()


def attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, sliding_window=None,
              softcap=None, **kwargs):
    """transformers' attention-function signature: query [N, Hq, 1, D]; key / value what the
    cache layers' update returned (the arenas). Returns ([N, 1, Hq, D], None)."""
    if not _ACTIVE:
        raise RuntimeError(f"attention implementation {ATTN_IMPLEMENTATION!r} runs only inside a batched wrapper")
    cache = _ACTIVE[-1]
    if query.shape[2] != 1:
        raise RuntimeError(f"{ATTN_IMPLEMENTATION}: one query position per row, got {tuple(query.shape)}")
    scale = float(scaling) if scaling is not None else 1.0 / math.sqrt(query.shape[-1])
    window = int(sliding_window) if sliding_window else 0
    cap = float(softcap) if (softcap and cache.wharf_softcap) else 0.0
    out = torch.ops.wharf.decode_slots(query, key, value, cache.wharf_slots, cache.wharf_lengths, scale, window, cap)
    return out.transpose(1, 2).contiguous(), None


def no_mask(*args, **kwargs):
    """The mask function of "wharf_slots": the kernel bounds each row by its length and window."""
    return None


_REGISTERED = False


def register():
    """Registers "wharf_slots" with transformers' attention and mask interfaces (once)."""
    global _REGISTERED
    if _REGISTERED:
        return
    from transformers import AttentionInterface

    AttentionInterface.register(ATTN_IMPLEMENTATION, attention)
    try:
        from transformers.masking_utils import AttentionMaskInterface

        AttentionMaskInterface.register(ATTN_IMPLEMENTATION, no_mask)
    except ImportError:  # a release without mask interfaces builds masks from the attention name alone
        pass
    _REGISTERED = True


@contextlib.contextmanager
def attn_implementation(model, name):
    """Sets config._attn_implementation of every config object `model`'s modules hold, for the
    duration (the modeling code looks the attention function up by that name at each call)."""
    configs = {}
    for m in model.modules():
        c = getattr(m, "config", None)
        if c is not None and hasattr(c, "_attn_implementation"):
            configs[id(c)] = c
    old = [(c, c._attn_implementation) for c in configs.values()]
    try:
        for c, _ in old:
            c._attn_implementation = name
        yield
    finally:
        for c, v in old:
            c._attn_implementation = v
