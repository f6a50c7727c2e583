"""Inputs of cache_write_d128_h8.mlir: random bf16 K/V, a shuffled slot
mapping, a zero cache. Usage: /usr/bin/python3 make_inputs.py OUTDIR"""
import os
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(0)
t, h, d = 4096, 8, 128
for name in ("k", "v"):
    x = rng.standard_normal((t, h, d)).astype(np.float32)
    np.save(os.path.join(out, name + ".npy"),
            (x.view(np.uint32) >> 16).astype(np.uint16))
np.save(os.path.join(out, "slots.npy"), rng.permutation(t).astype(np.int64))
np.save(os.path.join(out, "cache.npy"), np.zeros((256, 16, h, 136), np.uint8))
