"""uq-serving: multi-turn serving simulator (docs/serving.md).

    python3 -m uq.serving simulate [options]   # your model, GPU, workload
    python3 -m uq.serving paper [options]      # the paper-like setup, ratios vs the paper

Kernel times (decode and prefill attention) come from the timing-model
table (--kernel-table, default kernel-times.json in the build folder) or,
labelled as not measured, from a roofline (--kernel-model roofline; only
for prefill: --prefill-kernel-model roofline).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import List, Optional, Tuple

from . import limits as L
from .engine import EngineConfig
from .kernels import KernelTable, RooflineKernels
from .model import GiB, PRESETS, Hardware, preset, with_overrides
from .report import PAPER, format_run, paper_table, plot, ratios, summary_table, write_json
from .study import GROUPS, Setup, max_sessions, run_format
from .workload import WORKLOADS, Workload

PROG = "uq-serving"

SIMULATE_DEFAULTS = dict(model="llama-3.1-8b", tp=1, workload="chat", gmu="0.9")
PAPER_DEFAULTS = dict(model="minimax-m2.5", tp=2, workload="agentic", gmu="0.60,0.65")


def default_table_path() -> str:
    """kernel-times.json in the build folder whose uq package runs
    (<build>/python-bindings/uq), else <source>/build/kernel-times.json."""
    import uq
    build = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(uq.__file__)),
                                          "..", ".."))
    if os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        return os.path.join(build, "kernel-times.json")
    src = os.path.normpath(os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                        "..", "..", ".."))
    return os.path.join(src, "build", "kernel-times.json")


def _split_formats(s: str) -> List[str]:
    from ..quality.formats import split_specs
    return [x.strip() for x in split_specs(s) if x.strip()]


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line, `uq-serving: error: ...`, exit 1, like
    every other user error (not argparse's usage text and exit 2)."""

    def error(self, message):
        sys.stderr.write(f"{PROG}: error: {message}\n")
        sys.exit(1)


def _num(lo=None, hi=None, integer=False, lo_open=False):
    """An argparse type: a finite number (an integer when ``integer``) in
    [lo, hi] ((lo, hi] with ``lo_open``); the limits are in limits.py."""
    def conv(text: str):
        try:
            v = int(text, 10) if integer else float(text)
        except ValueError:
            v = None
        if v is not None:
            try:
                L.check_number("value", v, lo, hi, integer, lo_open)
            except ValueError:
                v = None
        if v is None:
            raise argparse.ArgumentTypeError(
                f"must be {L.describe(lo, hi, integer, lo_open)}, got {text!r}")
        return v
    conv.__name__ = "number"
    return conv


COUNT = _num(1, 4096, integer=True)          # heads, head_dim, layers
GIB = _num(0, 1 << 20)                         # memory sizes in GiB (up to 1 PiB)
US = _num(0, 1e6)                              # times in microseconds


