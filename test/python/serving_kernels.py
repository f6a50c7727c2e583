# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s

# uq.serving kernel times: the timing-model table reader (validation with
# located errors, log-log interpolation, bounded extrapolation), the
# roofline (alone, and for prefill when asked), the prefill entries'
# interpolation
# and the GEMM model against hand-computed figures.
import json
import math
import os
import tempfile

from uq.serving.kernels import ExtrapolationError, GemmModel, KernelTable, RooflineKernels
from uq.serving.model import Hardware, ModelShape


def raises(exc, f, *a, **kw):
    try:
        f(*a, **kw)
    except exc as e:
        return str(e)
    raise AssertionError(f"{f.__name__} did not raise {exc.__name__}")


def law(work, ctx):          # a power law: exact under log-log interpolation
    return 3.0 * ctx ** 0.9 * work ** 0.8


def pts(phase):
    q = 1 if phase == "decode" else 4
    return [{"batch": b, "kv_heads": 2, "context": c, "query_len": q,
             "time_us": law(b * 2 * q, c), "bound_us": 1.0}
            for b in (1, 8) for c in (256, 1024, 4096)]


def doc(**over):
    d = {"source": "fixture", "hardware": {"name": "MI355X", "cus": 256},
         "kernels": [{"format": f, "phase": ph, "head_dim": 128, "gqa": 8, "block_size": 16,
                      "points": pts(ph)}
                     for f in ("bf16", "fp8", "uq4") for ph in ("decode", "prefill")]}
    d.update(over)
    return d


t = KernelTable(doc(), "t.json")
t.bind(128, 8, 16, ["uq4", "fp8"])
# Inside the table: decode work = batch 4 x 2 heads = 8, context 2048.
v = t.attention_us("uq4", "decode", 4, 2, 2048, 1)
assert abs(v - law(8, 2048)) < 1e-9 * v, (v, law(8, 2048))
# Prefill work = 2 x 2 x 4 = 16 at context 512.
v = t.attention_us("fp8", "prefill", 2, 2, 512, 4)
assert abs(v - law(16, 512)) < 1e-9 * v
# Exact points come back exactly.
assert t.attention_us("bf16", "decode", 8, 2, 4096, 1) == law(16, 4096)
assert t.extrapolated == 0 and t.lookups == 3
# 2x past the largest context: allowed (limit 2), counted, follows the law.
v = t.attention_us("uq4", "decode", 1, 2, 8192, 1)
assert abs(v - law(2, 8192)) < 1e-9 * v
assert t.extrapolated == 1 and abs(t.max_factor - 2.0) < 1e-12
assert any("EXTRAPOLATED 1 of 4" in n for n in t.notes())
# 4x past it: refused unless allowed.
msg = raises(ExtrapolationError, t.attention_us, "uq4", "decode", 1, 2, 16384, 1)
assert "4.0x outside the table" in msg
t2 = KernelTable(doc(), "t.json", allow_extrapolation=True)
t2.bind(128, 8, 16, ["uq4"])
v = t2.attention_us("uq4", "decode", 64, 2, 64, 1)   # work 128 (8x), context 64 (4x)
assert abs(v - law(128, 64)) < 1e-9 * v and t2.max_factor == 8.0
# A kernel the model needs but the table lacks.
msg = raises(ValueError, t.bind, 256, 8, 16, ["uq4"])
assert "no kernel for head_dim=256" in msg and "uq4/decode" in msg

# Validation: every error names the file and the entry.
bad = doc()
bad["kernels"][1]["points"][2]["time_us"] = -1
assert "t.json: kernels[1].points[2]: 'time_us' must be a positive number" in \
    raises(ValueError, KernelTable, bad, "t.json")
bad = doc()
bad["kernels"][0]["points"][0]["query_len"] = 2
assert "kernels[0].points[0]: a decode point has query_len 1" in \
    raises(ValueError, KernelTable, bad, "t.json")
bad = doc()
bad["kernels"][1]["points"][0].update(context=2, query_len=4)
assert "exceeds context" in raises(ValueError, KernelTable, bad, "t.json")
bad = doc()
bad["kernels"][3]["format"] = "int4"
assert "kernels[3]: 'format' must be one of bf16, fp8, uq4" in \
    raises(ValueError, KernelTable, bad, "t.json")
