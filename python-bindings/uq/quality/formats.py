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
import math
import re
from typing import Dict, List, Optional, Tuple, Union

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
    #: Study option ``self``: each query attends to its own token's key and
    #: value unquantised (the decode step holds them as the cache write's
    #: inputs), to every other token's through the cache. Costs no cache bit.
    exact_self = False

    @property
    def exact_self_k(self) -> bool:
        return self.exact_self

    @property
    def exact_self_v(self) -> bool:
        return self.exact_self

    def exact_k(self, k, layer=0, head=0):
        """The key rows as prep_k presents them, without the coding (the
        coded domain: rotated, centred, balanced like the cached rows)."""
        return B.hadamard(k) if self.rotate_k else k

    def exact_v(self, v, layer=0, head=0):
        return B.hadamard(v) if self.rotate_v else v

    def prep_k(self, k, layer=0, head=0):
        return k

    def prep_v(self, v, layer=0, head=0):
        return v

    def prep_q(self, q, layer=0, head=0):
        return q

    def logit_shift(self, qe, k, layer=0, head=0):
        """Per query row, what the format's logits lack against q . k (None:
        nothing; see UltraQuant.k_mean)."""
        return None

    def post_out(self, o, layer=0, head=0, v=None):
        """The attention output of the decoded values (``v``: the head's
        unquantised values, for options that need their statistics)."""
        return o

    @property
    def bits_k(self) -> float:
        return self.bits

    @property
    def bits_v(self) -> float:
        return self.bits

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


# FP6 E2M3 (OCP MX): sign, 2 exponent bits (bias 1), 3 mantissa bits; max 7.5.
FP6_MAGS = np.array(sorted({m / 8 for m in range(8)} | {(1 + m / 8) * 2.0 ** e
                                                        for e in range(3) for m in range(8)}),
                    dtype=np.float32)


def fp6_roundtrip(x: np.ndarray, group: int = 32) -> np.ndarray:
    """FP6 E2M3 codes with one power-of-two (UE8M0) scale per group: the
    exponent among e0 - 1, e0, e0 + 1 (e0 = ceil(log2(absmax / 7.5)), the
    smallest without saturation) with the least squared error; elements round
    to nearest, ties to even (the hardware conversion). Study-only (numpy):
    the f8f6f4 scaled MFMA reads such codes, but the dialect has no fp6
    element code."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    g = x.reshape(*x.shape[:-1], -1, group).astype(np.float64)
    m = np.abs(g).max(axis=-1)
    zero = ~np.isfinite(m) | (m == 0)
    e0 = np.ceil(np.log2(np.where(zero, 1.0, m) / 7.5))
    mags = FP6_MAGS.astype(np.float64)
    mids = (mags[1:] + mags[:-1]) / 2
    best, best_err = None, None
    for de in (-1, 0, 1):
        sc = np.exp2(np.clip(e0 + de, -127, 127))[..., None]
        a = np.abs(g) / sc
        i = np.searchsorted(mids, a)                    # nearest, ties up...
        tie = (i > 0) & (a == mids[np.maximum(i - 1, 0)])
        # ...then ties to the even code (even mantissa index).
        i = np.where(tie & (i % 2 == 1), i - 1, i)
        i = np.minimum(i, len(mags) - 1)
        y = np.sign(g) * mags[i] * sc
        err = ((y - g) ** 2).sum(-1)
        if best is None:
            best, best_err = y, err
        else:
            better = err < best_err
            best = np.where(better[..., None], y, best)
            best_err = np.where(better, err, best_err)
    best = np.where(zero[..., None], 0.0, best)
    return best.reshape(x.shape).astype(np.float32)


def fp4_e4m3_scale_roundtrip(x: np.ndarray, group: int = 32, c: float = 1 / 6,
                             search: bool = False, rounding: str = "ties_down") -> np.ndarray:
    """FP4 E2M1 codes with one FP8 E4M3 scale per group (the NVFP4 idea,
    without its per-tensor scale): S = e4m3(c * absmax) (RNE, saturating at
    448; a scale that underflows to 0 takes the smallest subnormal 2^-9),
    codes fp4(x / S); ``search`` also tries the E4M3 neighbours of S and
    keeps the least squared error (ties: the smaller scale). Absmax 0 or not
    finite: scale byte 0, all codes 0. A kernel reads it after conversion to
    bf16, or folds S into the probabilities (V); the scaled MFMA cannot take
    it as a K scale (UE8M0 only). With the native library this is its
    ScaleCode::E4M3 (#uq.kv_format<fp4_e2m1, scale = e4m3>; the search sums
    f64 errors as a binary tree, the numpy fallback in another order)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if B.native() is not None:      # the reference library (ScaleCode::E4M3)
        return B.native().quantize_dequantize(
            x, c=float(c), group_size=group, rounding=rounding, scale="e4m3",
            scale_rule="mse_search" if search else "log_round")
    g = x.reshape(*x.shape[:-1], -1, group)
    m = np.abs(g).max(axis=-1)
    zero = ~np.isfinite(m) | (m == 0)
    s0 = B.fp8_e4m3((np.float32(c) * np.where(zero, 1, m)).astype(np.float32), "saturate")
    s0 = np.where(s0 > 0, s0, np.float32(2.0 ** -9))
    cands = [s0]
    if search:
        # E4M3 neighbours: one code step below / above (positive codes are
        # ordered like their values).
        b = B.fp8_e4m3_bytes(s0)
        cands = [B.fp8_e4m3_from_bytes(np.clip(b.astype(np.int32) - 1, 1, 126)), s0,
                 B.fp8_e4m3_from_bytes(np.clip(b.astype(np.int32) + 1, 1, 126))]
    best = best_err = None
    for sc in cands:
        y = B.np_fp4_round(g / sc[..., None], rounding) * sc[..., None]
        err = ((y.astype(np.float64) - g) ** 2).sum(-1)
        if best is None:
            best, best_err = y, err
        else:
            better = err < best_err
            best = np.where(better[..., None], y, best)
            best_err = np.where(better, err, best_err)
    best = np.where(zero[..., None], np.float32(0), best)
    return best.reshape(x.shape).astype(np.float32)


