"""uq-quality: accuracy of 4-bit KV-cache formats.

    uq-quality metrics [--k K.npy --v V.npy [--q Q.npy]] [--formats ...]
    uq-quality bpb     [--formats ...] [--policy P.json] [--windows N]
    uq-quality policy  --budget B [--candidates ...] [--base SPEC] [--out P.json]
    uq-quality sweep   [--k K.npy]
    uq-quality report  [--quick] [--out-doc docs/accuracy.md]

Without --k/--v the shared activations (<shared>/lm, all layers) are used.
bpb, policy and report evaluate the manifest's 24 windows of val.txt, or
another text: --text FILE [--windows-file W.json | --windows N].

Format specs (several: separated by ';', or by ',' before a new format):
bf16, fp8, int4[:norot], lloydmax[:e8m0][,gauss], uq[:OPTS] with OPTS from
c=X, ck=X|cal, cv=X|cal, norot, rotv, q=fp8|fp8s32|bf16, search,
nearest_even, kmean[=N], vmean[=N], kbal, gv=16|32, self; KSPEC|VSPEC caches K and
V in different formats. docs/precision-policy.md explains each option.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from .data import DataError

DEFAULT_FORMATS = "fp8,uq,uq:norot,uq:c=1/6,int4,lloydmax"


class UsageError(Exception):
    """A user error found after parsing (printed as a usage error)."""


def _split(s):
    from .formats import split_specs
    return split_specs(s)


def _log(a):
    """Progress lines go to stderr when stdout carries JSON."""
    out = sys.stderr if getattr(a, "json", False) else sys.stdout
    return lambda *x: print(*x, file=out, flush=True)


def _calibration(lm):
    from .formats import Calibration
    return Calibration(lm)


def _formats(a, lm=None):
    """Parse --formats up front (before any slow work)."""
    from .formats import parse_format
    calib = _calibration(lm) if lm is not None else None
    out = []
    for s in _split(a.formats or ""):
        try:
            out.append((s, parse_format(s, calib)))
        except ValueError as e:
            raise UsageError(str(e))
    if not out:
        raise UsageError("no format given")
    return out


def _load(a, with_weights=True):
    """The shared LM with --text / --windows-file / --windows applied; every
    window is checked against the text here, before any forward pass."""
    from .data import load_lm, load_windows, spaced_windows
    lm = load_lm(a.shared, with_weights=with_weights)
    length = int(lm.cfg.get("ctx", 1024))
    text = getattr(a, "text", None)
    wfile = getattr(a, "windows_file", None)
    n = getattr(a, "windows", None)
    if text is None and wfile is None and n is None:
        if getattr(a, "needs_windows", True):
            lm.use_text(length=length)
        return lm
    if text is not None:
        lm.set_text(text)
    if wfile:
        windows = load_windows(wfile)
    elif text is not None:
        windows = spaced_windows(len(lm.val_bytes), n or 24, length)
        n = None
    else:
        windows = lm.eval_windows
    if n is not None:
        if n > len(windows):
            raise UsageError(f"--windows {n}: only {len(windows)} windows are available")
        windows = windows[:n]
    lm.use_text(None, windows, length)
    return lm


def _whole_layer_first(pol, lm):
    L, H = lm.cfg["layers"], lm.cfg["hk"]
    return pol.first_quantised_layer(L, H)


def cmd_metrics(a):
    from .metrics import activation_metrics
    if a.k:
        fmts = _formats(a, None if not a.calibrate else _load(a, False))
        try:
            k, v = np.load(a.k), np.load(a.v)
            q = np.load(a.q) if a.q else None
        except (OSError, ValueError) as e:
            raise UsageError(f"cannot load the arrays: {e}")
        if k.dtype == np.uint16:
            from .data import bf16_bits_to_f32
            k, v = bf16_bits_to_f32(k), bf16_bits_to_f32(v)
            q = None if q is None else bf16_bits_to_f32(q)
        try:
            rows = [m.as_dict() for m in activation_metrics([f for _, f in fmts], k, v, q,
                                                            layer=0)]
        except ValueError as e:
            raise UsageError(str(e))
    else:
        lm = _load(a, with_weights=False)
        fmts = _formats(a, lm)
        rows = []
        for l in range(lm.cfg["layers"]):
            act = lm.activations(l)
            rows += [m.as_dict() for m in activation_metrics(
                [f for _, f in fmts], act["k"], act["v"], act["q"] if not a.no_q else None,
                layer=l)]
    if a.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return
    print(f"{'format':34s} {'L':>2s} {'H':>2s} {'K SQNR':>8s} {'V SQNR':>8s} {'K MSE':>10s} "
          f"{'V MSE':>10s} {'logit rel':>10s} {'out rel':>10s}")
    for r in rows:
        print(f"{r['format']:34s} {r['layer']:2d} {r['head']:2d} {r['k_sqnr_db']:8.2f} "
              f"{r['v_sqnr_db']:8.2f} {r['k_mse']:10.3e} {r['v_mse']:10.3e} "
              f"{r['logit_rel']:10.4f} {r['out_rel']:10.4f}")


def _unit_fn(f):
    return None if f.name == "bf16" else (lambda l, h, f=f: f)


def cmd_bpb(a):
    from .model import Model, bits_per_byte
    from .policy import Policy
    lm = _load(a)
    items = []
    calib = _calibration(lm)
    for path in a.policy or []:
        try:
            items.append((path, Policy.load(path, calib)))
        except (OSError, ValueError) as e:
            raise UsageError(f"--policy {path}: {e}")
    if a.formats:
        items += _formats(a, lm)
    model = Model(lm, autocast=not a.f32)
    L, H = lm.cfg["layers"], lm.cfg["hk"]
    wins = lm.eval_windows
    log = _log(a)
    prefix: dict = {}
    res = []
    base = None
    for name, obj in items:
        if isinstance(obj, Policy):
            pol, first, bits = obj, obj.first_quantised_layer(L, H), obj.bits_per_element(L, H)
        else:
            pol, bits = _unit_fn(obj), obj.bits
            first = L if pol is None else 0
        b = bits_per_byte(model, pol, wins, prefix_cache=prefix, first_quant_layer=first)
        if pol is None:
            base = b
        res.append({"format": name, "bits_per_element": bits, "bpb": b})
        log(f"{name:44s} {bits:7.4f} bits/elem  {b:.5f} bits/byte ({len(wins)} windows)")
    if base is not None:
        for r in res:
            r["vs_bf16"] = r["bpb"] / base - 1
    if a.json:
        json.dump({"text": lm.text_path or "val.txt", "windows": wins, "results": res,
                   "manifest_bpb": lm.reference_bpb or None}, sys.stdout, indent=1)
        print()


def cmd_policy(a):
    from .formats import parse_format
    from .model import Model, bits_per_byte
    from .policy import optimise, sensitivity, upgrade_sensitivity
    lm = _load(a)
    fmts = _formats(a, lm)
    calib = _calibration(lm)
    if a.base:
        try:
            base_fmt = parse_format(a.base, calib)
        except ValueError as e:
            raise UsageError(str(e))
    L, H = lm.cfg["layers"], lm.cfg["hk"]
    model = Model(lm)
    wins = lm.eval_windows
    if a.sens_windows and a.sens_windows > len(wins):
        raise UsageError(f"--sens-windows {a.sens_windows}: only {len(wins)} windows")
    sens_wins = wins[:a.sens_windows] if a.sens_windows else wins
    log = _log(a)
    prefix: dict = {}
    bits = {spec: f.bits for spec, f in fmts}
    quant = [spec for spec, f in fmts if f.name != "bf16"]
    if not a.base and (a.default or (quant[0] if quant else None)) not in quant:
        raise UsageError(f"--default {a.default!r} is not among the candidates")
    if a.base:
        # Against the base format: each head upgraded alone.
        _, sens = upgrade_sensitivity(model, a.base, [s for s, _ in fmts], sens_wins,
                                      log=log, calib=calib)
        default, free = a.base, a.base
        bits[a.base] = base_fmt.bits
    else:
        sens = {}
        for spec, f in fmts:
            if f.name == "bf16":
                continue
            sens[spec] = sensitivity(model, spec, sens_wins, "head", prefix, log=log,
                                     calib=calib)
        bits["bf16"] = 16.0
        default, free = a.default or quant[0], "bf16"
    out = []
    for budget in a.budget:
        try:
            pol, pred = optimise(sens, bits, budget, default, calib=calib, free=free)
        except ValueError as e:
            raise UsageError(str(e))
        b = bits_per_byte(model, pol, wins, prefix_cache=prefix,
                          first_quant_layer=pol.first_quantised_layer(L, H))
        pol.meta.update({"measured_bpb": round(b, 5), "windows": len(wins),
                         "text": lm.text_path or "val.txt"})
        r = {"budget": budget, "bits_per_element": pol.bits_per_element(L, H),
             "predicted_change": pred, "bpb": b, "overrides": pol.overrides}
        if a.out:
            path = a.out if len(a.budget) == 1 else a.out.replace(".json", f"-{budget:g}.json")
            pol.save(path, L, H)
            r["file"] = path
        out.append(r)
        log(f"budget {budget:g}: {r['bits_per_element']:.4f} bits/elem, {b:.5f} bits/byte; "
            + ("; ".join(f"L{o['layer']}" + (f"H{o['kv_head']}" if 'kv_head' in o else "")
                         + f"={o['format']}" for o in pol.overrides) or f"all {default}"))
    if a.json:
        json.dump({"sensitivity": {s: {f"{l},{h}": d for (l, h), d in v.items()}
                                   for s, v in sens.items()}, "policies": out},
                  sys.stdout, indent=1)
        print()


def cmd_sweep(a):
    from . import study as S
    from . import backend as B
    if a.k:
        try:
            x = np.load(a.k).astype(np.float32)
        except (OSError, ValueError) as e:
            raise UsageError(f"--k {a.k}: {e}")
        if x.ndim < 1 or x.shape[-1] % 32 or x.shape[-1] & (x.shape[-1] - 1):
            raise UsageError(f"--k {a.k}: the last axis must be a power of two multiple of 32")
        x = x.reshape(-1, x.shape[-1])
        sets = {a.k + " (rotated)": B.hadamard(x), a.k: x}
    else:
        sets = S.real_sets(_load(a, with_weights=False))
        sets["gaussian (rotated)"] = S.synthetic_rows("gaussian")
    for name, x in sets.items():
        cur = S.c_curve(x)
        c, m = S.optimum(S.C_GRID, cur)
        print(f"{name:24s} optimal c = {c:.3f}  NMSE {10 * np.log10(m):.2f} dB "
              f"(at 0.156: {10 * np.log10(S.fp4_nmse(x, 0.156)):.2f} dB)")


def cmd_report(a):
    from .report import Report
    lm = _load(a)
    Report(lm, a.out_doc, quick=a.quick, command_args=a.command_args, jobs=a.jobs).run()


def _positive(s):
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not an integer")
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def _budget(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a number")
    if not np.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {s}")
    return v


def build_parser():
    shared_help = ("shared data folder holding lm/ (default: $UQ_SHARED_DIR, ../shared "
                   "beside the repo, /work/shared); the lm folder itself works too")
    p = argparse.ArgumentParser(prog="uq-quality", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shared", default=None, help=shared_help)
    # Accepted after the subcommand as well (SUPPRESS keeps the top-level value).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--shared", default=argparse.SUPPRESS, help=shared_help)
    common.add_argument("--jobs", type=_positive, default=1, metavar="N",
                        help="evaluate windows in N processes (default 1)")
    text = argparse.ArgumentParser(add_help=False)
    text.add_argument("--text", default=None, metavar="FILE",
                      help="evaluate on this text instead of val.txt (bytes)")
    text.add_argument("--windows-file", default=None, metavar="W.json",
                      help="window starts: a JSON list of integers or {\"windows\": [...]}; "
                           "each window reads 1025 bytes")
    text.add_argument("--windows", type=_positive, default=None, metavar="N",
                      help="the first N windows (of the manifest's 24 or the file's); "
                           "with --text alone: N evenly spaced windows (default 24)")
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("metrics", parents=[common],
                       help="per layer/KV head SQNR, MSE, logit and output error")
    m.add_argument("--k", help=".npy keys [S,T,Hk,D] or [T,Hk,D] (float32 or bf16 bits as uint16)")
    m.add_argument("--v", help=".npy values, same shape as --k")
    m.add_argument("--q", help=".npy post-RoPE queries [S,T,Hq,D] (optional)")
    m.add_argument("--no-q", action="store_true", help="skip the attention metrics")
    m.add_argument("--calibrate", action="store_true",
                   help="with --k: calibrated options use the shared activations")
    m.add_argument("--formats", default=DEFAULT_FORMATS)
    m.add_argument("--json", action="store_true", help="JSON only on stdout")
    m.set_defaults(fn=cmd_metrics)
    b = sub.add_parser("bpb", parents=[common, text],
                       help="bits/byte of the shared LM with the KV cache in a format")
    b.add_argument("--formats", default=None)
    b.add_argument("--policy", action="append", default=None, metavar="P.json",
                   help="precision-policy JSON (repeatable)")
    b.add_argument("--f32", action="store_true", help="float32 forward instead of bf16 autocast")
    b.add_argument("--json", action="store_true",
                   help="JSON only on stdout (progress on stderr)")
    b.set_defaults(fn=cmd_bpb)
    pp = sub.add_parser("policy", parents=[common, text],
                        help="per-(layer, KV head) sensitivity and the best policy under a "
                             "bits/element budget")
    pp.add_argument("--candidates", dest="formats", default="uq;fp8",
                    help="formats a unit may take (bf16 always may); default 'uq;fp8'")
    pp.add_argument("--default", default=None,
                    help="the policy's default format (default: the first candidate)")
    pp.add_argument("--base", default=None, metavar="SPEC",
                    help="measure each candidate on one head with every other head in "
                         "SPEC (instead of BF16) and make SPEC the default; candidates "
                         "like 'fp8|SPEC' upgrade K only")
    pp.add_argument("--budget", type=_budget, action="append", required=True,
                    help="mean bits/element budget (repeatable)")
    pp.add_argument("--sens-windows", type=_positive, default=None, metavar="N",
                    help="windows for the sensitivity runs (default: all evaluated)")
    pp.add_argument("--out", default=None, metavar="P.json",
                    help="write the policy (P-<budget>.json for several budgets)")
    pp.add_argument("--json", action="store_true")
    pp.set_defaults(fn=cmd_policy)
    s = sub.add_parser("sweep", parents=[common], help="MSE-optimal c of FP4+UE8M0/32")
    s.add_argument("--k", help=".npy rows [..., D] (default: shared activations)")
    s.set_defaults(fn=cmd_sweep)
    r = sub.add_parser("report", parents=[common, text],
                       help="regenerate docs/accuracy.md and docs/accuracy/")
    r.add_argument("--out-doc", default="docs/accuracy.md")
    r.add_argument("--quick", action="store_true", help="6 windows (smoke run)")
    r.set_defaults(fn=cmd_report)
    return p


def main(argv=None):
    p = build_parser()
    a = p.parse_args(argv)
    a.command_args = list(sys.argv[1:] if argv is None else argv)
    from . import model as _model
    _model.WORKERS = getattr(a, "jobs", 1)
    if a.cmd == "metrics" and bool(a.k) != bool(a.v):
        p.error("--k and --v go together")
    if a.cmd == "bpb" and not (a.formats or a.policy):
        a.formats = "bf16"
    if getattr(a, "sens_windows", None) and a.windows and a.sens_windows > a.windows:
        p.error("--sens-windows cannot exceed --windows")
    try:
        a.fn(a)
    except (UsageError, DataError) as e:
        p.error(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