bad = doc()
bad["kernels"].append(bad["kernels"][0])
assert "a second kernel" in raises(ValueError, KernelTable, bad, "t.json")
assert "'source'" in raises(ValueError, KernelTable, doc(source=None), "t.json")
assert "'kernels'" in raises(ValueError, KernelTable, doc(kernels=[]), "t.json")
assert "head_dim" in raises(ValueError, KernelTable,
                            doc(kernels=[dict(doc()["kernels"][0], head_dim=0)]), "t.json")
with tempfile.TemporaryDirectory() as d:
    p = os.path.join(d, "k.json")
    open(p, "w").write("{not json")
    assert "not JSON" in raises(ValueError, KernelTable.load, p)
    assert "cannot read" in raises(ValueError, KernelTable.load, os.path.join(d, "none.json"))
    json.dump(doc(), open(p, "w"))
    assert KernelTable.load(p).label.startswith(f"decode and prefill: timing-model table {p} (fixture)")

# Roofline (MI355X defaults: 5 TB/s achievable, fp8 peak 8192*256*2.4e9 =
# 5.0331648e15, bf16 half, 60% of it, 4 us per launch).
hw = Hardware()
rf = RooflineKernels(hw, 128, 8)
assert not rf.measured and "not measured" in rf.label
# fp8 decode, 4 sequences x 2 heads at context 1000: bytes per (seq, head) =
# 1000*256 cached + (512 + 256) new K/V + 8*128*4 query/output = 260864;
# x8 = 2086912 B / 5e12 = 0.4173824 us. FLOPs: 16 padded rows x 128 x 1000
# keys x 2 x 2 x 8 = 65.5e6 / 3.02e15 = 0.0217 us. Memory-bound: 4.4173824.
assert abs(rf.attention_us("fp8", "decode", 4, 2, 1000, 1) - 4.4173824) < 1e-9
# uq4 prefill of 4096 tokens from empty, 1 head: keys 4096*4097/2 = 8390656;
# rows 8 per token; QK 2*8*128*8390656 = 17184063488 FLOPs at fp8 (3.01989888e15)
# = 5.690281 us, PV the same at bf16 (1.50994944e15) = 11.380562 us; bytes
# 4096*(136 + 648 + 4096) = 19988480 -> 3.998 us. MFMA-bound: 21.070843 us.
v = rf.attention_us("uq4", "prefill", 1, 1, 4096, 4096)
assert abs(v - 21.070843) < 1e-5, v
# The same prefill in bf16 runs both products at the bf16 rate: 26.761124 us.
v = rf.attention_us("bf16", "prefill", 1, 1, 4096, 4096)
assert abs(v - (2 * 11.380562 + 4)) < 2e-5, v

# A table without any prefill kernel (`uq-kernel-report --table
# --no-prefill`): bind refuses prefill, pointing at the fix, even with a
# roofline at hand; the roofline times prefill only when asked
# (fallback_phases, --prefill-kernel-model roofline), and the label, notes
# and phase_sources say which phase comes from where.
dec = doc(kernels=[k for k in doc()["kernels"] if k["phase"] == "decode"])
msg = raises(ValueError, KernelTable(dec, "d.json", fallback=RooflineKernels(hw, 128, 8)).bind,
             128, 8, 16, ["uq4"])
assert "uq4/prefill" in msg and "--prefill-kernel-model roofline" in msg, msg
msg = raises(ValueError, KernelTable(dec, "d.json").bind, 128, 8, 16, ["uq4"])
assert "uq4/prefill" in msg, msg
raises(ValueError, KernelTable, dec, "d.json", fallback_phases=("prefill",))
mixed = KernelTable(dec, "d.json", fallback=RooflineKernels(hw, 128, 8),
                    fallback_phases=("prefill",))
