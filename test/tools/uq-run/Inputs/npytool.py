"""Makes and checks .npy files for the uq-run lit tests (numpy only).

Expected values come from the format contract
(shared/docs/ultraquant-format.md) and plain numpy math, never from uq.
"""
import os
import sys

import numpy as np


def bf16_bits(x):
    """float32 -> bf16 bit patterns (inputs here are exact bf16 values)."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32)
    assert np.all((b & 0xFFFF) == 0), "not exact bf16 values"
    return (b >> 16).astype(np.uint16)


# Row 0: maximum 6 -> c*m = 0.936, e = floor(log2(0.936) + 0.5) = 0, byte
# 127; the other elements are the format doc's examples with their codes.
TIES = [(6.0, 7), (0.25, 0), (-0.25, 9), (2.5, 4), (-2.5, 13), (5.0, 6),
        (-5.0, 15), (0.75, 1), (-0.75, 10), (1.25, 2), (-1.25, 11),
        (1.75, 3), (-1.75, 12), (3.5, 5), (-3.5, 14), (-0.0, 0), (7.0, 7),
        (-100.0, 15)]


def ties(out):
    rows = np.zeros((3, 32), dtype=np.float32)
    for i, (v, _) in enumerate(TIES):
        rows[0, i] = v
    rows[0, 16:18] = 6.0
    rows[1, :] = 0.0          # zero group: sentinel
    rows[2, :] = 1.0
    rows[2, 5] = np.inf       # Inf in the group: sentinel
    np.save(os.path.join(out, "x.npy"), bf16_bits(rows))


def check_ties(codes, scales, dec):
    c = np.load(codes)
    s = np.load(scales)
    d = np.load(dec)
    assert c.dtype == np.uint8 and c.shape == (3, 16), (c.dtype, c.shape)
    assert s.dtype == np.uint8 and s.shape == (3, 1), (s.dtype, s.shape)
    assert d.dtype == np.float32 and d.shape == (3, 32), (d.dtype, d.shape)
    nib = np.stack([c & 0xF, c >> 4], axis=-1).reshape(3, 32)
    want = [code for _, code in TIES[:16]] + [7, 7] + [0] * 14
    assert list(nib[0]) == want, (list(nib[0]), want)
    assert s[0, 0] == 127 and s[1, 0] == 0 and s[2, 0] == 0, s
    assert np.all(nib[1:] == 0), nib[1:]
    levels = np.array([0, .5, 1, 1.5, 2, 3, 4, 6], dtype=np.float32)
    value = np.where(nib[0] >= 8, -1, 1) * levels[nib[0] & 7]
    assert np.array_equal(d[0], value.astype(np.float32)), d[0]
    assert np.all(d[1:] == 0)


def merge_inputs(out):
    rng = np.random.default_rng(5)
    s, h, p, dd = 2, 4, 3, 64
    o = rng.standard_normal((s, h, p, dd)).astype(np.float32)
    m = rng.standard_normal((s, h, p)).astype(np.float32) * 4
    l = rng.uniform(1, 10, (s, h, p)).astype(np.float32)
    m[0, 1, 2], l[0, 1, 2], o[0, 1, 2] = -np.inf, 0, 0   # empty partition
    m[1, 3, :], l[1, 3, :], o[1, 3, :] = -np.inf, 0, 0   # empty row
    sinks = rng.standard_normal(h).astype(np.float32)
    for name, a in [("o", o), ("m", m), ("l", l), ("sinks", sinks)]:
        np.save(os.path.join(out, name + ".npy"), a)


def check_merge(out, result):
    ld = lambda n: np.load(os.path.join(out, n + ".npy")).astype(np.float64)
    o, m, l, sinks = ld("o"), ld("m"), ld("l"), ld("sinks")
    big = np.maximum(m.max(axis=2), sinks[None, :])
    with np.errstate(invalid="ignore"):
        w = np.where(l == 0, 0.0, l * np.exp(m - big[..., None]))
    den = w.sum(axis=2) + np.exp(sinks[None, :] - big)
    want = (w[..., None] * o).sum(axis=2) / den[..., None]
    got = np.load(result)
    assert got.dtype == np.float32 and got.shape == want.shape
    err = np.linalg.norm(got - want) / np.linalg.norm(want)
    # f32 arithmetic against a float64 evaluation of the same formula.
    assert err < 1e-6, err
    assert np.all(got[1, 3] == 0)


def make(kind, path, *shape):
    shape = tuple(int(x) for x in shape)
    if kind == "bad-magic":
        open(path, "wb").write(b"not a numpy file at all")
    elif kind == "truncated":
        np.save(path, np.zeros(shape, np.float32))
        data = open(path, "rb").read()
        open(path, "wb").write(data[:-4])
    else:
        np.save(path, np.zeros(shape, dtype=np.dtype(kind)))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"ties": ties, "check-ties": check_ties, "merge-inputs": merge_inputs,
     "check-merge": check_merge, "make": make}[cmd](*args)
    print("OK")
