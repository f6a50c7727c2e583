# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s %uq_build

# uq-kernel-report --table writes what the serving simulator reads: the
# table loads (the reader validates every field), its points come back
# exactly at their own coordinates, prefill (no kernel yet) comes from the
# labelled roofline, and uq-serving runs on it, naming in its output and
# JSON which phase comes from the table and which from the roofline.
import json
import os
import subprocess
import sys
import tempfile

from uq.serving.kernels import KernelTable, RooflineKernels
from uq.serving.model import Hardware

build = sys.argv[1]
tool = os.path.join(build, "bin", "uq-kernel-report")

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "kt.json")
    p = subprocess.run([tool, "--table", path, "--shapes", "128:4:2", "--contexts", "300,600",
                        "--batches", "1,2"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "no prefill kernel" in p.stdout, p.stdout
    doc = json.load(open(path))
    assert "model" in doc["source"] and doc["hardware"]["cus"] == 256
    assert sorted(k["format"] for k in doc["kernels"]) == ["bf16", "fp8", "uq4"]
    for k in doc["kernels"]:
        assert (k["phase"], k["head_dim"], k["gqa"], k["block_size"]) == ("decode", 128, 4, 16)
        pts = {(q["batch"], q["context"]): q for q in k["points"]}
        assert sorted(pts) == [(1, 300), (1, 600), (2, 300), (2, 600)], sorted(pts)
        for q in k["points"]:
            assert q["kv_heads"] == 2 and q["query_len"] == 1
            assert 0 < q["bound_us"] <= q["time_us"]
            # The point is the attention step plus the new tokens' cache write.
            assert abs(q["attention_us"] + q["cache_write_us"] - q["time_us"]) < 1e-9

    hw = Hardware()
    t = KernelTable.load(path, fallback=RooflineKernels(hw, 128, 4))
    t.bind(128, 4, 16, ["bf16", "fp8", "uq4"])
    for k in doc["kernels"]:
        for q in k["points"]:
            got = t.attention_us(k["format"], "decode", q["batch"], q["kv_heads"], q["context"], 1)
            assert got == q["time_us"], (k["format"], q, got)
    assert t.extrapolated == 0
    assert t.phase_sources == {"decode": "table", "prefill": "roofline"}
    assert t.attention_us("uq4", "prefill", 1, 2, 600, 100) == \
        RooflineKernels(hw, 128, 4).attention_us("uq4", "prefill", 1, 2, 600, 100)

    # The simulator on it (Llama-3.1-8B: D 128, GQA 4; its 8 KV heads and
    # longer contexts are outside this tiny table, hence the flag).
    j = os.path.join(d, "s.json")
    p = subprocess.run([sys.executable, "-m", "uq.serving", "simulate", "--sessions", "2",
                        "--rounds", "1", "--kernel-table", path, "--allow-extrapolation",
                        "--json", j], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    first = p.stdout.splitlines()[0]
    assert f"kernel times: decode: timing-model table {path}" in first, first
    assert "prefill: ROOFLINE MODEL (not measured" in first, first
    assert any(l.startswith("NOT MEASURED: prefill attention times come from the roofline")
               for l in p.stdout.splitlines()), p.stdout
    km = json.load(open(j))["kernel_model"]
    assert km["phases"] == {"decode": "table", "prefill": "roofline"} and not km["measured"]
print("ok")
