"""Independent reference for the MFMA lit tests.

Builds random logical matrices, places them in per-lane register images
exactly as /work/shared/docs/gfx950-notes.md describes (NOT from the
emulator's code), and checks the emulator's output against a plain matrix
product computed in float64.

  mfma_ref.py gen   KIND DIR [options]   -> DIR/in0.bin, DIR/in1.bin
  mfma_ref.py check KIND DIR OUT [options]

KIND: scale16 (v_mfma_scale_f32_16x16x128_f8f6f4), scale32 (32x32x64),
      bf16 (v_mfma_f32_16x16x32_bf16, result accumulated twice: D = 2*A*B).
in0: A lane images (64 x 32 bytes) then B lane images (64 x 32 bytes);
in1: scale VGPR of A (64 dwords) then of B (64 dwords).
"""
import argparse
import os
import sys

import numpy as np

FP4 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def fp4(c):
    v = FP4[c & 7]
    return -v if c & 8 else v


def fp8e4m3(c):
    s, e, m = c >> 7, (c >> 3) & 15, c & 7
    if e == 15 and m == 7:
        return float("nan")
    v = (m / 8.0) * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7)
    return -v if s else v


def bf8e5m2(c):
    s, e, m = c >> 7, (c >> 2) & 31, c & 3
    if e == 31:
        return float("nan") if m else float("inf")
    v = (m / 4.0) * 2.0 ** -14 if e == 0 else (1 + m / 4.0) * 2.0 ** (e - 15)
    return -v if s else v


FMT = {"fp8": 0, "bf8": 1, "fp4": 4}


def decode(fmt, c):
    return {"fp8": fp8e4m3, "bf8": bf8e5m2, "fp4": fp4}[fmt](c)


def lane_k(kind, fmt, grp, i, contiguous=False):
    """Logical K of element i (0..31) held by lane group grp."""
    if fmt == "fp4" or contiguous:
        return 32 * grp + i
    half = 64 if kind == "scale16" else 32
    return 16 * grp + i if i < 16 else half + 16 * grp + (i - 16)


def random_codes(rng, fmt, n):
    if fmt == "fp4":
        return rng.integers(0, 16, n)
    c = rng.integers(0, 256, n)
    bad = (c & 0x7f) == 0x7f if fmt == "fp8" else ((c >> 2) & 31) == 31
    c[bad] = 0x38
    return c


def geometry(kind):
    return (16, 128) if kind == "scale16" else (32, 64)


