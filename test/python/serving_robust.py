# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s %uq_build %t.d

# uq-serving as a hostile user drives it: every number out of range, not
# finite or not an integer where a count is meant, a device or a FIFO or a
# deeply nested JSON as an input, a full device as an output. Each is one
# line `uq-serving: error: ...` with exit 1, within seconds (no hang, no
# traceback), and a failed --json write leaves no file behind.
import json
import os
import shutil
import subprocess
import sys
import time

build, tmp = sys.argv[1], sys.argv[2]
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp)
small = ["simulate", "--kernel-model", "roofline", "--sessions", "2", "--rounds", "2",
         "--formats", "uq"]


def cli(*args):
    """A separate interpreter: what a user sees, tracebacks included."""
    t0 = time.time()
    p = subprocess.run([sys.executable, "-m", "uq.serving", *args], capture_output=True,
                       text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr, time.time() - t0


def inproc(*args):
    """uq.serving's main in this interpreter (much faster for the many
    option checks); an exception escaping main fails the test like a
    traceback would."""
    import contextlib
    import io

    from uq.serving.__main__ import main
    out, err = io.StringIO(), io.StringIO()
    t0 = time.time()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(args))
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue(), err.getvalue(), time.time() - t0


def fails(expect, *args, run=inproc):
    rc, out, err, secs = run(*small, *args)
    assert rc == 1, (args, rc, out[-300:], err[-2000:])
    assert "Traceback" not in err and err.count("\n") == 1, (args, err[-2000:])
    assert err.startswith("uq-serving: error:") and expect in err, (args, expect, err)
    assert secs < 30, (args, secs)
    print(f"{' '.join(args)}: {err.strip()}")


# Numbers: not finite, negative, zero where a count is meant, past a limit,
# not an integer.
fails("argument --tp: must be an integer in [1, 1024], got '0'", "--tp", "0", run=cli)
fails("argument --kv-gib: must be a finite number in (0, 1048576], got '1e18'",
      "--kv-gib", "1e18")
fails("argument --ramp-s: must be a finite number in [0, 1000000], got 'nan'",
      "--ramp-s", "nan")
fails("argument --sessions: must be an integer in [1, 4096], got '1000000000'",
      "--sessions", "1000000000")
fails("argument --launch-us: must be a finite number in [0, 1000000], got '-1'",
      "--launch-us", "-1")
fails("argument --gemm-us-per-token: must be a finite number", "--gemm-us-per-token", "nan")
fails("argument --ttft-target-ms: must be a finite number in (0, ", "--ttft-target-ms", "-5")
fails("argument --max-sessions-limit: must be an integer in [1, 4096], got '-1'",
      "--max-sessions-limit", "-1")
fails("argument --rounds: must be an integer", "--rounds", "2.5")
fails("argument --rounds: must be an integer", "--rounds", "1e3")
fails("argument --layers: must be an integer in [1, 4096]", "--layers", "0")
fails("argument --head-dim: must be an integer", "--head-dim", "inf")
fails("argument --block-size: must be an integer", "--block-size", "-16")
fails("argument --max-batched-tokens: must be an integer", "--max-batched-tokens", "0")
fails("argument --max-seqs: must be an integer", "--max-seqs", "0")
fails("argument --step-overhead-ms: must be a finite number", "--step-overhead-ms=-inf")
fails("argument --hbm-gib: must be a finite number", "--hbm-gib", "0")
fails("argument --hbm-tb-s: must be a finite number", "--hbm-tb-s", "1e-300")
fails("argument --cus: must be an integer", "--cus", "0")
fails("argument --clock-ghz: must be a finite number", "--clock-ghz", "nan")
fails("argument --bw-eff: must be a finite number in [0.001, 1]", "--bw-eff", "1.5")
fails("argument --mfma-eff: must be a finite number", "--mfma-eff", "0")
fails("argument --reserved-gib: must be a finite number", "--reserved-gib", "-1")
fails("argument --weights-gib: must be a finite number", "--weights-gib", "nan")
fails("argument --params-b: must be a finite number", "--params-b", "0")
fails("argument --active-params-b: must be a finite number", "--active-params-b", "-1")
fails("argument --common: must be an integer", "--common", "-1")
fails("argument --seed: must be an integer", "--seed", "-1")
fails("argument --extrapolation-limit: must be a finite number", "--extrapolation-limit",
      "0.5")
