"""Numpy forward pass of the shared LM with a pluggable KV-cache format.

The model is defined by the manifest's ``forward`` field (byte-level, RoPE
with interleaved pairs, RMSNorm, SwiGLU, tied embedding, GQA). The manifest's
reference bits/byte were computed under torch autocast bf16; ``autocast=True``
(the default) emulates that: every linear layer and both attention products
take bf16-rounded inputs, accumulate in float32 and round their output to
bf16; RMSNorm, RoPE, softmax and the residual stream stay float32.

The KV cache is simulated the way a prefill with a quantised cache behaves:
every key and value (the current token's included) is stored through the
cache format and read back before attention; a format with the study option
``self`` (formats.KVFormat.exact_self) gives each query its own token's key
and value unquantised instead. ``policy(layer, kv_head)`` names
the format of each (layer, KV head); queries and outputs go through that
format's query/output transforms (rotation, FP8 rounding, undoing a V
rotation).
"""

from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from .data import LM, bf16_round, check_windows

try:  # Fast single-threaded float32 GEMM from the native module, if built.
    from .. import _uq as _native  # type: ignore
    _gemm = getattr(_native, "matmul", None)
except Exception:  # pragma: no cover - pure numpy fallback
    _native = None
    _gemm = None


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32 a @ b (2-D or batched 3-D)."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    b = np.ascontiguousarray(b, dtype=np.float32)
    if _gemm is not None:
        return _gemm(a, b)
    return a @ b


