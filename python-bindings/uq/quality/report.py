"""Regenerates the accuracy report: docs/accuracy.md, docs/accuracy/*.png,
docs/accuracy/results.json and the policy JSON files.

    python3 -m uq.quality report [--out-doc docs/accuracy.md] [--quick]

Every number in the generated page is computed by this run.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from typing import Dict, List

import numpy as np

from . import backend as B
from . import study as S
from .data import load_lm
from .doc import render, table  # noqa: F401  (table: used by callers)
from .formats import BF16, Calibration, UltraQuant, parse_format
from .metrics import activation_metrics
from .model import Model, bits_per_byte
from .policy import Policy, optimise, sensitivity, static_rule

COMMAND = "PYTHONPATH=build/python-bindings /usr/bin/python3 -m uq.quality report"


class Report:
    def __init__(self, lm, out_doc="docs/accuracy.md", quick=False, command_args=None,
                 log=print):
        self.lm = lm if not isinstance(lm, (str, type(None))) else load_lm(lm)
        self.calib = Calibration(self.lm)
        self.model = Model(self.lm)
        self.out_doc = out_doc
        self.fig_dir = os.path.join(os.path.dirname(out_doc) or ".", "accuracy")
        os.makedirs(self.fig_dir, exist_ok=True)
        self.windows = self.lm.eval_windows[:6] if quick else self.lm.eval_windows
        self.sens_windows = self.lm.eval_windows[:4] if quick else self.lm.eval_windows[:12]
        self.quick = quick
        self.log = log
        self.res: Dict = {"windows": len(self.windows), "backend": B.backend_name()}
        self.prefix: dict = {}
        self.md: List[str] = []

    # ------------------------------------------------------------------
    def bpb(self, obj) -> float:
        """bits/byte with a KVFormat (every layer/head) or a Policy."""
        L, H = self.lm.cfg["layers"], self.lm.cfg["hk"]
        if isinstance(obj, Policy):
            pol, first = obj, obj.first_quantised_layer(L, H)
        elif obj is None or obj.name == "bf16":
            pol, first = None, L
        else:
            pol, first = (lambda l, h, f=obj: f), 0
        fmt_or_policy = obj
        t = time.time()
        b = bits_per_byte(self.model, pol, self.windows, prefix_cache=self.prefix,
                          first_quant_layer=first)
        self.log(f"  bits/byte {getattr(fmt_or_policy, 'name', 'policy')}: {b:.5f} "
                 f"({time.time() - t:.0f} s)")
        return b

    # ------------------------------------------------------------------
    def claims(self):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        self.log("claims: c sweeps, distortion, rotation")
        grid = S.C_GRID
        curves = {}
        for kind in ("gaussian", "unit"):
            curves[f"{kind} (rotated)"] = S.c_curve(S.synthetic_rows(kind))
        sets = S.real_sets(self.lm)
        for name, x in sets.items():
            curves[f"real {name}"] = S.c_curve(x)
        opt = {k: S.optimum(grid, v) for k, v in curves.items()}
        i156 = int(np.argmin(abs(grid - 0.156)))
        self.res["c_curves"] = {k: {"c": grid.tolist(), "nmse": v.tolist()} for k, v in curves.items()}
        self.res["c_opt"] = {k: {"c": c, "nmse": m, "nmse_at_0.156": float(curves[k][i156])}
                             for k, (c, m) in opt.items()}

        fig, ax = plt.subplots(figsize=(7, 4.5))
        for k, v in curves.items():
            ax.plot(grid, 10 * np.log10(v), label=f"{k} (opt c={opt[k][0]:.3f})")
        ax.axvline(0.156, color="k", ls="--", lw=0.8)
        ax.axvline(1 / 6, color="gray", ls=":", lw=0.8)
        ax.set_xlabel("c (scale = 2^round(log2(c * absmax)))")
        ax.set_ylabel("NMSE (dB)")
        ax.set_title("FP4 E2M1 + UE8M0/32: distortion vs c")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(self.fig_dir, "c_sweep.png"), dpi=110)
        plt.close(fig)

        # (b) distortion: calibrate codebooks on sequence 0, evaluate on sequence 1.
        self.codebooks = {sc: self.calib.codebook(sc) for sc in ("norm", "e8m0")}
        held = S.real_sets(self.lm, 1)
        c_opt_real = {n: opt[f"real {n}"][0] for n in held}
        held["gaussian"] = S.synthetic_rows("gaussian", seed=1)
        c_opt_real["gaussian"] = opt["gaussian (rotated)"][0]
        dist = S.distortion_table(held, c_opt_real, self.codebooks)
        self.res["distortion"] = dist
        self.res["codebooks"] = {k: v.tolist() for k, v in self.codebooks.items()}

        # (c) rotation on K per layer/head (activations of both sequences).
        rot = []
        for l in range(self.lm.cfg["layers"]):
            k = self.lm.activations(l)["k"]
            for h in range(k.shape[2]):
                x = k[:, :, h].reshape(-1, k.shape[-1])
                xr = B.hadamard(x)
                rot.append({"layer": l, "head": h,
                            "kurtosis": S.kurtosis(x), "kurtosis_rot": S.kurtosis(xr),
                            "sqnr_norot": -10 * math.log10(S.fp4_nmse(x, 0.156)),
                            "sqnr_rot": -10 * math.log10(S.fp4_nmse(xr, 0.156)),
                            "max_over_rms": float(np.abs(x).max() / np.sqrt(np.mean(x ** 2))),
                            "max_over_rms_rot": float(np.abs(xr).max() / np.sqrt(np.mean(xr ** 2)))})
        self.res["rotation"] = rot
        fig, ax = plt.subplots(figsize=(7, 3.8))
        lab = [f"L{r['layer']}H{r['head']}" for r in rot]
        xs = np.arange(len(rot))
        ax.bar(xs - 0.2, [r["sqnr_norot"] for r in rot], 0.4, label="K not rotated")
        ax.bar(xs + 0.2, [r["sqnr_rot"] for r in rot], 0.4, label="K rotated (H/sqrt(128))")
        ax.set_xticks(xs, lab)
        ax.set_ylabel("SQNR of K (dB), c=0.156")
        ax.set_title("Effect of the Hadamard rotation on K reconstruction")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(self.fig_dir, "rotation.png"), dpi=110)
        plt.close(fig)

    # ------------------------------------------------------------------
    def quality_table(self, fmts):
        self.log("quality tool on the shared activations")
        rows = []
        for l in range(self.lm.cfg["layers"]):
            a = self.lm.activations(l)
            for m in activation_metrics(fmts, a["k"], a["v"], a["q"], layer=l):
                rows.append(m.as_dict())
        self.res["quality"] = rows
        return rows

    # ------------------------------------------------------------------
    def run(self):
        t0 = time.time()
        L, H = self.lm.cfg["layers"], self.lm.cfg["hk"]
        self.claims()
        c_k = self.res["c_opt"]["real K rotated"]["c"]
        c_v = self.res["c_opt"]["real V"]["c"]
        c_vr = self.res["c_opt"]["real V rotated"]["c"]

        # Per-head calibrated c (sequence 0 of the activations; MSE).
        ck_head = S.calibrate_c(S.per_head_rows(self.lm, 0, "k", True))
        cv_head = S.calibrate_c(S.per_head_rows(self.lm, 0, "v", True))
        self.res["c_per_head"] = {"k": {f"{l},{h}": c for (l, h), c in ck_head.items()},
                                  "v_rotated": {f"{l},{h}": c for (l, h), c in cv_head.items()}}

        # Quality-tool table on the activations.
        qfmts = [parse_format("fp8"), parse_format("uq"), parse_format("uq:norot"),
                 parse_format("int4"), parse_format("lloydmax", self.calib),
                 UltraQuant(c_k=c_k, c_v=c_vr, rotate_v=True, label="uq:c=opt,rotv")]
        self.quality_table(qfmts)

        # Bits/byte for the manifest's formats and the baselines.
        self.log("bits/byte table")
        manifest = self.lm.reference_bpb
        base = [("bf16", "bf16", "bf16"), ("fp8", "fp8", "fp8"), ("uq", "uq", "uq"),
                ("uq:norot", "uq:norot", "uq_norot"), ("uq:c=1/6", "uq:c=1/6", "uq_c1"),
                ("int4", "int4", "int4"), ("lloydmax", "lloydmax", None),
                ("lloydmax:e8m0", "lloydmax:e8m0", None)]
        bpb = {}
        for label, spec, mkey in base:
            f = parse_format(spec, self.calib)
            bpb[label] = {"bits": f.bits, "bpb": self.bpb(f),
                          "manifest": manifest.get(mkey) if mkey else None}
        self.res["bpb"] = bpb
        ref = bpb["bf16"]["bpb"]

        # Variants at 4.25 bits (part 5).
        self.log("4.25-bit variants")
        variants = [
            ("uq (reference)", UltraQuant()),
            (f"c={c_k:.3f} (global optimum)", UltraQuant(c_k=c_k, c_v=c_v)),
            (f"c={c_k:.3f}, V rotated", UltraQuant(c_k=c_k, c_v=c_vr, rotate_v=True)),
            ("c=0.22, V rotated", UltraQuant(c_k=0.22, c_v=0.22, rotate_v=True)),
            (f"c={c_k:.3f}, V rotated, q fp8 per-32 scale",
             UltraQuant(c_k=c_k, c_v=c_vr, rotate_v=True, query="fp8s32")),
            (f"c={c_k:.3f}, V rotated, exponent search",
             UltraQuant(c_k=c_k, c_v=c_vr, rotate_v=True, search=True)),
            ("per-head c, V rotated", UltraQuant(c_k=ck_head, c_v=cv_head, rotate_v=True)),
            ("per-head c, V rotated, q bf16 (not MFMA-FP8; bound)",
             UltraQuant(c_k=ck_head, c_v=cv_head, rotate_v=True, query="bf16")),
        ]
        var = []
        for label, f in variants:
            f.label = label
            b = self.bpb(f) if label != "uq (reference)" else bpb["uq"]["bpb"]
            var.append({"variant": label, "bpb": b, "rel": b / ref - 1, "mfma": "bf16" not in label})
        self.res["variants"] = var
        best = min((v for v in var if v["mfma"]), key=lambda v: v["bpb"])
        self.res["best_variant"] = best

        # Sensitivity and policies (part 4).
        self.log("sensitivity")
        sens = {"uq": sensitivity(self.model, "uq", self.sens_windows, "head", self.prefix, log=self.log,
                                  calib=self.calib),
                "fp8": sensitivity(self.model, "fp8", self.sens_windows, "head", self.prefix, log=self.log,
                                   calib=self.calib)}
        self.res["sensitivity"] = {s: {f"{l},{h}": d for (l, h), d in v.items()} for s, v in sens.items()}
        sens_layer = sensitivity(self.model, "uq", self.sens_windows, "layer", self.prefix, log=self.log)
        self.res["sensitivity_layer"] = {str(l): d for (l, _), d in sens_layer.items()}
        bits = {"uq": 4.25, "fp8": 8.0, "bf16": 16.0}
        pols = []
        rule = static_rule(L, 1)
        rule_bits = rule.bits_per_element(L, H)
        for budget in (4.25, 6.0, 8.0, rule_bits):
            p, pred = optimise(sens, bits, budget, "uq")
            pols.append((f"optimised, budget {budget:g} bits", p, pred))
        pols.append((f"static rule (first+last layer BF16)", rule, None))
        pols.append(("paper's rule, literal (first+last two layers: all 4 here)", static_rule(L, 2), None))
        pres = []
        for i, (label, p, pred) in enumerate(pols):
            b = self.bpb(p)
            name = f"policy-{i}.json"
            p.meta.update({"measured_bpb": round(b, 5), "note": label})
            p.save(os.path.join(self.fig_dir, name), L, H)
            pres.append({"policy": label, "bits": p.bits_per_element(L, H), "bpb": b,
                         "rel": b / ref - 1, "predicted": pred, "file": name,
                         "overrides": p.overrides})
        self.res["policies"] = pres
        self._plots_policy(sens)
        self.res["seconds"] = time.time() - t0
        with open(os.path.join(self.fig_dir, "results.json"), "w") as f:
            json.dump(self.res, f, indent=1, default=float)
        self.write_md()
        self.log(f"report written to {self.out_doc} in {time.time() - t0:.0f} s")

    def _plots_policy(self, sens):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        keys = sorted(sens["uq"])
        fig, ax = plt.subplots(figsize=(7, 3.5))
        xs = np.arange(len(keys))
        ax.bar(xs - 0.2, [sens["uq"][k] for k in keys], 0.4, label="only this head UltraQuant")
        ax.bar(xs + 0.2, [sens["fp8"][k] for k in keys], 0.4, label="only this head FP8")
        ax.set_xticks(xs, [f"L{l}H{h}" for l, h in keys])
        ax.set_ylabel("bits/byte increase")
        ax.set_title("Per-(layer, KV head) sensitivity")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(self.fig_dir, "sensitivity.png"), dpi=110)
        plt.close(fig)

        q = self.res["quality"]
        fig, axs = plt.subplots(1, 2, figsize=(9, 3.5))
        for fmt in sorted({r["format"] for r in q}):
            rs = [r for r in q if r["format"] == fmt]
            lab = [f"L{r['layer']}H{r['head']}" for r in rs]
            axs[0].plot(lab, [r["k_sqnr_db"] for r in rs], "o-", label=fmt)
            axs[1].plot(lab, [r["out_rel"] for r in rs], "o-", label=fmt)
        axs[0].set_ylabel("K SQNR (dB)")
        axs[1].set_ylabel("attention output rel. error")
        axs[1].set_yscale("log")
        axs[0].legend(fontsize=6)
        fig.tight_layout()
        fig.savefig(os.path.join(self.fig_dir, "quality.png"), dpi=110)
        plt.close(fig)

    # ------------------------------------------------------------------
    def write_md(self):
        with open(self.out_doc, "w") as f:
            f.write(render(self.res, COMMAND + (" --quick" if self.quick else "")))