mixed.bind(128, 8, 16, ["uq4", "fp8"])
assert mixed.attention_us("uq4", "decode", 8, 2, 4096, 1) == law(16, 4096)
assert mixed.attention_us("uq4", "prefill", 1, 1, 4096, 4096) == \
    RooflineKernels(hw, 128, 8).attention_us("uq4", "prefill", 1, 1, 4096, 4096)
assert mixed.lookups == 1 and not mixed.measured
assert mixed.phase_sources == {"decode": "table", "prefill": "roofline"}
assert mixed.label.startswith("decode: timing-model table d.json (fixture); prefill: "
                              "ROOFLINE MODEL (not measured"), mixed.label
assert any(n.startswith("NOT MEASURED: prefill attention times come from the roofline "
                        "model (asked for); decode times from the timing model")
           for n in mixed.notes()), mixed.notes()
# Asked for, the roofline replaces a prefill the table has.
asked = KernelTable(doc(), "t.json", fallback=RooflineKernels(hw, 128, 8),
                    fallback_phases=("prefill",))
asked.bind(128, 8, 16, ["uq4"])
assert asked.attention_us("uq4", "prefill", 2, 2, 512, 4) == \
    RooflineKernels(hw, 128, 8).attention_us("uq4", "prefill", 2, 2, 512, 4)
assert asked.phase_sources["prefill"] == "roofline"
# A full table keeps both phases even with a roofline at hand, and says so.
both = KernelTable(doc(), "t.json", fallback=RooflineKernels(hw, 128, 8))
both.bind(128, 8, 16, ["uq4"])
assert both.measured and both.phase_sources == {"decode": "table", "prefill": "table"}
assert both.label.startswith("decode and prefill: timing-model table t.json"), both.label
assert any(n.startswith("NOT MEASURED: decode and prefill attention times come from the "
                        "gfx950 timing model") for n in both.notes()), both.notes()
# Missing shapes are an error for either phase.
msg = raises(ValueError, mixed.bind, 256, 8, 16, ["uq4"])
assert "no kernel for head_dim=256" in msg and "uq4/decode" in msg and "prefill" not in \
    msg.split("(it has")[0], msg

# Prefill entries as uq-kernel-report --table writes them: batch 1, one
# chunk of n new tokens per point, at contexts n and above. Rows are keyed
# by work = batch x kv_heads x n; a lookup of one chunk of 64 tokens over 2
# KV heads (work 128) at context 2048 lies between the rows n = 16 (work
# 32) and n = 256 (work 512): in each row log-linear in context between
# 1024 and 4096, then between the rows in log work. Hand-computed:
#   row 32:  t = 10 at 1024, 40 at 4096 -> 20 at 2048 (slope 1)
#   row 512: t = 100 at 1024, 200 at 4096 -> 100 * 2^0.5 at 2048
#   work 128 is halfway in log between 32 and 512 -> sqrt(20 * 141.42...)
pre = [{"batch": 1, "kv_heads": 2, "context": c, "query_len": n, "time_us": tu}
       for n, c, tu in ((16, 16, 2.0), (16, 1024, 10.0), (16, 4096, 40.0),
                        (256, 256, 30.0), (256, 1024, 100.0), (256, 4096, 200.0))]
hand = doc(kernels=[k for k in dec["kernels"]] +
           [{"format": "uq4", "phase": "prefill", "head_dim": 128, "gqa": 8,
             "block_size": 16, "points": pre}])