def _rmsnorm(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    ms = np.mean(x.astype(np.float32) ** 2, axis=-1, keepdims=True)
    return (x / np.sqrt(ms + np.float32(1.1920929e-07))).astype(np.float32) * w


def rope_tables(T: int, hd: int, theta: float):
    i = np.arange(hd // 2, dtype=np.float64)
    inv = theta ** (-2.0 * i / hd)
    ang = np.arange(T, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def apply_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """x [T, H, hd]; pairs (2i, 2i+1) rotate by angle t * theta^(-2i/hd)."""
    a = x[..., 0::2]
    b = x[..., 1::2]
    c = cos[:, None, :]
    s = sin[:, None, :]
    out = np.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


class Model:
    """The shared LM. ``policy`` maps (layer, kv_head) to a KV format object
    (see ``formats.py``); ``None`` means an unquantised (BF16) cache."""

    def __init__(self, lm: LM, autocast: bool = True):
        self.lm = lm
        self.cfg = lm.cfg
        self.autocast = autocast
        w = lm.weights
        L = self.cfg["layers"]
        self.emb = w["emb.weight"]
        self.embT = np.ascontiguousarray(self.emb.T)
        self.nf = w["nf.weight"]
        self.blocks = []
        for l in range(L):
            p = f"blocks.{l}."
            self.blocks.append({
                "n1": w[p + "n1.weight"], "n2": w[p + "n2.weight"],
                # Fused QKV and W1|W3 (transposed: [in, out]).
                "wqkv": np.ascontiguousarray(np.concatenate(
                    [w[p + "wq.weight"], w[p + "wk.weight"], w[p + "wv.weight"]]).T),
                "wo": np.ascontiguousarray(w[p + "wo.weight"].T),
                "w13": np.ascontiguousarray(np.concatenate(
                    [w[p + "w1.weight"], w[p + "w3.weight"]]).T),
                "w2": np.ascontiguousarray(w[p + "w2.weight"].T),
            })
        self._rope = {}

    # -- precision helpers -------------------------------------------------
    def _r(self, x):
        return bf16_round(x) if self.autocast else x.astype(np.float32, copy=False)

    def _linear(self, x, wT):
        return self._r(matmul(self._r(x), wT))

    def _rope_for(self, T):
        if T not in self._rope:
            self._rope[T] = rope_tables(T, self.cfg["hd"], self.cfg["rope_theta"])
        return self._rope[T]

    # -- pieces --------------------------------------------------------------
    def qkv(self, x: np.ndarray, layer: int):
        """Post-RoPE q [T,hq,hd], k [T,hk,hd], v [T,hk,hd] of one block."""
        cfg = self.cfg
        T = x.shape[0]
        hq, hk, hd = cfg["hq"], cfg["hk"], cfg["hd"]
        blk = self.blocks[layer]
        h = _rmsnorm(x, blk["n1"])
        qkv = self._linear(h, blk["wqkv"])
        q = qkv[:, :hq * hd].reshape(T, hq, hd)
        k = qkv[:, hq * hd:(hq + hk) * hd].reshape(T, hk, hd)
        v = qkv[:, (hq + hk) * hd:].reshape(T, hk, hd)
        cos, sin = self._rope_for(T)
        q = self._r(apply_rope(q, cos, sin))
        k = self._r(apply_rope(k, cos, sin))
        return q, k, np.ascontiguousarray(v)

    def attention(self, q, k, v, layer: int, policy=None):
        """Causal GQA attention with the KV cache in the policy's formats.
        Returns [T, hq*hd]."""
        cfg = self.cfg
        T = q.shape[0]
        hq, hk, hd = cfg["hq"], cfg["hk"], cfg["hd"]
        g = hq // hk
        scale = np.float32(1.0 / math.sqrt(hd))
        mask = np.triu(np.ones((T, T), dtype=bool), 1)
        out = np.empty((T, hq, hd), dtype=np.float32)
        for j in range(hk):
            fmt = policy(layer, j) if policy is not None else None
            kj, vj = k[:, j, :], v[:, j, :]
            if fmt is not None:
                kj = fmt.prep_k(kj, layer, j)
                vj = fmt.prep_v(vj, layer, j)
            kj = self._r(kj)
            vj = self._r(vj)
            qs = []
            for h in range(j * g, (j + 1) * g):
                qh = q[:, h, :]
                if fmt is not None:
                    qh = fmt.prep_q(qh, layer, j)
                qs.append(self._r(qh))
            qg = np.stack(qs)                                   # [g, T, hd]
            s = self._r(matmul(qg, np.broadcast_to(kj.T, (g, hd, T)))) * scale
            diag = np.arange(T)
            if fmt is not None and fmt.exact_self_k:
                # Study option `self`: the query's own key unquantised.
                ke = self._r(fmt.exact_k(k[:, j, :], layer, j))
                s[:, diag, diag] = self._r(np.einsum("gtd,td->gt", qg, ke)) * scale
            s[:, mask] = -np.inf
            s = s - s.max(axis=-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(axis=-1, keepdims=True)
            p = self._r(s)
            pv = matmul(p, np.broadcast_to(vj, (g, T, hd)))
            if fmt is not None and fmt.exact_self_v:
                # ... and its own value: p_tt (v_t - vq_t) added.
                ve = self._r(fmt.exact_v(v[:, j, :], layer, j))
                pv = pv + p[:, diag, diag][:, :, None] * (ve - vj)[None]
            o = self._r(pv)
            if fmt is not None:
                o = fmt.post_out(o, layer, j, v[:, j, :])
            out[:, j * g:(j + 1) * g, :] = np.transpose(o, (1, 0, 2))
        return out.reshape(T, hq * hd)

    def block(self, x, layer: int, policy=None, capture: Optional[dict] = None):
        q, k, v = self.qkv(x, layer)
        if capture is not None:
            capture[layer] = {"q": q, "k": k, "v": v}
        a = self.attention(q, k, v, layer, policy)
        blk = self.blocks[layer]
        x = x + self._linear(a, blk["wo"])
        h = _rmsnorm(x, blk["n2"])
        h13 = self._linear(h, blk["w13"])
        F = h13.shape[1] // 2
        a1, a3 = h13[:, :F], h13[:, F:]
        act = self._r(self._r(a1 / (1.0 + np.exp(-a1))) * a3)
        return x + self._linear(act, blk["w2"])

    def embed(self, tokens: np.ndarray) -> np.ndarray:
        return self.emb[np.asarray(tokens, dtype=np.int64)].astype(np.float32)

    def head_loss(self, x, targets) -> np.ndarray:
        """Per-position cross entropy (nats)."""
        h = _rmsnorm(x, self.nf)
        logits = self._linear(h, self.embT).astype(np.float64)
        m = logits.max(axis=-1, keepdims=True)
        lse = m[:, 0] + np.log(np.exp(logits - m).sum(axis=-1))
        return lse - logits[np.arange(len(targets)), targets]

    def forward(self, tokens, targets, policy=None, start_layer: int = 0,
                x0: Optional[np.ndarray] = None, residuals: Optional[list] = None,
                capture: Optional[dict] = None) -> np.ndarray:
        """Per-position cross entropy (nats). ``x0`` is the residual stream
        entering ``start_layer`` (to reuse an unquantised prefix);
        ``residuals`` (a list) receives the stream entering each layer."""
        x = self.embed(tokens) if x0 is None else x0
        for l in range(start_layer, self.cfg["layers"]):
            if residuals is not None:
                residuals.append(x)
            x = self.block(x, l, policy, capture)
        return self.head_loss(x, targets)


def window_tokens(lm: LM, start: int, length: int = 1024):
    buf = np.frombuffer(lm.val_bytes, dtype=np.uint8)
    return buf[start:start + length].astype(np.int64), buf[start + 1:start + length + 1].astype(np.int64)


# -- parallel windows ----------------------------------------------------------
_JOB = None
#: Processes for window-parallel loops (bits_per_byte, the sensitivities);
#: set by ``uq-quality ... --jobs N``.
WORKERS = 1


def _run_job(item):
    return _JOB(item)


def map_windows(fn, items: Sequence, workers: Optional[int] = None) -> list:
    """[fn(x) for x in items], in ``workers`` forked processes when > 1
    (the children inherit the model and caches; results come back in
    order). Deterministic: every item is computed the same way either way."""
    global _JOB
    workers = WORKERS if workers is None else workers
    items = list(items)
    if workers <= 1 or len(items) < 2:
        return [fn(x) for x in items]
    import multiprocessing as mp

    _JOB = fn
    try:
        with mp.get_context("fork").Pool(min(workers, len(items))) as pool:
            return pool.map(_run_job, items, chunksize=1)
    finally:
        _JOB = None


def bits_per_byte(model: Model, policy=None, windows: Optional[Sequence[int]] = None,
                  length: int = 1024, prefix_cache: Optional[dict] = None,
                  first_quant_layer: int = 0, per_window: Optional[list] = None) -> float:
    """Mean over windows of the mean cross entropy / ln 2 (the manifest's
    definition). ``prefix_cache`` (a dict kept by the caller) stores the
    residual stream entering each layer of the unquantised model, so that a
    policy quantising nothing before ``first_quant_layer`` starts there.
    ``per_window`` (a list) receives each window's bits/byte. Windows run in
    ``WORKERS`` processes."""
    if windows is None:
        windows = model.lm.eval_windows
    windows = list(windows)
    # Every window is checked before the first forward pass.
    check_windows(windows, len(model.lm.val_bytes), length,
                  model.lm.text_path or "val.txt")
    if prefix_cache is not None:
        missing = [s for s in windows if (s, length) not in prefix_cache]

        def prefix(s):
            tok, tgt = window_tokens(model.lm, s, length)
            res: list = []
            ce = model.forward(tok, tgt, None, residuals=res)
            return res, ce
        for s, r in zip(missing, map_windows(prefix, missing)):
            prefix_cache[(s, length)] = r

    def one(s):
        tok, tgt = window_tokens(model.lm, s, length)
        x0 = None
        start = 0
        if prefix_cache is not None:
            res, ce0 = prefix_cache[(s, length)]
            if first_quant_layer >= model.cfg["layers"]:
                return float(ce0.mean() / math.log(2))
            start = first_quant_layer
            x0 = res[start]
        ce = model.forward(tok, tgt, policy, start_layer=start, x0=x0)
        return float(ce.mean() / math.log(2))

    if prefix_cache is not None and first_quant_layer >= model.cfg["layers"]:
        vals = [one(s) for s in windows]
    else:
        vals = map_windows(one, windows)
    if per_window is not None:
        per_window.extend(float(v) for v in vals)
    return float(np.mean(vals))