def add_options(p: argparse.ArgumentParser, d: dict) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--model", default=d["model"], choices=PRESETS,
                   help=f"model shape preset (default {d['model']})")
    g.add_argument("--layers", type=COUNT)
    g.add_argument("--q-heads", type=COUNT)
    g.add_argument("--kv-heads", type=COUNT)
    g.add_argument("--head-dim", type=COUNT)
    g.add_argument("--params-b", type=_num(0, 1e6, lo_open=True), help="total parameters, billions")
    g.add_argument("--active-params-b", type=_num(0, 1e6, lo_open=True),
                   help="parameters whose GEMMs run per token, billions")
    g.add_argument("--weight-dtype", choices=("bf16", "fp8"),
                   help="weights' storage and GEMM MFMA rate")
    g.add_argument("--weights-gib", type=GIB,
                   help="weights of the whole model in GiB (default: params x dtype bytes)")
    g.add_argument("--tp", type=_num(1, 1024, integer=True), default=d["tp"],
                   help=f"tensor-parallel GPUs (default {d['tp']}); one GPU is simulated")
    g.add_argument("--shared", help="shared data folder for --model shared-lm")
    g = p.add_argument_group("KV formats")
    g.add_argument("--formats", default="bf16,fp8,uq",
                   help="uniform format specs to compare (default bf16,fp8,uq)")
    g.add_argument("--policy", action="append", default=[], metavar="FILE",
                   help="also simulate a precision-policy JSON (docs/precision-policy.md)")
    g = p.add_argument_group("hardware (default MI355X)")
    hw = Hardware()
    g.add_argument("--hbm-gib", type=_num(0, 1 << 20, lo_open=True), default=hw.hbm_gib)
    g.add_argument("--hbm-tb-s", type=_num(1e-3, 1e4), default=hw.hbm_tb_s)
    g.add_argument("--cus", type=_num(1, 1 << 16, integer=True), default=hw.cus)
    g.add_argument("--clock-ghz", type=_num(1e-2, 100), default=hw.clock_ghz)
    g.add_argument("--bw-eff", type=_num(1e-3, 1), default=hw.bw_eff,
                   help="achievable fraction of HBM bandwidth (default %(default)s)")
    g.add_argument("--mfma-eff", type=_num(1e-3, 1), default=hw.mfma_eff,
                   help="achievable fraction of MFMA peak (default %(default)s)")
    g = p.add_argument_group("memory")
    g.add_argument("--gmu", default=d["gmu"],
                   help=f"gpu_memory_utilization, comma-separated list (default {d['gmu']})")
    g.add_argument("--reserved-gib", type=GIB, default=8.0,
                   help="activation/graph memory per GPU outside the KV cache "
                        "(default %(default)s)")
    g.add_argument("--kv-gib", type=_num(0, 1 << 20, lo_open=True),
                   help="KV budget per GPU in GiB (replaces --gmu)")
    g = p.add_argument_group("workload")
    g.add_argument("--workload", default=d["workload"], choices=sorted(WORKLOADS),
                   help=f"distribution preset (default {d['workload']})")
    g.add_argument("--sessions", type=_num(1, L.MAX_SESSIONS, integer=True), default=32,
                   help=f"concurrent sessions (at most {L.MAX_SESSIONS})")
    g.add_argument("--rounds", type=_num(1, L.MAX_ROUNDS, integer=True), default=6)
    g.add_argument("--common", type=_num(0, L.MAX_TOKENS, integer=True), help="tokens shared by all sessions")
    g.add_argument("--prefix", help="session context in round 1 (tokens, distribution)")
    g.add_argument("--user", help="new input tokens per round (distribution)")
    g.add_argument("--output", help="output tokens per round (distribution)")
    g.add_argument("--think", help="seconds between an answer and the next round")
    g.add_argument("--ramp-s", type=_num(0, L.MAX_SECONDS), default=0.0,
                   help="sessions start evenly over this many seconds")
    g.add_argument("--seed", type=_num(0, (1 << 63) - 1, integer=True), default=0)
    g = p.add_argument_group("engine (vLLM V1 scheduler)")
    g.add_argument("--block-size", type=COUNT, default=16)
    g.add_argument("--max-batched-tokens", type=_num(1, 1 << 20, integer=True), default=8192)
    g.add_argument("--max-seqs", type=_num(1, 1 << 16, integer=True), default=1024)
    g.add_argument("--step-overhead-ms", type=_num(0, 1e6), default=1.0)
    g.add_argument("--no-prefix-caching", action="store_true")
    g = p.add_argument_group("kernel times")
    g.add_argument("--kernel-model", choices=("table", "roofline"), default="table",
                   help="table: timing-model predictions (default); roofline: NOT measured")
    g.add_argument("--prefill-kernel-model", choices=("table", "roofline"), default="table",
                   help="with --kernel-model table: prefill attention from the table's "
                        "prefill entries (default) or from the roofline (NOT measured)")
    g.add_argument("--kernel-table", metavar="FILE",
                   help="uq-kernel-report --table output (default: "
                        "<build>/kernel-times.json)")
    g.add_argument("--extrapolation-limit", type=_num(1, 1e6), default=2.0,
                   help="refuse lookups further than this factor outside the table")
    g.add_argument("--allow-extrapolation", action="store_true")
    g.add_argument("--launch-us", type=US, default=4.0,
                   help="roofline: cost of one attention launch (default %(default)s)")
    g.add_argument("--gemm-us-per-token", type=US,
                   help="GEMM time per token per GPU (default: 2 x active params / "
                        "(MFMA peak x mfma-eff))")
    g = p.add_argument_group("outputs")
    g.add_argument("--json", metavar="FILE", help="write all results as JSON")
    g.add_argument("--plots", metavar="DIR", help="write ttft_by_round.png here")
    g.add_argument("--ttft-target-ms", type=_num(0, 1e9, lo_open=True),
                   help="also search the most sessions meeting this TTFT")
    g.add_argument("--ttft-percentile", type=int, default=90, choices=(50, 90, 99))
    g.add_argument("--ttft-rounds", default="all", choices=sorted(GROUPS))
    g.add_argument("--max-sessions-limit", type=_num(1, L.MAX_SESSIONS, integer=True),
                   default=512)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", metavar="{simulate,paper}", parser_class=_Parser)
    sub.required = True
    s = sub.add_parser("simulate", help="simulate formats on a model, GPU and workload")
    add_options(s, SIMULATE_DEFAULTS)
    s = sub.add_parser("paper", help="the paper-like setup, with our ratios next to the "
                                     "paper's (arXiv 2606.20474)")
    add_options(s, PAPER_DEFAULTS)
    return p


