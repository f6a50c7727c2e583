"""Kernel times: the timing-model table, a labelled roofline, and the GEMMs.

The table (written by ``uq-kernel-report --table``; format in
docs/serving.md, "Kernel table") lists, per KV format and phase, predicted
times of one attention launch of one layer at points
``(batch, kv_heads, context, query_len)``. ``KernelTable.attention_us``
interpolates piecewise linearly on log axes (log time against log context
and against log ``batch * kv_heads * query_len``), which is exact for times
that are power laws of the sizes (bandwidth- or FLOP-bound kernels), and
extrapolates beyond the table's range only up to ``limit`` times its edge
(default 2) unless told to; every extrapolation is counted and reported.
A prefill row of n new tokens starts at context n (a chunk never exceeds
its context); below that, its place is taken by the table's diagonal (the
points whose context is their new tokens) at the lookup's context. On such
a table of single chunks a launch of B chunks is one chunk of B q tokens
with the same keys when that fits its context, else B single chunks (an
upper bound).

``RooflineKernels`` times every phase when asked (``--kernel-model
roofline``) or only prefill (``--prefill-kernel-model roofline``, with the
table's decode entries): HBM bytes over the achievable bandwidth against
MFMA FLOPs over the achievable peak. It is a model of the hardware, not of
our kernels, and everything it feeds says so. The table's decode and
prefill entries are the gfx950 timing model's predictions of the compiled
kernels (a model too, not a measurement on hardware).
"""

from __future__ import annotations

import bisect
import math
from typing import Dict, List, Optional, Tuple

from .model import KERNEL_FORMATS, Hardware, ModelShape, kv_bytes_per_token_head

PHASES = ("decode", "prefill")


class ExtrapolationError(ValueError):
    pass


def _loglog(x: float, x0: float, t0: float, x1: float, t1: float) -> float:
    if x1 == x0:
        return t0
    s = (math.log(t1) - math.log(t0)) / (math.log(x1) - math.log(x0))
    return math.exp(math.log(t0) + s * (math.log(x) - math.log(x0)))


def _interp(xs: List[float], ts: List[float], x: float) -> Tuple[float, float]:
    """(time, out-of-range factor >= 1) at ``x`` on the sorted points."""
    if len(xs) == 1:
        # One point: time taken proportional to x (a linear kernel), and any
        # other x counts as outside the table.
        return ts[0] * x / xs[0], max(x / xs[0], xs[0] / x)
    i = bisect.bisect_left(xs, x)
    if i < len(xs) and xs[i] == x:
        return ts[i], 1.0
    if i == 0:
        return _loglog(x, xs[0], ts[0], xs[1], ts[1]), xs[0] / x
    if i == len(xs):
        return _loglog(x, xs[-2], ts[-2], xs[-1], ts[-1]), x / xs[-1]
    return _loglog(x, xs[i - 1], ts[i - 1], xs[i], ts[i]), 1.0


