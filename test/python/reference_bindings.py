# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s

# uq._uq's reference bindings: shapes, dtypes, error handling, and agreement
# with an independent numpy transcription of the format doc (uq.quality.backend
# numpy path) on random rows.
import numpy as np

import uq

m = uq.native()
assert m.has_reference

rng = np.random.default_rng(1)
x = (rng.standard_normal((3, 5, 128)) * 3).astype(np.float32)

codes, scales = m.quantize(x, rotate=True)
assert codes.shape == (3, 5, 64) and codes.dtype == np.uint8
assert scales.shape == (3, 5, 4) and scales.dtype == np.uint8
dec = m.dequantize(codes, scales)                       # rotated domain
assert dec.shape == x.shape and dec.dtype == np.float32
assert np.array_equal(dec, m.quantize_dequantize(x, rotate=True))
back = m.dequantize(codes, scales, rotate=True, unrotate=True)
err = np.sum((back - x) ** 2) / np.sum(x ** 2)
assert 0.005 < err < 0.03, err                           # ~ -17.5 dB at c = 0.156

# bf16 bit patterns as uint16 are accepted and mean the same values.
xb = m.to_bf16(x)
assert xb.dtype == np.uint16
xr = m.bf16_round(x)
assert np.array_equal(m.quantize(xb)[0], m.quantize(xr)[0])

# Independent numpy transcription (no rotation, so no rounding-order issue).
from uq.quality import backend as B
g = xr.reshape(-1, 4, 32)
e, zero = B.np_ue8m0_exponent(np.abs(g).max(-1), 0.156)
assert np.array_equal(m.quantize(xr)[1].reshape(-1, 4), np.where(zero, 0, e + 127))
s = np.exp2(e.astype(np.float32))[..., None]
want = (B.np_fp4_round(g / s) * s).reshape(x.shape)
assert np.array_equal(m.quantize_dequantize(xr), want)

# Hand-checked scalars: FP4 ties go down, FP8 RNE and NaN above 448.
assert list(m.fp4_decode(m.fp4_encode(np.array([0.25, -0.25, 2.5, -2.5, 7.0], np.float32)))) == \
    [0.0, -0.5, 2.0, -3.0, 6.0]
f8 = m.fp8_e4m3(np.array([1.0625, 448.0, 470.0], np.float32))
assert f8[0] == 1.0 and f8[1] == 448.0 and np.isnan(f8[2])
assert m.fp8_e4m3(np.array([470.0], np.float32), fp8_overflow="saturate")[0] == 448.0
assert list(m.ue8m0_scale(np.array([0.0, 6.0 / 0.156, np.inf], np.float32))) == [0, 127 + 3, 0]
assert m.slot_bytes(128) == 136
h = m.hadamard(np.eye(4, dtype=np.float32))
assert np.allclose(h, 0.5 * np.array([[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]]))

# Bad inputs raise Python exceptions with a message, never crash.
def raises(exc, fn, *a, **k):
    try:
        fn(*a, **k)
    except exc as e:
        assert str(e), "empty message"
        return
    raise AssertionError(f"{fn.__name__} did not raise {exc.__name__}")

raises(TypeError, m.quantize, x.astype(np.float64))
raises(TypeError, m.quantize, x.astype(np.int32))
raises(ValueError, m.quantize, x[..., :100])
raises(ValueError, m.quantize, np.zeros((), np.float32))
raises(ValueError, m.quantize, x, rounding="up")
raises(ValueError, m.quantize, x, c=-1.0)
raises(ValueError, m.hadamard, x[..., :96])
raises(TypeError, m.dequantize, codes.astype(np.int16), scales)
raises(ValueError, m.dequantize, codes, scales[..., :3])
print("ok")
