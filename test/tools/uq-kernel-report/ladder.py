# RUN: %python %s %uq_build/bin/uq-kernel-report

# uq-kernel-report --quick (the ladder on one tiny point: D 128, GQA 4, 2 KV
# heads, batch 2, context 600): the table has a row with a time, a bound and
# a busiest resource per format, the HBM floors and the ratio columns; the
# ratios agree with the time columns (recomputed here, within the printed
# rounding) and with the JSON's times; the floors are the step's cache bytes
# (slot sizes of the format contract: 512 / 256 / 136 B at D = 128) over
# 5 TB/s; bounds never exceed estimates; the step is the sum of its query,
# partial and merge launches, over the partition count of the compiler's
# rule; the partial launch was sampled; and the
# sampled prediction of the check batch agrees with the whole emulation.
# User errors, and steps too large to emulate, are one-line messages.
import json
import os
import subprocess
import sys
import tempfile

tool = sys.argv[1]


def run(*args):
    p = subprocess.run([tool, *args], capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def fails(expect, *args):
    rc, out, err = run(*args)
    assert rc == 1, (args, rc, out, err)
    assert err.count("\n") == 1 and expect in err, (expect, err)


fails("HEAD_DIM:GQA:KV_HEADS", "--ladder", "--shapes", "128:4")
fails("--plot goes with --ladder", "--table", "/dev/null", "--plot", "x.png")
fails("--json goes with --ladder", "--table", "/dev/null", "--json", "x.json")
fails("--batches must be in", "--ladder", "--batches", "0")
fails("go with --ladder or --table", "--json", "x.json")
# A step too large to emulate is refused before its buffers are allocated
# (split-K workspaces of 2^25 tokens in partitions of 256 tokens x 128
# query heads: about 8 GiB).
fails("GiB of buffers (more than the 4 GiB", "--ladder", "--no-check", "--shapes",
      "128:16:8", "--batches", "1", "--contexts", "33554432",
      "--max-partition-tokens", "256")

FORMATS = ("bf16", "fp8", "uq4")
SLOT = {"bf16": 512, "fp8": 256, "uq4": 136}      # D = 128, K + V per token/head

with tempfile.TemporaryDirectory() as d:
    j = os.path.join(d, "ladder.json")
    rc, out, err = run("--quick", "--json", j)
    assert rc == 0, err
    lines = out.splitlines()
    assert "MODEL" in lines[0], lines[0]
    # The table: a header naming the columns, then one row (batch 2, 600).
    (hi,) = [i for i, l in enumerate(lines) if l.split()[:2] == ["batch", "context"]]
    cells = [c.split() for c in lines[hi].split("|")]
    assert [c[0] for c in cells[1:4]] == ["bf16_us", "fp8_us", "uq4_us"], cells
    assert cells[4] == ["floor:", "bf16", "fp8", "uq4"], cells
    assert cells[5] == ["UQ/FP8", "UQ/BF16"], cells
    row = [c.split() for c in lines[hi + 1].split("|")]
    assert row[0] == ["2", "600"], row
    t, bnd = {}, {}
    for f, c in zip(FORMATS, row[1:4]):
        assert len(c) == 3 and c[2] in ("VALU", "MFMA", "LDS", "scalar", "vmem", "HBM"), c
        t[f], bnd[f] = float(c[0]), float(c[1])
        assert 0 < bnd[f] <= t[f], (f, c)
    floors = [float(x) for x in row[4]]
    r_fp8, r_bf16 = (float(x) for x in row[5])

    def close(r, a, b):         # r printed to 3 decimals, a and b to 2
        exact = a / b
        tol = 0.0005 + exact * (0.005 / a + 0.005 / b) + 1e-9
        return abs(r - exact) <= tol

    assert close(r_fp8, t["uq4"], t["fp8"]), (r_fp8, t)
    assert close(r_bf16, t["uq4"], t["bf16"]), (r_bf16, t)
    # Floors: 2 sequences x 600 tokens x 2 KV heads x slot bytes at 5 TB/s.
    for f, fl in zip(FORMATS, floors):
        want = 2 * 600 * 2 * SLOT[f] / 5e12 * 1e6
        assert abs(fl - want) <= 0.005 + 1e-9, (f, fl, want)
    assert any(l.startswith("ladder: ") and l.endswith("s in all") for l in lines), lines[-3:]

    doc = json.load(open(j))
    (shape,) = doc["shapes"]
    assert (shape["head_dim"], shape["gqa"], shape["kv_heads"]) == (128, 4, 2)
    (p,) = shape["points"]
    for f in FORMATS:
        q = p[f]
        assert abs(q["time_us"] - t[f]) <= 0.005 + 1e-9, (f, q["time_us"], t[f])
        names = [l["kernel"] for l in q["launches"]]
        assert names == ["decode_0_query", "decode_0_partial", "decode_0_merge"], names
        assert abs(sum(l["time_us"] for l in q["launches"]) - q["time_us"]) < 1e-6 * q["time_us"]
        assert abs(sum(l["bound_us"] for l in q["launches"]) - q["bound_us"]) < 1e-6 * q["bound_us"]
        part = q["launches"][1]
        # The compiler's partition rule (docs/uq-compile.md) for 2 sequences
        # x 2 KV heads over 38 blocks of 16 (C = 608 tokens): max(1,
        # ceil(608 / 2048), min(ceil(1024 / 4), ceil(608 / 64))) = 10.
        cap, rows = 608, 2 * 2
        want = max(1, -(-cap // 2048), min(-(-1024 // rows), -(-cap // 64)))
        assert want == 10 and q["num_partitions"] == want, q["num_partitions"]
        # Grid (10 partitions, 2 KV heads, 2 sequences).
        assert part["workgroups"] == 40 and 0 < part["traced_workgroups"] < 40, part
        assert q["floor_us"] == 2 * 600 * 2 * SLOT[f] / 5e12 * 1e6
    assert abs(p["uq_over_fp8"] - p["uq4"]["time_us"] / p["fp8"]["time_us"]) < 1e-12
    assert abs(p["uq_over_bf16"] - p["uq4"]["time_us"] / p["bf16"]["time_us"]) < 1e-12
    # The sampling check: whole emulation (checked against the reference)
    # against the sampled prediction, per launch and format.
    chk = doc["sampling_check"]
    assert chk["seq_lens"] == [600, 600, 300, 17]
    assert [c["format"] for c in chk["formats"]] == list(FORMATS)
    for c in chk["formats"]:
        assert c["whole_output_rel_l2"] < 0.05, c
        for r in c["rows"]:
            for k in ("time", "bound"):
                w, s = r[f"whole_{k}_us"], r[f"sampled_{k}_us"]
                assert abs(s - w) <= 0.02 * w, (c["format"], r)
# --hbm-traffic: the same tiny step counted by whole lines (default) and by
# distinct bytes. With 8 KV heads the uq4 cache's 136-B slots straddle
# 128-B lines, so bytes < lines for uq4; bytes still cover the slot read.
with tempfile.TemporaryDirectory() as d:
    per_head = {}
    for mode in ("lines", "bytes"):
        j = os.path.join(d, mode + ".json")
        rc, out, err = run("--ladder", "--no-check", "--shapes", "128:8:8",
                           "--contexts", "512", "--batches", "2",
                           "--hbm-traffic=" + mode, "--json", j)
        assert rc == 0, (rc, out, err)
        doc = json.load(open(j))
        assert doc["hbm_traffic"] == mode, doc["hbm_traffic"]
        assert ("--hbm-traffic=" + mode) in out, out
        pt = doc["shapes"][0]["points"][0]
        per_head[mode] = {f: pt[f]["partial_hbm_bytes_per_token_head"]
                          for f in FORMATS}
    assert per_head["bytes"]["uq4"] < per_head["lines"]["uq4"], per_head
    assert per_head["bytes"]["uq4"] >= SLOT["uq4"], per_head
    for f in FORMATS:
        assert per_head["bytes"][f] <= per_head["lines"][f], per_head
print("ok")
