# SPDX-License-Identifier: Apache-2.0
"""Scaled dot-product attention as a Triton kernel that AOTInductor embeds in a model's `.so`.

Wharf runs compiled models without libtorch, so an exported graph may call only the
`aoti_torch_*` shims Wharf implements. AOTInductor lowers `aten.scaled_dot_product_attention`
to `aoti_torch_cuda__scaled_dot_product_{flash,efficient}_attention` (an aten fallback, i.e.
a shim backed by PyTorch's own kernels). Instead, `replace_sdpa` rewrites the exported graph
so that every SDPA node calls `wharf::sdpa`, a `torch.library.triton_op`: Inductor traces its
Python body, embeds the Triton kernels' binaries and launches them from the generated
wrapper (the approach of ExecuTorch's CUDA backend; the kernel here is Wharf's own).

What the kernel supports (everything transformers' SDPA path passes):
- q [B, Hq, Lq, D], k/v [B, Hkv, Lk, D] with Hq a multiple of Hkv (GQA natively: the
  query heads of a group share one K/V tile load; `replace_sdpa` also strips transformers'
  `repeat_kv` expansion so the cache is read once per KV head, not once per query head);
- a boolean mask (True = attend) or an additive float mask, of any shape broadcastable to
  [B, Hq, Lq, Lk]; is_causal (top-left aligned, as PyTorch defines it); an explicit scale;
- any head dimension (padded to a power of two >= 16), float32 (IEEE products, no TF32),
  bfloat16 and float16 (fp32 accumulation);
- tiles whose mask is entirely False are skipped without reading K or V, so a decode step
  over a static cache of 4096 positions costs what the filled positions cost;
- one-token decode splits the keys over many programs (flash-decoding) and combines the
  partial results in a second kernel, so a few KV heads still fill the GPU.
Sliding windows (Mistral, Gemma 2/3) arrive as masks. Gemma 2's logit softcapping is not an
SDPA feature: transformers' SDPA path does not apply it (its eager path does), so the
exported model computes what transformers' default (SDPA) model computes.
"""
import math
from typing import Optional

import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

LOG2E = 1.4426950408889634


@triton.jit
def _tile(q, m_i, l_i, acc, k_base, v_base, offs_n, n_ok, offs_d, d_ok, bias,
          stride_kn, stride_kd, stride_vn, stride_vd, QK_SCALE: tl.constexpr, IEEE: tl.constexpr):
    """One K/V tile of the online softmax (scores in log2 units)."""
    k = tl.load(k_base + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kd,
                mask=n_ok[None, :] & d_ok[:, None], other=0.0)
    if IEEE:
        s = tl.dot(q, k, input_precision="ieee")
    else:
        s = tl.dot(q, k)
    s = s * QK_SCALE + bias
    m_new = tl.maximum(m_i, tl.max(s, 1))
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
    p = tl.math.exp2(s - m_safe[:, None])
    alpha = tl.math.exp2(m_i - m_safe)
    l_i = l_i * alpha + tl.sum(p, 1)
    v = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd,
                mask=n_ok[:, None] & d_ok[None, :], other=0.0)
    if IEEE:
        pv = tl.dot(p.to(v.dtype), v, input_precision="ieee")
    else:
        pv = tl.dot(p.to(v.dtype), v)
    acc = acc * alpha[:, None] + pv
    return m_new, l_i, acc


