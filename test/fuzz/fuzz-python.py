#!/usr/bin/env python3
"""Fuzzes uq's Python API, one interpreter per case (docs/robustness.md).

    fuzz-python.py --build BUILD --src SRC [--cases N] [--seed S] [--jobs J]
                   [--timeout T] [--work DIR]

Each case is a small Python program that makes one call of the API with
generated arguments: ``uq.compile`` / ``uq.compile_with_description`` /
``uq.run_pipeline`` on mutated test inputs (split at ``// -----``) and
pipelines (valid, invalid, deeply nested), ``uq.emulate`` of a compiled
kernel with arguments of every kind (wrong dtypes, object and string
arrays, shapes, scalars out of range, NaN, wrong counts, bad geometry,
mutated code objects, with and without the description), ``uq.kernel_info``
on mutated code objects, and ``uq-serving``'s ``main`` on generated command
lines. It is written to WORK/case-N.py and run by its own interpreter, so a
crash ends only that case. The documented outcomes are a normal return or
ValueError, TypeError, KeyError (a kernel name not in a description) or
uq.CompileError; serving's main returns 0 or 1 (SystemExit 1 for usage).

A finding is anything else: the interpreter killed by a signal (a crash),
another exception escaping (a traceback), or no end within --timeout
seconds. Findings are listed with their case file (the reproducer); the
exit status is 1 when there is one. Deterministic for a given --seed.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

EXPECTED = "(ValueError, TypeError, KeyError, uq.CompileError)"

PRELUDE = """\
import sys
import numpy as np
import uq
from uq.compiler import CompileResult
try:
    r = CALL
except EXPECTED as e:
    print("error", type(e).__name__)
else:
    print("ok")
