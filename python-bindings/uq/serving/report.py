"""Tables, JSON and plots of simulation results."""

from __future__ import annotations

import json
import os
from typing import Dict, List, Optional

# The paper's figures (arXiv 2606.20474 v2, abstract): P50 TTFT of
# FP8 over UltraQuant per round group, and output throughput UltraQuant over
# FP8, at GMU 0.60.
PAPER = {"warm 2-3": 0.86, "late 4-6": 3.47, "all": 2.3, "throughput": 1.63}


def _f(v, fmt=None, none="-"):
    """``fmt``, or by default 3 significant digits (no exponent)."""
    if v is None:
        return none
    if fmt is not None:
        return fmt.format(v)
    a = abs(v)
    return f"{v:.0f}" if a >= 100 else f"{v:.1f}" if a >= 10 else f"{v:.2f}" if a >= 1 \
        else f"{v:.3f}"


def table(headers: List[str], rows: List[List[str]]) -> str:
    w = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
         for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.rjust(w[i]) if i else c.ljust(w[i])
                                   for i, c in enumerate(cells))
    out = [line(headers), line(["-" * x for x in w])]
    out += [line(r) for r in rows]
    return "\n".join(out)


def format_run(res: dict) -> str:
    """Per-round table of one format at one memory setting."""
    rows = []
    for r in res["per_round"]:
        rows.append([str(r["round"]),
                     _f(r["ttft_p50_ms"]), _f(r["ttft_p90_ms"]), _f(r["ttft_p99_ms"]),
                     _f(r["tpot_p50_ms"]), _f(r["tpot_p90_ms"]), _f(r["tpot_p99_ms"]),
                     _f(r["hit_rate"], "{:.2f}"),
                     f"{r['resident_sessions']}/{r['sessions_with_history']}"
                     if r["round"] > 1 else "-",
                     str(r["preemptions"])])
    cap = res["capacity"]
    head = (f"[{res['label']}] KV {cap['bytes_per_token_per_gpu']:.0f} B/token/GPU, "
            f"{cap['tokens']} tokens in {cap['blocks']} blocks; "
            f"output {res['output_tok_s']:.0f} tok/s, makespan {res['makespan_s']:.1f} s, "
            f"{res['evicted_blocks']} blocks evicted")
    return head + "\n" + table(
        ["round", "TTFT p50", "p90", "p99 ms", "TPOT p50", "p90", "p99 ms", "hit",
         "resident", "preempt"], rows)


def summary_table(results: Dict[str, dict], baseline: Optional[str]) -> str:
    rows = []
    for lab, res in results.items():
        g = res["groups"]
        row = [lab]
        for name in ("warm 2-3", "late 4-6", "all"):
            row.append(_f(g.get(name, {}).get("ttft_p50_ms")))
        row.append(_f(res["output_tok_s"], "{:.0f}"))
        row.append(_f(g.get("all", {}).get("tpot_p50_ms")))
        ms = res.get("max_sessions")
        row.append("-" if ms is None else str(ms["max_sessions"]) +
                   ("+" if "capped_at" in ms else ""))
        rows.append(row)
    return table(["format", "P50 TTFT 2-3", "4-6", "all ms", "out tok/s", "TPOT p50 ms",
                  "max sessions"], rows)


def ratios(results: Dict[str, dict], base: str, subj: str) -> Dict[str, Optional[float]]:
    """P50 TTFT base / subject per group, and throughput subject / base."""
    b, s = results[base], results[subj]
    out = {}
    for name in ("warm 2-3", "late 4-6", "all"):
        vb = b["groups"].get(name, {}).get("ttft_p50_ms")
        vs = s["groups"].get(name, {}).get("ttft_p50_ms")
        out[name] = vb / vs if vb and vs else None
    out["throughput"] = s["output_tok_s"] / b["output_tok_s"] \
        if b["output_tok_s"] and s["output_tok_s"] else None
    return out


def paper_table(per_gmu: Dict[float, Dict[str, Optional[float]]]) -> str:
    gmus = sorted(per_gmu)
    rows = []
    names = {"warm 2-3": "P50 TTFT FP8/UQ, rounds 2-3",
             "late 4-6": "P50 TTFT FP8/UQ, rounds 4-6",
             "all": "P50 TTFT FP8/UQ, all rounds",
             "throughput": "output throughput UQ/FP8"}
    for k, label in names.items():
        rows.append([label] + [_f(per_gmu[g][k], "{:.2f}x") for g in gmus] +
                    [f"{PAPER[k]:.2f}x"])
    return table(["figure"] + [f"ours GMU {g:.2f}" for g in gmus] + ["paper (GMU 0.60)"],
                 rows)


def write_json(path: str, doc: dict) -> None:
    """Writes ``doc`` whole or not at all: the text is made first, then
    written to a temporary file next to ``path`` that replaces it once
    closed; a failed write (a full disk, /dev/full) raises OSError and
    leaves nothing behind. A path that is not a regular file (a device, a
    FIFO) is written directly."""
    text = json.dumps(doc, indent=1) + "\n"
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "w") as f:
            f.write(text)
        return
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def plot(path: str, runs: List[dict], title: str, kernel_label: str) -> None:
    """P50 TTFT (P90 dashed) and prefix hit rate against round, one column
    per memory setting, one line per format."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(runs)
    fig, axes = plt.subplots(2, n, figsize=(5.2 * n, 6.4), squeeze=False, sharex=True)
    colors = {}
    palette = ["#444444", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b"]
    for j, run in enumerate(runs):
        ax, bx = axes[0][j], axes[1][j]
        for lab, res in run["formats"].items():
            c = colors.setdefault(lab, palette[len(colors) % len(palette)])
            rs = [r["round"] for r in res["per_round"]]
            ax.plot(rs, [r["ttft_p50_ms"] for r in res["per_round"]], "o-", color=c,
                    label=f"{lab} P50")
            ax.plot(rs, [r["ttft_p90_ms"] for r in res["per_round"]], ":", color=c,
                    label=f"{lab} P90")
            bx.plot(rs, [r["hit_rate"] for r in res["per_round"]], "o-", color=c, label=lab)
        ax.set_yscale("log")
        ax.set_title(run["name"], fontsize=10)
        ax.set_ylabel("TTFT (ms)")
        ax.grid(True, which="both", alpha=0.3)
        bx.set_ylabel("prefix-cache hit rate")
        bx.set_xlabel("round")
        bx.set_ylim(0, 1)
        bx.grid(True, alpha=0.3)
        if j == 0:
            ax.legend(fontsize=7, ncol=2)
    fig.suptitle(f"{title}\nkernel times: {kernel_label}", fontsize=9)
    fig.tight_layout()
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
