# RUN: env PYTHONPATH=%uq_build/python-bindings UQ_SHARED_DIR=%shared %python %s

# uq-quality answers user errors with one usage line (exit 2, no traceback),
# validates windows before the first forward pass, prints valid JSON with
# --json, and evaluates another text and window list. Each block is a
# regression test of a friction met in the accuracy study.
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SHARED = os.environ["UQ_SHARED_DIR"]


def run(*args, ok=True):
    p = subprocess.run([sys.executable, "-m", "uq.quality", *args], capture_output=True,
                       text=True, env=dict(os.environ))
    if ok:
        assert p.returncode == 0, (args, p.returncode, p.stdout, p.stderr)
    return p


def usage_error(*args, says):
    p = run(*args, ok=False)
    assert p.returncode == 2, (args, p.returncode, p.stderr)
    assert "Traceback" not in p.stderr, (args, p.stderr)
    last = p.stderr.strip().splitlines()[-1]
    assert re.match(r"uq-quality( [a-z]+)?: error: ", last), (args, p.stderr)
    assert says in last, (args, says, last)
    return last


tmp = tempfile.mkdtemp()
try:
    # --shared: a wrong folder is a usage error; the lm folder itself and
    # the option after the subcommand both work.
    usage_error("--shared", "/nonexistent", "sweep", says="--shared /nonexistent")
    usage_error("bpb", "--shared", tmp, says="manifest.json")
    p = run("metrics", "--shared", os.path.join(SHARED, "lm"), "--no-q", "--formats", "fp8",
            "--json")
    rows = json.loads(p.stdout)
    assert len(rows) == 8 and all(r["format"] == "fp8" for r in rows)

    # Format specs: spaces after commas are fine; unknown options, formats
    # and malformed values are usage errors naming the culprit.
    p = run("metrics", "--no-q", "--formats", "fp8, uq:c=0.196, rotv", "--json")
    assert sorted({r["format"] for r in json.loads(p.stdout)}) == ["fp8", "uq:c=0.196,rotv"]
    usage_error("metrics", "--formats", "uq:c=0.2,bogus", says="'bogus'")
    usage_error("bpb", "--formats", "fp9", says="unknown format 'fp9'")
    usage_error("bpb", "--formats", "uq:c=abc", says="'abc' is not a number")
    usage_error("bpb", "--formats", "uq:q=int8", says="q must be one of")

    # --windows N: 1..24, never silently clipped.
    usage_error("bpb", "--windows", "-1", says="must be at least 1")
    usage_error("bpb", "--windows", "0", says="must be at least 1")
    usage_error("bpb", "--windows", "100", says="only 24 windows")

    # Another text and window list; windows are validated before the forward
    # pass (a window past the end used to fail after it with a broadcast
    # error).
    text = os.path.join(tmp, "text.txt")
    with open(text, "wb") as f:
        f.write(b"The quick brown fox jumps over the lazy dog. " * 50)   # 2250 bytes
    wf = os.path.join(tmp, "w.json")
    json.dump([0, 2000], open(wf, "w"))
    usage_error("bpb", "--text", text, "--windows-file", wf,
                says="window start 2000 is outside")
    json.dump({"windows": "x"}, open(wf, "w"))
    usage_error("bpb", "--text", text, "--windows-file", wf, says="JSON list")
    usage_error("bpb", "--text", os.path.join(tmp, "missing.txt"), says="missing.txt")

    # bpb --json: stdout is JSON alone (progress goes to stderr); the
    # manifest's numbers are reported only for the manifest's own text and
    # windows.
    # The same 1025 bytes as a text of their own (window 0) and inside
    # val.txt (its window 459456) give the same bits/byte.
    with open(os.path.join(SHARED, "lm", "val.txt"), "rb") as f:
        val = f.read()
    with open(text, "wb") as f:
        f.write(val[459456:459456 + 1025])
    json.dump([0], open(wf, "w"))
    p = run("bpb", "--text", text, "--windows-file", wf, "--formats", "bf16;fp8", "--json")
    d = json.loads(p.stdout)
    assert d["text"] == text and d["windows"] == [0], d
    assert d["manifest_bpb"] is None, d
    assert [r["format"] for r in d["results"]] == ["bf16", "fp8"]
    assert [r["bits_per_element"] for r in d["results"]] == [16, 8]
    assert abs(d["results"][1]["vs_bf16"]) < 0.01, d
    assert "bits/byte" in p.stderr
    json.dump({"windows": [459456]}, open(wf, "w"))
    d2 = json.loads(run("bpb", "--windows-file", wf, "--json").stdout)
    assert d2["text"] == "val.txt" and d2["manifest_bpb"] is None, d2
    assert d2["results"][0]["bpb"] == d["results"][0]["bpb"], (d, d2)
    # A text alone: N evenly spaced windows over it.
    p = run("bpb", "--text", text, "--windows", "1", "--json")
    assert json.loads(p.stdout)["windows"] == [0]

    # A manifest without 'results' (and a text given by name) works.
    lm2 = os.path.join(tmp, "shared2", "lm")
    os.makedirs(lm2)
    man = json.load(open(os.path.join(SHARED, "lm", "manifest.json")))
    del man["results"]
    json.dump(man, open(os.path.join(lm2, "manifest.json"), "w"))
    for name in ("weights.bin", "activations.bin", "val.txt"):
        os.symlink(os.path.join(SHARED, "lm", name), os.path.join(lm2, name))
    p = run("--shared", os.path.join(tmp, "shared2"), "bpb", "--windows", "1", "--json")
    d = json.loads(p.stdout)
    assert d["manifest_bpb"] is None and len(d["windows"]) == 1, d
    assert 1.0 < d["results"][0]["bpb"] < 2.0, d

    # Every subcommand the doc names exists.
    for sub in ("metrics", "bpb", "policy", "sweep", "report"):
        assert run(sub, "--help").stdout.startswith("usage: uq-quality " + sub)
    usage_error("policy", "--budget", "4.5", "--candidates", "uq", "--default", "fp8",
                "--windows", "1", says="--default 'fp8' is not among the candidates")
    usage_error("policy", "--budget", "4.5", "--base", "uq:bogus", "--windows", "1",
                says="'bogus'")
    # policy --base: each head upgraded alone against the base; the budget
    # (4.25 + 6.125) / 8 per upgraded head: one upgrade fits 4.5.
    p = run("policy", "--base", "uq", "--candidates", "fp8|uq", "--budget", "4.5",
            "--budget", "4.25", "--windows", "1", "--json")
    d = json.loads(p.stdout)
    assert sorted(d["sensitivity"]["fp8|uq"]) == [f"{l},{h}" for l in range(4) for h in range(2)]
    b45, b425 = d["policies"]
    assert b45["bits_per_element"] <= 4.5 and len(b45["overrides"]) <= 1, b45
    assert b425["bits_per_element"] == 4.25 and b425["overrides"] == [], b425
    if b45["overrides"]:
        # It upgrades the head whose measured change is the most negative.
        o = b45["overrides"][0]
        sens = d["sensitivity"]["fp8|uq"]
        assert f"{o['layer']},{o['kv_head']}" == min(sens, key=sens.get) and o["format"] == "fp8|uq"
