"""One simulated deployment per KV format: setup, run, per-round summary,
and the concurrency search."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from .engine import EngineConfig, Request, Simulator
from .kernels import GemmModel
from .limits import MAX_OUTPUT_TOKENS, MAX_REQUESTS, MAX_SIM_BLOCKS
from .model import GiB, Hardware, KVLayout, ModelShape, kv_budget_bytes, kv_layout
from .workload import Workload

PCTS = (50, 90, 99)
# Round groups the paper reports (arXiv 2606.20474, abstract):
# warm rounds 2-3, late (cache-pressured) rounds 4-6, all rounds.
GROUPS = {"warm 2-3": (2, 3), "late 4-6": (4, 6), "all": (1, 10 ** 9)}


@dataclass
class Setup:
    """Everything but the KV format."""
    model: ModelShape
    hw: Hardware
    workload: Workload
    engine: EngineConfig
    kernels: object                   # KernelTable | RooflineKernels
    tp: int = 1
    gmu: float = 0.9
    reserved_gib: float = 8.0
    kv_gib: Optional[float] = None    # KV budget per GPU, overriding gmu
    gemm_us_per_token: Optional[float] = None

    def kv_bytes(self) -> float:
        if self.kv_gib is not None:
            if self.kv_gib <= 0:
                raise ValueError(f"KV budget must be > 0 GiB, got {self.kv_gib}")
            return self.kv_gib * GiB
        return kv_budget_bytes(self.hw, self.model, self.tp, self.gmu, self.reserved_gib)


def capacity(setup: Setup, layout: KVLayout) -> Dict[str, float]:
    per_token = layout.bytes_per_token()
    budget = setup.kv_bytes()
    blocks = int(budget // (per_token * setup.engine.block_size))
    return {"kv_gib_per_gpu": budget / GiB, "bytes_per_token_per_gpu": per_token,
            "blocks": blocks, "tokens": blocks * setup.engine.block_size}


def simulated_blocks(blocks: int, plans, block_size: int) -> int:
    """KV blocks to simulate for a budget of ``blocks``: at most the blocks
    the workload can ever allocate (every request's final length in blocks,
    summed over all requests). A pool at least that large never runs out,
    never evicts and never preempts, so any larger one gives the same
    results; only a budget that the workload could fill is simulated block
    by block, up to limits.MAX_SIM_BLOCKS."""
    demand = 0
    for p in plans:
        total = 0
        for r in range(p.rounds):
            total += p.new_tokens[r]
            demand += -(-(total + p.output_tokens[r]) // block_size)
            total += p.output_tokens[r]
    n = min(blocks, demand + 1)
    if n > MAX_SIM_BLOCKS:
        raise ValueError(f"the run would simulate {n} KV blocks, more than the limit of "
                         f"{MAX_SIM_BLOCKS} (docs/serving.md, \"Input limits\"): use a "
                         "larger --block-size or a smaller KV budget")
    return n


def _pct(xs: Sequence[float], p: float) -> Optional[float]:
    return float(np.percentile(np.asarray(xs, dtype=float), p)) if len(xs) else None


def summarize(reqs: List[Request], block_size: int, sim: Simulator) -> dict:
    """Per-round and per-group figures; times in ms."""
    rounds = sorted({r.rnd for r in reqs})
    per_round = []

    def stats(rs: List[Request]) -> dict:
        ttft = [(r.first_token - r.arrival) / 1e3 for r in rs]
        tpot = [(r.finish - r.first_token) / 1e3 / (r.output_len - 1)
                for r in rs if r.output_len > 1]
        prompt = sum(r.prompt_len for r in rs)
        hit = sum(r.hit_tokens for r in rs)
        d = {"requests": len(rs)}
        for p in PCTS:
            d[f"ttft_p{p}_ms"] = _pct(ttft, p)
            d[f"tpot_p{p}_ms"] = _pct(tpot, p)
        d["ttft_mean_ms"] = float(np.mean(ttft)) if ttft else None
        d["prompt_tokens"] = prompt
        d["hit_tokens"] = hit
        d["hit_rate"] = hit / prompt if prompt else None
        d["prefill_tokens"] = sum(r.prefill_tokens for r in rs)
        d["preemptions"] = sum(r.preemptions for r in rs)
        later = [r for r in rs if r.rnd > 0]
        d["resident_sessions"] = sum(
            1 for r in later if r.hit_tokens >= ((r.prev_len - 1) // block_size) * block_size)
        d["sessions_with_history"] = len(later)
        return d

    for k in rounds:
        d = stats([r for r in reqs if r.rnd == k])
        d["round"] = k + 1
        per_round.append(d)
    groups = {}
    for name, (a, b) in GROUPS.items():
        rs = [r for r in reqs if a <= r.rnd + 1 <= b]
        if rs:
            groups[name] = stats(rs)
    t0 = min(r.arrival for r in reqs)
    t1 = max(r.finish for r in reqs)
    outs = sum(r.output_len for r in reqs)
    return {"per_round": per_round, "groups": groups,
            "makespan_s": (t1 - t0) / 1e6,
            "output_tokens": outs,
            "output_tok_s": outs / ((t1 - t0) / 1e6) if t1 > t0 else None,
            "steps": sim.steps, "evicted_blocks": sim.pool.evictions,
            "allocated_blocks": sim.pool.allocated}


def run_format(setup: Setup, policy, label: str, sessions: Optional[int] = None) -> dict:
    """Simulate ``setup`` with KV ``policy`` (a spec string or a Policy)."""
    m = setup.model
    layout = kv_layout(m, policy, setup.tp, label)
    cap = capacity(setup, layout)
    if cap["blocks"] < 1:
        raise ValueError(f"{label}: the KV budget holds no block")
    setup.kernels.bind(m.head_dim, m.gqa, setup.engine.block_size, layout.kernel_formats())
    gemm = GemmModel(setup.hw, m, setup.tp, setup.gemm_us_per_token)
    plans = setup.workload.plans(sessions)
    if len(plans) * setup.workload.rounds > MAX_REQUESTS:
        raise ValueError(f"{len(plans)} sessions x {setup.workload.rounds} rounds is more "
                         f"than the limit of {MAX_REQUESTS} requests per simulation "
                         "(docs/serving.md, \"Input limits\")")
    outputs = sum(sum(p.output_tokens) for p in plans)
    if outputs > MAX_OUTPUT_TOKENS:
        raise ValueError(f"the workload draws {outputs} output tokens, more than the limit of "
                         f"{MAX_OUTPUT_TOKENS} per simulation (docs/serving.md, \"Input "
                         "limits\")")
    blocks = simulated_blocks(cap["blocks"], plans, setup.engine.block_size)
    sim = Simulator(layout, blocks, setup.kernels, gemm, setup.engine)
    reqs = sim.run(plans)
    out = summarize(reqs, setup.engine.block_size, sim)
    out.update({"label": label, "capacity": cap,
                "kv_formats": layout.kernel_formats(),
                "gemm_us_per_token": gemm.us_per_token})
    return out


def group_metric(res: dict, group: str, key: str) -> Optional[float]:
    g = res["groups"].get(group)
    return None if g is None else g.get(key)


def max_sessions(setup: Setup, policy, label: str, target_ms: float, pct: int = 90,
                 group: str = "all", limit: int = 512) -> dict:
    """Largest session count whose ``pct``-th percentile TTFT over ``group``
    rounds stays within ``target_ms``: doubling, then bisection (assumes the
    TTFT grows with concurrency; each probe is a full simulation)."""
    key = f"ttft_p{pct}_ms"
    probes = {}

    def ok(n: int) -> bool:
        if n not in probes:
            v = group_metric(run_format(setup, policy, label, sessions=n), group, key)
            probes[n] = v
        v = probes[n]
        return v is not None and v <= target_ms

    if not ok(1):
        return {"max_sessions": 0, "probes": probes}
    lo, hi = 1, 2
    while hi <= limit and ok(hi):
        lo, hi = hi, hi * 2
    if hi > limit:
        return {"max_sessions": lo, "probes": probes, "capped_at": limit}
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return {"max_sessions": lo, "probes": probes}
