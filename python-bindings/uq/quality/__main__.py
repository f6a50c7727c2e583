"""uq-quality: accuracy of 4-bit KV-cache formats.

    python3 -m uq.quality metrics [--k K.npy --v V.npy [--q Q.npy]] [--formats ...]
    python3 -m uq.quality bpb [--formats ...] [--policy P.json] [--windows N]
    python3 -m uq.quality sweep [--k K.npy]
    python3 -m uq.quality report [--quick] [--out-doc docs/accuracy.md]

Without --k/--v the shared activations (<shared>/lm, all layers) are used.
Format specs: bf16, fp8, int4, lloydmax[:e8m0], uq[:c=..,ck=..,cv=..,norot,rotv,
q=fp8|fp8s32|bf16,search,nearest_even].
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

DEFAULT_FORMATS = "fp8,uq,uq:norot,uq:c=1/6,int4,lloydmax"


def _split(s):
    """Split a list of specs on ',' except inside 'uq:...' option lists: specs
    are separated by ';' or by ',' followed by a known format head."""
    if ";" in s:
        return [x for x in s.split(";") if x]
    heads = ("bf16", "fp8", "int4", "lloydmax", "uq")
    out, cur = [], ""
    for part in s.split(","):
        if cur and part.split(":")[0] in heads:
            out.append(cur)
            cur = part
        else:
            cur = part if not cur else cur + "," + part
    if cur:
        out.append(cur)
    return out


def cmd_metrics(a):
    from .data import load_lm
    from .metrics import activation_metrics
    from .formats import parse_format
    fmts = [parse_format(x) for x in _split(a.formats)]
    rows = []
    if a.k:
        k, v = np.load(a.k), np.load(a.v)
        q = np.load(a.q) if a.q else None
        if k.dtype == np.uint16:
            from .data import bf16_bits_to_f32
            k, v = bf16_bits_to_f32(k), bf16_bits_to_f32(v)
            q = None if q is None else bf16_bits_to_f32(q)
        rows = [m.as_dict() for m in activation_metrics(fmts, k, v, q, layer=0)]
    else:
        lm = load_lm(a.shared, with_weights=False)
        for l in range(lm.cfg["layers"]):
            act = lm.activations(l)
            rows += [m.as_dict() for m in activation_metrics(
                fmts, act["k"], act["v"], act["q"] if not a.no_q else None, layer=l)]
    if a.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return
    print(f"{'format':28s} {'L':>2s} {'H':>2s} {'K SQNR':>8s} {'V SQNR':>8s} {'K MSE':>10s} "
          f"{'V MSE':>10s} {'logit rel':>10s} {'out rel':>10s}")
    for r in rows:
        print(f"{r['format']:28s} {r['layer']:2d} {r['head']:2d} {r['k_sqnr_db']:8.2f} "
              f"{r['v_sqnr_db']:8.2f} {r['k_mse']:10.3e} {r['v_mse']:10.3e} "
              f"{r['logit_rel']:10.4f} {r['out_rel']:10.4f}")


def cmd_bpb(a):
    from .data import load_lm
    from .formats import parse_format
    from .model import Model, bits_per_byte
    from .policy import Policy
    lm = load_lm(a.shared)
    model = Model(lm, autocast=not a.f32)
    wins = lm.eval_windows[:a.windows] if a.windows else lm.eval_windows
    ref = lm.reference_bpb
    items = []
    if a.policy:
        items.append((a.policy, Policy.load(a.policy)))
    if a.formats:
        for s in _split(a.formats):
            f = parse_format(s)
            items.append((s, None if f.name == "bf16" else (lambda l, h, f=f: f)))
    out = {}
    for name, pol in items:
        b = bits_per_byte(model, pol, wins)
        out[name] = b
        print(f"{name:40s} {b:.5f} bits/byte ({len(wins)} windows)", flush=True)
    if a.json:
        json.dump({"bpb": out, "manifest": ref}, sys.stdout, indent=1)
        print()


def cmd_sweep(a):
    from . import study as S
    from .data import load_lm
    from . import backend as B
    if a.k:
        x = np.load(a.k).astype(np.float32)
        x = x.reshape(-1, x.shape[-1])
        sets = {a.k + " (rotated)": B.hadamard(x), a.k: x}
    else:
        sets = S.real_sets(load_lm(a.shared, with_weights=False))
        sets["gaussian (rotated)"] = S.synthetic_rows("gaussian")
    for name, x in sets.items():
        cur = S.c_curve(x)
        c, m = S.optimum(S.C_GRID, cur)
        print(f"{name:24s} optimal c = {c:.3f}  NMSE {10 * np.log10(m):.2f} dB "
              f"(at 0.156: {10 * np.log10(S.fp4_nmse(x, 0.156)):.2f} dB)")


def cmd_report(a):
    from .report import Report
    Report(a.shared, a.out_doc, quick=a.quick).run()


def main(argv=None):
    p = argparse.ArgumentParser(prog="uq-quality", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shared", default=None, help="shared data folder (default: "
                   "$UQ_SHARED_DIR, ../shared beside the repo, /work/shared)")
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("metrics", help="per layer/KV head SQNR, MSE, logit and output error")
    m.add_argument("--k", help=".npy keys [S,T,Hk,D] or [T,Hk,D] (float32 or bf16 bits as uint16)")
    m.add_argument("--v", help=".npy values, same shape as --k")
    m.add_argument("--q", help=".npy post-RoPE queries [S,T,Hq,D] (optional)")
    m.add_argument("--no-q", action="store_true", help="skip the attention metrics")
    m.add_argument("--formats", default=DEFAULT_FORMATS)
    m.add_argument("--json", action="store_true")
    m.set_defaults(fn=cmd_metrics)
    b = sub.add_parser("bpb", help="bits/byte of the shared LM with the KV cache in a format")
    b.add_argument("--formats", default=None)
    b.add_argument("--policy", default=None, help="precision-policy JSON")
    b.add_argument("--windows", type=int, default=0, help="first N eval windows (0 = all 24)")
    b.add_argument("--f32", action="store_true", help="float32 forward instead of bf16 autocast")
    b.add_argument("--json", action="store_true")
    b.set_defaults(fn=cmd_bpb)
    s = sub.add_parser("sweep", help="MSE-optimal c of FP4+UE8M0/32")
    s.add_argument("--k", help=".npy rows [..., D] (default: shared activations)")
    s.set_defaults(fn=cmd_sweep)
    r = sub.add_parser("report", help="regenerate docs/accuracy.md and docs/accuracy/")
    r.add_argument("--out-doc", default="docs/accuracy.md")
    r.add_argument("--quick", action="store_true", help="6 windows (smoke run)")
    r.set_defaults(fn=cmd_report)
    a = p.parse_args(argv)
    if getattr(a, "k", None) and a.cmd == "metrics" and not a.v:
        p.error("--k needs --v")
    if a.cmd == "bpb" and not (a.formats or a.policy):
        a.formats = "bf16"
    a.fn(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
