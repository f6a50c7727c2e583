"""Per-layer / per-head precision policies.

A policy says which KV format each (layer, KV head) is cached in. On disk it
is JSON (schema in docs/precision-policy.md):

    {
      "schema": "uq.precision-policy/1",
      "default": "uq",
      "overrides": [
        {"layer": 0, "format": "bf16"},
        {"layer": 3, "kv_head": 1, "format": "fp8"}
      ],
      "bits_per_element": 6.1875,
      ...                                   (informational fields)
    }

Formats are the spec strings of :func:`formats.parse_format`. An override
without ``kv_head`` covers every KV head of the layer; a per-head override
wins over a per-layer one.
"""

from __future__ import annotations

import json
import math
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .formats import Calibration, KVFormat, parse_format

SCHEMA = "uq.precision-policy/1"


class Policy:
    def __init__(self, default: str = "uq", overrides: Optional[List[dict]] = None,
                 meta: Optional[dict] = None, calib: Optional[Calibration] = None):
        if not isinstance(default, str):
            raise ValueError(f"policy 'default' must be a format spec string, got {default!r}")
        self.default = default
        if not isinstance(overrides or [], list):
            raise ValueError("policy 'overrides' must be a list")
        self.overrides = list(overrides or [])
        self.meta = dict(meta or {})
        self._cache: Dict[str, KVFormat] = {}
        self._calib = calib
        for o in self.overrides:
            if not isinstance(o, dict) or "layer" not in o or "format" not in o:
                raise ValueError(f"policy override needs 'layer' and 'format': {o}")
            for key in ("layer", "kv_head"):
                v = o.get(key)
                if key in o and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                    raise ValueError(f"policy override {o}: {key!r} must be an integer >= 0")
            self._fmt(o["format"])          # validate early
        self._fmt(default)

    def _fmt(self, spec: str) -> KVFormat:
        if spec not in self._cache:
            self._cache[spec] = parse_format(spec, self._calib)
        return self._cache[spec]

    def spec(self, layer: int, head: int) -> str:
        s = self.default
        for o in self.overrides:
            if o["layer"] == layer and o.get("kv_head") is None:
                s = o["format"]
        for o in self.overrides:
            if o["layer"] == layer and o.get("kv_head") == head:
                s = o["format"]
        return s

    def __call__(self, layer: int, head: int) -> Optional[KVFormat]:
        f = self._fmt(self.spec(layer, head))
        return None if f.name == "bf16" else f

    def bits_per_element(self, layers: int, heads: int) -> float:
        tot = sum(self._fmt(self.spec(l, h)).bits for l in range(layers) for h in range(heads))
        return tot / (layers * heads)

    def first_quantised_layer(self, layers: int, heads: int) -> int:
        for l in range(layers):
            if any(self(l, h) is not None for h in range(heads)):
                return l
        return layers

    def to_json(self, layers: int, heads: int) -> dict:
        d = {"schema": SCHEMA, "default": self.default, "overrides": self.overrides,
             "bits_per_element": round(self.bits_per_element(layers, heads), 4)}
        d.update(self.meta)
        return d

    def save(self, path: str, layers: int, heads: int):
        with open(path, "w") as f:
            json.dump(self.to_json(layers, heads), f, indent=1)
            f.write("\n")

    @classmethod
    def load(cls, path: str, calib: Optional[Calibration] = None) -> "Policy":
        with open(path) as f:
            try:
                d = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: not JSON ({e})") from None
        if not isinstance(d, dict) or d.get("schema") != SCHEMA:
            d = d if isinstance(d, dict) else {}
            raise ValueError(f"{path}: schema must be {SCHEMA!r}, got {d.get('schema')!r}")
        meta = {k: v for k, v in d.items() if k not in ("schema", "default", "overrides",
                                                         "bits_per_element")}
        return cls(d.get("default", "uq"), d.get("overrides", []), meta, calib)

    @classmethod
    def uniform(cls, spec: str) -> "Policy":
        return cls(spec)


def static_rule(layers: int, protect: int, quant: str = "uq") -> Policy:
    """The paper's rule: the first and last ``protect`` layers in BF16."""
    keep = sorted(set(range(min(protect, layers))) | set(range(max(0, layers - protect), layers)))
    return Policy(quant, [{"layer": l, "format": "bf16"} for l in keep],
                  {"note": f"static rule: first and last {protect} layer(s) BF16"})


