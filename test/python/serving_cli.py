# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s %uq_build %S/Inputs

# uq-serving end to end: build/bin/uq-serving runs; every output names its
# kernel-time source (roofline labelled as not measured, table by file);
# per-format capacities follow the exact bytes; JSON and plot are written;
# user errors are one-line messages; the concurrency search bisects; and the
# paper-like run (roofline) shows the paper's qualitative result: UltraQuant
# ahead in late rounds at GMU 0.60, the gap narrowing at 0.65. (The last run
# takes a few seconds: it simulates 4 deployments of 32 sessions.)
import json
import os
import subprocess
import sys
import tempfile

build, inputs = sys.argv[1], sys.argv[2]
table = os.path.join(inputs, "serving-kernel-times.json")
launcher = os.path.join(build, "bin", "uq-serving")


def cli(*args, env_pythonpath=True):
    env = dict(os.environ)
    if not env_pythonpath:
        env.pop("PYTHONPATH", None)
        cmd = [launcher, *args]
    else:
        cmd = [sys.executable, "-m", "uq.serving", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    return p.returncode, p.stdout, p.stderr


def fails(expect, *args):
    rc, out, err = cli(*args)
    assert rc == 1, (args, rc, out, err)
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith("uq-serving: error:") and expect in err, (expect, err)


small = ["--sessions", "4", "--rounds", "3", "--workload", "chat"]
with tempfile.TemporaryDirectory() as d:
    # The launcher finds the package without PYTHONPATH.
    rc, out, err = cli("--help", env_pythonpath=False)
    assert rc == 0 and "simulate" in out and "paper" in out, (rc, out, err)

    # Roofline: labelled in stdout (first and last lines), JSON and plot.
    j = os.path.join(d, "r.json")
    rc, out, err = cli("simulate", *small, "--kernel-model", "roofline", "--json", j,
                       "--plots", d)
    assert rc == 0, err
    lines = out.strip().splitlines()
    assert "ROOFLINE MODEL (not measured" in lines[0], lines[0]
    assert any(l.startswith("NOT MEASURED") for l in lines[-3:]), lines[-3:]
    doc = json.load(open(j))
    assert doc["kernel_model"]["measured"] is False
    assert "not measured" in doc["kernel_model"]["label"]
    (run,) = doc["runs"]
    assert run["gmu"] == 0.9 and sorted(run["formats"]) == ["bf16", "fp8", "uq"]
    # Llama-3.1-8B shape: 32 layers x 8 KV heads x (512 | 256 | 136) B.
    per_token = {f: run["formats"][f]["capacity"]["bytes_per_token_per_gpu"]
                 for f in run["formats"]}
    assert per_token == {"bf16": 131072, "fp8": 65536, "uq": 34816}, per_token
    # Budget 0.9 x 288 GiB - 8.03e9 x 2 B of weights - 8 GiB reserve.
    budget = 0.9 * 288 * 2 ** 30 - doc["model"]["params_total"] * 2 - 8 * 2 ** 30
    for f, b in per_token.items():
        assert run["formats"][f]["capacity"]["blocks"] == int(budget // (b * 16))
    for f in run["formats"].values():
        assert [r["round"] for r in f["per_round"]] == [1, 2, 3]
        assert f["groups"]["all"]["requests"] == 12
    png = open(os.path.join(d, "ttft_by_round.png"), "rb").read(8)
    assert png == b"\x89PNG\r\n\x1a\n"
    # Deterministic: the same command gives the same results.
    j2 = os.path.join(d, "r2.json")
    rc, out, err = cli("simulate", *small, "--kernel-model", "roofline", "--json", j2)
    assert rc == 0 and json.load(open(j2))["runs"] == doc["runs"], err

    # A table: named in every output, extrapolation reported.
    rc, out, err = cli("simulate", *small, "--kernel-table", table, "--allow-extrapolation",
                       "--json", j)
    assert rc == 0, err
    assert f"kernel times: decode and prefill: timing-model table {table}" in out.splitlines()[0]
    doc = json.load(open(j))
    assert doc["kernel_model"]["measured"] is True and doc["kernel_model"]["lookups"] > 0
    # Far outside the table (a 200K-token prompt, 3x the largest context) is
    # refused without --allow-extrapolation.
    fails("outside the table", "simulate", "--sessions", "1", "--rounds", "1",
          "--prefix", "200000", "--kernel-table", table)

    # A precision policy runs next to the uniform formats.
    pol = os.path.join(d, "p.json")
    json.dump({"schema": "uq.precision-policy/1", "default": "uq",
               "overrides": [{"layer": 0, "format": "bf16"}]}, open(pol, "w"))
    rc, out, err = cli("simulate", *small, "--kernel-model", "roofline", "--formats", "fp8",
                       "--policy", pol, "--json", j)
    assert rc == 0, err
    f = json.load(open(j))["runs"][0]["formats"]["policy:p.json"]
    # Layer 0 BF16 (8 x 512), 31 layers UltraQuant (8 x 136).
    assert f["capacity"]["bytes_per_token_per_gpu"] == 8 * 512 + 31 * 8 * 136
    assert f["kv_formats"] == ["bf16", "uq4"]

    # User errors.
    fails("not found", "simulate", "--kernel-table", os.path.join(d, "none.json"))
    fails("gpu_memory_utilization must be in (0, 1]", "simulate", "--gmu", "1.5",
          "--kernel-model", "roofline")
    fails("bad distribution", "simulate", "--prefix", "lognormal:x",
          "--kernel-model", "roofline")
    fails("has no serving kernel", "simulate", "--formats", "int4",
          "--kernel-model", "roofline")
    fails("cannot read policy", "simulate", "--policy", os.path.join(d, "none.json"),
          "--kernel-model", "roofline")
    fails("do not split over TP 3", "simulate", "--tp", "3", "--kernel-model", "roofline")
    fails("no kernel for head_dim=256", "simulate", "--model", "gemma-2-9b",
          "--kernel-table", table)
    fails("no room for a KV cache", "simulate", "--gmu", "0.05", "--kernel-model", "roofline")

# The concurrency search: with P90 TTFT = 100 ms x sessions, the most
# sessions within 550 ms is 5 (probes 1, 2, 4, 8, then 6, 5).
import uq.serving.study as st

probes = []


def fake(setup, policy, label, sessions=None):
    probes.append(sessions)
    return {"groups": {"all": {"ttft_p90_ms": 100.0 * sessions}}}


real, st.run_format = st.run_format, fake
r = st.max_sessions(None, "uq", "uq", 550.0, 90, "all", limit=512)
assert r["max_sessions"] == 5 and probes == [1, 2, 4, 8, 6, 5], (r, probes)
probes.clear()
assert st.max_sessions(None, "uq", "uq", 50.0)["max_sessions"] == 0
r = st.max_sessions(None, "uq", "uq", 1e9, limit=16)
assert r["max_sessions"] == 16 and r["capped_at"] == 16
st.run_format = real

# The paper-like run on the roofline: UltraQuant well ahead in rounds 4-6 and
# overall at GMU 0.60 with higher output throughput, FP8 at least as fast in
# rounds 2-3, and the late-round gap smaller at GMU 0.65.
with tempfile.TemporaryDirectory() as d:
    j = os.path.join(d, "p.json")
    rc, out, err = cli("paper", "--kernel-model", "roofline", "--formats", "fp8,uq",
                       "--json", j)
    assert rc == 0, err
    assert "paper (GMU 0.60)" in out and "3.47x" in out
    cmp = json.load(open(j))["fp8_vs_uq"]
    lo, hi = cmp["GMU 0.60"], cmp["GMU 0.65"]
    assert lo["late 4-6"] > 1.5 and lo["all"] > 1.2 and lo["throughput"] > 1.1, lo
    assert lo["warm 2-3"] <= 1.0, lo
    assert hi["late 4-6"] < lo["late 4-6"] and hi["all"] < lo["all"], (lo, hi)
print("ok")
