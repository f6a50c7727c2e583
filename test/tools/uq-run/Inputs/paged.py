"""Inputs and an independent check for test/tools/uq-run/paged-attention.mlir.

numpy only: the cache bytes that uq.cache_write produced are decoded with
the format contract (shared/docs/ultraquant-format.md: FP4 E2M1 nibbles, low
first; one UE8M0 byte per 32; slot = K codes, K scales, V codes, V scales),
the query is rotated with the Sylvester Walsh-Hadamard matrix / sqrt(D), and
the causal, windowed softmax with sinks is evaluated in float64 from the op's
definition (docs/dialect.md), including the input-policy zeros.
"""
import os
import sys

import numpy as np

D, HKV, HQ, BS, SLOT = 64, 2, 4, 16, 68
WINDOW, SCALE = 48, 0.125
# (context length, query length): a fresh prompt, a chunk over a cached
# prefix, a decode, an empty sequence, a sequence shorter than its query.
SEQS = [(50, 50), (70, 20), (33, 1), (0, 0), (2, 4)]
UNCOVERED = 3  # tokens after query_start_loc[-1]: output 0
MAX_BLOCKS = 5
NUM_BLOCKS = 24


def bf16_bits(x):
    b = np.asarray(x, dtype=np.float32).view(np.uint32)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def make(out):
    rng = np.random.default_rng(12)
    blocks = rng.permutation(NUM_BLOCKS)
    bt = np.full((len(SEQS), MAX_BLOCKS), 1 << 30, dtype=np.int32)
    ks, vs, slots = [], [], []
    for s, (ctx, _) in enumerate(SEQS):
        used = (ctx + BS - 1) // BS
        bt[s, :used] = blocks[s * MAX_BLOCKS:s * MAX_BLOCKS + used]
        for j in range(ctx):
            slots.append(int(bt[s, j // BS]) * BS + j % BS)
        ks.append(rng.standard_normal((ctx, HKV, D)))
        vs.append(rng.standard_normal((ctx, HKV, D)))
    slots.append(-1)  # a padding token: not written
    ks.append(np.full((1, HKV, D), 99.0))
    vs.append(np.full((1, HKV, D), 99.0))
    tokens = sum(q for _, q in SEQS) + UNCOVERED
    qsl = np.concatenate([[0], np.cumsum([q for _, q in SEQS])])
    np.save(os.path.join(out, "k.npy"), bf16_bits(np.concatenate(ks)))
    np.save(os.path.join(out, "v.npy"), bf16_bits(np.concatenate(vs)))
    np.save(os.path.join(out, "slots.npy"), np.array(slots, dtype=np.int64))
    np.save(os.path.join(out, "cache.npy"),
            np.zeros((NUM_BLOCKS, BS, HKV, SLOT), dtype=np.uint8))
    np.save(os.path.join(out, "q.npy"),
            bf16_bits(2 * rng.standard_normal((tokens, HQ, D))))
    np.save(os.path.join(out, "bt.npy"), bt)
    np.save(os.path.join(out, "lens.npy"),
            np.array([c for c, _ in SEQS], dtype=np.int32))
    np.save(os.path.join(out, "qsl.npy"), qsl.astype(np.int32))
    np.save(os.path.join(out, "sinks.npy"),
            (3 * rng.standard_normal(HQ)).astype(np.float32))


def decode_fp4(codes, scales):
    levels = np.array([0, .5, 1, 1.5, 2, 3, 4, 6], dtype=np.float64)
    nib = np.stack([codes & 0xF, codes >> 4], axis=-1).reshape(
        codes.shape[:-1] + (2 * codes.shape[-1],))
    val = np.where(nib >= 8, -1.0, 1.0) * levels[nib & 7]
    exp = np.repeat(scales.astype(np.int64) - 127, 32, axis=-1)
    return val * np.exp2(exp.astype(np.float64))


def hadamard(n):
    h = np.array([[1.0]])
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h / np.sqrt(n)


def check(out):
    cache = np.load(os.path.join(out, "cache_out.npy"))
    o = np.load(os.path.join(out, "o.npy"))
    q = bf16_value(np.load(os.path.join(out, "q.npy"))).astype(np.float64)
    bt = np.load(os.path.join(out, "bt.npy"))
    sinks = np.load(os.path.join(out, "sinks.npy")).astype(np.float64)
    assert cache.shape == (NUM_BLOCKS, BS, HKV, SLOT) and cache.dtype == np.uint8
    assert o.shape == q.shape and o.dtype == np.float32, (o.shape, o.dtype)
    kdec = decode_fp4(cache[..., 0:32], cache[..., 32:34])   # rotated domain
    vdec = decode_fp4(cache[..., 34:66], cache[..., 66:68])
    qrot = q @ hadamard(D).T
    want = np.zeros_like(q)
    t0 = 0
    group = HQ // HKV
    for s, (ctx, ql) in enumerate(SEQS):
        for i in range(ql):
            p = ctx - ql + i
            keys = [j for j in range(max(0, p - WINDOW + 1), p + 1)]
            for h in range(HQ):
                if not keys:
                    continue
                kv = h // group
                kr = np.array([kdec[bt[s, j // BS], j % BS, kv] for j in keys])
                vr = np.array([vdec[bt[s, j // BS], j % BS, kv] for j in keys])
                logits = kr @ qrot[t0 + i, h] * SCALE
                m = max(logits.max(), sinks[h])
                w = np.exp(logits - m)
                want[t0 + i, h] = w @ vr / (w.sum() + np.exp(sinks[h] - m))
        t0 += ql
    # Policy zeros (tokens without keys, uncovered tokens) are exact.
    zero = np.all(want == 0, axis=-1)
    assert zero.sum() == (UNCOVERED + 2) * HQ, zero.sum()
    assert np.all(o[zero] == 0), "policy zeros"
    # f32 accumulation and an f32-rounded rotation vs float64: ~1e-7.
    err = np.linalg.norm(o - want) / np.linalg.norm(want)
    assert err < 1e-5, err
    print("OK", f"relative L2 {err:.2e}")


if __name__ == "__main__":
    cmd, path = sys.argv[1], sys.argv[2]
    {"make": make, "check": check}[cmd](path)
