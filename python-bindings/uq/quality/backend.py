"""The format numerics uq.quality uses: the native reference library (uq::ref
through ``uq._uq``) when it is built, else a numpy transcription of
docs/ultraquant-format.md (slower paths identical in rule; the Hadamard
rotation is a float32 matrix product, like vLLM's reference, instead of the
library's butterfly, so the last bits of rotated values may differ).

``UQ_QUALITY_BACKEND=numpy`` forces the numpy path; ``=native`` requires the
library.
"""

from __future__ import annotations

import os
from functools import lru_cache

import numpy as np

FP4_LEVELS = np.array([-6, -4, -3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 4, 6],
                      dtype=np.float32)
FP4_MIDS = ((FP4_LEVELS[1:] + FP4_LEVELS[:-1]) / 2).astype(np.float32)
# Code of each level (sign bit 3; 0..7 = 0, .5, 1, 1.5, 2, 3, 4, 6).
FP4_MAGS = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=np.float32)


def _native_ref():
    mode = os.environ.get("UQ_QUALITY_BACKEND", "auto")
    if mode == "numpy":
        return None
    try:
        from .. import _uq  # type: ignore
    except ImportError:
        _uq = None
    if _uq is not None and getattr(_uq, "has_reference", False):
        return _uq
    if mode == "native":
        raise ImportError("UQ_QUALITY_BACKEND=native but uq._uq has no "
                          "reference bindings (build _uq with UQReference)")
    return None


_N = _native_ref()


def native():
    """The ``uq._uq`` module when its reference bindings are used, else None."""
    return _N


def backend_name() -> str:
    return "native uq::ref" if _N is not None else "numpy"


# -- numpy transcription -----------------------------------------------------
# Kept so that the study runs where uq._uq is not built (the native codecs
# are used whenever it is). test/python/quality_codec_agreement.py checks
# that both agree bit for bit (FP4 round trip, FP4 decode, FP8 E4M3 encode
# and decode) on random, midpoint, subnormal and non-finite inputs.
@lru_cache(maxsize=8)
def hadamard_matrix(d: int) -> np.ndarray:
    """H_d / sqrt(d) (Sylvester), float32."""
    if d < 1 or d & (d - 1):
        raise ValueError(f"hadamard: d must be a power of two, got {d}")
    h = np.ones((1, 1), dtype=np.float64)
    while h.shape[0] < d:
        h = np.block([[h, h], [h, -h]])
    return (h / np.sqrt(d)).astype(np.float32)


def np_fp4_round(x: np.ndarray, rounding: str = "ties_down") -> np.ndarray:
    """Value of the FP4 E2M1 code of x (saturating, NaN -> 0)."""
    x = np.asarray(x, dtype=np.float32)
    if rounding == "ties_down":
        idx = np.searchsorted(FP4_MIDS, x, side="left")
    elif rounding == "nearest_even":
        # Round to nearest; ties to the level whose code has an even mantissa.
        idx_lo = np.searchsorted(FP4_MIDS, x, side="left")
        idx_hi = np.searchsorted(FP4_MIDS, x, side="right")
        tie = idx_lo != idx_hi
        idx = idx_lo.copy()
        if tie.any():
            a, b = FP4_LEVELS[idx_lo[tie]], FP4_LEVELS[idx_hi[tie]]
            even_b = _fp4_mantissa_even(b)
            idx[tie] = np.where(even_b, idx_hi[tie], idx_lo[tie])
    else:
        raise ValueError(f"unknown rounding {rounding!r}")
    out = FP4_LEVELS[np.minimum(idx, len(FP4_LEVELS) - 1)]
    return np.where(np.isnan(x), np.float32(0), out).astype(np.float32)


def _fp4_mantissa_even(v):
    m = np.abs(v)
    code = np.searchsorted(FP4_MAGS, m)
    return (code & 1) == 0


def np_ue8m0_exponent(absmax: np.ndarray, c: float) -> np.ndarray:
    """(e, zero) per group: e = floor(log2(c*m) + 0.5) clamped to
    [-126, 127]; zero marks the sentinel (m == 0 or not finite)."""
    m = np.asarray(absmax, dtype=np.float32)
    zero = ~np.isfinite(m) | (m == 0)
    s = (np.float64(c) * np.where(zero, 1.0, m).astype(np.float64)).astype(np.float32)
    e = np.floor(np.log2(s.astype(np.float64)) + 0.5)
    e = np.clip(e, -126, 127).astype(np.int32)
    return e, zero


