# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s | FileCheck %s

# uq.quality keeps a numpy transcription of the format codecs
# (uq/quality/backend.py) so that the study runs without the native module;
# with the module built it uses the library's codecs. The two must agree bit
# for bit wherever the backend documents no difference (only the rotation
# differs: a float32 matrix product instead of the butterfly). Inputs: random
# rows over many magnitudes, exact FP4 midpoints, zeros of both signs, +-max
# of FP4 (at scale 1), of E4M3 (448 and the rounding edge 464) and of f32,
# subnormals of E4M3 and of f32, NaN and infinities of both signs.
import numpy as np

import uq.quality.backend as B

assert B.native() is not None, "the test needs uq._uq's reference bindings"


def both(fn, *args, **kw):
    """fn's result with the native codecs and with the numpy ones."""
    native = fn(*args, **kw)
    saved, B._N = B._N, None
    try:
        numpy = fn(*args, **kw)
    finally:
        B._N = saved
    return native, numpy


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == np.float32:
        # NaN payloads may differ; a NaN must be a NaN on both sides.
        nan = np.isnan(a)
        return (np.array_equal(nan, np.isnan(b)) and
                np.array_equal(a.view(np.uint32)[~nan], b.view(np.uint32)[~nan]))
    return a.dtype == b.dtype and np.array_equal(a, b)


rng = np.random.default_rng(7)
rows = (rng.standard_normal((64, 128)) *
        np.exp2(rng.integers(-20, 20, (64, 1)))).astype(np.float32)
# Exact midpoints between FP4 levels at scale 1 (group absmax 6 with c=1/6).
mids = np.tile(np.concatenate([B.FP4_MIDS, [6.0] * 18]).astype(np.float32),
               (1, 4))[:, :128]
special = np.zeros((10, 128), np.float32)
special[1, :] = np.float32(1e-40)            # subnormal groups
special[2, :32] = np.nan                     # a NaN group
special[3, :32] = np.inf                     # an infinite group
special[3, 32:64] = 1e30                     # past every scale
special[3, 64:96] = -np.inf                  # a negative infinite group
special[4, :] = -0.0                         # negative zeros
# +-max: FP4's largest level at scale 1 (group max 6 with c = 1/6) with
# both signs in one group; E4M3's largest value 448, the midpoint 464 to the
# next (overflow: NaN or 448) and just below it; f32's largest finite.
special[5, :] = np.tile(np.float32([6, -6, 4, -4]), 32)
special[6, :] = -6.0
special[7, :] = np.tile(np.float32([448, -448, 464, -464, 463.99997, -463.99997,
                                    240, -240]), 16)
special[8, :32] = np.finfo(np.float32).max
special[8, 32:64] = -np.finfo(np.float32).max
# Subnormal range: E4M3's subnormals 2^-9 .. 7 * 2^-9 and halfway below the
# smallest, f32 subnormals mixed with a normal group maximum.
special[9, :32] = np.float32(2.0 ** -9) * np.arange(32, dtype=np.float32) / 2
special[9, 32:64] = np.float32(2.0 ** -149) * np.arange(1, 33, dtype=np.float32)
special[9, 64:96] = np.float32(2.0 ** -130)
special[9, 95] = np.float32(2.0 ** -100)
x = np.concatenate([rows, mids, special]).astype(np.float32)

checks = []
for c in (0.156, 1 / 6, 0.196):
    for rounding in ("ties_down", "nearest_even"):
        checks.append((f"fp4_roundtrip c={c:.3f} {rounding}",
                       both(B.fp4_roundtrip, x, c=c, rounding=rounding)))
codes = rng.integers(0, 256, (16, 64), dtype=np.uint8)
scales = rng.integers(0, 255, (16, 4), dtype=np.uint8)
checks.append(("fp4_decode_bytes", both(B.fp4_decode_bytes, codes, scales)))
for overflow in ("nan", "saturate"):
    checks.append((f"fp8_e4m3 {overflow}", both(B.fp8_e4m3, x, overflow)))
finite = np.nan_to_num(x, nan=0.0, posinf=1e30, neginf=-1e30)
checks.append(("fp8_e4m3_bytes", both(B.fp8_e4m3_bytes, finite)))
checks.append(("fp8_e4m3_from_bytes",
               both(B.fp8_e4m3_from_bytes, np.arange(256, dtype=np.uint8))))

differ = 0
for name, (native, numpy) in checks:
    ok = same_bits(native, numpy)
    differ += not ok
    print(name, "agree" if ok else "DIFFER")
print("codecs that differ:", differ)
# CHECK: fp4_roundtrip c=0.156 ties_down agree
# CHECK: fp4_roundtrip c=0.196 nearest_even agree
# CHECK: fp4_decode_bytes agree
# CHECK: fp8_e4m3 nan agree
# CHECK: fp8_e4m3 saturate agree
# CHECK: fp8_e4m3_bytes agree
# CHECK: fp8_e4m3_from_bytes agree
# CHECK: codecs that differ: 0