ht = KernelTable(hand, "h.json")
ht.bind(128, 8, 16, ["uq4"])
v = ht.attention_us("uq4", "prefill", 1, 2, 2048, 64)
want = (20.0 * 100.0 * 2 ** 0.5) ** 0.5
assert abs(v - want) < 1e-9 * want, (v, want)
assert ht.extrapolated == 0 and ht.phase_sources["prefill"] == "table"
# The points themselves come back exactly.
assert ht.attention_us("uq4", "prefill", 1, 2, 4096, 256) == 200.0
# Several chunks in one launch, on a table of single chunks: 2 chunks of
# 32 tokens over 2048 have the keys of one chunk of 64 over 2048 + 16 =
# 2064 (each token sees its context less its chunk's later tokens), which
# fits, so they are that chunk: rows 32 and 512 at 2064, halfway in log work.
v = ht.attention_us("uq4", "prefill", 2, 2, 2048, 32)
r = 2064 / 1024
want = (10.0 * r * 100.0 * r ** 0.5) ** 0.5
assert abs(v - want) < 1e-9 * want, (v, want)
# 4 chunks of 200 over 256: one chunk of 800 would need a context of 800,
# more than 256 + 3 x 100 = 556: 4 launches of one chunk of 200 over 256
# (work 400: row 32 at 256 is 2 x 5^(2/3), row 512 at 256 the point 30).
v = ht.attention_us("uq4", "prefill", 4, 2, 256, 200)
t_row = 2 * 5 ** (2 / 3)
want = 4 * t_row * (30.0 / t_row) ** (math.log(400 / 32) / math.log(512 / 32))
assert abs(v - want) < 1e-9 * want, (v, want)
assert ht.extrapolated == 0
# A chunk of 64 tokens at context 128 (work 128): the row n = 256 cannot
# hold a context of 128, so the upper neighbour is the diagonal at 128, a
# chunk of 128 from empty (work 256), between (16, 2) and (256, 30):
# 2 * 15^(3/4); row 32 at 128: between (16, 2) and (1024, 10):
# 2 * 5^(1/2). Work 128 lies 2/3 of the way in log from 32 to 256.
v = ht.attention_us("uq4", "prefill", 1, 2, 128, 64)
t_row, t_diag = 2 * 5 ** 0.5, 2 * 15 ** 0.75
want = t_row * (t_diag / t_row) ** (2 / 3)
assert abs(v - want) < 1e-9 * want, (v, want)
assert ht.extrapolated == 0
# A chunk of 8 tokens at context 64 (work 16): half the smallest row's
# work (2x, allowed and counted), on the same pair's slope; 4 tokens at
# context 64 is 4x: refused.
v = ht.attention_us("uq4", "prefill", 1, 2, 64, 8)
t_row, t_diag = 2 * 5 ** (1 / 3), 2 * 15 ** 0.5
want = t_row * (t_diag / t_row) ** (-1 / 2)
assert abs(v - want) < 1e-9 * want, (v, want)
assert ht.extrapolated == 1 and abs(ht.max_factor - 2.0) < 1e-12
raises(ExtrapolationError, ht.attention_us, "uq4", "prefill", 1, 2, 64, 4)
# fp8 has no prefill entry in this table: an error naming it.
msg = raises(ValueError, ht.bind, 128, 8, 16, ["uq4", "fp8"])
assert "fp8/prefill" in msg and "uq4/prefill" not in msg.split("(it has")[0], msg

# GEMMs: a dense 8e9-parameter bf16 model streams 16e9 B = 3200 us at 5 TB/s;
# compute is 2*8e9 FLOPs per token / (2.5165824e15 * 0.6) = 10.596 us.
m = ModelShape("d", 32, 32, 8, 128, 8e9, 8e9, 2.0, "bf16")
g = GemmModel(hw, m)
assert abs(g.step_us(1) - 3200.0) < 1e-9
assert abs(g.step_us(1000) - 1000 * 16e9 / 1.50994944e15 * 1e6) < 1e-6
assert abs(g.default_us_per_token - 10.5963) < 1e-4
assert GemmModel(hw, m, us_per_token=50.0).step_us(100) == 5000.0
# TP 2 halves both.
assert abs(GemmModel(hw, m, tp=2).step_us(1) - 1600.0) < 1e-9
# MoE: 4e9 routed parameters (fp8) in 4 experts, 1 per token, 1e9 dense:
# one token touches 1/4 of the experts, two 1 - (3/4)^2 = 7/16.
moe = ModelShape("m", 2, 4, 2, 128, 5e9, 2e9, 1.0, "fp8", 4e9, 4, 1)
g = GemmModel(hw, moe)
assert abs(g.step_us(1) - (1e9 + 1e9) / 5e12 * 1e6) < 1e-9
assert abs(g.step_us(2) - (1e9 + 4e9 * 7 / 16) / 5e12 * 1e6) < 1e-9
print("ok")
