"""Inputs and independent expectations for llc-gfx950.test (numpy's IEEE
float16 / float32 rounding, bf16 by round-to-nearest-even on the bits).

  llc_ref.py gen DIR          -> f32.bin (64 x 2 f32), h2.bin (64 x 2 f16),
                                 c.bin (64 x 2 f32, f16-exact), pat.bin
  llc_ref.py check DIR KERNEL OUT
"""
import os
import sys

import numpy as np


def inputs(d):
    rng = np.random.default_rng(11)
    f32 = (rng.standard_normal(128) * 3).astype(np.float32)
    f32[:4] = [65504.0, 1e-8, -0.0, 0.1]  # f16 max, underflow, sign, inexact
    # f16 products and sums of f16-exact values: the fused f32 result is
    # the exactly rounded one, which float64 arithmetic gives here.
    h2 = (rng.uniform(0.5, 8, 128) * rng.choice([-1, 1], 128)).astype(np.float16)
    c = rng.uniform(-8, 8, 128).astype(np.float16).astype(np.float32)
    pat = rng.integers(0, 256, 64 * 8, dtype=np.uint8)
    return f32, h2, c, pat


def bf16(x):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def tr(pat, bits):
    """The lane map of docs/emulator.md ("Transposing LDS reads")."""
    n = 64 // bits
    src = [int.from_bytes(pat[8 * l:8 * l + 8].tobytes(), "little")
           for l in range(64)]
    out = []
    for l in range(64):
        g, i = l & ~15, l & 15
        r = 0
        for e in range(n):
            j = g + i // n + (16 // n) * e
            r |= ((src[j] >> (bits * (i % n))) & ((1 << bits) - 1)) << (bits * e)
        out.append(r)
    return np.array(out, np.uint64).view(np.uint8)


def expected(kernel, f32, h2, c):
    x, y = h2[0::2].astype(np.float64), h2[1::2].astype(np.float64)
    c0, c1 = c[0::2].astype(np.float64), c[1::2].astype(np.float64)
    if kernel == "st_f16":
        return f32[:64].astype(np.float16).view(np.uint8)
    if kernel == "st_bf16":
        return bf16(f32[:64]).view(np.uint8)
    if kernel == "st_bf16x2":
        return bf16(f32).view(np.uint8)
    if kernel == "st_f16x2":
        return f32.astype(np.float16).view(np.uint8)
    if kernel == "fma_mix":
        return (x * y + c[:64]).astype(np.float32).view(np.uint8)
    if kernel == "fma_mixlo":
        return (x * y + c[:64]).astype(np.float32).astype(np.float16).view(np.uint8)
    if kernel == "fma_mixpk":
        lo = (x * y + c0).astype(np.float32).astype(np.float16)
        hi = (y * y + c1).astype(np.float32).astype(np.float16)
        return np.stack([lo, hi], 1).flatten().view(np.uint8)
    raise SystemExit("unknown kernel " + kernel)


def main():
    mode, d = sys.argv[1], sys.argv[2]
    f32, h2, c, pat = inputs(d)
    if mode == "gen":
        os.makedirs(d, exist_ok=True)
        f32.tofile(os.path.join(d, "f32.bin"))
        h2.tofile(os.path.join(d, "h2.bin"))
        c.tofile(os.path.join(d, "c.bin"))
        pat.tofile(os.path.join(d, "pat.bin"))
        return 0
    kernel, out = sys.argv[3], sys.argv[4]
    got = np.fromfile(out, np.uint8)
    if kernel == "tr":
        want = np.concatenate([tr(pat, 16), tr(pat, 8), tr(pat, 4)])
    else:
        want = expected(kernel, f32, h2, c)
    bad = np.nonzero(got[:len(want)] != want)[0]
    print("%s: %s" % (kernel, "PASS" if len(bad) == 0 and len(got) == len(want)
                      else "FAIL at bytes %s" % bad[:8]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