fails("--gmu: gpu_memory_utilization must be in (0, 1], got nan",
      "--gmu", "nan")
fails("bad distribution 'const:1e30': arguments must be at most 16777216",
      "--prefix", "const:1e30")
fails("bad distribution 'exp:1e300'", "--think", "exp:1e300")
# Usage errors argparse itself finds are the same one line.
fails("unrecognized arguments: --bogus", "--bogus")
fails("argument --ttft-percentile: invalid choice", "--ttft-percentile", "75")
# Work and memory limits of one simulation.
fails("output tokens, more than the limit of 16777216", "--output", "const:16000000",
      "--kv-gib", "100000")

# A budget whose blocks the workload could fill but the simulator cannot
# hold is refused; one it cannot fill is simulated with fewer blocks (the
# same result).
fails("KV blocks, more than the limit of 4194304", "--kv-gib", "1048576",
      "--block-size", "1", "--sessions", "4096", "--rounds", "2",
      "--prefix", "const:16000")
runs = {}
for kv in ("1000", "1048576"):
    j = os.path.join(tmp, f"kv{kv}.json")
    rc, out, err, _ = inproc(*small, "--kv-gib", kv, "--json", j)
    assert rc == 0, err
    runs[kv] = json.load(open(j))["runs"][0]["formats"]["uq"]
a, b = runs["1000"], runs["1048576"]
assert b["capacity"]["blocks"] > 1000 * a["capacity"]["blocks"], (a["capacity"], b["capacity"])
assert a["per_round"] == b["per_round"] and a["steps"] == b["steps"], (a, b)
print("a 1 PiB budget runs like a 1000 GiB one:", b["capacity"]["blocks"], "blocks")

# Inputs: devices, FIFOs, directories, deep nesting, wrong JSON types.
fifo = os.path.join(tmp, "fifo")
os.mkfifo(fifo)
deep = os.path.join(tmp, "deep.json")
with open(deep, "w") as f:
    f.write("[" * 5000 + "]" * 5000)
deep_policy = os.path.join(tmp, "deep-policy.json")
with open(deep_policy, "w") as f:
    f.write('{"schema": "uq.precision-policy/1", "x": ' + "[" * 3000 + "]" * 3000 + "}")
typed = os.path.join(tmp, "typed.json")
with open(typed, "w") as f:
    json.dump({"schema": "uq.precision-policy/1",
               "overrides": [{"layer": 0, "format": 5}]}, f)
big = os.path.join(tmp, "big.json")
with open(big, "w") as f:
    f.truncate((16 << 20) + 1)
fails("cannot read policy /dev/zero: not a regular file", "--policy", "/dev/zero", run=cli)
fails(f"cannot read policy {fifo}: not a regular file", "--policy", fifo)
fails(f"cannot read policy {tmp}: not a regular file", "--policy", tmp)
fails("JSON nested deeper than 64 levels", "--policy", deep, run=cli)
fails("JSON nested deeper than 64 levels", "--policy", deep_policy)
fails("malformed policy", "--policy", typed)
fails("more than the limit of 16777216", "--policy", big)
fails("cannot read kernel table /dev/zero: not a regular file",
      "--kernel-model", "table", "--kernel-table", "/dev/zero")
fails("JSON nested deeper than 64 levels", "--kernel-model", "table", "--kernel-table", deep)

# Outputs: a full device is an error; a failed write leaves nothing behind.
fails("cannot write /dev/full: No space left on device", "--json", "/dev/full", run=cli)
# A write that fails half-way (a file-size limit of 4 KiB, SIGXFSZ ignored,
# so the write returns EFBIG) leaves neither the file nor a temporary.
import resource
import signal


def small_files():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


out_dir = os.path.join(tmp, "out")
os.mkdir(out_dir)
p = subprocess.run([sys.executable, "-m", "uq.serving", *small, "--json",
                    os.path.join(out_dir, "r.json")], capture_output=True, text=True,
                   timeout=60, preexec_fn=small_files)
assert p.returncode == 1 and p.stderr.startswith("uq-serving: error: cannot write ") \
    and "File too large" in p.stderr and p.stderr.count("\n") == 1, p.stderr
assert os.listdir(out_dir) == [], os.listdir(out_dir)
print("--json past a file-size limit:", p.stderr.strip(), "; nothing left behind")
print("ok")
