# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s

# The accuracy study's format options (docs/accuracy.md, section 6) on hand-made rows whose
# expected values are worked out in the comments: K/V channel means (kmean,
# vmean), q/k and V balance scales (kbal, vbal), FP6 E2M3 and FP4 with E4M3
# scales, K and V in different formats (KSPEC|VSPEC), the bits accounting and
# the policy optimiser against a base format.
import math

import numpy as np

from uq.quality import backend as B
from uq.quality.formats import (MEAN_BITS, SplitKV, UltraQuant, fp4_e4m3_scale_roundtrip,
                                fp6_roundtrip, parse_format)
from uq.quality.metrics import causal_attention, head_metrics
from uq.quality.policy import optimise

D = 32


class StubCalib:
    """Calibration with fixed statistics (the real one reads activations)."""

    def __init__(self, mk, mv, sk, sv):
        self.mk, self.mv, self.sk, self.sv = mk, mv, sk, sv

    def mean(self, which, layer, head):
        return self.mk if which == "k" else self.mv

    def k_balance(self, layer, head, centred, alpha, pow2):
        return self.sk

    def v_balance(self, layer, head, centred, alpha, pow2):
        return self.sv


rng = np.random.default_rng(3)
mk = np.linspace(-3, 3, D).astype(np.float32)
mv = np.linspace(2, -2, D).astype(np.float32)
sk = np.exp2(rng.integers(-1, 2, D)).astype(np.float32)      # powers of two: exact
sv = np.exp2(rng.integers(-1, 2, D)).astype(np.float32)
cal = StubCalib(mk, mv, sk, sv)
k = (rng.standard_normal((6, D)) + mk).astype(np.float32)
v = (rng.standard_normal((6, D)) + mv).astype(np.float32)
q = rng.standard_normal((6, D)).astype(np.float32)

# kmean: the cache codes k - mu_k, exactly what the plain format codes for
# those rows; reading back adds mu_k again.
plain = UltraQuant(c_k=0.196, c_v=0.196, rotate_v=True, search=True)
km = parse_format("uq:c=0.196,rotv,search,kmean,vmean", cal)
assert km.k_mean == "cal" and km.v_mean == "cal"
assert np.array_equal(km.prep_k(k), plain.prep_k(k - mk))
assert np.allclose(km.recon_k(k), plain.recon_k(k - mk) + mk, atol=1e-5)
# The smoothed logits lack q'.H(mu_k) per query row (logit_shift); softmax
# is invariant to it, so the probabilities equal those computed with the
# mean added back to every key.
qe = km.prep_q(q)
ke = km.prep_k(k)
L1, _ = causal_attention(qe, ke, ke)
L2, _ = causal_attention(qe, ke + B.hadamard(mk[None])[0], ke)
L1, L2 = np.where(np.isinf(L1), 0, L1), np.where(np.isinf(L2), 0, L2)
shift = km.logit_shift(qe, k) / math.sqrt(D)
tril = np.tril(np.ones((6, 6), bool))
assert np.allclose((L2 - L1)[tril], np.broadcast_to(shift[:, None], (6, 6))[tril], atol=1e-4)
P1 = np.exp(np.where(tril, L1, -np.inf) - L1.max(1, keepdims=True))
P2 = np.exp(np.where(tril, L2, -np.inf) - L2.max(1, keepdims=True))
assert np.allclose(P1 / P1.sum(1, keepdims=True), P2 / P2.sum(1, keepdims=True), atol=1e-5)
# vmean: a single value row attended with weight 1 comes back as the
# decoded (v - mu_v) rotated back, plus mu_v.
o = km.post_out(km.prep_v(v[:1]), v=v[:1])
assert np.allclose(o, B.hadamard(plain.prep_v(v[:1] - mv)) + mv, atol=1e-6)
# kmean=N: the mean of the sequence's first N keys.
k2 = parse_format("uq:c=0.196,kmean=2")
assert np.array_equal(k2.prep_k(k), UltraQuant(c_k=0.196, c_v=0.196).prep_k(
    k - np.mean(k[:2].astype(np.float64), 0).astype(np.float32)))