def query_round(q, mode: str):
    """The query as the QK product sees it: ``bf16`` unchanged, ``fp8`` E4M3
    with scale 1 (NaN above 464, the vLLM reference), ``fp8s32`` E4M3 with a
    UE8M0 scale per 32 channels, 2^ceil(log2(absmax / 448)) (the group
    maximum lands in (224, 448]; the scaled MFMA's A-scale operand)."""
    return _query(q, mode)


def _query(q, mode: str):
    if mode == "bf16":
        return q
    if mode == "fp8":            # vLLM reference: scale 1, NaN above 448
        return B.fp8_e4m3(q)
    if mode == "fp8s32":         # per-32 UE8M0 scale: max maps into (224, 448]
        # The smallest e with absmax / 2^e <= 448, decided exactly on frexp
        # (uq::ref::fp8BlockExponent, query_precision fp8_e4m3_scaled).
        g = np.asarray(q, np.float32).reshape(*q.shape[:-1], -1, 32)
        m = np.abs(g).max(axis=-1)
        ok = np.isfinite(m) & (m > 0)
        f, x = np.frexp(np.where(ok, m, np.float32(1)))
        e = np.clip(x - 9 + (f > 0.875), -127, 127)
        e = np.where(ok, e, 0)
        return np.ldexp(B.fp8_e4m3(np.ldexp(g, -e[..., None])), e[..., None]).astype(
            np.float32).reshape(q.shape)
    raise ValueError(f"unknown query mode {mode!r} (bf16, fp8, fp8s32)")


# Bits a per-(layer, KV head) float32 vector of D values adds per cached
# element when it is amortised over one 1024-token window (the eval window):
# 32 * D / (1024 * D). Counted for channel means; the balance exponents are
# one byte per channel (8 / 1024).
MEAN_BITS = 32.0 / 1024
BALANCE_BITS = 8.0 / 1024