def gen_scaled(a):
    rng = np.random.default_rng(a.seed)
    M, K = geometry(a.kind)
    KB = K // 32
    ca = random_codes(rng, a.fa, M * K).reshape(M, K)   # A[m][k]
    cb = random_codes(rng, a.fb, K * M).reshape(K, M)   # B[k][n]
    img = np.zeros((2, 64, 32), np.uint8)
    for which, fmt, codes in ((0, a.fa, ca), (1, a.fb, cb.T)):
        for l in range(64):
            r, g = l % M, l // M
            for i in range(32):
                k = lane_k(a.kind, fmt, g, i)
                c = int(codes[r][k])
                if fmt == "fp4":
                    img[which, l, i // 2] |= (c & 15) << (4 * (i % 2))
                else:
                    img[which, l, i] = c
    # Scales: random E8M0 in every byte; the selected byte differs per
    # (row, K-block), the other bytes are decoys.
    sc = rng.integers(118, 137, (2, 64, 4)).astype(np.uint8)
    os.makedirs(a.dir, exist_ok=True)
    img.tofile(os.path.join(a.dir, "in0.bin"))
    sc.tofile(os.path.join(a.dir, "in1.bin"))


def expected_scaled(a, contiguous=False):
    M, K = geometry(a.kind)
    KB = K // 32
    img = np.fromfile(os.path.join(a.dir, "in0.bin"), np.uint8).reshape(2, 64, 32)
    sc = np.fromfile(os.path.join(a.dir, "in1.bin"), np.uint8).reshape(2, 64, 4)
    A = np.zeros((M, K))
    B = np.zeros((K, M))
    for which, fmt in ((0, a.fa), (1, a.fb)):
        for l in range(64):
            r, g = l % M, l // M
            for i in range(32):
                c = (img[which, l, i // 2] >> (4 * (i % 2))) & 15 if fmt == "fp4" \
                    else img[which, l, i]
                k = lane_k(a.kind, fmt, g, i, contiguous)
                if which == 0:
                    A[r, k] = decode(fmt, int(c))
                else:
                    B[k, r] = decode(fmt, int(c))
    sA = np.array([[2.0 ** (int(sc[0, r + M * j, a.opsel_a]) - 127)
                    for j in range(KB)] for r in range(M)])
    sB = np.array([[2.0 ** (int(sc[1, r + M * j, a.opsel_b]) - 127)
                    for j in range(KB)] for r in range(M)])
    D = np.zeros((M, M))
    for j in range(KB):
        blk = slice(32 * j, 32 * j + 32)
        D += (A[:, blk] @ B[blk, :]) * np.outer(sA[:, j], sB[:, j])
    return D


def out_pos(M, m, n):
    """(register, lane) of D[m][n] per gfx950-notes.md / the MFMA layout."""
    if M == 16:
        return m % 4, n + 16 * (m // 4)
    return 4 * (m // 8) + m % 4, n + 32 * ((m // 4) % 2)


def read_out(path, M):
    nreg = M * M // 64
    raw = np.fromfile(path, "<f4").reshape(64, nreg)  # lane-major
    D = np.zeros((M, M))
    for m in range(M):
        for n in range(M):
            reg, lane = out_pos(M, m, n)
            D[m, n] = raw[lane, reg]
    return D


def bf16_bits(x):
    return (np.float32(x).view(np.uint32) >> 16).astype(np.uint16)


def bf16_value(bits):
    return float(np.array([int(bits) << 16], np.uint32).view(np.float32)[0])


def gen_bf16(a):
    rng = np.random.default_rng(a.seed)
    A = rng.standard_normal((16, 32)).astype(np.float32)
    B = rng.standard_normal((32, 16)).astype(np.float32)
    img = np.zeros((2, 64, 8), np.uint16)
    for l in range(64):
        r, g = l % 16, l // 16
        for i in range(8):
            img[0, l, i] = bf16_bits(A[r, 8 * g + i])
            img[1, l, i] = bf16_bits(B[8 * g + i, r])
    # Pad each lane image to 32 bytes like the scaled test.
    os.makedirs(a.dir, exist_ok=True)
    full = np.zeros((2, 64, 16), np.uint16)
    full[:, :, :8] = img
    full.tofile(os.path.join(a.dir, "in0.bin"))
    np.zeros(512, np.uint8).tofile(os.path.join(a.dir, "in1.bin"))


def expected_bf16(a):
    img = np.fromfile(os.path.join(a.dir, "in0.bin"), np.uint16).reshape(2, 64, 16)
    A = np.zeros((16, 32))
    B = np.zeros((32, 16))
    for l in range(64):
        r, g = l % 16, l // 16
        for i in range(8):
            A[r, 8 * g + i] = bf16_value(img[0, l, i])
            B[8 * g + i, r] = bf16_value(img[1, l, i])
    return 2 * (A @ B)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["gen", "check"])
    p.add_argument("kind", choices=["scale16", "scale32", "bf16"])
    p.add_argument("dir")
    p.add_argument("out", nargs="?")
    p.add_argument("--fa", default="fp8", choices=list(FMT))
    p.add_argument("--fb", default="fp4", choices=list(FMT))
    p.add_argument("--opsel-a", type=int, default=0)
    p.add_argument("--opsel-b", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if a.mode == "gen":
        (gen_bf16 if a.kind == "bf16" else gen_scaled)(a)
        return 0
    M = 16 if a.kind != "scale32" else 32
    got = read_out(a.out, M)
    want = expected_bf16(a) if a.kind == "bf16" else expected_scaled(a)
    # Products are exact in float64 and the emulator rounds the sum once to
    # f32, so a relative error of a few f32 ulps of the largest term is the
    # whole budget.
    tol = 1e-6 * max(1.0, np.abs(want).max())
    err = np.abs(got - want).max()
    print(f"max abs error {err:.3g} (tolerance {tol:.3g})")
    ok = err <= tol
    print("PASS" if ok else "FAIL")
    if a.kind != "bf16" and "fp4" != a.fa or a.kind != "bf16" and a.fb != "fp4":
        alt = expected_scaled(a, contiguous=True)
        differs = np.abs(alt - want).max() > 100 * tol
        print("contiguous-K FP8 layout gives a different result:",
              "yes" if differs else "no")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