# kbal: keys divided by s before coding, queries multiplied by s, so the
# product of the uncoded vectors is unchanged: (q s) . (k / s) = q . k.
kb = parse_format("uq:c=0.196,kbal", cal)
assert np.array_equal(kb.prep_k(k), plain.prep_k(k / sk))
assert np.array_equal(kb.prep_q(q), plain.prep_q(q * sk))
assert np.allclose((q * sk) @ (k / sk).T, q @ k.T, atol=1e-5)
assert np.allclose(kb.recon_k(k), plain.recon_k(k / sk) * sk, atol=1e-5)
# vbal: values divided by s, the output multiplied by s.
vb = parse_format("uq:c=0.196,vbal", cal)
assert np.array_equal(vb.prep_v(v), UltraQuant(c_k=0.196, c_v=0.196).prep_v(v / sv))
assert np.array_equal(vb.post_out(vb.prep_v(v)), vb.prep_v(v) * sv)

# Options that need calibration data are refused without it.
for spec in ("uq:kmean", "uq:vmean", "uq:kbal", "uq:vbal"):
    try:
        parse_format(spec)
    except ValueError as e:
        assert "calibration" in str(e), e
    else:
        raise AssertionError(spec)

# FP6 E2M3 with a power-of-two scale per 32, exponent searched among
# e0-1, e0, e0+1 (e0 = ceil(log2(7.5 / 7.5)) = 0). At e = 0: 7.3 -> 7.5
# (grid step 0.5 in [4, 8)), 1.0625 is the midpoint of 1 and 1.125 -> the
# even mantissa 1.0, 0.6 -> 0.625 (step 0.125 below 2): squared error 0.04 +
# 0.0039 + 0.0006 = 0.0445. e = 1 (grid doubled): 7.3 -> 7.5, 1.0625 -> 1.0,
# 0.6 -> 0.5: 0.0539. e = -1 saturates 7.5 to 3.75. So e = 0 wins.
x = np.zeros((1, 32), np.float32)
x[0, :5] = [7.5, 7.3, 1.0625, 0.6, -0.0625]
y = fp6_roundtrip(x)
assert np.array_equal(y[0, :5], np.array([7.5, 7.5, 1.0, 0.625, 0.0], np.float32)), y[0, :5]
assert np.array_equal(fp6_roundtrip(np.zeros((1, 32), np.float32)), np.zeros((1, 32)))

# FP4 with an E4M3 scale per group: absmax 6 -> S = e4m3(6 / 6) = 1, codes
# as FP4 with ties down: 2.5 -> 2, -2.5 -> -3, 0.25 -> 0 (squared error
# 0.25 + 0.25 + 0.0625 = 0.5625). The search also tries the E4M3 neighbours
# 0.9375 and 1.125. S = 0.9375: 6 / S = 6.4 saturates -> 5.625 (0.1406),
# +-2.5 / S = 2.67 -> 3 -> +-2.8125 (2 x 0.0977), 0.25 / S = 0.267 -> 0.5 ->
# 0.46875 (0.0479): 0.384 in all, the least (1.125 costs 0.5625 on 6 alone).
x = np.zeros((1, 32), np.float32)
x[0, :4] = [6, 2.5, -2.5, 0.25]
y = fp4_e4m3_scale_roundtrip(x, 32)
assert np.array_equal(y[0, :4], np.array([6, 2, -3, 0], np.float32)), y[0, :4]
y = fp4_e4m3_scale_roundtrip(x, 32, search=True)
assert np.array_equal(y[0, :4], np.array([5.625, 2.8125, -2.8125, 0.46875], np.float32)), y
# The same group through the reference bindings' bytes (ScaleCode::E4M3):
# scale byte 0x38 (1.0), codes 7 (6), 4 (2), 13 (-3), 0; with the search
# 0x37 (0.9375).
N = B.native()
if N is not None:
    codes, scales = N.quantize(x, c=1 / 6, scale="e4m3")
    assert scales[0, 0] == 0x38 and list(codes[0, :2]) == [0x47, 0x0D], (scales, codes)
    assert N.quantize(x, c=1 / 6, scale="e4m3", scale_rule="mse_search")[1][0, 0] == 0x37
    assert np.array_equal(N.dequantize(codes, scales, scale="e4m3")[0, :4], [6, 2, -3, 0])
    assert N.e4m3_scale(np.array([6.0, 0.0, 1e9], np.float32)).tolist() == [0x38, 0, 0x7E]
    try:
        N.quantize(x, scale="e5m2")
    except ValueError as e:
        assert "e4m3" in str(e)
    else:
        raise AssertionError("an unknown scale code must be refused")
