"""KV-cache formats for the accuracy study.

A format transforms, per (layer, KV head), the keys, values and queries the
attention sees:

* ``prep_k(k)``  -> keys as read back from the cache, in the domain the
  (transformed) queries live in (rotated for rotated formats);
* ``prep_v(v)``  -> values as read back (rotated if the format rotates V);
* ``prep_q(q)``  -> the query as the kernel uses it (rotated, FP8-rounded...);
* ``post_out(o)`` -> undo a V rotation on the attention output.

``k``/``v``/``q`` are float32 [T, D] rows of one head. Every UltraQuant path
goes through the reference library (``backend.py``). Spec strings (CLI and
policy JSON) are parsed by :func:`parse_format`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple, Union

import numpy as np

from . import backend as B

PerHead = Union[float, Dict[Tuple[int, int], float]]


def _per_head(p: PerHead, layer: int, head: int) -> float:
    if isinstance(p, dict):
        return float(p.get((layer, head), p.get("default", 0.156)))
    return float(p)


class KVFormat:
    name = "bf16"
    bits = 16.0             # bits per cached element (K and V), scales included
    rotate_k = False
    rotate_v = False

    def prep_k(self, k, layer=0, head=0):
        return k

    def prep_v(self, v, layer=0, head=0):
        return v

    def prep_q(self, q, layer=0, head=0):
        return q

    def post_out(self, o, layer=0, head=0):
        return o

    # Reconstructions in the original (unrotated) domain, for SQNR/MSE.
    def recon_k(self, k, layer=0, head=0):
        r = self.prep_k(k, layer, head)
        return B.hadamard(r) if self.rotate_k else r

    def recon_v(self, v, layer=0, head=0):
        r = self.prep_v(v, layer, head)
        return B.hadamard(r) if self.rotate_v else r

    def __repr__(self):
        return self.name


class BF16(KVFormat):
    pass


class FP8E4M3(KVFormat):
    """K and V rounded to OCP E4M3FN with scale 1 (vLLM fp8 cache); Q as is."""
    name = "fp8"
    bits = 8.0

    def prep_k(self, k, layer=0, head=0):
        return B.fp8_e4m3(k)

    def prep_v(self, v, layer=0, head=0):
        return B.fp8_e4m3(v)


def _query(q, mode: str):
    if mode == "bf16":
        return q
    if mode == "fp8":            # vLLM reference: scale 1, NaN above 448
        return B.fp8_e4m3(q)
    if mode == "fp8s32":         # per-32 UE8M0 scale: max maps into [224, 448]
        g = q.reshape(*q.shape[:-1], -1, 32)
        m = np.abs(g).max(axis=-1)
        with np.errstate(divide="ignore"):
            e = np.ceil(np.log2(np.where(m > 0, m, 1.0) / 448.0)).astype(np.float32)
        s = np.exp2(e)[..., None]
        return (B.fp8_e4m3(g / s) * s).reshape(q.shape)
    raise ValueError(f"unknown query mode {mode!r} (bf16, fp8, fp8s32)")


@dataclass
class UltraQuant(KVFormat):
    """FP4 E2M1 + UE8M0 per 32. Defaults = the vLLM ``ultraquant_4bit``
    format (c = 0.156, K rotated, V not, Q rotated then FP8 with scale 1).

    Extensions (all still FP4 codes + one power-of-two byte per 32, decodable
    by the standard decoder): ``c_k``/``c_v`` per (layer, kv head) dicts,
    ``rotate_v`` (undone on the output), ``query`` in {fp8, fp8s32, bf16},
    ``search`` = per-group exponent search over {e-1, e, e+1} minimising the
    group's squared error (encoder-only change), ``rounding``.
    """
    c_k: PerHead = 0.156
    c_v: PerHead = 0.156
    rotate_k: bool = True
    rotate_v: bool = False
    query: str = "fp8"
    search: bool = False
    rounding: str = "ties_down"
    label: Optional[str] = None
    bits: float = 4.25

    @property
    def name(self):
        if self.label:
            return self.label
        parts = ["uq"]
        if not isinstance(self.c_k, dict):
            parts.append(f"c={self.c_k:g}")
        else:
            parts.append("c=per-head")
        if not self.rotate_k:
            parts.append("norot")
        if self.rotate_v:
            parts.append("rotv")
        if self.query != "fp8":
            parts.append(f"q={self.query}")
        if self.search:
            parts.append("search")
        if self.rounding != "ties_down":
            parts.append(self.rounding)
        return ",".join(parts)

    def _code(self, x, c, rotate):
        if not self.search:
            return B.fp4_roundtrip(x, c=c, rotate=rotate, rounding=self.rounding)
        if rotate:
            x = B.hadamard(x)
        return encode_search(x, c, self.rounding)

    def prep_k(self, k, layer=0, head=0):
        return self._code(k, _per_head(self.c_k, layer, head), self.rotate_k)

    def prep_v(self, v, layer=0, head=0):
        return self._code(v, _per_head(self.c_v, layer, head), self.rotate_v)

    def prep_q(self, q, layer=0, head=0):
        if self.rotate_k:
            q = B.hadamard(q)
        return _query(q, self.query)

    def post_out(self, o, layer=0, head=0):
        return B.hadamard(o) if self.rotate_v else o


def encode_search(x: np.ndarray, c: float, rounding: str = "ties_down") -> np.ndarray:
    """Per group of 32 try exponents e0-1, e0, e0+1 (e0 from c) and keep the one
    with the least squared error. Codes/bytes are packed and decoded through
    the reference decoder, so the result is what a standard reader sees."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    g = x.reshape(*x.shape[:-1], -1, 32)
    e0, zero = B.np_ue8m0_exponent(np.abs(g).max(axis=-1), c)
    best_e, best_err = e0, None
    for de in (-1, 0, 1):
        e = np.clip(e0 + de, -126, 127)
        s = np.exp2(e.astype(np.float32))[..., None]
        err = ((B.np_fp4_round(g / s, rounding) * s - g) ** 2).sum(-1)
        if best_err is None:
            best_err, best_e = err, e
        else:
            better = err < best_err
            best_err = np.where(better, err, best_err)
            best_e = np.where(better, e, best_e)
    codes, scales = B.fp4_encode_with_exponents(g, best_e, zero, rounding)
    return B.fp4_decode_bytes(codes, scales).reshape(x.shape)


