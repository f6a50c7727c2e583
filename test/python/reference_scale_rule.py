# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s

# The scale_rule keyword of uq._uq.quantize / quantize_dequantize
# (ScaleRule::MseSearch, #uq.kv_format<..., scale_rule = mse_search>): each
# group's squared error, recomputed here in numpy, is never above log_round's
# and is the least of the three candidate exponents; the choice agrees with
# the numpy study encoder uq.quality.formats.encode_search (float32 pairwise
# sums) except near ties.
import numpy as np

import uq
from uq.quality import backend as B
from uq.quality import formats as F

m = uq.native()
assert m.has_reference

rng = np.random.default_rng(5)
gauss = (rng.standard_normal((64, 8, 128)) * 2).astype(np.float32)
heavy = (rng.standard_t(2.0, (64, 8, 128))).astype(np.float32)
heavy[:, :, 5] *= 300.0
heavy[3, 2, :32] = 0.0                       # a zero group: the sentinel


def group_err(dec, x):
    d = (dec.astype(np.float64) - x.astype(np.float64)).reshape(-1, 32)
    return (d * d).sum(-1)


for x in (gauss, heavy):
    for c in (0.156, 0.196):
        for rotate in (False, True):
            lr = m.quantize_dequantize(x, rotate=rotate, c=c)
            ms = m.quantize_dequantize(x, rotate=rotate, c=c,
                                       scale_rule="mse_search")
            assert np.array_equal(
                lr, m.quantize_dequantize(x, rotate=rotate, c=c,
                                          scale_rule="log_round"))
            # quantize + dequantize agree with the one-pass round trip.
            codes, scales = m.quantize(x, rotate=rotate, c=c,
                                       scale_rule="mse_search")
            assert np.array_equal(m.dequantize(codes, scales), ms)
            s0 = m.quantize(x, rotate=rotate, c=c)[1].astype(int)
            s1 = scales.astype(int)
            assert np.all(np.abs(s1 - s0) <= 1)
            assert np.array_equal(s0 == 0, s1 == 0)          # sentinels kept
            moved = np.mean(s1 != s0)
            assert 0.002 < moved < 0.9, moved

            xc = m.hadamard(x) if rotate else x              # coded domain
            e_lr, e_ms = group_err(lr, xc), group_err(ms, xc)
            assert np.all(e_ms <= e_lr * (1 + 1e-12)), np.max(e_ms - e_lr)
            assert np.sum(e_ms) < np.sum(e_lr)
            # None of the three candidates (recomputed in numpy) is better.
            g = xc.reshape(-1, 32)
            e0, zero = B.np_ue8m0_exponent(np.abs(g).max(-1), c)
            for de in (-1, 0, 1):
                e = np.clip(e0 + de, -126, 127)
                sc = np.exp2(e.astype(np.float64))[:, None]
                q = B.np_fp4_round(g / np.exp2(e.astype(np.float32))[:, None])
                err = ((q.astype(np.float64) * sc - g) ** 2).sum(-1)
                ok = zero | (e_ms <= err * (1 + 1e-12))
                assert np.all(ok), (de, np.flatnonzero(~ok)[:5])

            # Same choice as the numpy study encoder, except near ties
            # (float32 pairwise sums there, a float64 tree here).
            if not rotate:
                want = F.encode_search(x, c)
                same = np.all(want.reshape(-1, 32) == ms.reshape(-1, 32), -1)
                assert np.mean(same) >= 0.99, np.mean(same)

# Bad strings are a ValueError naming the choices; so is a group size the
# search cannot split into a binary tree.
for fn in (lambda: m.quantize(gauss, scale_rule="mse"),
           lambda: m.quantize_dequantize(gauss, scale_rule="LogRound"),
           lambda: m.quantize(gauss[..., :96], group_size=48,
                              scale_rule="mse_search")):
    try:
        fn()
    except ValueError as e:
        assert "scale_rule" in str(e) or "power-of-two" in str(e), str(e)
    else:
        raise AssertionError("expected ValueError")
try:
    m.quantize(gauss, scale_rule="mse")
except ValueError as e:
    assert "'log_round' or 'mse_search'" in str(e), str(e)

print("ok")
