# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s %uq_build

# uq-kernel-report --table writes what the serving simulator reads: decode
# entries and prefill entries from the compiled uq.paged_attention kernels
# (a tiny grid here). The table loads (the reader validates every field),
# its points come back exactly at their own coordinates for both phases,
# and uq-serving runs on it, naming the timing model for both phases in its
# output and JSON. A --no-prefill table is refused for prefill unless the
# roofline is asked for (--prefill-kernel-model roofline), and the options
# that do not fit are one-line errors.
import json
import os
import subprocess
import sys
import tempfile

from uq.serving.kernels import KernelTable, RooflineKernels
from uq.serving.model import Hardware

build = sys.argv[1]
tool = os.path.join(build, "bin", "uq-kernel-report")
grid = ["--shapes", "128:4:2", "--contexts", "300,600", "--batches", "1,2"]


def report(*args):
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=600)


def serving(*args):
    return subprocess.run([sys.executable, "-m", "uq.serving", *args], capture_output=True,
                          text=True, timeout=300)


with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "kt.json")
    p = report("--table", path, *grid, "--prefill-new-tokens", "16,64",
               "--prefill-contexts", "48,256")
    assert p.returncode == 0, p.stderr
    assert "prefill uq4  D 128 GQA 4  (2 KV heads): 5 points" in p.stdout, p.stdout
    assert "12 decode and 15 prefill points" in p.stdout, p.stdout
    doc = json.load(open(path))
    assert "model" in doc["source"] and doc["hardware"]["cus"] == 256
    assert "prefill kernels" in doc["phases"]["prefill"], doc["phases"]
    assert sorted((k["format"], k["phase"]) for k in doc["kernels"]) == \
        [(f, ph) for f in ("bf16", "fp8", "uq4") for ph in ("decode", "prefill")]
    for k in doc["kernels"]:
        assert (k["head_dim"], k["gqa"], k["block_size"]) == (128, 4, 16)
        if k["phase"] == "decode":
            pts = {(q["batch"], q["context"]): q for q in k["points"]}
            assert sorted(pts) == [(1, 300), (1, 600), (2, 300), (2, 600)], sorted(pts)
            for q in k["points"]:
                assert q["kv_heads"] == 2 and q["query_len"] == 1
                assert 0 < q["bound_us"] <= q["time_us"]
                # The point is the attention step plus the new tokens' cache write.
                assert abs(q["attention_us"] + q["cache_write_us"] - q["time_us"]) < 1e-9
            continue
        # Prefill: each new-token count at its own context and at every
        # listed context above it (48 < 64 is left out), one chunk each.
        assert k["partitions"] == 1
        pts = sorted((q["query_len"], q["context"]) for q in k["points"])
        assert pts == [(16, 16), (16, 48), (16, 256), (64, 64), (64, 256)], pts
        for q in k["points"]:
            assert q["batch"] == 1 and q["kv_heads"] == 2
            # The call's three launches, each a positive estimate.
            assert min(q["query_us"], q["prefill_us"], q["merge_us"]) > 0, q
            assert abs(q["query_us"] + q["prefill_us"] + q["merge_us"] - q["time_us"]) < 1e-9
            assert 0 < q["prefill_bound_us"] <= q["prefill_us"], q
        by = {(q["query_len"], q["context"]): q["time_us"] for q in k["points"]}
        # More keys or more new tokens never take less time.
        assert by[(16, 16)] < by[(16, 48)] < by[(16, 256)] and by[(64, 64)] < by[(64, 256)], by

    t = KernelTable.load(path)
    t.bind(128, 4, 16, ["bf16", "fp8", "uq4"])
    for k in doc["kernels"]:
        for q in k["points"]:
            got = t.attention_us(k["format"], k["phase"], q["batch"], q["kv_heads"],
                                 q["context"], q["query_len"])
            assert got == q["time_us"], (k["format"], k["phase"], q, got)
    assert t.extrapolated == 0
    assert t.phase_sources == {"decode": "table", "prefill": "table"} and t.measured

    # The simulator on it (Llama-3.1-8B: D 128, GQA 4; its 8 KV heads and
    # longer contexts are outside this tiny table, hence the flag).
    j = os.path.join(d, "s.json")
    p = serving("simulate", "--sessions", "2", "--rounds", "1", "--kernel-table", path,
                "--allow-extrapolation", "--json", j)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert f"kernel times: decode and prefill: timing-model table {path}" in lines[0], \
        lines[0]
    assert "ROOFLINE" not in p.stdout
    assert any(l.startswith("NOT MEASURED: decode and prefill attention times come from the "
                            "gfx950 timing model of the compiled kernels") for l in lines), lines
    km = json.load(open(j))["kernel_model"]
    assert km["phases"] == {"decode": "table", "prefill": "table"} and km["measured"], km
    # Asked for, the roofline times prefill.
    p = serving("simulate", "--sessions", "2", "--rounds", "1", "--kernel-table", path,
                "--allow-extrapolation", "--prefill-kernel-model", "roofline", "--json", j)
    assert p.returncode == 0, p.stderr
    assert "prefill: ROOFLINE MODEL (not measured" in p.stdout.splitlines()[0], p.stdout
    km = json.load(open(j))["kernel_model"]
    assert km["phases"] == {"decode": "table", "prefill": "roofline"} and not km["measured"]

    # --no-prefill: decode entries only; the simulator refuses prefill
    # from it unless the roofline is asked for.
    dec = os.path.join(d, "dec.json")
    p = report("--table", dec, *grid, "--no-prefill", "--formats", "uq4")
    assert p.returncode == 0, p.stderr
    assert "4 decode and 0 prefill points" in p.stdout, p.stdout
    assert {k["phase"] for k in json.load(open(dec))["kernels"]} == {"decode"}
    p = serving("simulate", "--sessions", "2", "--rounds", "1", "--kernel-table", dec,
                "--formats", "uq", "--allow-extrapolation")
    assert p.returncode == 1 and "uq4/prefill" in p.stderr and \
        "--prefill-kernel-model roofline" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    p = serving("simulate", "--sessions", "2", "--rounds", "1", "--kernel-table", dec,
                "--formats", "uq", "--allow-extrapolation", "--prefill-kernel-model", "roofline")
    assert p.returncode == 0, p.stderr
    assert RooflineKernels(Hardware(), 128, 4).label in p.stdout.splitlines()[0]

    # Options that do not fit: one line each, exit 1, no table written.
    bad = os.path.join(d, "bad.json")
    for args, msg in (
            (["--table", bad, *grid, "--prefill-shapes", "128:8:2"],
             "the prefill shape 128:8:2 is not one of the table's shapes"),
            (["--table", bad, *grid, "--prefill-new-tokens", "0"],
             "--prefill-new-tokens must be in [1, 1048576]"),
            (["--table", bad, *grid, "--no-prefill", "--prefill-shapes", "128:4:2"],
             "exclude each other"),
            (["--table", bad, *grid, "--cache-layout", "head-major"],
             "not implemented: prefill entries with a head-major cache"),
            (["--no-prefill"], "go with --table"),
            (["--ladder", "--prefill-contexts", "64"], "go with --table")):
        p = report(*args)
        assert p.returncode == 1 and msg in p.stderr, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert not os.path.exists(bad)
print("ok")
