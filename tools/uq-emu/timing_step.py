#!/usr/bin/env python3
"""Predicts a decode step of a uq-compiled code object with the timing model.

    timing_step.py CODE.hsaco [--num-seqs S] [--seq-len N] [--max-blocks B]
                              [--sample N] [--uq-emu PATH]

Reads CODE.hsaco.json (uq-compile's kernel description), runs every kernel
in order in uq-emu with --timing-json (the outputs of one kernel feed the
inputs of the next by argument name, e.g. partial_out), and prints each
launch's lower bound and estimate and their sum for the step. The run-time
sizes the JSON names (num_seqs, max_blocks, num_blocks, num_partitions,
num_tokens) follow from the options; inputs are zeros except `seq_lens`
(every sequence N tokens) and `block_tables` (each sequence its own
blocks), so the kernels do the work of N-token sequences.
A benchmark, not a test: the numbers are the timing model's
(docs/timing-model.md), labelled "model".
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

SIZES = {"u8": 1, "i8": 1, "bf16": 2, "f16": 2, "f32": 4, "i32": 4,
         "i64": 8, "f64": 8}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("hsaco")
    ap.add_argument("--num-seqs", type=int, default=1,
                    help="sequences in the batch (default 1)")
    ap.add_argument("--seq-len", type=int, default=None,
                    help="tokens per sequence (default: the block table's "
                         "capacity)")
    ap.add_argument("--max-blocks", type=int, default=None,
                    help="block-table width (default: just enough for "
                         "--seq-len)")
    ap.add_argument("--sample", type=int, default=0,
                    help="emulate only N workgroups of each launch whose "
                         "outputs no later kernel reads, and scale")
    ap.add_argument("--uq-emu", default="uq-emu")
    a = ap.parse_args()
    jpath = a.hsaco + ".json"
    if not os.path.isfile(jpath):
        ap.error("no kernel description " + jpath)
    try:
        desc = json.load(open(jpath))
    except (OSError, ValueError) as e:
        ap.error("cannot read %s: %s" % (jpath, e))
    # A sampled launch leaves most of its outputs unwritten, which would
    # change what later kernels do: sample only launches whose outputs no
    # later kernel reads.
    consumed = set()
    for i, k in enumerate(desc["kernels"]):
        for later in desc["kernels"][i + 1:]:
            for arg in later["args"]:
                if arg["access"] != "write":
                    consumed.add((i, arg["name"]))
    with tempfile.TemporaryDirectory(prefix="uq-timing-") as tmp:
        return run(ap, a, desc, consumed, tmp)


def sizes_of(ap, a, desc):
    """The value of every size the JSON names."""
    params = {}
    for k in desc["kernels"]:
        params.update(k.get("params", {}))
    bs = params.get("block_size")
    if bs is None:
        bs = desc_block_size(desc)
    if a.num_seqs < 1:
        ap.error("--num-seqs must be >= 1")
    if a.max_blocks is not None:
        if a.max_blocks < 1:
            ap.error("--max-blocks must be >= 1")
        max_blocks = a.max_blocks
    elif a.seq_len is not None:
        max_blocks = max(1, -(-a.seq_len // bs))
    else:
        ap.error("give --seq-len or --max-blocks")
    cap = max_blocks * bs
    n = a.seq_len if a.seq_len is not None else cap
    if n < 0 or n > cap:
        ap.error("--seq-len %d exceeds the block table's capacity %d" %
                 (n, cap))
    part = params.get("partition_size", cap)
    return {"num_seqs": a.num_seqs, "max_blocks": max_blocks,
            "num_blocks": a.num_seqs * max_blocks + 1,
            "num_partitions": max(1, -(-cap // part)),
            "num_tokens": a.num_seqs, "seq_len": n}


def run(ap, a, desc, consumed, tmp):
    sizes = sizes_of(ap, a, desc)
    dim = lambda d: sizes[d] if isinstance(d, str) else d
    produced = {}
    total_bound = total_est = 0.0
    for i, k in enumerate(desc["kernels"]):
        feeds_later = any((i, arg["name"]) in consumed
                          for arg in k["args"] if arg["access"] == "write")
        grid = [dim(g) for g in k["grid"]]
        cmd = [a.uq_emu, a.hsaco, "--kernel", k["name"],
               "--grid", ",".join(map(str, grid)),
               "--block", ",".join(map(str, k["block"]))]
        for arg in k["args"]:
            name = arg["name"]
            if arg["kind"] == "by_value":
                cmd += ["--arg", "%s:%d" % (arg["dtype"], sizes[name])]
                continue
            shape = [dim(d) for d in arg["shape"]]
            nbytes = int(np.prod(shape)) * SIZES[arg["dtype"]]
            path = os.path.join(tmp, name + ".bin")
            if arg["access"] == "write":
                cmd += ["--arg", "out:%s:%d" % (path, nbytes)]
                produced[name] = path
            elif name in produced:
                cmd += ["--arg", "in:" + produced[name]]
            else:
                if name == "block_tables":
                    s, b = shape
                    data = np.arange(s * b, dtype=np.int32).reshape(s, b)
                elif name == "seq_lens":
                    data = np.full(shape, sizes["seq_len"], np.int32)
                else:
                    data = np.zeros(nbytes, np.uint8)
                data.tofile(path)
                cmd += ["--arg", "in:" + path]
        tj = os.path.join(tmp, k["name"] + ".timing.json")
        cmd += ["--timing-json", tj]
        if a.sample and not feeds_later:
            # uq-emu refuses a sample larger than the grid: all of a small
            # grid is its whole sample.
            cmd += ["--timing-sample", str(min(a.sample, int(np.prod(grid))))]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            ap.error("cannot run %s: %s" % (a.uq_emu, e))
        if r.returncode != 0:
            sys.exit("timing_step.py: %s failed: %s" %
                     (k["name"], r.stderr.strip()))
        t = json.load(open(tj))
        total_bound += t["bound_us_model"]
        total_est += t["estimate_us_model"]
        print("%-24s grid %-14s traced %4d: bound %8.3f us (%s), estimate "
              "%8.3f us (model)" %
              (k["name"], "x".join(map(str, grid)),
               t["traced_workgroups"], t["bound_us_model"],
               t["bound_resource"], t["estimate_us_model"]))
    print("step: bound %.3f us, estimate %.3f us (model)" %
          (total_bound, total_est))
    return 0


def desc_block_size(desc):
    """Tokens per cache block: dim 1 of the cache argument [blocks, block,
    heads, slot]."""
    for k in desc["kernels"]:
        for arg in k["args"]:
            if arg["name"] == "cache":
                return arg["shape"][1]
    sys.exit("timing_step.py: no cache argument to size the sequences")


if __name__ == "__main__":
    sys.exit(main())
