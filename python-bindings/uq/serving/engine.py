"""The engine: paged KV blocks, a prefix cache with LRU eviction, recompute
on a miss, continuous batching and chunked prefill, after vLLM's V1
scheduler and KV-cache manager (vllm/v1/core/sched/scheduler.py,
vllm/v1/core/kv_cache_manager.py, vllm/v1/core/block_pool.py,
single_type_kv_cache_manager.py). What is modelled:

- Blocks of ``block_size`` tokens over all layers. A block becomes cached
  (reusable by a later request with the same tokens) once it is full of
  computed tokens; a session's block i is identified by (session, i), the
  blocks wholly inside the shared common prefix by their index alone.
- Free blocks sit in one queue; allocation takes the head, evicting its
  cached contents. A finished or preempted request frees its blocks tail
  first (vLLM frees in reverse so that a sequence's tail is evicted before
  its head), and a cache hit takes a free block out of the queue. That is
  LRU over requests' release times.
- A new request first looks up its longest cached prefix of full blocks
  (at most length - 1 tokens: one token is always computed), then prefills
  the rest: a miss is recompute over everything not resident.
- Each step: running requests first, in admission order (one token for a
  decoding request, the next chunk for a prefilling one), then waiting
  requests in arrival order, within ``max_batched_tokens`` tokens and
  ``max_seqs`` sequences. A running request that cannot get a block
  preempts the most recently admitted running request (its blocks are
  freed, cached; it later resumes through the prefix cache); no waiting
  request is admitted in a step that preempted.
- A request whose known tokens are all computed samples a token at the end
  of the step; its first one is the TTFT.

Step time = attention (kernel model, every layer, one decode and one
prefill launch per format present) + GEMMs (``GemmModel``) + a fixed
per-step overhead.
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from .model import KVLayout
from .workload import SessionPlan


class SimulationError(ValueError):
    pass


@dataclass
class EngineConfig:
    block_size: int = 16
    max_batched_tokens: int = 8192      # vLLM's default for >= 70 GiB GPUs (OpenAI server)
    max_seqs: int = 1024
    step_overhead_us: float = 1000.0
    prefix_caching: bool = True
    max_steps: int = 5_000_000

    def __post_init__(self):
        for k in ("block_size", "max_batched_tokens", "max_seqs", "max_steps"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{k} must be a positive integer, got {v!r}")
        v = self.step_overhead_us
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise ValueError(f"step overhead must be a finite number >= 0, got {v!r}")


class BlockPool:
    """KV blocks with reference counts, a hash -> block map of cached full
    blocks, and the free queue (head = next evicted)."""

    def __init__(self, num_blocks: int):
        if num_blocks < 1:
            raise ValueError(f"the KV cache needs at least one block, got {num_blocks}")
        self.n = num_blocks
        self.ref = [0] * num_blocks
        self.key: List[Optional[int]] = [None] * num_blocks
        self.cached: Dict[int, int] = {}
        self.free: "OrderedDict[int, None]" = OrderedDict((b, None) for b in range(num_blocks))
        self.evictions = 0
        self.allocated = 0
        self.versions: Dict[int, int] = {}

    def num_free(self) -> int:
        return len(self.free)

    def lookup(self, keys) -> List[int]:
        """Blocks of the longest cached prefix of ``keys``."""
        out = []
        get = self.cached.get
        for k in keys:
            b = get(k)
            if b is None:
                break
            out.append(b)
        return out

    def version(self, owner: int) -> int:
        """Changes whenever a block keyed by ``owner`` (a session id, or -1
        for the common prefix) is cached or evicted."""
        return self.versions.get(owner, 0)

    def _bump(self, key: int) -> None:
        o = key >> 32 if key >= 0 else -1
        self.versions[o] = self.versions.get(o, 0) + 1

    def touch(self, blocks: List[int]) -> None:
        for b in blocks:
            if self.ref[b] == 0:
                del self.free[b]
            self.ref[b] += 1

    def allocate(self, k: int) -> List[int]:
        if k > len(self.free):
            raise SimulationError(f"allocate {k} blocks with {len(self.free)} free")
        out = []
        for _ in range(k):
            b, _ = self.free.popitem(last=False)
            key = self.key[b]
            if key is not None:
                del self.cached[key]
                self.key[b] = None
                self.evictions += 1
                self._bump(key)
            self.ref[b] = 1
            out.append(b)
        self.allocated += k
        return out

    def release(self, blocks: List[int]) -> None:
        """Free a request's blocks, tail first."""
        for b in reversed(blocks):
            self.ref[b] -= 1
            if self.ref[b] == 0:
                self.free[b] = None
            elif self.ref[b] < 0:
                raise SimulationError(f"block {b} released twice")

    def commit(self, b: int, key: int) -> None:
        """Block ``b`` is full of computed tokens ``key``: make it reusable
        (unless another block already holds the same tokens)."""
        if key not in self.cached and self.key[b] is None:
            self.cached[key] = b
            self.key[b] = key
            self._bump(key)