# absmax 3: S = e4m3(0.5) = 0.5 exactly; 1.3 / 0.5 = 2.6 -> 3 -> 1.5.
x[0, :4] = [3, 1.3, 0, 0]
assert fp4_e4m3_scale_roundtrip(x, 32)[0, 1] == 1.5
assert np.array_equal(fp4_e4m3_scale_roundtrip(np.zeros((2, 32), np.float32), 16),
                      np.zeros((2, 32)))

# Bits per element, scales and means included: FP4/UE8M0 per 32 is 4.25,
# per 16 4.5, FP6 6.25; a channel mean (f32 per channel, one 1024-token
# window) adds 32/1024; K|V splits average K's and V's bits.
assert parse_format("uq").bits == 4.25
assert parse_format("uq:gv=16").bits_v == 4.5 and parse_format("uq:gv=16").bits_k == 4.25
assert parse_format("uq:el=fp6").bits == 6.25
assert MEAN_BITS == 1 / 32
assert parse_format("uq:kmean,vmean", cal).bits == 4.25 + 1 / 32
s = parse_format("uq:c=0.196|fp8")
assert isinstance(s, SplitKV) and s.bits == (4.25 + 8) / 2 and s.bits_k == 4.25
assert np.array_equal(s.prep_k(k), parse_format("uq:c=0.196").prep_k(k))
assert np.array_equal(s.prep_v(v), B.fp8_e4m3(v))
assert np.array_equal(s.prep_q(q), parse_format("uq").prep_q(q))     # K's query path
m = head_metrics(s, k[None], v[None], None)
assert m.v_sqnr_db > 25 > m.k_sqnr_db, m

# The optimiser against a base format ('free' costs 0): upgrading unit 1's
# V to FP8 (measured -0.02) beats unit 0's (-0.005) within one upgrade's
# budget: (4.25 + 6.125) / 2 = 5.1875 bits.
sens = {"uq|fp8": {(0, 0): -0.005, (0, 1): -0.02}}
bits = {"uq": 4.25, "uq|fp8": 6.125}
pol, cost = optimise(sens, bits, 5.1875, "uq", free="uq")
assert pol.overrides == [{"layer": 0, "format": "uq|fp8", "kv_head": 1}], pol.overrides
assert abs(cost + 0.02) < 1e-12
pol, cost = optimise(sens, bits, 4.25, "uq", free="uq")
assert pol.overrides == [] and cost == 0.0
print("ok")

# Window-parallel loops (uq-quality --jobs N): forked workers return the
# results in order, the same as the serial loop.
from uq.quality.model import map_windows  # noqa: E402

assert map_windows(lambda x: x * x, range(7), 2) == [x * x for x in range(7)]
assert map_windows(lambda x: -x, [3], 4) == [-3]
print("ok")

# Study option `self`: each query sees its own token's key and value
# unquantised; no cache bit. exact_k / exact_v are the coded domain without
# the coding (centred, rotated); in a KSPEC|VSPEC each side keeps its own.
from uq.quality.model import Model  # noqa: E402

f = parse_format("uq:c=0.196,rotv,self")
assert f.exact_self and f.bits == 4.25 and f.name == "uq:c=0.196,rotv,self", f.name
fm = parse_format("uq:kmean,vmean,self", cal)
assert np.allclose(fm.exact_k(k), B.hadamard(k - mk), atol=1e-5)
assert np.allclose(fm.exact_v(v), v - mv, atol=1e-6)
sk_ = parse_format("uq:self|fp8")
assert sk_.exact_self_k and not sk_.exact_self_v
# One token attends only to itself: with `self` the attention returns its
# value exactly (rotation undone), without it the value's 4-bit reading.
m = Model.__new__(Model)
m.cfg = {"hq": 2, "hk": 1, "hd": D}
m.autocast = False
q1 = rng.normal(size=(1, 2, D)).astype(np.float32)
k1 = rng.normal(size=(1, 1, D)).astype(np.float32)
v1 = rng.normal(size=(1, 1, D)).astype(np.float32)
with_self = m.attention(q1, k1, v1, 0, lambda l, j: parse_format("uq:rotv,self"))
without = m.attention(q1, k1, v1, 0, lambda l, j: parse_format("uq:rotv"))
for h in range(2):
    assert np.allclose(with_self[0, h * D:(h + 1) * D], v1[0, 0], atol=1e-5)
    assert np.abs(without[0, h * D:(h + 1) * D] - v1[0, 0]).max() > 1e-3
print("ok")