@dataclass
class Int4Absmax(KVFormat):
    """Symmetric INT4: per 32 scale = absmax/7 (float32), round half even,
    clamp to [-7, 7]; K and Q rotated (the manifest's int4). Costs 4 + 32/32
    = 5 bits/element with float32 scales (4.5 with bf16 scales)."""
    rotate_k: bool = True
    query: str = "bf16"
    bits: float = 5.0

    @property
    def name(self):
        return "int4" + ("" if self.rotate_k else ",norot")

    @staticmethod
    def code(x):
        g = x.reshape(*x.shape[:-1], -1, 32)
        s = (np.abs(g).max(axis=-1, keepdims=True) / np.float32(7)).astype(np.float32)
        safe = np.where(s > 0, s, np.float32(1))
        qv = np.clip(np.rint(g / safe), -7, 7)
        return (qv * s).reshape(x.shape).astype(np.float32)

    def prep_k(self, k, layer=0, head=0):
        return self.code(B.hadamard(k) if self.rotate_k else k)

    def prep_v(self, v, layer=0, head=0):
        return self.code(v)

    def prep_q(self, q, layer=0, head=0):
        return _query(B.hadamard(q) if self.rotate_k else q, self.query)


@dataclass
class LloydMax(KVFormat):
    """TurboQuant-style 4-bit baseline: rotate K and V (undo V on the output),
    normalise each head vector by its RMS (stored as one float32 per 128
    elements: 4 + 32/128 = 4.25 bits), quantise each coordinate to the
    nearest of 16 levels of a Lloyd-Max codebook. ``scale='e8m0'`` instead
    uses the UltraQuant scale (2^round(log2(c absmax)) per 32) with the
    codebook calibrated on x / scale (also 4.25 bits)."""
    codebook: np.ndarray = field(default_factory=lambda: gaussian_lloyd_max())
    scale: str = "norm"
    c: float = 0.156
    query: str = "bf16"
    rotate_k = True
    rotate_v = True
    bits: float = 4.25

    @property
    def name(self):
        return "lloydmax" if self.scale == "norm" else "lloydmax-e8m0"

    def normalise(self, x):
        if self.scale == "norm":
            s = np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True)).astype(np.float32)
            return x, s
        g = x.reshape(*x.shape[:-1], -1, 32)
        e, zero = B.np_ue8m0_exponent(np.abs(g).max(axis=-1), self.c)
        s = np.where(zero, 0, np.exp2(e.astype(np.float32)))[..., None].astype(np.float32)
        return g, s

    def code(self, x):
        g, s = self.normalise(x)
        safe = np.where(s > 0, s, np.float32(1))
        y = nearest(g / safe, self.codebook) * s
        return y.reshape(x.shape).astype(np.float32)

    def prep_k(self, k, layer=0, head=0):
        return self.code(B.hadamard(k))

    def prep_v(self, v, layer=0, head=0):
        return self.code(B.hadamard(v))

    def prep_q(self, q, layer=0, head=0):
        return _query(B.hadamard(q), self.query)

    def post_out(self, o, layer=0, head=0):
        return B.hadamard(o)