class Request:
    __slots__ = ("plan", "rnd", "arrival", "prompt_len", "output_len", "prev_len",
                 "num_computed", "blocks", "committed", "outputs", "first_token",
                 "finish", "hit_tokens", "preemptions", "prefill_tokens", "memo")

    def __init__(self, plan: SessionPlan, rnd: int, arrival: float):
        self.plan, self.rnd, self.arrival = plan, rnd, arrival
        self.prompt_len = plan.prompt_len(rnd)
        self.output_len = plan.output_tokens[rnd]
        self.prev_len = self.prompt_len - plan.new_tokens[rnd]
        self.num_computed = 0
        self.blocks: List[int] = []
        self.committed = 0
        self.outputs = 0
        self.first_token: Optional[float] = None
        self.finish: Optional[float] = None
        self.hit_tokens: Optional[int] = None
        self.preemptions = 0
        self.prefill_tokens = 0
        self.memo = None

    @property
    def length(self) -> int:
        return self.prompt_len + self.outputs


class Simulator:
    """Runs session plans through the engine; times in microseconds."""

    def __init__(self, layout: KVLayout, num_blocks: int, kernels, gemm,
                 config: Optional[EngineConfig] = None):
        self.layout = layout
        self.cfg = config or EngineConfig()
        self.pool = BlockPool(num_blocks)
        self.kernels = kernels
        self.gemm = gemm
        self.groups = layout.layer_groups()
        self.steps = 0
        self.busy_us = 0.0
        self.step_log: Optional[list] = None        # set to [] to record steps

    # -- keys of a session's token blocks --
    def _key(self, plan: SessionPlan, i: int) -> int:
        if (i + 1) * self.cfg.block_size <= plan.common:
            return -(i + 1)
        return (plan.sid << 32) | i

    def _hit(self, r: Request, n: int) -> List[int]:
        """Cached blocks of the first ``n`` blocks of ``r``'s tokens (memoised
        until a block of its session or of the common prefix changes)."""
        pool, sid = self.pool, r.plan.sid
        tag = (n, pool.version(sid), pool.version(-1))
        if r.memo is not None and r.memo[0] == tag:
            return r.memo[1]
        cb = min(r.plan.common // self.cfg.block_size, n)
        base = sid << 32
        keys = [-(i + 1) for i in range(cb)]
        keys += range(base + cb, base + n)
        hit = pool.lookup(keys)
        r.memo = (tag, hit)
        return hit

    # -- timing --
    def step_us(self, decode: List[Tuple[int, int]], prefill: List[Tuple[int, int]]) -> float:
        """Time of one step. ``decode``: (context, 1) per decoding sequence;
        ``prefill``: (context, new tokens) per prefill chunk; contexts count
        the new tokens."""
        K = self.kernels
        attn = 0.0
        tokens = len(decode) + sum(q for _, q in prefill)
        if decode:
            c_dec = sum(c for c, _ in decode) / len(decode)
        if prefill:
            qs = sum(q for _, q in prefill)
            c_pre = sum(c * q for c, q in prefill) / qs      # FLOP-weighted context
            q_pre = qs / len(prefill)
        for nlayers, sig in self.groups:
            per = 0.0
            for fmt, heads in sig:
                if decode:
                    per += K.attention_us(fmt, "decode", len(decode), heads, c_dec, 1)
                if prefill:
                    per += K.attention_us(fmt, "prefill", len(prefill), heads, c_pre, q_pre)
            attn += nlayers * per
        return attn + self.gemm.step_us(tokens) + self.cfg.step_overhead_us

    # -- scheduling --
    def _blocks_for(self, tokens: int) -> int:
        bs = self.cfg.block_size
        return (tokens + bs - 1) // bs

    def _preempt(self, r: Request) -> None:
        self.pool.release(r.blocks)
        r.blocks, r.num_computed, r.committed = [], 0, 0
        r.preemptions += 1
        self.waiting.appendleft(r)

    def _schedule(self) -> List[Tuple[Request, int]]:
        cfg, pool = self.cfg, self.pool
        budget = cfg.max_batched_tokens
        out: List[Tuple[Request, int]] = []
        preempted = False
        i = 0
        while i < len(self.running) and budget > 0:
            r = self.running[i]
            n = min(r.length - r.num_computed, budget)
            need = self._blocks_for(r.num_computed + n) - len(r.blocks)
            self_preempted = False
            while need > pool.num_free():
                victim = self.running.pop()
                self._preempt(victim)
                preempted = True
                if victim is r:
                    self_preempted = True
                    break
            if self_preempted:
                break
            r.blocks += pool.allocate(need)
            out.append((r, n))
            budget -= n
            i += 1
        if preempted:
            return out
        bs = cfg.block_size
        while self.waiting and budget > 0 and len(self.running) < cfg.max_seqs:
            r = self.waiting[0]
            L = r.length
            hit = self._hit(r, (L - 1) // bs) if cfg.prefix_caching else []
            computed = len(hit) * bs
            n = min(L - computed, budget)
            need = self._blocks_for(computed + n) - len(hit)
            if need > pool.num_free():
                break
            # Hit blocks still in the free queue are not free for this
            # request. A session's own blocks are only ever held by its one
            # request, so only common-prefix hits can be held by others.
            ref = pool.ref
            cb = min(r.plan.common // bs, len(hit))
            held = sum(1 for b in hit[:cb] if ref[b] > 0)
            if need + len(hit) - held > pool.num_free():
                break
            r.memo = None
            pool.touch(hit)
            r.blocks = hit + pool.allocate(need)
            r.num_computed = computed
            r.committed = len(hit)
            if r.hit_tokens is None:
                r.hit_tokens = computed
            self.waiting.popleft()
            self.running.append(r)
            out.append((r, n))
            budget -= n
        return out

    # -- the run --
    def run(self, plans: List[SessionPlan]) -> List[Request]:
        cfg = self.cfg
        for p in plans:
            need = self._blocks_for(p.total_tokens())
            if need > self.pool.n:
                raise SimulationError(
                    f"session {p.sid} reaches {p.total_tokens()} tokens = {need} blocks, more "
                    f"than the whole KV cache ({self.pool.n} blocks of {cfg.block_size}): "
                    "vLLM would refuse it (max_model_len)")
        self.waiting: deque = deque()
        self.running: List[Request] = []
        arrivals: list = []
        for p in plans:
            heapq.heappush(arrivals, (p.start_s * 1e6, p.sid, 0, p))
        done: List[Request] = []
        now = 0.0
        spins = 0
        while arrivals or self.waiting or self.running:
            while arrivals and arrivals[0][0] <= now:
                t, _, rnd, p = heapq.heappop(arrivals)
                self.waiting.append(Request(p, rnd, t))
            if not self.waiting and not self.running:
                now = arrivals[0][0]
                continue
            sched = self._schedule()
            if not sched:
                spins += 1
                if spins < 3:
                    continue          # a preemption emptied the step; retry
                head = self.waiting[0] if self.waiting else None
                raise SimulationError(
                    "the scheduler made no progress" + (
                        f": session {head.plan.sid} (round {head.rnd + 1}) cannot be admitted"
                        if head else ""))
            spins = 0
            self.steps += 1
            if self.steps > cfg.max_steps:
                raise SimulationError(f"more than {cfg.max_steps} engine steps")
            decode, prefill = [], []
            for r, n in sched:
                if n == 1 and r.outputs > 0 and r.num_computed == r.length - 1:
                    decode.append((r.num_computed + 1, 1))
                else:
                    prefill.append((r.num_computed + n, n))
            dt = self.step_us(decode, prefill)
            if not (math.isfinite(dt) and dt >= 0 and math.isfinite(now + dt)):
                # Kernel or GEMM times past what a float holds (extreme
                # hardware numbers): stop rather than simulate with inf/NaN.
                raise SimulationError(
                    f"step {self.steps} took {dt!r} us (at {now!r} us): the times are not "
                    "finite; check the hardware and kernel-time options")
            if self.step_log is not None:
                self.step_log.append((now, dt, [(r.plan.sid, r.rnd, n) for r, n in sched]))
            now += dt
            self.busy_us += dt
            bs = cfg.block_size
            for r, n in sched:
                if not (r.outputs > 0 and n == 1 and r.num_computed == r.length - 1):
                    r.prefill_tokens += n
                r.num_computed += n
                full = r.num_computed // bs
                while r.committed < full:
                    self.pool.commit(r.blocks[r.committed], self._key(r.plan, r.committed))
                    r.committed += 1
                if r.num_computed == r.length:
                    r.outputs += 1
                    if r.first_token is None:
                        r.first_token = now
                    if r.outputs == r.output_len:
                        r.finish = now
                        self.running.remove(r)
                        self.pool.release(r.blocks)
                        r.blocks = []
                        done.append(r)
                        p = r.plan
                        if r.rnd + 1 < p.rounds:
                            heapq.heappush(arrivals, (now + p.think_s[r.rnd] * 1e6, p.sid,
                                                      r.rnd + 1, p))
        return done
