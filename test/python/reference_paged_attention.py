# RUN: env PYTHONPATH=%uq_build/python-bindings:%S/../tools/uq-run/Inputs %python %s

# uq.ref.paged_attention (the reference library's uq.paged_attention) from
# Python: against a float64 numpy evaluation of the definition on a cache
# that uq.ref.cache_write wrote; bit-identical to uq.ref.decode_attention on
# a decode batch; chunked prefill equal to one call; policy rows; errors.
import numpy as np

import uq
from paged import decode_fp4, hadamard  # numpy decoder of the format doc

rng = np.random.default_rng(3)
D, HKV, HQ, BS = 64, 2, 8, 16
NB, MB = 20, 6
SEQS = [(90, 30), (5, 1), (0, 0), (40, 40)]   # (context, query length)

blocks = rng.permutation(NB)
bt = np.full((len(SEQS), MB), 1 << 30, np.int32)
k_all = rng.standard_normal((sum(c for c, _ in SEQS), HKV, D)).astype(np.float32)
v_all = rng.standard_normal(k_all.shape).astype(np.float32)
slots, at = [], 0
for s, (ctx, _) in enumerate(SEQS):
    used = (ctx + BS - 1) // BS
    bt[s, :used] = blocks[s * 5:s * 5 + used]
    slots += [int(bt[s, j // BS]) * BS + j % BS for j in range(ctx)]
cache = uq.ref.cache_write(k_all, v_all, slots,
                           np.zeros((NB, BS, HKV, 68), np.uint8))
assert cache.dtype == np.uint8 and cache.shape == (NB, BS, HKV, 68)
lens = [c for c, _ in SEQS]
qsl = np.concatenate([[0], np.cumsum([q for _, q in SEQS])])
T = int(qsl[-1])
q = (2 * rng.standard_normal((T, HQ, D))).astype(np.float32)
sinks = (3 * rng.standard_normal(HQ)).astype(np.float32)

# float64 evaluation of the definition (f32 query, window 25, sinks).
out = uq.ref.paged_attention(q, cache, bt, lens, qsl, scale=0.125,
                             sinks=sinks, window=25, query_precision="f32")
assert out.shape == q.shape and out.dtype == np.float32
kdec = decode_fp4(cache[..., 0:32], cache[..., 32:34])
vdec = decode_fp4(cache[..., 34:66], cache[..., 66:68])
qrot = q.astype(np.float64) @ hadamard(D).T
want = np.zeros(q.shape)
t0 = 0
for s, (ctx, ql) in enumerate(SEQS):
    for i in range(ql):
        p = ctx - ql + i
        keys = range(max(0, p - 25 + 1), p + 1)
        for h in range(HQ):
            kr = np.array([kdec[bt[s, j // BS], j % BS, h // 4] for j in keys])
            vr = np.array([vdec[bt[s, j // BS], j % BS, h // 4] for j in keys])
            lg = kr @ qrot[t0 + i, h] * 0.125
            m = max(lg.max(), sinks[h])
            w = np.exp(lg - m)
            want[t0 + i, h] = w @ vr / (w.sum() + np.exp(sinks[h] - m))
    t0 += ql
err = np.linalg.norm(out - want) / np.linalg.norm(want)
assert err < 1e-5, err          # f32 accumulation vs float64: ~1e-7

# Query length 1 everywhere: decode_attention's bits.
dq = q[:4]
dec = uq.ref.decode_attention(dq, cache, np.where(bt >= NB, 0, bt), lens,
                              scale=0.125, sinks=sinks)
pag = uq.ref.paged_attention(dq, cache, bt, lens, [0, 1, 2, 3, 4],
                             scale=0.125, sinks=sinks)
assert np.array_equal(dec.view(np.uint32), pag.view(np.uint32))

# Chunked prefill (sequence 0's 30 query tokens in 12 + 18) == one call.
one = uq.ref.paged_attention(q[:30], cache, bt[:1], [90], [0, 30], scale=0.125)
a = uq.ref.paged_attention(q[:12], cache, bt[:1], [72], [0, 12], scale=0.125)
b = uq.ref.paged_attention(q[12:30], cache, bt[:1], [90], [0, 18], scale=0.125)
assert np.array_equal(np.concatenate([a, b]), one)

# Policy: a decreasing query_start_loc is its running maximum; a sequence
# shorter than its query leaves the first tokens at 0; uncovered tokens 0.
x = uq.ref.paged_attention(q, cache, bt, lens, [0, 30, 10, 31, 71], scale=0.125)
y = uq.ref.paged_attention(q, cache, bt, lens, [0, 30, 30, 31, 71], scale=0.125)
assert np.array_equal(x, y)
z = uq.ref.paged_attention(q[:6], cache, bt[:1], [2], [0, 4], scale=0.125)
assert np.all(z[:2] == 0) and np.all(z[4:] == 0)
assert np.all(np.any(z[2:4] != 0, axis=-1))   # FP4 values may be exactly 0


def raises(exc, fn, *a, **k):
    try:
        fn(*a, **k)
    except exc as e:
        assert str(e), "empty message"
        return
    raise AssertionError(f"{fn.__name__} did not raise {exc.__name__}")


pa = uq.ref.paged_attention
raises(ValueError, pa, q, cache, bt, lens, qsl[:-1], scale=0.125)      # S + 1
raises(ValueError, pa, q, cache, bt, lens, qsl, scale=0.125, window=0)
raises(ValueError, pa, q, cache, bt[:2], lens, qsl, scale=0.125)       # rows
raises(ValueError, pa, q[0], cache, bt, lens, qsl, scale=0.125)        # rank
raises(ValueError, pa, q, cache[0], bt, lens, qsl, scale=0.125)        # rank
raises(ValueError, pa, q, cache, bt, lens, qsl, scale=0.125, sinks=sinks[:3])
raises(ValueError, pa, q, cache, bt, np.array([2**40, 0, 0, 0]), qsl, scale=1.0)
raises(TypeError, pa, q, cache, bt.astype(np.float32), lens, qsl, scale=1.0)
raises(TypeError, pa, q.astype(np.float64), cache, bt, lens, qsl, scale=1.0)
raises(ValueError, pa, q, cache, bt, lens, qsl, scale=1.0,
       query_precision="fp16")
raises(ValueError, pa, q, cache, bt, lens, qsl, scale=1.0,
       k_format={"bits": 4})
raises(ValueError, pa, q[:, :3], cache, bt, lens, qsl, scale=1.0)  # 3 % 2
raises(ValueError, pa, q, cache[..., :60], bt, lens, qsl, scale=1.0)  # slot
raises(ValueError, uq.ref.decode_attention, q[:4], cache, bt,
       [97, 5, 0, 40], scale=1.0)      # decode rejects lengths past the table
print("OK")
