#!/usr/bin/env python3
"""Plots the kernel ladder: predicted decode-step time against context.

    plot_ladder.py LADDER.json -o OUT.png

LADDER.json is `uq-kernel-report --ladder --json LADDER.json`'s output (or
`uq-kernel-report --ladder --plot OUT.png` runs this script itself). One
panel per (head dim, GQA) shape and batch; per KV format its predicted time
(solid, the timing model's latency-aware estimate), its lower bound (dashed)
and its HBM floor (dotted: the step's cache bytes at the model's achievable
bandwidth). Times are the gfx950 timing model's, not measurements.
"""
import argparse
import json
import sys

COLORS = {"bf16": "#444444", "fp8": "#1f77b4", "uq4": "#d62728"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ladder", help="JSON written by uq-kernel-report --ladder --json")
    ap.add_argument("-o", "--output", required=True, help="PNG to write")
    a = ap.parse_args(argv)
    try:
        with open(a.ladder) as f:
            doc = json.load(f)
    except OSError as e:
        ap.error(f"cannot read {a.ladder}: {e.strerror}")
    except json.JSONDecodeError as e:
        ap.error(f"{a.ladder}: not JSON: {e}")
    shapes = doc.get("shapes")
    if not isinstance(shapes, list) or not shapes:
        ap.error(f"{a.ladder}: no 'shapes' (not uq-kernel-report --ladder output?)")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    batches = sorted({p["batch"] for s in shapes for p in s["points"]})
    fig, axes = plt.subplots(len(shapes), len(batches), squeeze=False,
                             figsize=(4.2 * len(batches), 3.2 * len(shapes)))
    for i, s in enumerate(shapes):
        fmts = [f for f in ("bf16", "fp8", "uq4") if f in s["points"][0]]
        for j, b in enumerate(batches):
            ax = axes[i][j]
            pts = sorted((p for p in s["points"] if p["batch"] == b),
                         key=lambda p: p["context"])
            ctx = [p["context"] for p in pts]
            for f in fmts:
                c = COLORS.get(f, None)
                ax.plot(ctx, [p[f]["time_us"] for p in pts], "o-", color=c,
                        label=f"{f} predicted")
                ax.plot(ctx, [p[f]["bound_us"] for p in pts], "--", color=c,
                        linewidth=1, label=f"{f} lower bound")
                ax.plot(ctx, [p[f]["floor_us"] for p in pts], ":", color=c,
                        linewidth=1, label=f"{f} HBM floor")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"D {s['head_dim']}, GQA {s['gqa']}, {s['kv_heads']} KV heads, "
                         f"batch {b}", fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
            if i == len(shapes) - 1:
                ax.set_xlabel("context (tokens)")
            if j == 0:
                ax.set_ylabel("us per layer (model)")
            if i == 0 and j == 0:
                ax.legend(fontsize=6, ncol=1)
    fig.suptitle("uq decode attention, one layer: gfx950 timing model "
                 "(absolute times are a MODEL, not measured)\n"
                 + doc.get("command", ""), fontsize=9)
    fig.tight_layout()
    try:
        fig.savefig(a.output, dpi=100)
    except OSError as e:
        ap.error(f"cannot write {a.output}: {e.strerror}")
    plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
