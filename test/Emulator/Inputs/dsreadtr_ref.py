"""Independent reference for ds-read-tr.s (gfx950 transposing LDS reads).

A logical B matrix (K x 16, row-major in LDS: N contiguous, the layout
that needs a transpose before an MFMA) is read with ds_read_b64_tr_b{16,8,4}
into the MFMA B operand (lane l, r = l % 16, g = l / 16, holds B[k][r] for
the lane group's K values) and multiplied with an A operand loaded plainly.
The per-lane LDS addresses come from the documented lane map
(docs/emulator.md, "Transposing LDS reads"), stated here in terms of the
logical matrix, not of the emulator's code:

  each group of 16 lanes reads one 64-bit row piece per lane; lane j of the
  group reads n = 64/bits consecutive N values (N = n*(j % (16/n)) ..) of
  row K = k0 + j / (16/n); afterwards lane i of the group holds column N = i,
  rows k0 .. k0+n-1 (element e = row k0 + e).

So if the emulator's transpose were wrong, the product would be wrong.

  dsreadtr_ref.py gen   BITS DIR --seed S -> DIR/in0.bin, DIR/in1.bin
  dsreadtr_ref.py check BITS DIR OUT      -> PASS / FAIL lines

BITS 16: v_mfma_f32_16x16x32_bf16, B = 32 x 16 bf16, two reads (K 8g..8g+3
         then 8g+4..8g+7 for lane group g).
BITS 8:  v_mfma_f32_16x16x32_fp8_fp8, B = 32 x 16 FP8 E4M3, one read (K
         8g..8g+7).
BITS 4:  v_mfma_scale_f32_16x16x128_f8f6f4 FP4 x FP4 (scales 1.0), B = 128 x
         16 FP4 (low nibble = even N), two reads (K 32g..32g+15, then
         32g+16..32g+31).
in0: 64 A lane images of 16 bytes, then the 1024 bytes of B as stored in LDS.
in1: the LDS address of each lane's first read (64 dwords).
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from mfma_ref import bf16_bits, bf16_value, fp4, fp8e4m3, out_pos  # noqa: E402

K_OF = {16: 32, 8: 32, 4: 128}


def make(bits, seed):
    rng = np.random.default_rng(seed)
    K = K_OF[bits]
    if bits == 16:
        # Small integers and halves: every product and sum is exact.
        A = rng.integers(-8, 9, (16, K)) / 2.0
        B = rng.integers(-8, 9, (K, 16)) / 2.0
        Acodes = np.vectorize(bf16_bits)(A)
        Bcodes = np.vectorize(bf16_bits)(B)
    else:
        hi = 256 if bits == 8 else 16
        Acodes = rng.integers(0, hi, (16, K))
        Bcodes = rng.integers(0, hi, (K, 16))
        if bits == 8:  # no NaN codes (0x7f, 0xff)
            Acodes[(Acodes & 0x7F) == 0x7F] = 0x38
            Bcodes[(Bcodes & 0x7F) == 0x7F] = 0x38
        dec = np.vectorize(fp8e4m3 if bits == 8 else fp4)
        A, B = dec(Acodes), dec(Bcodes)
    return A, B, Acodes, Bcodes


def a_images(bits, Acodes):
    """Lane l holds A[r][K of its group] packed low element first."""
    img = np.zeros((64, 16), np.uint8)
    for l in range(64):
        r, g = l % 16, l // 16
        if bits == 16:
            ks = range(8 * g, 8 * g + 8)
            b = b"".join(int(Acodes[r][k]).to_bytes(2, "little") for k in ks)
        elif bits == 8:
            b = bytes(int(Acodes[r][k]) for k in range(8 * g, 8 * g + 8))
        else:
            ks = range(32 * g, 32 * g + 32)
            b = bytes(int(Acodes[r][k]) | (int(Acodes[r][k + 1]) << 4)
                      for k in ks[::2])
        img[l, :len(b)] = np.frombuffer(b, np.uint8)
    return img


def b_lds(bits, Bcodes):
    """B row-major as it sits in LDS (1024 bytes)."""
    if bits == 16:
        b = b"".join(int(c).to_bytes(2, "little") for c in Bcodes.flatten())
    elif bits == 8:
        b = bytes(int(c) for c in Bcodes.flatten())
    else:
        b = bytes(int(Bcodes[k][n]) | (int(Bcodes[k][n + 1]) << 4)
                  for k in range(128) for n in range(0, 16, 2))
    return b + bytes(1024 - len(b))


def addresses(bits):
    """LDS byte address of each lane's first read, from the lane map."""
    n = 64 // bits          # elements per lane
    per_row = 16 // n       # lanes covering one row of 16 N values
    row_bytes = 16 * bits // 8
    k_per_group = {16: 8, 8: 8, 4: 32}[bits]
    out = []
    for l in range(64):
        g, j = l // 16, l % 16
        k = k_per_group * g + j // per_row
        col = n * (j % per_row)
        out.append(k * row_bytes + col * bits // 8)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["gen", "check"])
    p.add_argument("bits", type=int, choices=[16, 8, 4])
    p.add_argument("dir")
    p.add_argument("out", nargs="?")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    A, B, Acodes, Bcodes = make(a.bits, a.seed)
    if a.mode == "gen":
        os.makedirs(a.dir, exist_ok=True)
        with open(os.path.join(a.dir, "in0.bin"), "wb") as f:
            f.write(a_images(a.bits, Acodes).tobytes() + b_lds(a.bits, Bcodes))
        with open(os.path.join(a.dir, "in1.bin"), "wb") as f:
            f.write(np.array(addresses(a.bits), np.uint32).tobytes())
        return 0
    # The products of these small values and their sums are exact in f64,
    # and the emulator rounds once to f32: compare exactly.
    D = (A @ B).astype(np.float32)
    got = np.frombuffer(open(a.out, "rb").read(), np.float32).reshape(64, 4)
    bad = 0
    for m in range(16):
        for n in range(16):
            reg, lane = out_pos(16, m, n)
            if got[lane][reg] != D[m][n]:
                bad += 1
                if bad < 5:
                    print("FAIL D[%d][%d] = %r, want %r" %
                          (m, n, got[lane][reg], D[m][n]))
    # A transposed B block must give a different product.
    assert not np.array_equal(B[:16], B[:16].T)
    print("PASS" if bad == 0 else "FAIL %d of 256" % bad)
    return 0


if __name__ == "__main__":
    sys.exit(main())