def nearest(x: np.ndarray, levels: np.ndarray) -> np.ndarray:
    lv = np.sort(np.asarray(levels, dtype=np.float32))
    mids = (lv[1:] + lv[:-1]) / 2
    return lv[np.searchsorted(mids, x)]


def lloyd_max(samples: np.ndarray, levels: int = 16, iters: int = 60,
              init: Optional[np.ndarray] = None) -> np.ndarray:
    """Lloyd's algorithm (1-D k-means) on samples: alternate nearest-level
    assignment and centroid update; starts at the sample quantiles."""
    x = np.sort(np.asarray(samples, dtype=np.float64).ravel())
    x = x[np.isfinite(x)]
    if init is None:
        lv = np.quantile(x, (np.arange(levels) + 0.5) / levels)
    else:
        lv = np.sort(np.asarray(init, dtype=np.float64))
    csum = np.concatenate([[0.0], np.cumsum(x)])
    for _ in range(iters):
        mids = (lv[1:] + lv[:-1]) / 2
        cuts = np.concatenate([[0], np.searchsorted(x, mids), [len(x)]])
        cnt = np.diff(cuts)
        sums = csum[cuts[1:]] - csum[cuts[:-1]]
        lv = np.where(cnt > 0, sums / np.maximum(cnt, 1), lv)
    return np.sort(lv).astype(np.float32)


def gaussian_lloyd_max(levels: int = 16, n: int = 400_000, seed: int = 0) -> np.ndarray:
    """Lloyd-Max codebook of N(0, 1) (from samples, deterministic)."""
    rng = np.random.default_rng(seed)
    return lloyd_max(rng.standard_normal(n), levels)


def calibrate_lloyd_max(rows: np.ndarray, scale: str = "norm", c: float = 0.156) -> np.ndarray:
    """Codebook for LloydMax(scale=...) from calibration rows [N, D] (already
    rotated)."""
    proto = LloydMax(codebook=np.zeros(16, np.float32), scale=scale, c=c)
    g, s = proto.normalise(np.asarray(rows, dtype=np.float32))
    safe = np.where(s > 0, s, 1)
    return lloyd_max((g / safe)[np.broadcast_to(s, g.shape) > 0])


# -- spec strings ----------------------------------------------------------------
def parse_format(spec: str, codebooks: Optional[dict] = None) -> KVFormat:
    """'bf16', 'fp8', 'int4', 'int4:norot', 'lloydmax', 'lloydmax:e8m0',
    'uq', 'uq:c=0.1667,norot,rotv,q=fp8s32,search,nearest_even,cv=0.2'."""
    spec = spec.strip()
    head, _, rest = spec.partition(":")
    opts = [o for o in rest.split(",") if o]
    if head == "bf16":
        return BF16()
    if head == "fp8":
        return FP8E4M3()
    if head == "int4":
        return Int4Absmax(rotate_k="norot" not in opts)
    if head == "lloydmax":
        sc = "e8m0" if "e8m0" in opts else "norm"
        cb = (codebooks or {}).get(sc)
        return LloydMax(codebook=cb if cb is not None else gaussian_lloyd_max(), scale=sc)
    if head == "uq":
        f = UltraQuant()
        for o in opts:
            k, _, v = o.partition("=")
            if k == "c":
                f.c_k = f.c_v = _num(v)
            elif k == "ck":
                f.c_k = _num(v)
            elif k == "cv":
                f.c_v = _num(v)
            elif k == "norot":
                f.rotate_k = False
            elif k == "rotv":
                f.rotate_v = True
            elif k == "q":
                f.query = v
            elif k == "search":
                f.search = True
            elif k in ("nearest_even", "ties_down"):
                f.rounding = k
            else:
                raise ValueError(f"unknown UltraQuant option {o!r} in {spec!r}")
        return f
    raise ValueError(f"unknown format {spec!r}")


def _num(v: str) -> float:
    if "/" in v:
        a, b = v.split("/")
        return float(a) / float(b)
    return float(v)