finally:
    shutil.rmtree(tmp)

# The Lloyd-Max spec of the CLI is the report's calibrated codebook, not the
# Gaussian one (it used to be the Gaussian one).
import numpy as np  # noqa: E402

from uq.quality.data import load_lm  # noqa: E402
from uq.quality.formats import Calibration, gaussian_lloyd_max, parse_format  # noqa: E402

lm = load_lm(SHARED, with_weights=False)
cal = Calibration(lm)
cb = parse_format("lloydmax", cal).codebook
assert np.array_equal(cb, cal.codebook("norm"))
assert not np.allclose(cb, gaussian_lloyd_max(), atol=1e-3)
assert np.array_equal(parse_format("lloydmax:gauss").codebook, gaussian_lloyd_max())
try:
    parse_format("lloydmax")
except ValueError as e:
    assert "calibration" in str(e)
else:
    raise AssertionError("lloydmax without calibration data must be refused")

# Tables of the generated page escape the '|' of K|V specs.
from uq.quality.doc import table  # noqa: E402

assert table(["spec", "a|b"], [["fp8|uq", 1.0]]).splitlines() == [
    "| spec | a\\|b |", "|---|---|", "| fp8\\|uq | 1.0000 |"]

# No import cycle: the page renderer does not import the report runner.
p = subprocess.run([sys.executable, "-c", "import sys, uq.quality.doc; "
                    "print('uq.quality.report' in sys.modules)"],
                   capture_output=True, text=True, env=dict(os.environ))
assert p.stdout.strip() == "False", (p.stdout, p.stderr)
print("ok")