class _Entry:
    """One (format, phase, head_dim, gqa, block_size) kernel's points,
    grouped by work = batch * kv_heads * query_len."""

    def __init__(self, points: List[dict]):
        groups: Dict[float, Dict[float, float]] = {}
        for p in points:
            w = float(p["batch"] * p["kv_heads"] * p["query_len"])
            groups.setdefault(w, {})[float(p["context"])] = float(p["time_us"])
        self.works = sorted(groups)
        self.rows = [(sorted(groups[w]), [groups[w][c] for c in sorted(groups[w])])
                     for w in self.works]
        # The diagonal: one-chunk points whose context is their new tokens (a
        # prefill from empty), by context, with work / context (the KV heads).
        diag = {float(p["context"]): (float(p["time_us"]),
                                      p["batch"] * p["kv_heads"])
                for p in points if p["batch"] == 1 and p["query_len"] == p["context"]
                and p["query_len"] > 1}
        self.diag_cs = sorted(diag)
        self.diag_ts = [diag[c][0] for c in self.diag_cs]
        self.diag_heads = {diag[c][1] for c in self.diag_cs}
        # Points of one chunk each (what uq-kernel-report --table writes
        # for prefill): a launch of several chunks is mapped onto them
        # (KernelTable.attention_us).
        self.single_chunk = all(p["batch"] == 1 for p in points)

    def at(self, work: float, context: float) -> Tuple[float, float]:
        def row(i):
            cs, ts = self.rows[i]
            return _interp(cs, ts, context)

        ws = self.works
        if len(ws) == 1:
            t, f = row(0)
            return t * work / ws[0], max(f, work / ws[0], ws[0] / work)
        i = bisect.bisect_left(ws, work)
        if i < len(ws) and ws[i] == work:
            return row(i)
        if i == 0:
            lo, hi, fw = 0, 1, ws[0] / work
        elif i == len(ws):
            lo, hi, fw = len(ws) - 2, len(ws) - 1, work / ws[-1]
        else:
            lo, hi, fw = i - 1, i, 1.0
        (t0, f0), (t1, f1) = row(lo), row(hi)
        # A prefill row whose chunks are longer than the context (its
        # smallest context is its new tokens, above this one) cannot hold
        # it: the upper neighbour is then the diagonal at this context, a
        # chunk as long as the context, when its work is above the lookup's.
        # (Below the smallest row, the same pair sets the slope.)
        if (i < len(ws) and context < self.rows[hi][0][0]
                and len(self.diag_heads) == 1 and len(self.diag_cs) > 1):
            wd = context * next(iter(self.diag_heads))
            if ws[lo] < wd and work <= wd:
                td, fd = _interp(self.diag_cs, self.diag_ts, context)
                return _loglog(work, ws[lo], t0, wd, td), max(fw, f0, fd)
        return _loglog(work, ws[lo], t0, ws[hi], t1), max(fw, f0, f1)


_POINT_KEYS = ("batch", "kv_heads", "context", "query_len", "time_us")


def _positive(v, name: str, where: str, integer: bool = False):
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
    if ok and integer:
        ok = float(v).is_integer()
    if not ok:
        kind = "a positive integer" if integer else "a positive number"
        raise ValueError(f"{where}: {name!r} must be {kind}, got {v!r}")


