"""Per (layer, KV head) reconstruction and attention error of a KV format.

Definitions (x = original, x^ = read back from the cache, both float32):

* ``mse``   = mean((x^ - x)^2);  ``sqnr_db`` = 10 log10(sum x^2 / sum (x^ - x)^2)
  (K measured in the original domain: a rotation is orthonormal, so rotated
  and unrotated errors agree up to float rounding).
* ``logit_rel`` = ||L^ - L||_F / ||L||_F over the causal entries of
  L = q k^T / sqrt(D), for every query head of the KV head, where L^ uses the
  format's query and key paths.
* ``out_rel`` = ||O^ - O||_F / ||O||_F of the causal softmax attention output
  (reference: the given activations, unquantised, float32 arithmetic).

A format that smooths K (``kmean``) computes logits that lack the per-row
term q . mu_k; softmax ignores it, and the logit error adds it back
(``KVFormat.logit_shift``) so that it compares like with like.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, asdict
from typing import Dict, Iterable, List, Optional

import numpy as np

from .formats import KVFormat
from .model import matmul


@dataclass
class HeadMetrics:
    format: str
    layer: int
    head: int
    k_mse: float
    k_sqnr_db: float
    v_mse: float
    v_sqnr_db: float
    logit_rel: float = float("nan")
    out_rel: float = float("nan")

    def as_dict(self):
        return asdict(self)


def sqnr_db(x: np.ndarray, xh: np.ndarray) -> float:
    x = x.astype(np.float64)
    err = ((xh.astype(np.float64) - x) ** 2).sum()
    sig = (x ** 2).sum()
    if err == 0:
        return float("inf")
    return float(10 * math.log10(sig / err))


def mse(x: np.ndarray, xh: np.ndarray) -> float:
    return float(np.mean((xh.astype(np.float64) - x.astype(np.float64)) ** 2))


def causal_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray):
    """q [T,D], k [T,D], v [T,D] -> (logits [T,T] with -inf above the
    diagonal, output [T,D]); float32."""
    T, D = q.shape
    L = matmul(q, np.ascontiguousarray(k.T)) * np.float32(1 / math.sqrt(D))
    L[np.triu_indices(T, 1)] = -np.inf
    P = np.exp(L - L.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    return L, matmul(P, v)


def _rel(a: np.ndarray, b: np.ndarray, mask=None) -> float:
    if mask is not None:
        a, b = a[mask], b[mask]
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return float(np.linalg.norm(b - a) / np.linalg.norm(a))


def head_metrics(fmt: KVFormat, k: np.ndarray, v: np.ndarray,
                 q: Optional[np.ndarray] = None, layer: int = 0, head: int = 0) -> HeadMetrics:
    """k, v: [S, T, D] (S sequences) of one KV head; q: [S, G, T, D] of its
    query heads (optional)."""
    # Per sequence: options such as kmean=N take statistics of one sequence.
    kh = np.stack([fmt.recon_k(k[s], layer, head) for s in range(k.shape[0])])
    vh = np.stack([fmt.recon_v(v[s], layer, head) for s in range(v.shape[0])])
    m = HeadMetrics(fmt.name, layer, head, mse(k, kh), sqnr_db(k, kh), mse(v, vh), sqnr_db(v, vh))
    if q is not None:
        S, G, T, D = q.shape
        tril = np.tril(np.ones((T, T), dtype=bool))
        num_l = den_l = num_o = den_o = 0.0
        for s in range(S):
            ke = fmt.prep_k(k[s], layer, head)
            ve = fmt.prep_v(v[s], layer, head)
            for g in range(G):
                L, O = causal_attention(q[s, g], k[s], v[s])
                qe = fmt.prep_q(q[s, g], layer, head)
                Lh, Oh = causal_attention(qe, ke, ve)
                shift = fmt.logit_shift(qe, k[s], layer, head)
                if shift is not None:
                    Lh = Lh + (shift * (1 / math.sqrt(D)))[:, None].astype(np.float32)
                Oh = fmt.post_out(Oh, layer, head, v[s])
                a, b = L[tril].astype(np.float64), Lh[tril].astype(np.float64)
                num_l += ((b - a) ** 2).sum()
                den_l += (a ** 2).sum()
                num_o += ((Oh.astype(np.float64) - O) ** 2).sum()
                den_o += (O.astype(np.float64) ** 2).sum()
        m.logit_rel = float(math.sqrt(num_l / den_l))
        m.out_rel = float(math.sqrt(num_o / den_o))
    return m


def activation_metrics(fmts: Iterable[KVFormat], k: np.ndarray, v: np.ndarray,
                       q: Optional[np.ndarray] = None, layer: int = 0) -> List[HeadMetrics]:
    """k, v: [S, T, Hk, D] (or [T, Hk, D]); q: [S, T, Hq, D] or None.
    Query head h belongs to KV head h // (Hq // Hk)."""
    k = np.asarray(k, np.float32)
    v = np.asarray(v, np.float32)
    if k.ndim == 3:
        k, v = k[None], v[None]
        q = None if q is None else np.asarray(q, np.float32)[None]
    if k.ndim != 4 or v.shape != k.shape:
        raise ValueError(f"k and v must both be [S, T, Hk, D] (or [T, Hk, D]); got "
                         f"{k.shape} and {v.shape}")
    S, T, Hk, D = k.shape
    if q is not None:
        q = np.asarray(q, np.float32)
        if q.ndim != 4 or q.shape[:2] != (S, T) or q.shape[3] != D or q.shape[2] % Hk:
            raise ValueError(f"q must be [S, T, Hq, D] with Hq a multiple of Hk={Hk}; "
                             f"got {q.shape}")
        G = q.shape[2] // Hk
    out = []
    for fmt in fmts:
        for j in range(Hk):
            qj = None
            if q is not None:
                qj = np.ascontiguousarray(np.transpose(q[:, :, j * G:(j + 1) * G, :], (0, 2, 1, 3)))
            out.append(head_metrics(fmt, np.ascontiguousarray(k[:, :, j]),
                                    np.ascontiguousarray(v[:, :, j]), qj, layer, j))
    return out