@dataclass
class UltraQuant(KVFormat):
    """FP4 E2M1 + UE8M0 per 32. Defaults = the vLLM ``ultraquant_4bit``
    format (c = 0.156, K rotated, V not, Q rotated then FP8 with scale 1).

    Extensions (all still FP4 codes + one power-of-two byte per group,
    decodable by the standard decoder): ``c_k``/``c_v`` per (layer, kv head)
    dicts, ``rotate_v`` (undone on the output), ``query`` in {fp8, fp8s32,
    bf16}, ``search`` = per-group exponent search over {e-1, e, e+1}
    minimising the group's squared error (encoder-only change), ``rounding``,
    and the smoothing options:

    * ``k_mean``: subtract a per-(layer, KV head) channel mean mu_k from K
      before rotation and coding. ``"cal"`` = calibrated (Calibration),
      an int N = the mean of the sequence's first N keys (the first prefill
      chunk). Attention needs nothing for it (softmax is invariant to the
      per-row shift q . mu_k) except with sinks: see ``logit_shift``.
    * ``v_mean``: the same for V; the output adds mu_v back times the sum of
      the softmax weights of the value rows (1 without sinks).
    * ``k_balance``: per-channel power-of-two scales s (calibrated): K is
      divided by s before rotation, the query multiplied by s, so q . k is
      unchanged and the coding error lands where the queries weigh less.
    * ``group_v``: channels per scale of V (32 or 16).
    """
    c_k: PerHead = 0.156
    c_v: PerHead = 0.156
    rotate_k: bool = True
    rotate_v: bool = False
    query: str = "fp8"
    search: bool = False
    rounding: str = "ties_down"
    label: Optional[str] = None
    k_mean: Optional[Union[str, int]] = None
    v_mean: Optional[Union[str, int]] = None
    k_balance: float = 0.0
    v_balance: float = 0.0
    balance_pow2: bool = False
    group_v: int = 32
    element: str = "fp4"
    scale_k: str = "ue8m0"
    scale_v: str = "ue8m0"
    k_pcs: int = 0
    k_pcs_bits: int = 16
    calib: Optional["Calibration"] = field(default=None, repr=False, compare=False)

    @property
    def _el_bits(self) -> int:
        return 6 if self.element == "fp6" else 4

    @property
    def bits_k(self) -> float:
        return self._el_bits + 8 / 32 + (MEAN_BITS if self.k_mean is not None else 0) + \
            (BALANCE_BITS if self.k_balance else 0) + self.k_pcs_bits * self.k_pcs / 128

    @property
    def bits_v(self) -> float:
        return self._el_bits + 8 / self.group_v + \
            (MEAN_BITS if self.v_mean is not None else 0) + \
            (BALANCE_BITS if self.v_balance else 0)

    @property
    def bits(self) -> float:
        return (self.bits_k + self.bits_v) / 2

    @property
    def name(self):
        if self.label:
            return self.label
        parts = ["uq"]
        def cs(c):
            return c if isinstance(c, str) else "per-head" if isinstance(c, dict) else f"{c:g}"
        if self.c_v == self.c_k:
            parts.append(f"c={cs(self.c_k)}")
        else:
            parts += [f"ck={cs(self.c_k)}", f"cv={cs(self.c_v)}"]
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
        for n, v in (("kmean", self.k_mean), ("vmean", self.v_mean)):
            if v is not None:
                parts.append(n if v == "cal" else f"{n}={v}")
        for n, a in (("kbal", self.k_balance), ("vbal", self.v_balance)):
            if a:
                parts.append(n if a == 0.25 else f"{n}={a:g}")
        if self.balance_pow2:
            parts.append("pow2bal")
        if self.group_v != 32:
            parts.append(f"gv={self.group_v}")
        if self.element != "fp4":
            parts.append(f"el={self.element}")
        if self.scale_k != "ue8m0":
            parts.append(f"ks={self.scale_k}")
        if self.k_pcs:
            parts.append(f"kpc{'8' if self.k_pcs_bits == 8 else ''}={self.k_pcs}")
        if self.scale_v != "ue8m0":
            parts.append(f"vs={self.scale_v}")
        if self.exact_self:
            parts.append("self")
        return "uq:" + ",".join(parts[1:])

    # -- calibrated / per-sequence statistics ------------------------------
    def _c(self, which, layer, head):
        """c of K or V; 'cal': per (layer, KV head), MSE-calibrated."""
        p = self.c_k if which == "k" else self.c_v
        if p == "cal":
            rot = self.rotate_k if which == "k" else self.rotate_v
            return self._need_calib(f"c{which}=cal").c_opt(which, layer, head, rot)
        return _per_head(p, layer, head)

    def _need_calib(self, what):
        if self.calib is None:
            raise ValueError(f"{self.name}: {what} needs calibration data "
                             "(parse_format(spec, calib=Calibration(lm)))")
        return self.calib

    def _mean(self, which, mode, x, layer, head):
        if mode is None:
            return None
        if mode == "cal":
            return self._need_calib(f"{which}mean").mean(which, layer, head)
        return np.mean(x[:int(mode)].astype(np.float64), axis=0).astype(np.float32)

    def _balance(self, layer, head):
        if not self.k_balance:
            return None
        return self._need_calib("kbal").k_balance(layer, head, self.k_mean is not None,
                                                  self.k_balance, self.balance_pow2)

    def _vbalance(self, layer, head):
        if not self.v_balance:
            return None
        return self._need_calib("vbal").v_balance(layer, head, self.v_mean is not None,
                                                  self.v_balance, self.balance_pow2)

    def _code(self, x, c, rotate, group=32, scale="ue8m0"):
        x = np.ascontiguousarray(x, dtype=np.float32)
        if scale == "e4m3":
            return fp4_e4m3_scale_roundtrip(B.hadamard(x) if rotate else x, group,
                                            search=self.search, rounding=self.rounding)
        if self.element == "fp6":
            return fp6_roundtrip(B.hadamard(x) if rotate else x, group)
        if not self.search:
            return B.fp4_roundtrip(x, c=c, rotate=rotate, rounding=self.rounding, group=group)
        if rotate:
            x = B.hadamard(x)
        return encode_search(x, c, self.rounding, group)

    def _centred(self, which, x, layer, head):
        """K (\p which = "k") or V rows with the channel mean subtracted and
        divided by the balance scales, as the cache codes them (before the
        rotation)."""
        key = which == "k"
        mu = self._mean(which, self.k_mean if key else self.v_mean, x, layer, head)
        if mu is not None:
            x = (x - mu).astype(np.float32)
        s = self._balance(layer, head) if key else self._vbalance(layer, head)
        if s is not None:
            x = (x / s).astype(np.float32)
        return x

    def prep_k(self, k, layer=0, head=0):
        x = self._centred("k", k, layer, head)
        low = None
        if self.k_pcs:
            # Low-rank part: coefficients a = x U (bf16, stored per token)
            # on calibrated principal directions U; the residual is coded.
            u = self._need_calib("kpc").k_pcs(layer, head, self.k_mean is not None,
                                               self.k_pcs)
            from .data import bf16_round
            a = bf16_round((x.astype(np.float64) @ u).astype(np.float32))
            if self.k_pcs_bits == 8:            # E4M3 coefficients, scale 1
                a = B.fp8_e4m3(a, "saturate")
            low = (a.astype(np.float64) @ u.T).astype(np.float32)
            x = (x - low).astype(np.float32)
        y = self._code(x, self._c("k", layer, head), self.rotate_k, scale=self.scale_k)
        if low is not None:
            y = (y + (B.hadamard(low) if self.rotate_k else low)).astype(np.float32)
        return y

    def exact_k(self, k, layer=0, head=0):
        x = self._centred("k", k, layer, head)
        return B.hadamard(x) if self.rotate_k else x

    def exact_v(self, v, layer=0, head=0):
        x = self._centred("v", v, layer, head)
        return B.hadamard(x) if self.rotate_v else x

    def prep_v(self, v, layer=0, head=0):
        x = self._centred("v", v, layer, head)
        return self._code(x, self._c("v", layer, head), self.rotate_v, self.group_v,
                          self.scale_v)

    def prep_q(self, q, layer=0, head=0):
        s = self._balance(layer, head)
        if s is not None:
            q = (q * s).astype(np.float32)
        if self.rotate_k:
            q = B.hadamard(q)
        return _query(q, self.query)

    def logit_shift(self, qe, k, layer=0, head=0):
        """Per query row, qe . mu_k in the coded domain: what the smoothed
        logits lack against the unsmoothed ones (multiply by the softmax
        scale). Softmax ignores it; a sink logit must be lowered by it."""
        mu = self._mean("k", self.k_mean, k, layer, head)
        if mu is None:
            return None
        s = self._balance(layer, head)
        m = mu if s is None else (mu / s).astype(np.float32)
        if self.rotate_k:
            m = B.hadamard(m[None])[0]
        return qe.astype(np.float64) @ m.astype(np.float64)

    def post_out(self, o, layer=0, head=0, v=None):
        if self.rotate_v:
            o = B.hadamard(o)
        s = self._vbalance(layer, head)
        if s is not None:
            o = (o * s).astype(np.float32)
        if self.v_mean is not None:
            o = (o + self._mean("v", self.v_mean, v, layer, head)).astype(np.float32)
        return o

    def recon_k(self, k, layer=0, head=0):
        r = self.prep_k(k, layer, head)
        if self.rotate_k:
            r = B.hadamard(r)
        s = self._balance(layer, head)
        if s is not None:
            r = r * s
        mu = self._mean("k", self.k_mean, k, layer, head)
        return r if mu is None else r + mu

    def recon_v(self, v, layer=0, head=0):
        r = self.prep_v(v, layer, head)
        if self.rotate_v:
            r = B.hadamard(r)
        s = self._vbalance(layer, head)
        if s is not None:
            r = r * s
        mu = self._mean("v", self.v_mean, v, layer, head)
        return r if mu is None else r + mu