class KernelTable:
    """Attention times from ``uq-kernel-report --table`` (JSON).

    The phases in ``fallback_phases`` (asked for: ``--prefill-kernel-model
    roofline`` gives ``("prefill",)``) are timed by ``fallback`` (a labelled
    ``RooflineKernels``) whether or not the table has them; every other
    phase comes from the table, and ``bind`` stops with an error when the
    table lacks it for the model's head_dim / gqa / block size (a table
    without prefill entries included). ``phase_sources`` and the label say
    which phase comes from where."""

    def __init__(self, data: dict, path: str = "<table>", limit: float = 2.0,
                 allow_extrapolation: bool = False, fallback=None,
                 fallback_phases=()):
        self.path = path
        self.limit = float(limit)
        self.allow = allow_extrapolation
        self.fallback = fallback
        if not isinstance(data, dict):
            raise ValueError(f"{path}: the kernel table must be a JSON object")
        self.source = data.get("source")
        if not isinstance(self.source, str) or not self.source:
            raise ValueError(f"{path}: 'source' (a string naming the producer) is required")
        hw = data.get("hardware", {})
        if not isinstance(hw, dict):
            raise ValueError(f"{path}: 'hardware' must be an object")
        self.hardware = hw
        ks = data.get("kernels")
        if not isinstance(ks, list) or not ks:
            raise ValueError(f"{path}: 'kernels' must be a non-empty list")
        self.entries: Dict[Tuple[str, str, int, int, int], _Entry] = {}
        for i, k in enumerate(ks):
            where = f"{path}: kernels[{i}]"
            if not isinstance(k, dict):
                raise ValueError(f"{where}: must be an object")
            if k.get("format") not in KERNEL_FORMATS:
                raise ValueError(f"{where}: 'format' must be one of {', '.join(KERNEL_FORMATS)}, "
                                 f"got {k.get('format')!r}")
            if k.get("phase") not in PHASES:
                raise ValueError(f"{where}: 'phase' must be decode or prefill, got "
                                 f"{k.get('phase')!r}")
            for f in ("head_dim", "gqa", "block_size"):
                _positive(k.get(f), f, where, integer=True)
            pts = k.get("points")
            if not isinstance(pts, list) or not pts:
                raise ValueError(f"{where}: 'points' must be a non-empty list")
            for j, p in enumerate(pts):
                pw = f"{where}.points[{j}]"
                if not isinstance(p, dict):
                    raise ValueError(f"{pw}: must be an object")
                for f in _POINT_KEYS:
                    _positive(p.get(f), f, pw, integer=(f != "time_us"))
                if p["query_len"] > p["context"]:
                    raise ValueError(f"{pw}: query_len {p['query_len']} exceeds context "
                                     f"{p['context']} (context counts the new tokens)")
                if k["phase"] == "decode" and p["query_len"] != 1:
                    raise ValueError(f"{pw}: a decode point has query_len 1")
            key = (k["format"], k["phase"], int(k["head_dim"]), int(k["gqa"]),
                   int(k["block_size"]))
            if key in self.entries:
                raise ValueError(f"{where}: a second kernel for {key}")
            self.entries[key] = _Entry(pts)
        self.bound: Optional[Tuple[int, int, int]] = None
        self.lookups = 0
        self.extrapolated = 0
        self.max_factor = 1.0
        for ph in fallback_phases:
            if ph not in PHASES:
                raise ValueError(f"unknown phase {ph!r} (decode or prefill)")
        if fallback_phases and fallback is None:
            raise ValueError("fallback phases need a fallback kernel model")
        # The phases asked of the fallback; every other one is the table's.
        self.fallback_phases = tuple(ph for ph in PHASES if ph in fallback_phases)
        self.table_phases = tuple(ph for ph in PHASES if ph not in self.fallback_phases)

    @property
    def measured(self) -> bool:
        """True when every phase comes from the timing-model table."""
        return not self.fallback_phases

    @property
    def phase_sources(self) -> Dict[str, str]:
        return {ph: ("roofline" if ph in self.fallback_phases else "table") for ph in PHASES}

    @classmethod
    def load(cls, path: str, **kw) -> "KernelTable":
        """Reads the table through limits.read_json: a regular file of at
        most MAX_TABLE_BYTES, nested at most MAX_JSON_DEPTH levels."""
        from .limits import MAX_TABLE_BYTES, read_json
        return cls(read_json(path, "kernel table", MAX_TABLE_BYTES), path, **kw)

    @property
    def label(self) -> str:
        lab = f"{' and '.join(self.table_phases)}: timing-model table {self.path} ({self.source})"
        if self.fallback_phases:
            lab += (f"; {' and '.join(self.fallback_phases)}: {self.fallback.label} "
                    f"(asked for: --prefill-kernel-model roofline)")
        return lab

    def bind(self, head_dim: int, gqa: int, block_size: int, formats) -> None:
        """Fix the model's kernel parameters; every needed (format, phase)
        must be in the table, except the phases asked of the fallback."""
        if self.fallback is not None:
            self.fallback.bind(head_dim, gqa, block_size, formats)
        missing = [f"{f}/{ph}" for f in formats for ph in self.table_phases
                   if (f, ph, head_dim, gqa, block_size) not in self.entries]
        if missing:
            have = sorted({f"{k[0]}/{k[1]} D={k[2]} gqa={k[3]} block={k[4]}"
                           for k in self.entries})
            hint = ""
            if any(m.endswith("/prefill") for m in missing):
                hint = (" (`uq-kernel-report --table --prefill-shapes` writes prefill "
                        "entries; --prefill-kernel-model roofline times prefill with "
                        "the roofline instead)")
            raise ValueError(
                f"{self.path} has no kernel for head_dim={head_dim} gqa={gqa} "
                f"block_size={block_size}: {', '.join(missing)} (it has: {'; '.join(have)})"
                f"{hint}")
        self.bound = (head_dim, gqa, block_size)

    def attention_us(self, fmt: str, phase: str, batch: int, kv_heads: int,
                     context: float, query_len: float) -> float:
        if self.bound is None:
            raise RuntimeError("KernelTable.bind() first")
        if phase in self.fallback_phases:
            return self.fallback.attention_us(fmt, phase, batch, kv_heads, context, query_len)
        e = self.entries[(fmt, phase) + self.bound]
        scale = 1.0
        if phase == "prefill" and batch > 1 and e.single_chunk:
            # A table of single chunks: `batch` chunks of query_len tokens
            # over `context` are one chunk of batch x query_len tokens with
            # the same keys (its context c + (batch - 1) q / 2) when such a
            # chunk fits its context; else `batch` launches of one chunk
            # (an upper bound: the chunks share one launch).
            total = float(batch) * query_len
            c_eq = float(context) + (batch - 1) * float(query_len) / 2
            if c_eq >= total:
                context, query_len = c_eq, total
            else:
                scale = float(batch)
            batch = 1
        t, factor = e.at(float(batch * kv_heads * query_len), float(context))
        t *= scale
        self.lookups += 1
        if factor > 1.0 + 1e-9:
            self.extrapolated += 1
            self.max_factor = max(self.max_factor, factor)
            if factor > self.limit and not self.allow:
                raise ExtrapolationError(
                    f"{self.path}: {fmt} {phase} at batch={batch} kv_heads={kv_heads} "
                    f"context={context:.0f} query_len={query_len:.0f} is {factor:.1f}x "
                    f"outside the table (limit {self.limit}x; --allow-extrapolation to "
                    f"extrapolate anyway)")
        return t

    def notes(self) -> List[str]:
        n = [f"kernel times: {self.label}"]
        if self.extrapolated:
            n.append(f"EXTRAPOLATED {self.extrapolated} of {self.lookups} table lookups "
                     f"(up to {self.max_factor:.2f}x beyond the table's range)")
        if self.fallback_phases:
            n += self.fallback.notes()
            n.append(f"NOT MEASURED: {' and '.join(self.fallback_phases)} attention times come "
                     f"from the roofline model (asked for); "
                     f"{' and '.join(self.table_phases)} times from the timing model of the "
                     f"compiled kernels (a model)")
        else:
            n.append(f"NOT MEASURED: {' and '.join(self.table_phases)} attention times come "
                     f"from the gfx950 timing model of the compiled kernels (a model, "
                     f"not hardware)")
        return n