@triton.jit
def _attn_fwd(Q, K, V, M, Out, PartO, PartML,
              stride_qb, stride_qh, stride_qm, stride_qd,
              stride_kb, stride_kh, stride_kn, stride_kd,
              stride_vb, stride_vh, stride_vn, stride_vd,
              stride_mb, stride_mh, stride_mm, stride_mn,
              stride_ob, stride_oh, stride_om, stride_od,
              Hkv, Hq, Lq, Lk, keys_per_split, n_rows,
              QK_SCALE: tl.constexpr, G: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              HAS_MASK: tl.constexpr, MASK_BOOL: tl.constexpr, IS_CAUSAL: tl.constexpr,
              SPLIT: tl.constexpr, IEEE: tl.constexpr, SCAN: tl.constexpr):
    # Rows of a tile are (query position, head within the KV group) pairs, packed so that
    # the G query heads sharing a KV head use one load of each K/V tile.
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    pid_s = tl.program_id(2)
    b = pid_bh // Hkv
    hkv = pid_bh % Hkv
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    seq = rows // G
    h = hkv * G + rows % G
    row_ok = seq < Lq
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < HEAD_DIM

    q = tl.load(Q + b * stride_qb + h[:, None] * stride_qh + seq[:, None] * stride_qm + offs_d[None, :] * stride_qd,
                mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)

    lo = pid_s * keys_per_split
    hi = tl.minimum(lo + keys_per_split, Lk)
    if IS_CAUSAL:
        last_seq = (pid_m * BLOCK_M + BLOCK_M - 1) // G
        hi = tl.minimum(hi, last_seq + 1)
    m_rows = M + b * stride_mb + h[:, None] * stride_mh + seq[:, None] * stride_mm
    if SCAN:
        # A boolean mask bounds the keys this tile attends to (the filled part of a static
        # cache, a causal or sliding window): find the bounds from the mask alone (bytes),
        # then run the K/V loop over them without branches, so that its loads pipeline.
        lo_t = hi
        hi_t = lo
        for start in range(lo, hi, BLOCK_N):
            offs_n = start + tl.arange(0, BLOCK_N)
            keep = tl.load(m_rows + offs_n[None, :] * stride_mn, mask=row_ok[:, None] & (offs_n < hi)[None, :],
                           other=0) != 0
            lo_t = tl.minimum(lo_t, tl.min(tl.min(tl.where(keep, offs_n[None, :], hi), 1), 0))
            hi_t = tl.maximum(hi_t, tl.max(tl.max(tl.where(keep, offs_n[None, :] + 1, lo), 1), 0))
        lo = lo + ((lo_t - lo) // BLOCK_N) * BLOCK_N
        hi = hi_t
    k_base = K + b * stride_kb + hkv * stride_kh
    v_base = V + b * stride_vb + hkv * stride_vh
    for start in range(lo, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        n_ok = offs_n < hi
        valid = row_ok[:, None] & n_ok[None, :]
        bias = tl.where(valid, 0.0, float("-inf"))
        if IS_CAUSAL:
            bias = tl.where(offs_n[None, :] <= seq[:, None], bias, float("-inf"))
        if HAS_MASK:
            m_ptrs = m_rows + offs_n[None, :] * stride_mn
            if MASK_BOOL:
                keep = tl.load(m_ptrs, mask=valid, other=0)
                bias = tl.where(keep != 0, bias, float("-inf"))
            else:
                add = tl.load(m_ptrs, mask=valid, other=0.0).to(tl.float32)
                bias = bias + add * 1.4426950408889634  # the scores are in log2 units
        if HAS_MASK and not SCAN:
            # Skip tiles nobody attends to: neither K nor V is read for them.
            if tl.max(tl.max(bias, 1), 0) > float("-inf"):
                m_i, l_i, acc = _tile(q, m_i, l_i, acc, k_base, v_base, offs_n, n_ok, offs_d, d_ok, bias,
                                      stride_kn, stride_kd, stride_vn, stride_vd, QK_SCALE, IEEE)
        else:
            m_i, l_i, acc = _tile(q, m_i, l_i, acc, k_base, v_base, offs_n, n_ok, offs_d, d_ok, bias,
                                  stride_kn, stride_kd, stride_vn, stride_vd, QK_SCALE, IEEE)

    if SPLIT:
        # Partial results of this key range: unnormalised output, running max and sum.
        row_id = (b * Hq + h) * Lq + seq
        tl.store(PartO + (pid_s * n_rows + row_id[:, None]) * HEAD_DIM + offs_d[None, :], acc,
                 mask=row_ok[:, None] & d_ok[None, :])
        tl.store(PartML + (pid_s * 2) * n_rows + row_id, m_i, mask=row_ok)
        tl.store(PartML + (pid_s * 2 + 1) * n_rows + row_id, l_i, mask=row_ok)
    else:
        out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
        tl.store(Out + b * stride_ob + h[:, None] * stride_oh + seq[:, None] * stride_om + offs_d[None, :] * stride_od,
                 out.to(Out.dtype.element_ty), mask=row_ok[:, None] & d_ok[None, :])


@triton.jit
def _attn_combine(PartO, PartML, Out, n_rows, Hq, Lq, n_splits,
                  stride_ob, stride_oh, stride_om, stride_od,
                  HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_S: tl.constexpr):
    row = tl.program_id(0)
    offs_s = tl.arange(0, BLOCK_S)
    s_ok = offs_s < n_splits
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < HEAD_DIM
    m = tl.load(PartML + (offs_s * 2) * n_rows + row, mask=s_ok, other=float("-inf"))
    l = tl.load(PartML + (offs_s * 2 + 1) * n_rows + row, mask=s_ok, other=0.0)
    m_max = tl.max(m, 0)
    m_safe = tl.where(m_max == float("-inf"), 0.0, m_max)
    w = tl.math.exp2(m - m_safe)
    total = tl.sum(l * w, 0)
    o = tl.load(PartO + (offs_s[:, None] * n_rows + row) * HEAD_DIM + offs_d[None, :],
                mask=s_ok[:, None] & d_ok[None, :], other=0.0)
    out = tl.sum(o * w[:, None], 0) / tl.where(total == 0.0, 1.0, total)
    b = row // (Hq * Lq)
    h = (row // Lq) % Hq
    seq = row % Lq
    tl.store(Out + b * stride_ob + h * stride_oh + seq * stride_om + offs_d * stride_od,
             out.to(Out.dtype.element_ty), mask=d_ok)


# Tunables, module-level so that bench_sdpa.py can compare: bound the key loop by scanning a
# boolean mask (True) or test each tile (False); the prefill tile (BLOCK_M, BLOCK_N, warps,
# stages), None for the built-in choice.
SCAN_BOOL_MASKS = True
PREFILL_CONFIG = None


def _pow2_at_least(x, lo):
    p = lo
    while p < x:
        p *= 2
    return p


def _static(x):
    return isinstance(x, int)


@triton_op("wharf::sdpa", mutates_args={})
def sdpa(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: Optional[torch.Tensor] = None,
         is_causal: bool = False, scale: Optional[float] = None) -> torch.Tensor:
    B, Hq, Lq, D = query.shape
    Hkv, Lk = key.shape[1], key.shape[2]
    G = Hq // Hkv
    out = torch.empty((B, Hq, Lq, D), device=query.device, dtype=query.dtype)
    sm_scale = scale if scale is not None else 1.0 / math.sqrt(D)
    BLOCK_D = _pow2_at_least(D, 16)
    ieee = query.dtype == torch.float32
    has_mask = attn_mask is not None
    if has_mask:
        mask = attn_mask
        while mask.dim() < 4:
            mask = mask.unsqueeze(0)
        mask = mask.expand(B, Hq, Lq, Lk)
        ms = [0 if (_static(mask.shape[i]) and mask.shape[i] == 1) else mask.stride(i) for i in range(4)]
        mask_bool = mask.dtype == torch.bool
    else:
        mask = query  # not read: HAS_MASK is False
        ms = [0, 0, 0, 0]
        mask_bool = False
    qs, ks, vs, os_ = query.stride(), key.stride(), value.stride(), out.stride()
    scan = has_mask and mask_bool and SCAN_BOOL_MASKS

    # Flash-decoding: a query of a few rows (one-token decode) over many keys gets the keys
    # split over programs. Decided on static shapes only (prefill's length is symbolic).
    packed_rows = Lq * G if _static(Lq) else None
    split = packed_rows is not None and packed_rows <= 64 and _static(Lk) and Lk >= 256
    if split:
        BLOCK_M = 16 if packed_rows <= 16 else (32 if packed_rows <= 32 else 64)
        BLOCK_N = 64 if BLOCK_D <= 128 else 32
        m_blocks = triton.cdiv(packed_rows, BLOCK_M)
        want = max(1, triton.cdiv(264, B * Hkv * m_blocks))  # about two programs per SM on an H100
        # bounded so that the combine kernel's [splits, head_dim] tile stays in registers
        n_splits = min(want, triton.cdiv(Lk, BLOCK_N), 64, 8192 // BLOCK_D)
        keys_per_split = triton.cdiv(triton.cdiv(Lk, n_splits), BLOCK_N) * BLOCK_N
        n_splits = triton.cdiv(Lk, keys_per_split)
        n_rows = B * Hq * Lq
        part_o = torch.empty((n_splits, n_rows, D), device=query.device, dtype=torch.float32)
        part_ml = torch.empty((n_splits, 2, n_rows), device=query.device, dtype=torch.float32)
        wrap_triton(_attn_fwd)[(m_blocks, B * Hkv, n_splits)](
            query, key, value, mask, out, part_o, part_ml,
            qs[0], qs[1], qs[2], qs[3], ks[0], ks[1], ks[2], ks[3], vs[0], vs[1], vs[2], vs[3],
            ms[0], ms[1], ms[2], ms[3], os_[0], os_[1], os_[2], os_[3],
            Hkv, Hq, Lq, Lk, keys_per_split, n_rows,
            QK_SCALE=float(sm_scale * LOG2E), G=G, HEAD_DIM=D, BLOCK_D=BLOCK_D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
            HAS_MASK=has_mask, MASK_BOOL=mask_bool, IS_CAUSAL=is_causal, SPLIT=True, IEEE=ieee,
            SCAN=scan, num_warps=4, num_stages=2)
        wrap_triton(_attn_combine)[(n_rows,)](
            part_o, part_ml, out, n_rows, Hq, Lq, n_splits, os_[0], os_[1], os_[2], os_[3],
            HEAD_DIM=D, BLOCK_D=BLOCK_D, BLOCK_S=_pow2_at_least(n_splits, 2), num_warps=4)
        return out

    # Tiles measured on an H200 (bench_sdpa.py --sweep, prefill of 512 over a cache of 1024):
    # head_dim 64 is fastest with 64x64 tiles testing each tile's mask, head_dim 128 with
    # 128x128 tiles over the mask's bounds. float32 (IEEE products) and head_dim 256 need
    # small tiles to fit registers and shared memory.
    num_stages = 2
    if ieee or BLOCK_D > 128:
        BLOCK_M, BLOCK_N, num_warps = 32, 32, 4
    elif BLOCK_D > 64:
        BLOCK_M, BLOCK_N, num_warps = 128, 128, 8
    else:
        BLOCK_M, BLOCK_N, num_warps = 64, 64, 4
        scan = False
    if _static(Lq) and Lq * G <= 16:
        BLOCK_M, BLOCK_N, num_warps = 16, 64 if BLOCK_D <= 128 else 32, 4
    if PREFILL_CONFIG is not None and BLOCK_M != 16:
        BLOCK_M, BLOCK_N, num_warps, num_stages = PREFILL_CONFIG
    grid = (triton.cdiv(Lq * G, BLOCK_M), B * Hkv, 1)
    wrap_triton(_attn_fwd)[grid](
        query, key, value, mask, out, out, out,
        qs[0], qs[1], qs[2], qs[3], ks[0], ks[1], ks[2], ks[3], vs[0], vs[1], vs[2], vs[3],
        ms[0], ms[1], ms[2], ms[3], os_[0], os_[1], os_[2], os_[3],
        Hkv, Hq, Lq, Lk, Lk, 0,
        QK_SCALE=float(sm_scale * LOG2E), G=G, HEAD_DIM=D, BLOCK_D=BLOCK_D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
        HAS_MASK=has_mask, MASK_BOOL=mask_bool, IS_CAUSAL=is_causal, SPLIT=False, IEEE=ieee,
        SCAN=scan, num_warps=num_warps, num_stages=num_stages)
    return out


# --------------------------------------------------------------------------------------------
# The graph rewrite
# --------------------------------------------------------------------------------------------

_ALIAS_OPS = None


def _alias_ops():
    global _ALIAS_OPS
    if _ALIAS_OPS is None:
        aten = torch.ops.aten
        names = ["view", "_unsafe_view", "reshape", "clone", "alias", "contiguous", "expand", "unsqueeze", "slice"]
        ops = set()
        for n in names:
            packet = getattr(aten, n, None)
            if packet is None:
                continue
            for ov in packet.overloads():
                ops.add(getattr(packet, ov))
        _ALIAS_OPS = ops
    return _ALIAS_OPS


def _shape(node):
    v = node.meta.get("val") if hasattr(node, "meta") else None
    return tuple(v.shape) if v is not None and hasattr(v, "shape") else None


def _strip_repeat_kv(node):
    """transformers' repeat_kv: x[:, :, None].expand(B, Hkv, G, L, D).reshape(B, Hkv*G, L, D).
    Returns the [B, Hkv, L, D] source if `node` is that expansion, else None."""
    out_shape = _shape(node)
    if out_shape is None or len(out_shape) != 4:
        return None
    n = node
    seen_expand = False
    for _ in range(16):
        if not hasattr(n, "op"):
            return None
        shp = _shape(n)
        if seen_expand and shp is not None and len(shp) == 4:
            # the first 4-d tensor below the expansion must be [B, Hkv, L, D]
            ok = (shp[0] == out_shape[0] and shp[2] == out_shape[2] and shp[3] == out_shape[3]
                  and shp[1] != out_shape[1] and out_shape[1] % shp[1] == 0)
            return n if ok else None
        if n.op != "call_function" or n.target not in _alias_ops():
            return None
        if n.target.overloadpacket is torch.ops.aten.expand:
            src_shape = _shape(n.args[0])
            if shp is None or src_shape is None or len(shp) != 5 or len(src_shape) != 5 or src_shape[2] != 1:
                return None
            seen_expand = True
        n = n.args[0]
    return None


def replace_sdpa(gm):
    """Rewrites every aten.scaled_dot_product_attention node of `gm` (an exported graph module)
    into wharf::sdpa. Returns a list of what each node received (for the manifest and logs).
    Raises if a variant the kernel does not implement (dropout, other SDPA ops) is present."""
    aten = torch.ops.aten
    report = []
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if node.target is not aten.scaled_dot_product_attention.default:
            if "scaled_dot_product" in str(node.target):
                raise RuntimeError(f"unsupported attention op in the exported graph: {node.target}")
            continue
        names = ["query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"]
        a = dict(zip(names, node.args))
        a.update(node.kwargs)
        if a.get("dropout_p", 0.0) not in (0, 0.0):
            raise RuntimeError(f"{node.name}: dropout_p={a['dropout_p']} (export in eval mode)")
        q, k, v = a["query"], a["key"], a["value"]
        qs = _shape(q)
        info = {"node": node.name, "q": [str(s) for s in qs] if qs else None,
                "enable_gqa": bool(a.get("enable_gqa", False)), "is_causal": bool(a.get("is_causal", False)),
                "scale": a.get("scale")}
        mask = a.get("attn_mask")
        if mask is not None:
            mv = mask.meta.get("val")
            info["mask"] = {"dtype": str(mv.dtype).replace("torch.", ""), "shape": [str(s) for s in mv.shape]}
        k_src = _strip_repeat_kv(k)
        v_src = _strip_repeat_kv(v)
        if k_src is not None and v_src is not None and _shape(k_src)[1] == _shape(v_src)[1]:
            k, v = k_src, v_src
            info["repeat_kv_stripped"] = True
        kv_shape = _shape(k)
        info["kv"] = [str(s) for s in kv_shape] if kv_shape else None
        with graph.inserting_before(node):
            new = graph.call_function(torch.ops.wharf.sdpa.default,
                                      args=(q, k, v, mask, bool(a.get("is_causal", False)), a.get("scale")))
            new.meta = dict(node.meta)
        node.replace_all_uses_with(new)
        graph.erase_node(node)
        report.append(info)
    graph.eliminate_dead_code()
    graph.lint()
    gm.recompile()
    return report


def sdpa_reference(q, k, v, attn_mask=None, is_causal=False, scale=None):
    """float64 math reference with GQA by repetition (for tests and the benchmark)."""
    g = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(g, dim=1).double()
    v = v.repeat_interleave(g, dim=1).double()
    s = (q.double() @ k.transpose(-1, -2)) * (scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    if is_causal:
        lq, lk = q.shape[2], k.shape[2]
        s = s.masked_fill(~torch.ones(lq, lk, dtype=torch.bool, device=q.device).tril(), float("-inf"))
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else s + attn_mask.double()
    p = torch.softmax(s, -1).nan_to_num(0.0)
    return (p @ v).to(q.dtype)