class SplitKV(KVFormat):
    """K in one format, V in another (spec ``KSPEC|VSPEC``): keys, queries
    and the logit shift follow the K format, values and the output the V
    format."""

    def __init__(self, kf: KVFormat, vf: KVFormat, spec: Optional[str] = None):
        self.kf, self.vf = kf, vf
        self.rotate_k, self.rotate_v = kf.rotate_k, vf.rotate_v
        self._name = spec or f"{kf.name}|{vf.name}"

    @property
    def name(self):
        return self._name

    @property
    def bits_k(self):
        return self.kf.bits_k

    @property
    def bits_v(self):
        return self.vf.bits_v

    @property
    def bits(self):
        return (self.bits_k + self.bits_v) / 2

    @property
    def exact_self_k(self):
        return self.kf.exact_self_k

    @property
    def exact_self_v(self):
        return self.vf.exact_self_v

    def exact_k(self, k, layer=0, head=0):
        return self.kf.exact_k(k, layer, head)

    def exact_v(self, v, layer=0, head=0):
        return self.vf.exact_v(v, layer, head)

    def prep_k(self, k, layer=0, head=0):
        return self.kf.prep_k(k, layer, head)

    def prep_q(self, q, layer=0, head=0):
        return self.kf.prep_q(q, layer, head)

    def logit_shift(self, qe, k, layer=0, head=0):
        return self.kf.logit_shift(qe, k, layer, head)

    def recon_k(self, k, layer=0, head=0):
        return self.kf.recon_k(k, layer, head)

    def prep_v(self, v, layer=0, head=0):
        return self.vf.prep_v(v, layer, head)

    def post_out(self, o, layer=0, head=0, v=None):
        return self.vf.post_out(o, layer, head, v)

    def recon_v(self, v, layer=0, head=0):
        return self.vf.recon_v(v, layer, head)


