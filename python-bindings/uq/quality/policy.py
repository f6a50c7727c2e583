"""Per-layer / per-head precision policies (issue 7, part 4).

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

import itertools
import json
from typing import Dict, List, Optional, Sequence, Tuple

from .formats import KVFormat, parse_format

SCHEMA = "uq.precision-policy/1"


class Policy:
    def __init__(self, default: str = "uq", overrides: Optional[List[dict]] = None,
                 meta: Optional[dict] = None, codebooks=None):
        self.default = default
        self.overrides = list(overrides or [])
        self.meta = dict(meta or {})
        self._cache: Dict[str, KVFormat] = {}
        self._codebooks = codebooks
        for o in self.overrides:
            if "layer" not in o or "format" not in o:
                raise ValueError(f"policy override needs 'layer' and 'format': {o}")
            self._fmt(o["format"])          # validate early
        self._fmt(default)

    def _fmt(self, spec: str) -> KVFormat:
        if spec not in self._cache:
            self._cache[spec] = parse_format(spec, self._codebooks)
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
    def load(cls, path: str, codebooks=None) -> "Policy":
        with open(path) as f:
            d = json.load(f)
        if d.get("schema") != SCHEMA:
            raise ValueError(f"{path}: schema must be {SCHEMA!r}, got {d.get('schema')!r}")
        meta = {k: v for k, v in d.items() if k not in ("schema", "default", "overrides",
                                                         "bits_per_element")}
        return cls(d.get("default", "uq"), d.get("overrides", []), meta, codebooks)

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
                log=print) -> Dict[Tuple[int, Optional[int]], float]:
    """bits/byte increase when only one unit (a layer, or one KV head of a
    layer) is cached in ``spec`` and everything else in BF16."""
    from .model import bits_per_byte

    cfg = model.cfg
    if prefix_cache is None:
        prefix_cache = {}
    if base is None:
        base = bits_per_byte(model, None, windows, prefix_cache=prefix_cache,
                             first_quant_layer=cfg["layers"])
    units = [(l, None) for l in range(cfg["layers"])] if unit == "layer" else \
        [(l, h) for l in range(cfg["layers"]) for h in range(cfg["hk"])]
    out = {}
    for l, h in units:
        pol = Policy("bf16", [{"layer": l, "format": spec} if h is None else
                              {"layer": l, "kv_head": h, "format": spec}])
        b = bits_per_byte(model, pol, windows, prefix_cache=prefix_cache, first_quant_layer=l)
        out[(l, h)] = b - base
        log(f"  sensitivity {spec} layer {l}" + ("" if h is None else f" head {h}") +
            f": {b - base:+.5f} bits/byte")
    return out


def optimise(sens: Dict[str, Dict[Tuple[int, Optional[int]], float]],
             bits: Dict[str, float], budget: float, default: str) -> Tuple[Policy, float]:
    """Exhaustive search over per-unit format choices minimising the summed
    (additive-model) bits/byte increase with mean bits/element <= budget.
    ``sens[spec][unit]`` is the measured increase (BF16 = 0)."""
    specs = list(sens.keys()) + ["bf16"]
    units = sorted(next(iter(sens.values())).keys(), key=lambda u: (u[0], -1 if u[1] is None else u[1]))
    best, best_cost = None, float("inf")
    for choice in itertools.product(specs, repeat=len(units)):
        mean_bits = sum(bits[s] for s in choice) / len(units)
        if mean_bits > budget + 1e-9:
            continue
        cost = sum(0.0 if s == "bf16" else sens[s][u] for s, u in zip(choice, units))
        if cost < best_cost - 1e-12 or (abs(cost - best_cost) <= 1e-12 and best is not None
                                        and mean_bits < best[1]):
            best, best_cost = (choice, mean_bits), cost
    if best is None:
        raise ValueError(f"no policy fits {budget} bits/element")
    over = []
    for s, (l, h) in zip(best[0], units):
        if s != default:
            o = {"layer": l, "format": s}
            if h is not None:
                o["kv_head"] = h
            over.append(o)
    return Policy(default, over, {"budget_bits_per_element": budget,
                                  "predicted_increase": round(best_cost, 5)}), best_cost
