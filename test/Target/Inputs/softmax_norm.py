"""Runs the hand-written softmax_norm kernel (wave-handwritten.mlir) in
uq-emu for several key counts and compares with numpy.

Usage: softmax_norm.py CODE.hsaco TMPDIR --uq-emu PATH

The FP8 E4M3, FP4 E2M1 and E8M0 values are decoded from their definitions
(OCP MX), independently of uq's code; the product is exact in float64, the
exp2 sums in float64. Tolerance: 1e-5 on the maximum relative to the sum
of its terms' magnitudes (f32 accumulation inside the MFMA) and 1e-4 on the sums (v_exp_f32's ~1 ulp per
term, f32 accumulation over <= 300 terms).
"""
import argparse
import os
import subprocess
import sys

import numpy as np

FP4 = [0, 0.5, 1, 1.5, 2, 3, 4, 6]


def fp4(c):
    v = FP4[c & 7]
    return -v if c & 8 else v


def fp8(c):
    s, e, m = (c >> 7) & 1, (c >> 3) & 15, c & 7
    if e == 15 and m == 7:
        return float("nan")
    v = m / 8.0 * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7)
    return -v if s else v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hsaco")
    ap.add_argument("tmp")
    ap.add_argument("--uq-emu", default="uq-emu")
    a = ap.parse_args()
    os.makedirs(a.tmp, exist_ok=True)
    rng = np.random.default_rng(7)
    # Query codes of moderate magnitude (no NaN code 0x7f / 0xff).
    q = rng.integers(0, 0x60, size=(16, 128), dtype=np.uint8)
    q |= (rng.integers(0, 2, size=q.shape, dtype=np.uint8) << 7)
    qv = np.array([fp8(int(c)) for c in range(256)])[q]
    for n in (1, 77, 300):
        keys = np.zeros((n, 68), np.uint8)
        keys[:, :64] = rng.integers(0, 256, size=(n, 64), dtype=np.uint8)
        keys[:, 64:] = rng.integers(120, 130, size=(n, 4), dtype=np.uint8)
        codes = np.zeros((n, 128), np.int64)
        codes[:, 0::2] = keys[:, :64] & 15
        codes[:, 1::2] = keys[:, :64] >> 4
        kv = np.array([fp4(c) for c in range(16)])[codes] * np.repeat(
            2.0 ** (keys[:, 64:].astype(np.float64) - 127), 32, axis=1)
        s = qv @ kv.T
        want_max = s.max(axis=1)
        want_sum = np.exp2(s - want_max[:, None]).sum(axis=1)
        qp, kp = os.path.join(a.tmp, "q.bin"), os.path.join(a.tmp, "k.bin")
        mp, sp = os.path.join(a.tmp, "max.bin"), os.path.join(a.tmp, "sum.bin")
        q.tofile(qp)
        keys.tofile(kp)
        r = subprocess.run([a.uq_emu, a.hsaco, "--kernel", "softmax_norm",
                            "--grid", "1,1,1", "--block", "64,1,1",
                            "--arg", "in:" + qp, "--arg", "in:" + kp,
                            "--arg", "out:%s:64" % mp, "--arg",
                            "out:%s:64" % sp, "--arg", "i32:%d" % n],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("uq-emu failed: " + r.stderr)
        got_max = np.fromfile(mp, np.float32).astype(np.float64)
        got_sum = np.fromfile(sp, np.float32).astype(np.float64)
        # The maximum is one dot product rounded in f32 by the MFMA: its
        # error is relative to the sum of the magnitudes of its terms (the
        # value itself can be near zero after cancellation).
        mag = (np.abs(qv) @ np.abs(kv).T).max(axis=1)
        err_max = np.max(np.abs(got_max - want_max) / mag)
        err_sum = np.max(np.abs(got_sum - want_sum) / want_sum)
        ok = err_max <= 1e-5 and err_sum <= 1e-4
        print("n = %d: max err %.2e, sum err %.2e, %s" %
              (n, err_max, err_sum, "OK" if ok else "FAIL"))
        if not ok:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