#: Memory settings (--gmu values) and formats (--formats and --policy) of one
#: run: each pair is a full simulation.
MAX_SETTINGS = 16


def _gmus(s: str) -> List[float]:
    try:
        v = [float(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--gmu: comma-separated numbers expected, got {s!r}")
    if not v:
        raise ValueError("--gmu: at least one value")
    if len(v) > MAX_SETTINGS:
        raise ValueError(f"--gmu: {len(v)} values, more than the limit of {MAX_SETTINGS}")
    for x in v:
        if not 0 < x <= 1:          # also NaN
            raise ValueError(f"--gmu: gpu_memory_utilization must be in (0, 1], got {x}")
    return v


def _load_policy(path: str):
    """A precision policy read through the bounded reader (regular file, size
    and depth limits), with uq.quality.policy's checks."""
    from ..quality.policy import SCHEMA, Policy
    d = L.read_json(path, "policy", L.MAX_POLICY_BYTES)
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        got = d.get("schema") if isinstance(d, dict) else type(d).__name__
        raise ValueError(f"{path}: schema must be {SCHEMA!r}, got {got!r}")
    meta = {k: v for k, v in d.items()
            if k not in ("schema", "default", "overrides", "bits_per_element")}
    try:
        return Policy(d.get("default", "uq"), d.get("overrides", []), meta)
    except (TypeError, AttributeError, KeyError) as e:
        # A field of the wrong JSON type that Policy's checks do not name.
        raise ValueError(f"{path}: malformed policy: {e}")


def make_kernels(a, hw: Hardware, model):
    if a.kernel_model == "roofline":
        return RooflineKernels(hw, model.head_dim, model.gqa, a.launch_us)
    path = a.kernel_table or default_table_path()
    if not os.path.exists(path):
        raise ValueError(
            f"kernel table {path} not found: `ninja -C build kernel-times` (or "
            "`build/bin/uq-kernel-report --table build/kernel-times.json`) writes the "
            "default one; pass --kernel-table FILE for another, or use --kernel-model "
            "roofline for an unmeasured roofline estimate")
    # The roofline times prefill only when asked (--prefill-kernel-model
    # roofline); otherwise both phases come from the table.
    return KernelTable.load(path, limit=a.extrapolation_limit,
                            allow_extrapolation=a.allow_extrapolation,
                            fallback=RooflineKernels(hw, model.head_dim, model.gqa,
                                                     a.launch_us),
                            fallback_phases=(("prefill",)
                                             if a.prefill_kernel_model == "roofline" else ()))


def run(a) -> int:
    t_start = time.time()
    model = preset(a.model, a.shared)
    model = with_overrides(
        model, layers=a.layers, q_heads=a.q_heads, kv_heads=a.kv_heads, head_dim=a.head_dim,
        params_total=None if a.params_b is None else a.params_b * 1e9,
        params_active=None if a.active_params_b is None else a.active_params_b * 1e9,
        weight_dtype=a.weight_dtype,
        weight_bytes_per_param=None if a.weight_dtype is None else
        (2.0 if a.weight_dtype == "bf16" else 1.0))
    if a.weights_gib is not None:
        model = with_overrides(model,
                               weight_bytes_per_param=a.weights_gib * GiB / model.params_total)
    hw = Hardware(hbm_gib=a.hbm_gib, hbm_tb_s=a.hbm_tb_s, cus=a.cus, clock_ghz=a.clock_ghz,
                  bw_eff=a.bw_eff, mfma_eff=a.mfma_eff)
    kernels = make_kernels(a, hw, model)
    wk = dict(WORKLOADS[a.workload])
    for k in ("common", "prefix", "user", "output", "think"):
        v = getattr(a, k)
        if v is not None:
            wk[k] = v
    workload = Workload(sessions=a.sessions, rounds=a.rounds, ramp_s=a.ramp_s, seed=a.seed, **wk)
    engine = EngineConfig(block_size=a.block_size, max_batched_tokens=a.max_batched_tokens,
                          max_seqs=a.max_seqs, step_overhead_us=a.step_overhead_ms * 1e3,
                          prefix_caching=not a.no_prefix_caching)
    specs: List[Tuple[str, object]] = [(f, f) for f in _split_formats(a.formats)]
    if len(specs) + len(a.policy) > MAX_SETTINGS:
        raise ValueError(f"{len(specs) + len(a.policy)} formats and policies, more than the "
                         f"limit of {MAX_SETTINGS}")
    for path in a.policy:
        specs.append((f"policy:{os.path.basename(path)}", _load_policy(path)))
    if not specs:
        raise ValueError("no formats to simulate")
    mem = [("kv", a.kv_gib)] if a.kv_gib is not None else [("gmu", g) for g in _gmus(a.gmu)]

    kl = kernels.label
    out = [f"{PROG} {a.cmd}: kernel times: {kl}"]
    out.append(f"model: {model.source}; TP {a.tp}; {model.params_total:.3g} params "
               f"({model.params_active:.3g} active), weights "
               f"{model.weight_bytes / a.tp / GiB:.3g} GiB per GPU")
    out.append(f"hardware: {hw.name} {hw.hbm_gib:g} GiB HBM, {hw.hbm_tb_s:g} TB/s x "
               f"{hw.bw_eff:g}, {hw.cus} CUs @ {hw.clock_ghz:g} GHz, MFMA x {hw.mfma_eff:g}")
    out.append(f"workload: {workload.describe()}")
    out.append(f"engine: block {engine.block_size}, {engine.max_batched_tokens} tokens/step, "
               f"max {engine.max_seqs} seqs, {a.step_overhead_ms:g} ms/step overhead, prefix "
               f"caching {'on' if engine.prefix_caching else 'off'}")
    runs = []
    for kind, val in mem:
        setup = Setup(model, hw, workload, engine, kernels, tp=a.tp,
                      gmu=val if kind == "gmu" else 0.9, reserved_gib=a.reserved_gib,
                      kv_gib=val if kind == "kv" else None,
                      gemm_us_per_token=a.gemm_us_per_token)
        name = f"GMU {val:.2f}" if kind == "gmu" else f"KV {val:g} GiB/GPU"
        res = {}
        for label, pol in specs:
            r = run_format(setup, pol, label)
            if a.ttft_target_ms is not None:
                r["max_sessions"] = max_sessions(
                    setup, pol, label, a.ttft_target_ms, a.ttft_percentile, a.ttft_rounds,
                    a.max_sessions_limit)
            res[label] = r
        runs.append({"name": name, kind: val, "kv_gib_per_gpu": setup.kv_bytes() / GiB,
                     "formats": res})
        out.append("")
        out.append(f"== {name}: KV budget {setup.kv_bytes() / GiB:.3g} GiB per GPU" +
                   (f" (GMU x {hw.hbm_gib:g} GiB - weights - {a.reserved_gib:g} GiB reserve)"
                    if kind == "gmu" else "") + " ==")
        for label in res:
            out.append(format_run(res[label]))
            out.append("")
        out.append("P50 TTFT by round group, throughput" +
                   (f", most sessions with P{a.ttft_percentile} TTFT ({a.ttft_rounds}) <= "
                    f"{a.ttft_target_ms:g} ms" if a.ttft_target_ms is not None else ""))
        out.append(summary_table(res, None))

    comparison = None
    labels = [l for l, _ in specs]
    if "fp8" in labels and "uq" in labels:
        comparison = {run["name"]: ratios(run["formats"], "fp8", "uq") for run in runs}
        out.append("")
        out.append("UltraQuant against FP8 (P50 TTFT FP8/UQ: > 1 means UltraQuant is faster)")
        if a.cmd == "paper":
            keyed = {run.get("gmu", i): comparison[run["name"]] for i, run in enumerate(runs)}
            out.append(paper_table(keyed))
        else:
            from .report import table
            rows = [[run["name"]] + [f"{comparison[run['name']][k]:.2f}x"
                                     if comparison[run["name"]][k] else "-"
                                     for k in ("warm 2-3", "late 4-6", "all", "throughput")]
                    for run in runs]
            out.append(table(["memory", "TTFT 2-3", "4-6", "all", "throughput"], rows))
    notes = kernels.notes()
    th = getattr(kernels, "hardware", None) or {}
    diff = [f"{k} {th[k]} (simulated {v})" for k, v in
            (("cus", hw.cus), ("clock_ghz", hw.clock_ghz), ("hbm_tb_s", hw.hbm_tb_s))
            if k in th and th[k] != v]
    if diff:
        notes.append("the kernel table was made for other hardware: " + ", ".join(diff))
    if isinstance(kernels, RooflineKernels):
        notes.append("NOT MEASURED: every time above comes from the roofline model")
    out.append("")
    out += notes
    elapsed = time.time() - t_start
    out.append(f"({elapsed:.1f} s)")
    print("\n".join(out))

    doc = {"tool": PROG, "command": a.cmd,
           "kernel_model": {"kind": a.kernel_model, "label": kl,
                            "measured": bool(kernels.measured),
                            "phases": getattr(kernels, "phase_sources",
                                              {"decode": "roofline", "prefill": "roofline"}),
                            "lookups": kernels.lookups, "extrapolated": kernels.extrapolated,
                            "max_extrapolation_factor": kernels.max_factor},
           "model": {k: getattr(model, k) for k in model.__dataclass_fields__},
           "tp": a.tp,
           "hardware": {k: getattr(hw, k) for k in hw.__dataclass_fields__},
           "reserved_gib": a.reserved_gib,
           "workload": {"sessions": workload.sessions, "rounds": workload.rounds,
                        "common": workload.common, "prefix": workload.prefix,
                        "user": workload.user, "output": workload.output,
                        "think": workload.think, "ramp_s": workload.ramp_s,
                        "seed": workload.seed},
           "engine": {k: getattr(engine, k) for k in engine.__dataclass_fields__},
           "runs": runs, "fp8_vs_uq": comparison, "notes": notes}
    if a.cmd == "paper":
        doc["paper"] = PAPER
    if a.json:
        try:
            write_json(a.json, doc)
        except OSError as e:
            raise ValueError(f"cannot write {a.json}: {e.strerror or e}")
    if a.plots:
        title = (f"{model.name}, TP {a.tp}, {workload.sessions} sessions x "
                 f"{workload.rounds} rounds ({a.workload})")
        png = os.path.join(a.plots, "ttft_by_round.png")
        try:
            plot(png, runs, title, kl)
        except OSError as e:
            raise ValueError(f"cannot write {png}: {e.strerror or e}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    p = build_parser()
    a = p.parse_args(argv)
    try:
        return run(a)
    except BrokenPipeError:         # `| head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ValueError, OSError) as e:
        msg = " ".join(str(e).split("\n"))
        print(f"{PROG}: error: {msg}", file=sys.stderr)
        return 1
    except MemoryError:
        print(f"{PROG}: error: out of memory (docs/serving.md, \"Input limits\")",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
