# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s

# uq.quality's metrics on tiny synthetic cases whose expected values are
# worked out by hand in the comments (not by the code under test).
import math

import numpy as np

from uq.quality.formats import FP8E4M3, Int4Absmax, UltraQuant
from uq.quality.metrics import activation_metrics, head_metrics

# One 32-element row, FP4 without rotation, c = 1/6: absmax 6 -> c*m = 1 ->
# e = floor(log2 1 + 0.5) = 0, scale 1. Codes: 6 -> 6, 1 -> 1, -2.5 -> -3
# (tie goes to the lower level), 0.25 -> 0 (tie), 1.75 -> 1.5 (the midpoint
# of 1.5 and 2: tie, lower level).
x = np.zeros((1, 1, 32), np.float32)
x[0, 0, :5] = [6.0, 1.0, -2.5, 0.25, 1.75]
# errors: 0, 0, 0.5, 0.25, 0.25 -> sum sq = 0.25 + 0.0625 + 0.0625 = 0.375
sig = 36 + 1 + 6.25 + 0.0625 + 3.0625             # 46.375
fmt = UltraQuant(c_k=1 / 6, c_v=1 / 6, rotate_k=False, query="bf16")
m = head_metrics(fmt, x, x, None)
assert abs(m.k_mse - 0.375 / 32) < 1e-9, m.k_mse
assert abs(m.v_mse - 0.375 / 32) < 1e-9, m.v_mse
assert abs(m.k_sqnr_db - 10 * math.log10(sig / 0.375)) < 1e-6, m.k_sqnr_db

# Attention on a single token: softmax weight 1, so the output is the
# decoded value row: out_rel = ||v^ - v|| / ||v|| = sqrt(0.375 / 46.375).
# K = [6, -3, 0...] (absmax 6, scale 1) decodes exactly and q stays bf16, so
# the logits are exact: logit_rel = 0.
k = np.zeros((1, 1, 32), np.float32)
k[0, 0, :2] = [6.0, -3.0]
q = np.zeros((1, 1, 1, 32), np.float32)
q[0, 0, 0, :2] = [0.5, 2.0]
m = head_metrics(fmt, k, x, q)
assert m.logit_rel == 0.0, m.logit_rel
assert abs(m.out_rel - math.sqrt(0.375 / sig)) < 1e-6, m.out_rel
assert m.k_sqnr_db == float("inf")

# Saturation: absmax 4, c = 1/6: c*m = 2/3, log2 = -0.585, e = floor(-0.085)
# = -1, scale 0.5; -4 / 0.5 = -8 saturates to -6 -> decodes to -3 (error 1),
# 1 / 0.5 = 2 exact.
k2 = np.zeros((1, 1, 32), np.float32)
k2[0, 0, :2] = [1.0, -4.0]
m = head_metrics(fmt, k2, k2, None)
assert abs(m.k_mse - 1.0 / 32) < 1e-9, m.k_mse

# INT4 absmax/7 (no rotation): absmax 7 -> scale 1; 3.4 -> 3, 2.5 -> 2 (half
# to even), -0.6 -> -1: errors 0.4, 0.5, 0.4 -> sum sq 0.16 + 0.25 + 0.16.
y = np.zeros((1, 1, 32), np.float32)
y[0, 0, :4] = [7.0, 3.4, 2.5, -0.6]
m = head_metrics(Int4Absmax(rotate_k=False), y, y, None)
assert abs(m.k_mse - 0.57 / 32) < 1e-6, m.k_mse

# FP8 E4M3 (scale 1): 1.0625 is the midpoint of 1 and 1.125 -> even -> 1;
# 0.3 -> 0.3 / 2^-2 = 1.2 -> mantissa 1.25 -> 0.3125 (error 0.0125);
# 300 -> 256..512 step 32 -> 288 (error 12).
z = np.zeros((1, 1, 32), np.float32)
z[0, 0, :3] = [1.0625, 0.3, 300.0]
m = head_metrics(FP8E4M3(), z, z, None)
assert abs(m.k_mse - (0.0625 ** 2 + 0.0125 ** 2 + 144) / 32) < 1e-6, m.k_mse

# Shapes: [S, T, Hk, D] with Hq = 2 Hk gives one row per (format, kv head).
rng = np.random.default_rng(0)
K = rng.standard_normal((1, 8, 2, 64)).astype(np.float32)
Q = rng.standard_normal((1, 8, 4, 64)).astype(np.float32)
rows = activation_metrics([UltraQuant()], K, K, Q, layer=3)
assert [(r.layer, r.head) for r in rows] == [(3, 0), (3, 1)]
assert all(0 < r.logit_rel < 0.5 and 0 < r.out_rel < 0.5 for r in rows)
try:
    activation_metrics([UltraQuant()], K, K[:, :, :1], Q)
except ValueError:
    pass
else:
    raise AssertionError("mismatched k/v shapes must raise ValueError")
print("ok")
