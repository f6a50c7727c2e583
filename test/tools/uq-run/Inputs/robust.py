"""Inputs and checks for uq-run's robustness tests (numpy only; expected
values come from numpy, never from uq).

  robust.py zero-tokens DIR        k, v [0, 2, 64] f32, slots [0] i64, a
                                   patterned cache [4, 16, 2, 68] u8
  robust.py check-same A B         A and B hold the same array
  robust.py mixed DIR              x, y [2, 64] f32, w [64, 8] f32
  robust.py check-mixed DIR S MM   S = rotate(|x*y|) + x, MM = S @ w
"""
import os
import sys

import numpy as np


def zero_tokens(out):
    np.save(os.path.join(out, "k.npy"), np.zeros((0, 2, 64), np.float32))
    np.save(os.path.join(out, "v.npy"), np.zeros((0, 2, 64), np.float32))
    np.save(os.path.join(out, "slots.npy"), np.zeros((0,), np.int64))
    cache = (np.arange(4 * 16 * 2 * 68) % 251).astype(np.uint8)
    np.save(os.path.join(out, "cache.npy"), cache.reshape(4, 16, 2, 68))


def check_same(a, b):
    x, y = np.load(a), np.load(b)
    assert x.dtype == y.dtype and x.shape == y.shape, (x.dtype, x.shape,
                                                       y.dtype, y.shape)
    assert np.array_equal(x, y)


def mixed(out):
    rng = np.random.default_rng(7)
    np.save(os.path.join(out, "x.npy"),
            rng.standard_normal((2, 64)).astype(np.float32))
    np.save(os.path.join(out, "y.npy"),
            rng.standard_normal((2, 64)).astype(np.float32))
    np.save(os.path.join(out, "w.npy"),
            rng.standard_normal((64, 8)).astype(np.float32))


def hadamard(n):
    """Sylvester's Walsh-Hadamard matrix of order n (a power of two)."""
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h


def check_mixed(d, s_path, mm_path):
    x = np.load(os.path.join(d, "x.npy")).astype(np.float64)
    y = np.load(os.path.join(d, "y.npy")).astype(np.float64)
    w = np.load(os.path.join(d, "w.npy")).astype(np.float64)
    # arith.mulf and math.absf are exact up to one f32 rounding; the
    # rotation is x @ H^T / sqrt(D) (H symmetric).
    a = np.abs((x.astype(np.float32) * y.astype(np.float32)).astype(
        np.float64))
    s_want = a @ hadamard(64) / np.sqrt(64) + x
    s = np.load(s_path)
    mm = np.load(mm_path)
    assert s.dtype == np.float32 and s.shape == (2, 64)
    assert mm.dtype == np.float32 and mm.shape == (2, 8)
    err = np.abs(s - s_want).max() / np.abs(s_want).max()
    assert err < 1e-6, err
    mm_want = s.astype(np.float64) @ w
    err = np.abs(mm - mm_want).max() / np.abs(mm_want).max()
    assert err < 1e-5, err


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"zero-tokens": zero_tokens, "check-same": check_same, "mixed": mixed,
     "check-mixed": check_mixed}[cmd](*args)
    print("OK")