def encode_search(x: np.ndarray, c: float, rounding: str = "ties_down",
                  group: int = 32) -> np.ndarray:
    """Per group try exponents e0-1, e0, e0+1 (e0 from c) and keep the one
    with the least squared error (ties to the smaller). With the native
    library this is its ``scale_rule = mse_search`` (the dialect's encoder,
    f64 tree-summed errors); the numpy fallback sums float32 errors, which can
    differ on near-ties only. Codes/bytes go through the reference decoder,
    so the result is what a standard reader sees."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if B.native() is not None:
        return B.native().quantize_dequantize(x, c=float(c), group_size=group,
                                              rounding=rounding, scale_rule="mse_search")
    g = x.reshape(*x.shape[:-1], -1, group)
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
    return B.fp4_decode_bytes(codes, scales, group).reshape(x.shape)


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
    gauss: bool = False
    rotate_k = True
    rotate_v = True
    bits: float = 4.25

    @property
    def name(self):
        n = "lloydmax" if self.scale == "norm" else "lloydmax:e8m0"
        return n + ("," if ":" in n else ":") + "gauss" if self.gauss else n

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

    def post_out(self, o, layer=0, head=0, v=None):
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


# -- calibration -------------------------------------------------------------------
class Calibration:
    """Statistics of the calibrated options, computed on first use from the
    shared LM's stored activations (post-RoPE q, k, v of activation sequence
    ``seq``; sequence 0 is val.txt bytes [1000, 2024), disjoint from the 24
    eval windows): Lloyd-Max codebooks (rotated K and V, all layers/heads
    pooled), per-(layer, KV head) channel means of K and V, and the q/k
    balance exponents."""

    def __init__(self, lm, seq: int = 0):
        self.lm = lm
        self.seq = seq
        self._acts: Dict[int, dict] = {}
        self._cache: Dict[tuple, np.ndarray] = {}

    def _act(self, layer: int) -> dict:
        if layer not in self._acts:
            a = self.lm.activations(layer)
            self._acts[layer] = {n: np.asarray(a[n][self.seq], np.float32) for n in a}
        return self._acts[layer]

    def _memo(self, key, fn):
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    def mean(self, which: str, layer: int, head: int) -> np.ndarray:
        """Channel mean (float32 [D]) of K (``which='k'``) or V."""
        return self._memo(("mean", which, layer, head), lambda: np.mean(
            self._act(layer)[which][:, head].astype(np.float64), axis=0).astype(np.float32))

    def k_balance(self, layer: int, head: int, centred: bool,
                  alpha: float = 0.25, pow2: bool = False) -> np.ndarray:
        """Per-channel powers of two s (float32 [D]) for the q/k balance.
        With a_i = E q_i^2 over the KV head's query heads and b_i = E (k_i -
        mu_i)^2 (``centred``) or E k_i^2, s_i = (b_i / a_i)^alpha; alpha =
        1/4 minimises the logit-error proxy (sum_i a_i s_i^2)(sum_i b_i /
        s_i^2) of white coding noise. Scaled so that sum a_i s_i^2 = sum a_i
        (the query keeps its energy), rounded to 2^round(log2 s_i)."""
        def calc():
            a = self._act(layer)
            k = a["k"][:, head].astype(np.float64)
            hq, hk = a["q"].shape[1], a["k"].shape[1]
            g = hq // hk
            q = a["q"][:, head * g:(head + 1) * g].astype(np.float64)
            qa = np.mean(q ** 2, axis=(0, 1))
            kb = np.var(k, axis=0) if centred else np.mean(k ** 2, axis=0)
            return _balance(qa, kb, alpha, pow2)
        return self._memo(("kbal", layer, head, centred, alpha, pow2), calc)

    def v_balance(self, layer: int, head: int, centred: bool,
                  alpha: float = 0.25, pow2: bool = False) -> np.ndarray:
        """The same for V against the output projection: a_i = the squared
        norm of the columns of W_o that read channel i of the KV head's
        query heads, b_i = E (v_i - mu_i)^2 or E v_i^2. The output is
        multiplied by s after attention (a kernel folds it into W_o)."""
        def calc():
            a = self._act(layer)
            v = a["v"][:, head].astype(np.float64)
            hq, hk = a["q"].shape[1], a["k"].shape[1]
            g, d = hq // hk, v.shape[-1]
            wo = self.lm.weights.get(f"blocks.{layer}.wo.weight")
            if wo is None:
                wo = self.lm.tensor(f"blocks.{layer}.wo.weight")
            wo = wo.astype(np.float64)
            ca = sum(np.sum(wo[:, qh * d:(qh + 1) * d] ** 2, axis=0)
                     for qh in range(head * g, (head + 1) * g))
            vb = np.var(v, axis=0) if centred else np.mean(v ** 2, axis=0)
            return _balance(ca, vb, alpha, pow2)
        return self._memo(("vbal", layer, head, centred, alpha, pow2), calc)

    def c_opt(self, which: str, layer: int, head: int, rotate: bool) -> float:
        """The c of the grid 0.100..0.250 (step 0.002) with the least FP4
        (UE8M0 per 32, log_round) squared error on the head's rows, rotated
        when the format rotates them."""
        def calc():
            x = np.ascontiguousarray(self._act(layer)[which][:, head])
            if rotate:
                x = B.hadamard(x)
            grid = np.round(np.arange(0.100, 0.2501, 0.002), 4)
            err = [float(((B.fp4_roundtrip(x, c=float(c)).astype(np.float64) - x) ** 2).sum())
                   for c in grid]
            return float(grid[int(np.argmin(err))])
        return float(self._memo(("c", which, layer, head, rotate), calc))

    def k_pcs(self, layer: int, head: int, centred: bool, r: int) -> np.ndarray:
        """The top r principal directions (float64 [D, r]) of the head's keys
        (centred with the calibrated mean when ``centred``)."""
        def calc():
            k = self._act(layer)["k"][:, head].astype(np.float64)
            if centred:
                k = k - k.mean(axis=0)
            w, v = np.linalg.eigh(k.T @ k)
            return v[:, ::-1][:, :r].copy()
        return self._memo(("kpc", layer, head, centred, r), calc)

    def codebook(self, scale: str) -> np.ndarray:
        def calc():
            ks, vs = [], []
            for l in range(self.lm.cfg["layers"]):
                a = self._act(l)
                ks.append(a["k"].reshape(-1, a["k"].shape[-1]))
                vs.append(a["v"].reshape(-1, a["v"].shape[-1]))
            rows = B.hadamard(np.concatenate(ks + vs))
            return calibrate_lloyd_max(rows, scale)
        return self._memo(("codebook", scale), calc)


def _balance(a: np.ndarray, b: np.ndarray, alpha: float, pow2: bool) -> np.ndarray:
    ok = (a > 0) & (b > 0)
    s = np.ones_like(a)
    s[ok] = (b[ok] / a[ok]) ** alpha
    s *= math.sqrt(a.sum() / (a * s * s).sum())
    if pow2:
        s = np.exp2(np.round(np.log2(s)))
    return s.astype(np.float32)


# -- spec strings ----------------------------------------------------------------
FORMAT_HEADS = ("bf16", "fp8", "int4", "lloydmax", "uq")
QUERY_MODES = ("fp8", "fp8s32", "bf16")


def parse_format(spec: str, calib: Optional[Calibration] = None) -> KVFormat:
    """A format from its spec string (ValueError with a one-line reason for
    anything else):

    'bf16', 'fp8', 'int4[:norot]', 'lloydmax[:e8m0][,gauss]', 'uq',
    'uq:OPT,OPT,...' with OPT in c=X, ck=X, cv=X (X a number or a fraction
    a/b), norot, rotv, q=fp8|fp8s32|bf16, search, nearest_even, ties_down,
    kmean[=N], vmean[=N] (calibrated channel mean, or the mean of the first
    N tokens), kbal, gv=16|32; and 'KSPEC|VSPEC' for K and V in different
    formats. Spaces around names and options are ignored. Calibrated options
    (lloydmax without gauss, kmean, vmean, kbal) need ``calib``."""
    spec = spec.strip()
    if "|" in spec:
        parts = spec.split("|")
        if len(parts) != 2 or not all(p.strip() for p in parts):
            raise ValueError(f"format {spec!r}: 'KSPEC|VSPEC' takes exactly two specs")
        kf, vf = (parse_format(p, calib) for p in parts)
        return SplitKV(kf, vf, spec.replace(" ", ""))
    head, colon, rest = spec.partition(":")
    head = head.strip()
    opts = [o.strip() for o in rest.split(",")]
    if colon and not all(opts):
        raise ValueError(f"format {spec!r}: empty option")
    opts = [o for o in opts if o]

    def only(allowed):
        bad = [o for o in opts if o not in allowed]
        if bad:
            raise ValueError(f"format {spec!r}: unknown option {bad[0]!r} for {head!r}"
                             + (f" (options: {', '.join(allowed)})" if allowed else
                                " (it takes none)"))

    if head == "bf16":
        only(())
        return BF16()
    if head == "fp8":
        only(())
        return FP8E4M3()
    if head == "int4":
        only(("norot",))
        return Int4Absmax(rotate_k="norot" not in opts)
    if head == "lloydmax":
        only(("e8m0", "gauss"))
        sc = "e8m0" if "e8m0" in opts else "norm"
        if "gauss" in opts:
            cb = gaussian_lloyd_max()
        elif calib is None:
            raise ValueError(f"format {spec!r}: the calibrated codebook needs calibration "
                             "data (or use the option 'gauss' for the N(0,1) codebook)")
        else:
            cb = calib.codebook(sc)
        return LloydMax(codebook=cb, scale=sc, gauss="gauss" in opts)
    if head == "uq":
        f = UltraQuant(calib=calib)
        for o in opts:
            k, eq, v = o.partition("=")
            k, v = k.strip(), v.strip()
            valued = ("c", "ck", "cv", "q", "gv", "el", "ks", "vs", "kpc", "kpc8")
            if eq and k not in valued + ("kmean", "vmean", "kbal", "vbal"):
                raise ValueError(f"format {spec!r}: option {k!r} takes no value")
            if k in valued and not v:
                raise ValueError(f"format {spec!r}: option {k!r} needs a value ({k}=...)")
            if k in ("c", "ck", "cv"):
                if v == "cal":
                    if calib is None:
                        raise ValueError(f"format {spec!r}: {k}=cal needs calibration data")
                    c = "cal"
                else:
                    c = _num(v, spec)
                if k != "cv":
                    f.c_k = c
                if k != "ck":
                    f.c_v = c
            elif k == "norot":
                f.rotate_k = False
            elif k == "rotv":
                f.rotate_v = True
            elif k == "q":
                if v not in QUERY_MODES:
                    raise ValueError(f"format {spec!r}: q must be one of {', '.join(QUERY_MODES)}")
                f.query = v
            elif k == "search":
                f.search = True
            elif k in ("nearest_even", "ties_down"):
                f.rounding = k
            elif k in ("kmean", "vmean"):
                if not eq:
                    mode = "cal"
                else:
                    try:
                        mode = int(v)
                    except ValueError:
                        mode = 0
                    if mode <= 0:
                        raise ValueError(f"format {spec!r}: {k}=N needs a positive "
                                         f"token count, got {v!r}")
                if mode == "cal" and calib is None:
                    raise ValueError(f"format {spec!r}: the calibrated {k} needs "
                                     f"calibration data (or {k}=N: mean of the first N tokens)")
                setattr(f, "k_mean" if k == "kmean" else "v_mean", mode)
            elif k in ("kbal", "vbal"):
                if calib is None:
                    raise ValueError(f"format {spec!r}: {k} needs calibration data")
                a = _num(v, spec) if eq else 0.25
                setattr(f, "k_balance" if k == "kbal" else "v_balance", a)
            elif k == "el":
                if v not in ("fp4", "fp6"):
                    raise ValueError(f"format {spec!r}: el must be fp4 or fp6")
                f.element = v
            elif k in ("ks", "vs"):
                if v not in ("ue8m0", "e4m3"):
                    raise ValueError(f"format {spec!r}: {k} must be ue8m0 or e4m3")
                setattr(f, "scale_k" if k == "ks" else "scale_v", v)
            elif k in ("kpc", "kpc8"):
                if calib is None:
                    raise ValueError(f"format {spec!r}: {k} needs calibration data")
                if v not in [str(i) for i in range(1, 9)]:
                    raise ValueError(f"format {spec!r}: {k} must be 1..8")
                f.k_pcs = int(v)
                f.k_pcs_bits = 8 if k == "kpc8" else 16
            elif k == "pow2bal":
                f.balance_pow2 = True
            elif k == "self":
                f.exact_self = True
            elif k == "gv":
                if v not in ("16", "32"):
                    raise ValueError(f"format {spec!r}: gv must be 16 or 32")
                f.group_v = int(v)
            else:
                raise ValueError(f"format {spec!r}: unknown UltraQuant option {o!r}")
        return f
    raise ValueError(f"unknown format {spec!r} (known: {', '.join(FORMAT_HEADS)}, "
                     "and KSPEC|VSPEC)")


def split_specs(s: str) -> List[str]:
    """Splits a list of format specs: on ';', or on ',' where the next piece
    starts a new format (a known head before ':', '|' or the end), so that
    'fp8,uq:c=0.196,rotv,int4' is three specs. Whitespace is ignored."""
    if ";" in s:
        return [x.strip() for x in s.split(";") if x.strip()]
    out: List[str] = []
    cur = ""
    for part in s.split(","):
        p = part.strip()
        starts = re.split(r"[:|]", p, maxsplit=1)[0].strip() in FORMAT_HEADS
        if cur and starts:
            out.append(cur)
            cur = p
        else:
            cur = p if not cur else cur + "," + p
    if cur:
        out.append(cur)
    return out


def _num(v: str, spec: str = "") -> float:
    try:
        if "/" in v:
            a, b = v.split("/")
            x = float(a) / float(b)
        else:
            x = float(v)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"format {spec!r}: {v!r} is not a number") from None
    if not math.isfinite(x) or x <= 0:
        raise ValueError(f"format {spec!r}: {v!r} must be finite and positive")
    return x