"""

PIPELINES = [
    "", "builtin.module(canonicalize)", "builtin.module(cse)",
    "builtin.module(convert-uq-to-linalg)", "builtin.module(convert-uq-to-wave)",
    "builtin.module(convert-uq-to-wave{prefill-waves=3})",
    "builtin.module(convert-uq-to-wave{partition-size=4294967328})",
    "builtin.module(convert-uq-to-wave{partition-size=-32})",
    "builtin.module(uq-cpu-pipeline)", "builtin.module(uq-gpu-kernels)",
    "builtin.module(uq-gpu-wave,uq-gpu-lanes)",
    "builtin.module(uq-assign-lane-layouts,uq-distribute-to-lanes)",
    "builtin.module(uq-apply-precision-policy{policy=/dev/zero})",
    "builtin.module(uq-apply-precision-policy{policy=/nonexistent layer=-1})",
    "builtin.module(" * 400 + ")" * 400, "canonicalize)", "((((", "\x00", "x" * 5000,
    "builtin.module(func.func(canonicalize{max-iterations=-1}))",
]
STAGES = ["linalg", "wave", "layouts", "lanes", "kernel", "rocdl", "bogus", ""]
INTS = [0, 1, -1, 2, 3, 16, 32, 64, 256, 4096, 2**31 - 1, 2**31, 2**32, 2**32 + 32,
        2**63 - 1, 2**63, 2**64, -2**63]
FLOATS = [0.0, -0.0, 1.5, float("nan"), float("inf"), -float("inf"), 1e300, 5e-324]
NUMBERS = ["0", "1", "-1", "2", "16", "32", "64", "128", "1024", "4096", "65536",
           "2147483648", "4294967296", "9223372036854775808", "nan", "1e39", "?"]
DTYPES = ["np.float32", "np.float64", "np.float16", "np.int8", "np.uint8", "np.int16",
          "np.uint16", "np.int32", "np.uint32", "np.int64", "np.uint64", "np.bool_",
          "np.complex64", "object", "'U3'", "'S4'", "'datetime64[s]'",
          "[('a', 'i4'), ('o', 'O')]", "'>f4'", "'V4'"]


def split_seeds(paths, limit=64 << 10):
    seeds = []
    for root in paths:
        for dirpath, _, files in sorted(os.walk(root)):
            for f in sorted(files):
                if not f.endswith(".mlir") or "Inputs" in dirpath:
                    continue
                text = open(os.path.join(dirpath, f), errors="replace").read()[:limit]
                seeds += [c for c in text.split("// -----") if "func" in c]
    return seeds


def mutate(rng, s):
    for _ in range(rng.randint(1, 4)):
        k = rng.randrange(6)
        if not s:
            break
        at = rng.randrange(len(s))
        if k == 0:
            s = s[:at] + chr(ord(s[at]) ^ (1 << rng.randrange(7))) + s[at + 1:]
        elif k == 1:
            s = s[:at] + s[at + rng.randint(1, 64):]
        elif k == 2:
            piece = s[at:at + rng.randint(1, 200)]
            s = s[:at] + piece * rng.randint(1, 8) + s[at:]
        elif k == 3:
            digits = [i for i in range(len(s)) if s[i].isdigit() and (i == 0 or not s[i - 1].isdigit())]
            if digits:
                i = rng.choice(digits)
                j = i
                while j < len(s) and s[j].isdigit():
                    j += 1
                s = s[:i] + rng.choice(NUMBERS) + s[j:]
        elif k == 4:
            s = s[:at] + rng.choice(["tensor<", "vector<", "?x", "{", "}", "(", "%",
                                     "#uq.kv_format<", "uq.", "i4", "bf16"]) + s[at:]
        else:
            s = s[:at] + s[rng.randrange(len(s)):][:rng.randint(1, 100)] + s[at:]
    return s


def value(rng, depth=0):
    """A Python expression of an arbitrary argument value."""
    k = rng.randrange(10 if depth < 2 else 7)
    if k == 0:
        return repr(rng.choice(INTS))
    if k == 1:
        return f"float({str(rng.choice(FLOATS))!r})"
    if k == 2:
        return rng.choice(["None", "'x'", "b'\\x7fELF'", "True", "object()", "[]", "()"])
    if k == 3:
        return f"np.zeros({rng.choice([0, 1, 6, 64, 1000])}, dtype={rng.choice(DTYPES)})"
    if k == 4:
        return f"np.{rng.choice(['float32', 'float64', 'int32', 'int64', 'uint32'])}(" \
               f"{rng.choice(INTS[:10])})"
    if k == 5:
        return f"bytearray({rng.choice([0, 4, 24, 48, 4096])})"
    if k == 6:
        return f"np.zeros(({rng.choice([1, 3])}, 4), np.float32)[::2]"
    if k == 7:
        return "[" + ", ".join(value(rng, depth + 1) for _ in range(rng.randint(0, 4))) + "]"
    if k == 8:
        return "(" + ", ".join(value(rng, depth + 1) for _ in range(rng.randint(1, 3))) + ",)"
    return "{" + f"'args': {value(rng, depth + 1)}" + "}"


def emulate_args(rng, desc):
    """Arguments for the description's kernel: mostly right, a few wrong."""
    args = []
    for a in desc["args"]:
        if a["kind"] == "by_value":
            good = rng.choice(["3", "np.int32(3)", "0"])
        else:
            dt = {"f32": "np.float32", "bf16": "np.uint16", "i32": "np.int32",
                  "i64": "np.int64", "u8": "np.uint8"}.get(a["dtype"], "np.uint8")
            shape = [3 if isinstance(d, str) else d for d in a["shape"]]
            good = f"np.zeros({tuple(shape)!r}, {dt})"
        args.append(good if rng.random() < 0.8 else value(rng))
    if rng.random() < 0.1:
        args.pop() if args and rng.random() < 0.5 else args.append(value(rng))
    return "[" + ", ".join(args) + "]"


