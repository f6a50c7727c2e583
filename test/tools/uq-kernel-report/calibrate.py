# RUN: %python %s %uq_build/bin/uq-kernel-report %shared/peers/aiter

# uq-kernel-report --calibrate (docs/timing-model.md, "Calibration"): usage
# errors are one-line messages; with AMD's AITER code objects present (else
# that part is skipped), --calibrate-quick emulates one small forward and one
# small paged launch, prints their rows, and its JSON agrees with the table:
# the forward model TFLOP/s is the launch's FLOPs over the model time
# (estimate + launch overhead), the paged figure is that time in us, and the
# table shows the launch's bound resource.
import json
import os
import subprocess
import sys
import tempfile

tool, aiter = sys.argv[1], sys.argv[2]


def run(*args):
    p = subprocess.run([tool, *args], capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def fails(expect, *args):
    rc, out, err = run(*args)
    assert rc == 1, (args, rc, out, err)
    assert err.count("\n") == 1 and expect in err, (expect, err)


fails("go with --calibrate", "--calibrate-quick")
fails("go with --calibrate", "--calibrate-overlap")
fails("go with --calibrate", "--aiter-dir", "/nonexistent")
fails("--calibrate-samples must be in [1, 64]", "--calibrate",
      "--calibrate-samples", "0")
fails("no AITER code object '/nonexistent/fwd_hd128_bf16.co'", "--calibrate",
      "--aiter-dir", "/nonexistent")

if not os.path.exists(os.path.join(aiter, "fwd_hd128_bf16.co")):
    print("no AITER code objects: the calibration run is skipped")
    sys.exit(0)

with tempfile.TemporaryDirectory() as tmp:
    js = os.path.join(tmp, "cal.json")
    rc, out, err = run("--calibrate", "--calibrate-quick", "--aiter-dir", aiter,
                       "--calibrate-json", js)
    assert rc == 0, (out, err)
    assert "fwd_hd128_bf16.co" in out and "pa_bf16_noquant_gqa8_1tg_4w.co" in out
    rows = json.load(open(js))
    assert len(rows) == 2, rows
    fwd, pa = rows
    # Forward: b 1, 8/8 heads, 512 x 512, D 128 (the quick shape).
    flops = 4.0 * 1 * 8 * 512 * 512 * 128
    L = fwd["launch"]
    assert abs(L["total_us_model"] - L["estimate_us_model"] -
               L["launch_overhead_us"]) < 1e-9, L
    assert abs(fwd["model"] - flops / (L["total_us_model"] * 1e-6) / 1e12) \
        < 1e-9 * fwd["model"], fwd
    assert fwd["unit"] == "TFLOP/s" and "measured" not in fwd
    assert L["workgroups"] == 2 * 8 and L["traced_workgroups"] == 2, L
    assert L["bound_cycles"] <= L["estimate_cycles"] + 1e-6, L
    # Paged: batch 2, 256 tokens, 16/2 heads: grid (2, 2).
    P = pa["launch"]
    assert pa["unit"] == "us" and abs(pa["model"] - P["total_us_model"]) < 1e-9
    assert P["workgroups"] == 4 and P["traced_workgroups"] == 2, P
    # The table prints the same figures and bound resources.
    lines = [l.split() for l in out.splitlines()]
    frow = next(l for l in lines if l[:4] == ["1", "8", "8", "512"])
    assert abs(float(frow[4]) - fwd["model"]) < 0.06, (frow, fwd["model"])
    assert frow[7] == L["bound_resource"].split()[0], (frow, L)
    prow = next(l for l in lines if l[:3] == ["2", "2", "256"])
    assert abs(float(prow[3]) - pa["model"]) < 0.06, (prow, pa["model"])
    assert prow[6] == P["bound_resource"].split()[0], (prow, P)
print("ok")
