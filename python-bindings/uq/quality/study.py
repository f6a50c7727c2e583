"""The paper's claims, checked on synthetic and real data, and the
calibration helpers the variants use."""

from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

from . import backend as B
from .formats import Calibration, Int4Absmax, LloydMax, encode_search

C_GRID = np.round(np.arange(0.100, 0.2501, 0.002), 4)


def nmse(x: np.ndarray, xh: np.ndarray) -> float:
    """Normalised MSE: sum (x^ - x)^2 / sum x^2 (= 10^(-SQNR/10))."""
    x = x.astype(np.float64)
    return float(((xh.astype(np.float64) - x) ** 2).sum() / (x ** 2).sum())


def synthetic_rows(kind: str, n: int = 8192, d: int = 128, seed: int = 0) -> np.ndarray:
    """'gaussian': i.i.d. N(0,1) rows; 'unit': uniform unit vectors (a
    normalised Gaussian), both then rotated (a rotation leaves both
    distributions unchanged; done anyway to follow the key path)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    if kind == "unit":
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    elif kind != "gaussian":
        raise ValueError(kind)
    return B.hadamard(x)


def fp4_nmse(x: np.ndarray, c: float, search: bool = False) -> float:
    """NMSE of FP4 + UE8M0/32 on rows x (already in the coded domain)."""
    xh = encode_search(x, c) if search else B.fp4_roundtrip(x, c=c)
    return nmse(x, xh)


def c_curve(x: np.ndarray, grid=C_GRID) -> np.ndarray:
    return np.array([fp4_nmse(x, float(c)) for c in grid])


def optimum(grid, curve) -> Tuple[float, float]:
    i = int(np.nanargmin(curve))
    return float(grid[i]), float(curve[i])


def real_sets(lm, seq=None) -> Dict[str, np.ndarray]:
    """Rows [N, 128] of the shared activations: K rotated (as cached), K
    unrotated, V, V rotated, all layers/heads pooled; ``seq`` picks one of
    the two sequences (None: both)."""
    ks, vs = [], []
    for l in range(lm.cfg["layers"]):
        a = lm.activations(l)
        sl = slice(None) if seq is None else slice(seq, seq + 1)
        ks.append(a["k"][sl].reshape(-1, a["k"].shape[-1]))
        vs.append(a["v"][sl].reshape(-1, a["v"].shape[-1]))
    k = np.concatenate(ks)
    v = np.concatenate(vs)
    return {"K rotated": B.hadamard(k), "K unrotated": k, "V": v, "V rotated": B.hadamard(v)}


def per_head_rows(lm, seq: int, which: str, rotate: bool) -> Dict[Tuple[int, int], np.ndarray]:
    out = {}
    for l in range(lm.cfg["layers"]):
        a = lm.activations(l)[which][seq]          # [T, Hk, D]
        for h in range(a.shape[1]):
            r = np.ascontiguousarray(a[:, h])
            out[(l, h)] = B.hadamard(r) if rotate else r
    return out


def calibrate_c(rows_by_head: Dict[Tuple[int, int], np.ndarray], grid=C_GRID,
                search: bool = False, weight=None) -> Dict[Tuple[int, int], float]:
    """Per (layer, head) the c of ``grid`` with the least NMSE."""
    out = {}
    for key, x in rows_by_head.items():
        curve = [fp4_nmse(x, float(c), search) for c in grid]
        out[key] = float(grid[int(np.argmin(curve))])
    return out


def distortion_table(sets: Dict[str, np.ndarray], c_opt: Dict[str, float],
                     codebooks: Dict[str, np.ndarray]) -> List[dict]:
    """NMSE (and SQNR dB) of each 4-bit quantiser on each data set."""
    rows = []
    for name, x in sets.items():
        r = {"data": name, "n": int(x.size)}
        r["fp4 c=0.156"] = fp4_nmse(x, 0.156)
        r["fp4 c=1/6"] = fp4_nmse(x, 1 / 6)
        r["fp4 c=opt"] = fp4_nmse(x, c_opt[name])
        r["fp4 c=opt+search"] = fp4_nmse(x, c_opt[name], search=True)
        r["int4 absmax/7 (f32 scale)"] = nmse(x, Int4Absmax.code(x))
        r["lloyd-max (rms/128)"] = nmse(x, LloydMax(codebook=codebooks["norm"], scale="norm").code(x))
        r["lloyd-max (e8m0/32)"] = nmse(x, LloydMax(codebook=codebooks["e8m0"], scale="e8m0").code(x))
        r["c_opt"] = c_opt[name]
        rows.append(r)
    return rows


def calibrate_codebooks(lm, seq: int = 0) -> Dict[str, np.ndarray]:
    """Lloyd-Max codebooks on the rotated K and V rows of one activation
    sequence (all layers and heads pooled): formats.Calibration's."""
    cal = Calibration(lm, seq)
    return {sc: cal.codebook(sc) for sc in ("norm", "e8m0")}


def kurtosis(x: np.ndarray) -> float:
    x = x.astype(np.float64).ravel()
    x = x - x.mean()
    return float(np.mean(x ** 4) / np.mean(x ** 2) ** 2)
