"""Limits on uq-serving's inputs and bounded reads (docs/serving.md,
"Input limits"; docs/robustness.md).

Every number the command line takes is checked against a range here before
anything runs (finite, integer where a count is meant); every file it reads
goes through :func:`read_json`: a regular file only (``/dev/zero`` or a FIFO
would never end), at most a given size, nested at most ``MAX_JSON_DEPTH``
levels. The limits are far above any real setup and keep every run bounded
in time and memory: the simulator's work grows with sessions x rounds x
tokens, and its memory with the number of KV blocks it simulates.
"""

from __future__ import annotations

import json
import math
import os
import stat
from typing import Any

#: Concurrent sessions of one run (and the largest --max-sessions-limit).
MAX_SESSIONS = 4096
#: Rounds per session.
MAX_ROUNDS = 1000
#: Requests (sessions x rounds) of one simulation.
MAX_REQUESTS = 1 << 16
#: Output tokens of all requests of one simulation (each is one decode
#: step of its sequence: the simulator's time grows with them).
MAX_OUTPUT_TOKENS = 1 << 24
#: Any token count: the common prefix and every distribution's values (a
#: draw above it is capped at it); 16M tokens, beyond every model's context.
MAX_TOKENS = 1 << 24
#: Any duration in seconds: the ramp and the think-time distribution.
MAX_SECONDS = 1e6
#: KV blocks the engine simulates at once (its memory is about 100 bytes per
#: block). A larger KV budget is simulated with fewer blocks when the
#: workload can never fill it (study.simulated_blocks), else refused.
MAX_SIM_BLOCKS = 1 << 22
#: Bytes of a kernel table, of a precision-policy JSON, of a manifest.
MAX_TABLE_BYTES = 64 << 20
MAX_POLICY_BYTES = 16 << 20       # as the C++ tools (InputLimits::kMaxPolicyBytes)
#: Nesting of any JSON input (the real ones nest 4 levels).
MAX_JSON_DEPTH = 64


def _depth(v: Any) -> int:
    """Nesting depth of a parsed JSON value, without recursion."""
    deepest, stack = 0, [(v, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, (dict, list)):
            deepest = max(deepest, d)
            if deepest > MAX_JSON_DEPTH:
                return deepest
            stack.extend((y, d + 1) for y in (x.values() if isinstance(x, dict) else x))
    return deepest


def read_json(path: str, what: str, limit: int) -> Any:
    """The JSON value in ``path``; ValueError naming ``what`` and the file
    for anything but a regular UTF-8 JSON file of at most ``limit`` bytes
    nested at most MAX_JSON_DEPTH levels deep."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise ValueError(f"cannot read {what} {path}: {e.strerror}")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"cannot read {what} {path}: not a regular file")
    if st.st_size > limit:
        raise ValueError(f"{what} {path} has {st.st_size} bytes, more than the limit of "
                         f"{limit}")
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise ValueError(f"cannot read {what} {path}: {e.strerror}")
    if len(data) > limit:
        raise ValueError(f"{what} {path} grew past the limit of {limit} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (byte {e.start})")
    try:
        v = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON: {e}")
    except RecursionError:
        v = None
        deep = True
    else:
        deep = _depth(v) > MAX_JSON_DEPTH
    if deep:
        raise ValueError(f"{path}: JSON nested deeper than {MAX_JSON_DEPTH} levels, "
                         "uq-serving's limit")
    return v


def check_number(name: str, v, lo=None, hi=None, integer: bool = False,
                 lo_open: bool = False) -> None:
    """ValueError unless ``v`` is a finite number (an int when ``integer``)
    in [lo, hi] ((lo, hi] when ``lo_open``)."""
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if ok and integer:
        ok = isinstance(v, int)
    if ok and lo is not None:
        ok = v > lo if lo_open else v >= lo
    if ok and hi is not None:
        ok = v <= hi
    if not ok:
        raise ValueError(f"{name} must be {describe(lo, hi, integer, lo_open)}, got {v!r}")


def _n(x) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


def describe(lo, hi, integer: bool, lo_open: bool) -> str:
    kind = "an integer" if integer else "a finite number"
    if lo is not None and hi is not None:
        return f"{kind} in {'(' if lo_open else '['}{_n(lo)}, {_n(hi)}]"
    if lo is not None:
        return f"{kind} {'>' if lo_open else '>='} {_n(lo)}"
    if hi is not None:
        return f"{kind} <= {_n(hi)}"
    return kind
