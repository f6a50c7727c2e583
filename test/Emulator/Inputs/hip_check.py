"""Inputs and independent checks for hip.test (see mfma_ref.py for tables)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mfma_ref as R  # noqa: E402

ITERS = 4


def gen(d):
    rng = np.random.default_rng(3)
    np.save(os.path.join(d, "a.npy"), rng.standard_normal(250).astype(np.float32))
    np.save(os.path.join(d, "b.npy"), rng.standard_normal(250).astype(np.float32))
    qa = np.zeros((ITERS, 64, 32), np.uint8)
    kb = np.zeros((ITERS, 64, 32), np.uint8)
    for t in range(ITERS):
        qa[t] = R.random_codes(rng, "fp8", 64 * 32).reshape(64, 32)
        kb[t] = R.random_codes(rng, "fp8", 64 * 32).reshape(64, 32)
    sc = rng.integers(120, 134, (ITERS, 2, 64, 4)).astype(np.uint8)
    qa.tofile(os.path.join(d, "qa.bin"))
    kb.tofile(os.path.join(d, "kb.bin"))
    sc.tofile(os.path.join(d, "sc.bin"))


def logical(img):
    """16x128 logical matrix (rows = lane % 16) from FP8 lane images."""
    X = np.zeros((16, 128))
    for l in range(64):
        r, g = l % 16, l // 16
        for i in range(32):
            X[r, R.lane_k("scale16", "fp8", g, i)] = R.fp8e4m3(int(img[l, i]))
    return X


def mfma(d, iters):
    qa = np.fromfile(os.path.join(d, "qa.bin"), np.uint8).reshape(ITERS, 64, 32)
    kb = np.fromfile(os.path.join(d, "kb.bin"), np.uint8).reshape(ITERS, 64, 32)
    sc = np.fromfile(os.path.join(d, "sc.bin"), np.uint8).reshape(ITERS, 2, 64, 4)
    D = np.zeros((16, 16))
    for t in range(iters):
        A, Bt = logical(qa[t]), logical(kb[t])  # B column n = lane row n
        selA, selB = 2, 1
        for j in range(4):
            blk = slice(32 * j, 32 * j + 32)
            sA = np.array([2.0 ** (int(sc[t, 0, r + 16 * j, selA]) - 127) for r in range(16)])
            sB = np.array([2.0 ** (int(sc[t, 1, r + 16 * j, selB]) - 127) for r in range(16)])
            D += (A[:, blk] @ Bt[:, blk].T) * np.outer(sA, sB)
    got = R.read_out(os.path.join(d, "d.bin"), 16)
    tol = 1e-5 * max(1.0, np.abs(D).max())
    err = np.abs(got - D).max()
    print(f"max abs error {err:.3g} (tolerance {tol:.3g})")
    print("mfma PASS" if err <= tol else "mfma FAIL")


def vadd(d):
    a = np.load(os.path.join(d, "a.npy"))
    b = np.load(os.path.join(d, "b.npy"))
    c = np.fromfile(os.path.join(d, "c.bin"), np.float32)
    print("vadd PASS" if np.array_equal(c, a + b) else "vadd FAIL")


if __name__ == "__main__":
    mode, d = sys.argv[1], sys.argv[2]
    if mode == "gen":
        gen(d)
    elif mode == "vadd":
        vadd(d)
    else:
        mfma(d, int(sys.argv[3]))