def sensitivity(model, spec: str, windows: Sequence[int], unit: str = "head",
                prefix_cache: Optional[dict] = None, base: Optional[float] = None,
                log=print, calib: Optional[Calibration] = None
                ) -> Dict[Tuple[int, Optional[int]], float]:
    """bits/byte increase when only one unit (a layer, or one KV head of a
    layer) is cached in ``spec`` and everything else in BF16."""
    from .model import map_windows, window_tokens

    cfg = model.cfg
    units = [(l, None) for l in range(cfg["layers"])] if unit == "layer" else \
        [(l, h) for l in range(cfg["layers"]) for h in range(cfg["hk"])]
    pols = [Policy("bf16", [{"layer": l, "format": spec} if h is None else
                            {"layer": l, "kv_head": h, "format": spec}], calib=calib)
            for l, h in units]

    def window(w):
        tok, tgt = window_tokens(model.lm, w)
        if prefix_cache is not None and (w, len(tok)) in prefix_cache:
            res, ce = prefix_cache[(w, len(tok))]
        else:
            res = []
            ce = model.forward(tok, tgt, None, residuals=res)
        vals = [model.forward(tok, tgt, pol, start_layer=l, x0=res[l]).mean() / math.log(2)
                for (l, _), pol in zip(units, pols)]
        return float(ce.mean() / math.log(2)), vals

    per = map_windows(window, windows)
    if base is None:
        base = float(np.mean([p[0] for p in per]))
    out = {}
    for i, (l, h) in enumerate(units):
        b = float(np.mean([p[1][i] for p in per]))
        out[(l, h)] = b - base
        log(f"  sensitivity {spec} layer {l}" + ("" if h is None else f" head {h}") +
            f": {b - base:+.5f} bits/byte")
    return out


def upgrade_sensitivity(model, base: str, specs: Sequence[str], windows: Sequence[int],
                        log=print, calib: Optional[Calibration] = None, unit: str = "head"):
    """bits/byte change when one unit (a KV head, or with ``unit='layer'`` a
    whole layer) is cached in ``spec`` and every other one in ``base``
    (negative: the upgrade helps). The forward pass of the all-``base``
    model is cached per window, so a run for a unit of layer l starts at l.
    Returns (bpb of all-base, {spec: {(l, h or None): d}})."""
    from .model import window_tokens

    from .model import map_windows

    cfg = model.cfg
    L, H = cfg["layers"], cfg["hk"]
    base_pol = Policy(base, calib=calib)
    units = [(l, None) for l in range(L)] if unit == "layer" else \
        [(l, h) for l in range(L) for h in range(H)]
    runs = []
    for spec in specs:
        for l, h in units:
            o = {"layer": l, "format": spec}
            if h is not None:
                o["kv_head"] = h
            runs.append((spec, l, h, Policy(base, [o], calib=calib)))

    def window(w):
        """bits/byte of the all-base model and of every run on window w."""
        tok, tgt = window_tokens(model.lm, w)
        res: list = []
        ce = model.forward(tok, tgt, base_pol, residuals=res)
        vals = [model.forward(tok, tgt, pol, start_layer=l, x0=res[l]).mean() / math.log(2)
                for _, l, _, pol in runs]
        return float(ce.mean() / math.log(2)), vals

    per = map_windows(window, windows)
    b0 = float(np.mean([p[0] for p in per]))
    out: Dict[str, Dict[Tuple[int, Optional[int]], float]] = {s: {} for s in specs}
    for i, (spec, l, h, _) in enumerate(runs):
        out[spec][(l, h)] = float(np.mean([p[1][i] for p in per])) - b0
        log(f"  {spec} at L{l}" + ("" if h is None else f"H{h}") +
            f" (rest {base}): {out[spec][(l, h)]:+.5f} bits/byte")
    return b0, out


def optimise(sens: Dict[str, Dict[Tuple[int, Optional[int]], float]],
             bits: Dict[str, float], budget: float, default: str,
             calib: Optional[Calibration] = None, free: str = "bf16") -> Tuple[Policy, float]:
    """The per-unit format choice minimising the summed (additive-model)
    bits/byte increase with mean bits/element <= budget; ``sens[spec][unit]``
    is the measured increase against ``free`` (default BF16), which costs 0
    (with upgrade_sensitivity: the base format). Exact: a dynamic programme
    over the units keeping, per reachable bit total, the least cost (ties:
    the first choice in (candidates..., free) order per unit); among equal
    costs the smaller bit total wins."""
    specs = list(sens.keys()) + ([free] if free not in sens else [])
    units = sorted(next(iter(sens.values())).keys(),
                   key=lambda u: (u[0], -1 if u[1] is None else u[1]))
    n = len(units)
    # Bit totals are kept exactly as multiples of 2^-20 (every format's bits
    # are dyadic: 4.25, 4.28125, 8, ...).
    q = 1 << 20
    limit = int(round(budget * n * q))
    states: Dict[int, Tuple[float, tuple]] = {0: (0.0, ())}
    for u in units:
        nxt: Dict[int, Tuple[float, tuple]] = {}
        for tot, (cost, choice) in states.items():
            for s in specs:
                t = tot + int(round(bits[s] * q))
                if t > limit:
                    continue
                c = cost + (0.0 if s == free else sens[s][u])
                if t not in nxt or c < nxt[t][0] - 1e-12:
                    nxt[t] = (c, choice + (s,))
        states = nxt
    if not states:
        raise ValueError(f"no policy fits {budget:g} bits/element")
    best_t = min(states, key=lambda t: (round(states[t][0], 12), t))
    best_cost, best_choice = states[best_t]
    over = []
    for s, (l, h) in zip(best_choice, units):
        if s != default:
            o = {"layer": l, "format": s}
            if h is not None:
                o["kv_head"] = h
            over.append(o)
    return Policy(default, over, {"budget_bits_per_element": budget,
                                  "predicted_increase": round(best_cost, 5)},
                  calib=calib), best_cost
