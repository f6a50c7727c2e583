#!/usr/bin/env python3
"""Collects the seed corpora of the libFuzzer harnesses (test/fuzz) from the
project's tests.

  collect-seeds.py --src SRC --build BUILD --out DIR

BUILD is a regular build on which `ninja check-uq` has run (its test
outputs hold the code objects and .npy files the tests made); its bin/
tools compile a few more code objects if there are none. Writes
DIR/{ir,codeobject,npy,policy}/, one file per seed (named by content hash),
and prints how many seeds each harness got.
"""
import argparse
import glob
import hashlib
import os
import re
import subprocess
import sys
import tempfile

MAX_SEED = 1 << 20  # bytes; larger files make slow seeds


def save(out, kind, data, counts):
    if not data or len(data) > MAX_SEED:
        return
    d = os.path.join(out, kind)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    path = os.path.join(d, name)
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(data)
        counts[kind] = counts.get(kind, 0) + 1


def files(root, patterns):
    for p in patterns:
        yield from glob.glob(os.path.join(root, "**", p), recursive=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    counts = {}

    # IR: every .mlir of the tests and the benchmarks, split like
    # --split-input-file does.
    for path in sorted(files(os.path.join(a.src, "test"), ["*.mlir"])) + \
            sorted(files(os.path.join(a.src, "tools"), ["*.mlir"])):
        text = open(path, "rb").read()
        for chunk in re.split(rb"(?m)^// -----.*$", text):
            save(a.out, "ir", chunk.strip() + b"\n", counts)

    # Code objects: ELF files the tests wrote (lit's Output folders).
    for path in files(os.path.join(a.build, "test"), ["*"]):
        if os.path.isfile(path) and os.path.getsize(path) < MAX_SEED:
            with open(path, "rb") as f:
                head = f.read(20)
            # 64-bit little-endian ELF, machine AMDGPU (0xe0).
            if head[:4] == b"\x7fELF" and head[18:20] == b"\xe0\x00":
                save(a.out, "codeobject", open(path, "rb").read(), counts)
    if not counts.get("codeobject"):
        compiler = os.path.join(a.build, "bin", "uq-compile")
        with tempfile.TemporaryDirectory() as tmp:
            for src in sorted(glob.glob(
                    os.path.join(a.src, "test", "Target", "*.mlir"))):
                out = os.path.join(tmp, "seed.hsaco")
                r = subprocess.run([compiler, src, "-o", out],
                                   capture_output=True)
                if r.returncode == 0:
                    save(a.out, "codeobject", open(out, "rb").read(), counts)

    # .npy files the tests made or keep.
    for root in (os.path.join(a.build, "test"), os.path.join(a.src, "test")):
        for path in files(root, ["*.npy"]):
            save(a.out, "npy", open(path, "rb").read(), counts)

    # Precision policies.
    for path in sorted(files(os.path.join(a.src, "docs"), ["policy-*.json"])) \
            + sorted(files(os.path.join(a.src, "test"), ["*.json"])):
        save(a.out, "policy", open(path, "rb").read(), counts)

    for kind in ("ir", "codeobject", "npy", "policy"):
        print(f"{kind}: {counts.get(kind, 0)} seeds")
    return 0 if all(counts.get(k) for k in
                    ("ir", "codeobject", "npy", "policy")) else 1


if __name__ == "__main__":
    sys.exit(main())