def np_fp8_e4m3(x: np.ndarray, overflow: str = "nan") -> np.ndarray:
    """Round to OCP E4M3FN (RNE, subnormals) and back."""
    x = np.asarray(x, dtype=np.float32)
    a = np.abs(x).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.maximum(e, -6)
    q = np.exp2(e - 3)
    r = np.rint(a / q) * q
    r = np.where(np.isfinite(a), r, np.inf)
    over = r > 448
    if overflow == "nan":
        r = np.where(over, np.nan, r)
    else:
        r = np.where(over, 448.0, r)
    r = np.where(np.isnan(x), np.nan, r)
    # The sign from the sign bit, as the library: -0 stays -0.
    return np.copysign(r, x).astype(np.float32)


# -- the functions uq.quality calls -------------------------------------------
def hadamard(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    if _N is not None:
        return _N.hadamard(x)
    return x @ hadamard_matrix(x.shape[-1]).T


def fp8_e4m3(x: np.ndarray, overflow: str = "nan") -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    if _N is not None:
        return _N.fp8_e4m3(x, fp8_overflow=overflow)
    return np_fp8_e4m3(x, overflow)


def fp4_roundtrip(x: np.ndarray, c: float = 0.156, rotate: bool = False,
                  group: int = 32, rounding: str = "ties_down") -> np.ndarray:
    """Encode + decode rows (coded domain: rotated if rotate)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if _N is not None:
        return _N.quantize_dequantize(x, rotate=rotate, c=float(c), group_size=group,
                                      rounding=rounding)
    if rotate:
        x = hadamard(x)
    g = x.reshape(*x.shape[:-1], x.shape[-1] // group, group)
    e, zero = np_ue8m0_exponent(np.abs(g).max(axis=-1), c)
    s = np.exp2(e.astype(np.float32))[..., None]
    y = np_fp4_round(g / s, rounding) * s
    y = np.where(zero[..., None], np.float32(0), y)
    return y.reshape(x.shape).astype(np.float32)


def fp4_decode_bytes(codes: np.ndarray, scales: np.ndarray, group: int = 32) -> np.ndarray:
    """Decode packed FP4 codes + UE8M0 bytes (the reference's decodeRow when
    native; else numpy)."""
    if _N is not None:
        return _N.dequantize(np.ascontiguousarray(codes, np.uint8),
                             np.ascontiguousarray(scales, np.uint8), group_size=group)
    lo = codes & 0xF
    hi = codes >> 4
    c = np.stack([lo, hi], axis=-1).reshape(*codes.shape[:-1], codes.shape[-1] * 2)
    val = FP4_MAGS[c & 7] * np.where(c & 8, -1.0, 1.0).astype(np.float32)
    sc = np.exp2(scales.astype(np.float32) - 127)
    val = val.reshape(*val.shape[:-1], -1, group) * sc[..., None]
    return val.reshape(c.shape).astype(np.float32)


def fp4_encode_with_exponents(g: np.ndarray, e: np.ndarray, zero: np.ndarray,
                              rounding: str = "ties_down"):
    """Pack FP4 codes + UE8M0 bytes for groups g [..., n, group] with chosen
    exponents e [..., n] (an encoder that picks its own scale, e.g. by MSE
    search, still produces the standard format)."""
    s = np.exp2(e.astype(np.float32))[..., None]
    v = np_fp4_round(g / s, rounding)
    v = np.where(zero[..., None], np.float32(0), v)
    mag = np.searchsorted(FP4_MAGS, np.abs(v)).astype(np.uint8)
    code = mag | np.where((v < 0), 8, 0).astype(np.uint8)
    code = code.reshape(*g.shape[:-2], -1)
    packed = (code[..., 0::2] | (code[..., 1::2] << 4)).astype(np.uint8)
    byte = np.where(zero, 0, e + 127).astype(np.uint8)
    return packed, byte


def fp8_e4m3_bytes(x: np.ndarray) -> np.ndarray:
    """E4M3FN bytes of x (RNE, saturating)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if _N is not None:
        return _N.fp8_e4m3_encode(x, fp8_overflow="saturate")
    lut = np_fp8_e4m3_values()
    pos = lut[:127]
    y = np_fp8_e4m3(np.abs(x), "saturate")
    b = np.searchsorted(pos, y).astype(np.uint8)
    return np.where(np.signbit(x), b | 0x80, b).astype(np.uint8)


def fp8_e4m3_from_bytes(b: np.ndarray) -> np.ndarray:
    b = np.ascontiguousarray(b, dtype=np.uint8)
    if _N is not None:
        return _N.fp8_e4m3_decode(b)
    return np_fp8_e4m3_values()[b]


@lru_cache(maxsize=1)
def np_fp8_e4m3_values() -> np.ndarray:
    """Value of every E4M3FN byte (0x7f/0xff NaN)."""
    out = np.empty(256, np.float32)
    for b in range(256):
        e, m = (b >> 3) & 0xF, b & 7
        v = (m / 8) * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
        out[b] = np.nan if (b & 0x7F) == 0x7F else (-v if b & 0x80 else v)
    return out
