"""Workloads: rounds of concurrent sessions whose prefixes grow.

Structure after vLLM's multi-turn benchmark
(vllm/benchmarks/multi_turn/benchmark_serving_multi_turn.py): each client
holds one conversation, sends the whole history plus a new user turn, waits
for the streamed answer, optionally sleeps (a Poisson process per client),
and sends the next turn; the answer becomes part of the next prompt. Token
counts are drawn from distributions as in its generate_multi_turn.json
(constant, uniform, lognormal with an optional cap). Here a session is a
client with one conversation of ``rounds`` turns:

    prompt(round r) = common + prefix + sum_{j<=r} user_j + sum_{j<r} output_j

``common`` tokens are shared by every session (a system prompt; one copy in
the prefix cache), ``prefix`` is the session's own long context sent in
round 1 (documents, repository, tool descriptions), ``user_j`` the new
tokens of turn j (a user message or tool results), ``output_j`` the answer.
After answer r the session waits ``think`` seconds before round r + 1.

Deterministic: session s draws from numpy's PCG64 seeded with (seed, s), so
its plan does not depend on how many sessions run (the concurrency search
reuses the same first sessions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional

import numpy as np

from .limits import MAX_ROUNDS, MAX_SECONDS, MAX_SESSIONS, MAX_TOKENS, _n, check_number


class Dist:
    """A distribution given as a string:

    ``N`` or ``const:N``; ``uniform:A:B`` (integers A..B inclusive, or reals
    for times); ``lognormal:MEAN[:MEDIAN_RATIO[:MAX]]`` (mean MEAN, median
    MEDIAN_RATIO x MEAN, default 0.7, capped at MAX); ``exp:MEAN``
    (exponential). Every argument is at most ``maximum`` (token counts:
    limits.MAX_TOKENS, seconds: limits.MAX_SECONDS), and so is every draw
    (a lognormal without a cap, or an exponential, is capped there)."""

    def __init__(self, spec: str, integer: bool = True, minimum: float = 0.0,
                 maximum: float = MAX_TOKENS):
        self.spec = str(spec).strip()
        self.integer = integer
        self.minimum = minimum
        self.maximum = maximum
        parts = self.spec.split(":")
        kind, args = parts[0], parts[1:]
        try:
            if len(parts) == 1:
                kind, args = "const", [parts[0]]
            vals = [float(a) for a in args]
        except ValueError:
            raise ValueError(f"bad distribution {self.spec!r}: arguments must be numbers")
        if any(not math.isfinite(v) for v in vals):
            raise ValueError(f"bad distribution {self.spec!r}: arguments must be finite")
        if any(abs(v) > maximum for v in vals):
            raise ValueError(f"bad distribution {self.spec!r}: arguments must be at most "
                             f"{_n(maximum)} (docs/serving.md, \"Input limits\")")
        self.kind = kind
        if kind == "const" and len(vals) == 1:
            self.args = vals
        elif kind == "uniform" and len(vals) == 2 and vals[0] <= vals[1]:
            self.args = vals
        elif kind == "lognormal" and 1 <= len(vals) <= 3 and vals[0] > 0:
            mean = vals[0]
            ratio = vals[1] if len(vals) > 1 else 0.7
            if not 0 < ratio <= 1:
                raise ValueError(f"bad distribution {self.spec!r}: median ratio in (0, 1]")
            cap = vals[2] if len(vals) > 2 else math.inf
            # median = exp(mu), mean = exp(mu + sigma^2 / 2)
            self.args = [math.log(ratio * mean), math.sqrt(2 * math.log(1 / ratio)), cap]
        elif kind == "exp" and len(vals) == 1 and vals[0] >= 0:
            self.args = vals
        else:
            raise ValueError(
                f"bad distribution {self.spec!r}: use N, const:N, uniform:A:B, "
                "lognormal:MEAN[:MEDIAN_RATIO[:MAX]] or exp:MEAN")
        lo = self.args[0] if kind in ("const", "uniform") else None
        if lo is not None and lo < minimum:
            raise ValueError(f"bad distribution {self.spec!r}: values must be >= {minimum:g}")

    def sample(self, rng: np.random.Generator) -> float:
        k, a = self.kind, self.args
        if k == "const":
            v = a[0]
        elif k == "uniform":
            v = float(rng.integers(int(a[0]), int(a[1]) + 1)) if self.integer \
                else float(rng.uniform(a[0], a[1]))
        elif k == "lognormal":
            v = min(float(rng.lognormal(a[0], a[1])), a[2])
        else:
            v = float(rng.exponential(a[0])) if a[0] > 0 else 0.0
        v = min(v, self.maximum)
        if self.integer:
            v = float(round(v))
        return max(v, self.minimum)

    def __str__(self):
        return self.spec


@dataclass
class SessionPlan:
    sid: int
    start_s: float
    common: int
    new_tokens: List[int]          # per round: tokens appended before the request
    output_tokens: List[int]       # per round
    think_s: List[float]           # per round: wait after its answer

    @property
    def rounds(self) -> int:
        return len(self.new_tokens)

    def prompt_len(self, r: int) -> int:
        """Prompt tokens of round r (0-based)."""
        return sum(self.new_tokens[:r + 1]) + sum(self.output_tokens[:r])

    def total_tokens(self) -> int:
        return self.prompt_len(self.rounds - 1) + self.output_tokens[-1]


@dataclass
class Workload:
    sessions: int = 32
    rounds: int = 6
    common: int = 0
    prefix: str = "lognormal:2000:0.7:16000"
    user: str = "lognormal:150:0.7:1000"
    output: str = "lognormal:300:0.7:2000"
    think: str = "0"
    ramp_s: float = 0.0
    seed: int = 0

    def __post_init__(self):
        check_number("sessions", self.sessions, 1, MAX_SESSIONS, integer=True)
        check_number("rounds", self.rounds, 1, MAX_ROUNDS, integer=True)
        check_number("common prefix", self.common, 0, MAX_TOKENS, integer=True)
        check_number("ramp (s)", self.ramp_s, 0, MAX_SECONDS)
        check_number("seed", self.seed, 0, (1 << 63) - 1, integer=True)
        self._prefix = Dist(self.prefix, minimum=0)
        self._user = Dist(self.user, minimum=1)
        self._output = Dist(self.output, minimum=1)
        self._think = Dist(self.think, integer=False, minimum=0, maximum=MAX_SECONDS)

    def plans(self, sessions: Optional[int] = None) -> List[SessionPlan]:
        n = self.sessions if sessions is None else sessions
        out = []
        for s in range(n):
            rng = np.random.Generator(np.random.PCG64([self.seed, s]))
            prefix = int(self._prefix.sample(rng))
            new, outs, think = [], [], []
            for r in range(self.rounds):
                u = int(self._user.sample(rng))
                new.append(u + (self.common + prefix if r == 0 else 0))
                outs.append(int(self._output.sample(rng)))
                think.append(self._think.sample(rng))
            start = self.ramp_s * s / n if n > 1 else 0.0
            out.append(SessionPlan(s, start, self.common, new, outs, think))
        return out

    def describe(self) -> str:
        return (f"{self.sessions} sessions x {self.rounds} rounds; common prefix {self.common}, "
                f"session prefix {self.prefix}, per-round user {self.user}, output "
                f"{self.output} tokens; think {self.think} s; ramp {self.ramp_s} s; seed {self.seed}")


# Named workloads (docs/serving.md, "Workloads").
WORKLOADS = {
    # Chat: ShareGPT-like turn lengths (assumed; the data set is not here)
    # on a modest per-session context.
    "chat": dict(common=0, prefix="lognormal:2000:0.7:16000", user="lognormal:150:0.7:1000",
                 output="lognormal:300:0.7:2000", think="0"),
    # Agentic long context (the paper-like preset): a shared system prompt,
    # a short task, then large tool results every round, so that the
    # sessions' contexts grow ~9.5K tokens per round and 32 of them outgrow
    # an FP8 cache of the paper-like setup at GMU 0.60 around rounds 3-4
    # while UltraQuant's holds them (docs/serving.md, "The paper-like run").
    "agentic": dict(common=2000, prefix="lognormal:2000:0.8:8000",
                    user="lognormal:9000:0.7:24000", output="lognormal:500:0.7:2000",
                    think="0"),
}