class RooflineKernels:
    """Attention time = max(HBM bytes / achievable bandwidth, MFMA FLOPs /
    achievable peak) + a launch cost. NOT MEASURED: a model of the hardware.

    Bytes: the cached K/V of every sequence (format bytes), the new tokens'
    bf16 K/V in and their cache slots out, the bf16 queries and outputs.
    FLOPs: QK and PV, 2 per multiply-add, with MFMA rows padded to 16 (a
    decode step of a GQA group of g < 16 heads pays 16 rows). Operand rates
    (docs/gpu-kernels.md): bf16 QK and PV at the bf16 rate; fp8 at the fp8
    rate; UltraQuant QK at the fp8 rate (FP8 query x FP4 key scaled MFMA
    issues like FP8, ../shared/docs/gfx950-notes.md) and PV at the bf16 rate
    (V converted to bf16). Not modelled: VALU work (FP4 -> bf16 conversion,
    softmax), LDS, occupancy; that is what the timing-model table adds.
    """

    measured = False

    def __init__(self, hw: Hardware, head_dim: int, gqa: int, launch_us: float = 4.0):
        self.hw, self.d, self.gqa, self.launch_us = hw, head_dim, gqa, launch_us
        self.lookups = 0
        self.extrapolated = 0
        self.max_factor = 1.0

    label = "ROOFLINE MODEL (not measured: HBM bytes / achievable bandwidth vs MFMA FLOPs / peak)"

    def bind(self, head_dim: int, gqa: int, block_size: int, formats) -> None:
        self.d, self.gqa = head_dim, gqa

    _rates = {"bf16": ("bf16", "bf16"), "fp8": ("fp8", "fp8"), "uq4": ("fp8", "bf16")}

    def attention_us(self, fmt: str, phase: str, batch: int, kv_heads: int,
                     context: float, query_len: float) -> float:
        self.lookups += 1
        d, q, c = self.d, float(query_len), float(context)
        slot = kv_bytes_per_token_head(fmt, d)
        nbytes = batch * kv_heads * (c * slot + q * (4 * d + slot) + q * self.gqa * d * 4)
        keys = q * (c - q) + q * (q + 1) / 2            # causal, per sequence and head
        rows = math.ceil(q * self.gqa / 16) * 16 / q    # padded query rows per token
        fl = 2 * 2 * rows * d * keys * kv_heads * batch  # QK and PV each 2*rows*d*keys
        rqk, rpv = self._rates[fmt]
        eff = self.hw.mfma_eff
        t_mfma = fl / 2 / (self.hw.peak_flops(rqk) * eff) + fl / 2 / (self.hw.peak_flops(rpv) * eff)
        t_mem = nbytes / self.hw.bw_bytes_s
        return max(t_mem, t_mfma) * 1e6 + self.launch_us

    def notes(self) -> List[str]:
        h = self.hw
        return [f"kernel times: {self.label}: {h.hbm_tb_s} TB/s x {h.bw_eff}, MFMA peak x "
                f"{h.mfma_eff}, {self.launch_us} us per launch"]