def make_case(rng, seeds, code_path, desc):
    k = rng.randrange(7)
    if k == 0:
        ir = mutate(rng, rng.choice(seeds)) if rng.random() < 0.9 else rng.choice(seeds)
        return (f"uq.compile({ir!r}, emit={rng.choice(STAGES)!r}, "
                f"partition_size={rng.choice(INTS)!r})")
    if k == 1:
        ir = mutate(rng, rng.choice(seeds))
        return f"uq.compile_with_description({ir!r}, emit={rng.choice(STAGES[:4])!r})"
    if k == 2:
        ir = mutate(rng, rng.choice(seeds)) if rng.random() < 0.5 else rng.choice(seeds)
        pipe = rng.choice(PIPELINES)
        if rng.random() < 0.3:
            pipe = mutate(rng, pipe) if pipe else pipe
        return f"uq.run_pipeline({ir!r}, {pipe!r})"
    code = f"open({code_path!r}, 'rb').read()"
    if k == 3 or k == 4:
        grid = rng.choice(["(1,)", "(2, 1, 1)", "(0,)", "(2**32,)", "(-1,)", "()",
                           "(1, 1, 1, 1)", "(3,)"])
        block = rng.choice(["(64,)", "(64, 1, 1)", "(32,)", "(1025,)", "(0,)", "(2**31,)"])
        if rng.random() < 0.1:
            code = f"bytes(b ^ (1 if i == {rng.randrange(4096)} else 0) for i, b in " \
                   f"enumerate({code}))"
        kern = desc["name"] if rng.random() < 0.9 else rng.choice(["", "nope", "x" * 300])
        extra = ""
        if k == 4:
            if rng.random() < 0.5:
                extra = f", description=__import__('json').loads({json.dumps(desc)!r})"
            else:
                extra = ", description=" + value(rng)
        return (f"uq.emulate({code}, {kern!r}, {grid}, {block}, {emulate_args(rng, desc)}, "
                f"max_instructions={rng.choice([10**6, 10**6, 1, 0])}, "
                f"dynamic_lds={rng.choice([0, 0, 4096, 2**31, -1])}{extra})")
    if k == 5:
        n = rng.randrange(4096)
        return (f"uq.kernel_info(bytes(b ^ ({1 << rng.randrange(8)} if i % {rng.randint(1, 97)} "
                f"== {n % 97} else 0) for i, b in enumerate({code})))")
    opts = ["--tp", "--kv-gib", "--sessions", "--rounds", "--ramp-s", "--block-size",
            "--launch-us", "--gmu", "--prefix", "--think", "--layers", "--head-dim",
            "--hbm-tb-s", "--max-seqs", "--seed", "--common", "--ttft-target-ms"]
    argv = ["simulate", "--kernel-model", "roofline", "--sessions", "2", "--rounds", "2",
            "--formats", "uq"]
    for _ in range(rng.randint(1, 3)):
        argv += [rng.choice(opts), rng.choice(NUMBERS + ["-5", "0.5", "const:1e9",
                                                          "exp:nan", "x"])]
    return f"__import__('uq.serving.__main__', fromlist=['main']).main({argv!r})"


def run_case(path, env, timeout):
    t0 = time.time()
    try:
        p = subprocess.run([sys.executable, path], capture_output=True, text=True,
                           env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", f"no end within {timeout} s", time.time() - t0
    secs = time.time() - t0
    if p.returncode < 0:
        return "crash", f"signal {-p.returncode}: {p.stderr[-400:]}", secs
    if p.returncode != 0:
        if "SystemExit" in p.stderr or (p.returncode == 1 and "uq-serving: error:" in p.stderr
                                        and "Traceback" not in p.stderr):
            return "ok", "usage error", secs
        return "exception", p.stderr[-600:], secs
    return "ok", p.stdout.strip()[-80:], secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--work", default="/tmp/uq-fuzz-python")
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(a.build, "python-bindings")
    # One kernel, compiled once: what the emulate and kernel_info cases run.
    code_path = os.path.join(a.work, "k.hsaco")
    src = os.path.join(a.src, "test", "tools", "Inputs", "cache-write.mlir")
    subprocess.run([os.path.join(a.build, "bin", "uq-compile"), src, "-o", code_path],
                   check=True)
    desc = json.load(open(code_path + ".json"))["kernels"][0]
    seeds = split_seeds([os.path.join(a.src, "test", d)
                         for d in ("Conversion/UQToWave", "Target", "Dialect/UQ/IR")])
    rng = random.Random(a.seed)
    paths = []
    for i in range(a.cases):
        call = make_case(rng, seeds, code_path, desc)
        path = os.path.join(a.work, f"case-{i}.py")
        with open(path, "w") as f:
            f.write(PRELUDE.replace("CALL", call).replace("EXPECTED", EXPECTED))
        paths.append(path)
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        results = list(pool.map(lambda p: run_case(p, env, a.timeout), paths))
    counts = {}
    findings = []
    for path, (kind, detail, secs) in zip(paths, results):
        counts[kind] = counts.get(kind, 0) + 1
        if kind != "ok":
            findings.append((path, kind, detail))
    for path, kind, detail in findings:
        print(f"FINDING {kind}: {path}\n  {detail.strip()[-600:]}")
    slowest = max(r[2] for r in results) if results else 0
    print(f"cases: {a.cases}, ok: {counts.get('ok', 0)}, crashes: {counts.get('crash', 0)}, "
          f"exceptions: {counts.get('exception', 0)}, timeouts: {counts.get('timeout', 0)}, "
          f"slowest case: {slowest:.1f} s, seconds: {time.time() - t0:.1f}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