class GemmModel:
    """Time of the model's GEMMs (projections, MLP/experts, lm_head) for a
    step of ``tokens`` tokens on one GPU: the larger of streaming the weights
    the step touches from HBM and ``tokens * us_per_token``. The default
    ``us_per_token`` is 2 x active parameters / (the weights' MFMA peak x
    mfma_eff). For a MoE the expected fraction of experts touched by
    ``tokens`` tokens routed uniformly at random is 1 - (1 - k/E)^tokens.
    Attention's own projections are in the active parameters; the attention
    product itself is the kernel model's."""

    def __init__(self, hw: Hardware, model: ModelShape, tp: int = 1,
                 us_per_token: Optional[float] = None, weight_bytes: Optional[float] = None):
        bpp = model.weight_bytes_per_param
        total = model.weight_bytes if weight_bytes is None else weight_bytes
        self.routed_bytes = model.routed_params * bpp / tp
        self.dense_bytes = total / tp - self.routed_bytes
        self.bw = hw.bw_bytes_s
        self.k_over_e = (model.experts_per_token / model.experts) if model.experts else 0.0
        flops = 2.0 * model.params_active / tp
        self.default_us_per_token = flops / (hw.peak_flops(model.weight_dtype) * hw.mfma_eff) * 1e6
        self.us_per_token = self.default_us_per_token if us_per_token is None else us_per_token
        if self.us_per_token < 0 or self.dense_bytes < 0:
            raise ValueError("GEMM time per token and weight bytes must be >= 0")

    def step_us(self, tokens: int) -> float:
        if tokens <= 0:
            return 0.0
        cover = 1.0 - (1.0 - self.k_over_e) ** tokens if self.k_over_e else 0.0
        stream = (self.dense_bytes + self.routed_bytes * cover) / self.bw * 1e6
        return max(stream, tokens * self.us_per_token)
