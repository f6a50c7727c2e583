"""Structural checks of a uq decode-attention kernel's gfx950 assembly.

Usage: check_isa.py FILE.s KERNEL HEAD_DIM

Finds the kernel's key loops (the outermost backward branches whose bodies hold the scaled
MFMA: the full-tile loop and the partial last tile's) and checks, for each:
  * v_mfma_scale_f32_16x16x128_f8f6f4 with an FP8 A operand (no cbsz) and
    an FP4 B operand (blgp:4): ceil(D/128) per 16-token half tile, so
    2 * ceil(D / 128) per 32-token iteration;
  * exactly D/4 v_cvt_scalef32_pk_bf16_fp4: the V tile (32 tokens x D dims
    / 64 lanes / 2 values per instruction). Keys are never unpacked: any
    other FP4 conversion in the kernel, or more conversions, fails;
  * D/16 v_mfma_f32_16x16x32_bf16 (the PV product);
  * no scratch (private segment 0) and no VGPR spills for the kernel.
Exits non-zero with a message on the first failed check.
"""
import re
import sys


def fail(msg):
    print("check_isa: FAIL: " + msg)
    sys.exit(1)


def main():
    path, kernel, d = sys.argv[1], sys.argv[2], int(sys.argv[3])
    text = open(path).read()
    # The whole function: it may have several s_endpgm (early exits); LLVM
    # closes it with a .Lfunc_end label.
    m = re.search(r"^%s:\n(.*?)\n\.Lfunc_end" % re.escape(kernel), text,
                  re.S | re.M)
    if not m:
        fail("kernel %s not found" % kernel)
    body = m.group(1).split("\n")
    labels = {}
    for i, line in enumerate(body):
        lm = re.match(r"^(\.LBB\w+):", line)
        if lm:
            labels[lm.group(1)] = i
    loops = []
    for i, line in enumerate(body):
        bm = re.match(r"^\s*s_(?:c)?branch\w*\s+(\.LBB\w+)", line)
        if bm and bm.group(1) in labels and labels[bm.group(1)] < i:
            loops.append((labels[bm.group(1)], i))
    # Key loops: the outermost loops holding a scaled MFMA (the full-tile
    # loop and the partial last tile's loop; a rotated loop may have several
    # back edges, so nested ranges fold into the widest).
    ranges = sorted({(a, b) for a, b in loops
                     if any("v_mfma_scale_f32_16x16x128_f8f6f4" in l
                            for l in body[a:b + 1])},
                    key=lambda r: (r[0], -r[1]))
    key_loops = []
    for a, b in ranges:
        if key_loops and a >= key_loops[-1][0] and b <= key_loops[-1][1]:
            continue
        key_loops.append((a, b))
    if not key_loops:
        fail("no loop contains v_mfma_scale_f32_16x16x128_f8f6f4")
    in_loops = 0
    for a, b in key_loops:
        key_loop = body[a:b + 1]
        scaled = [l for l in key_loop
                  if "v_mfma_scale_f32_16x16x128_f8f6f4" in l]
        want = 2 * ((d + 127) // 128)
        if len(scaled) != want:
            fail("%d scaled MFMAs in a key loop, expected %d" %
                 (len(scaled), want))
        for l in scaled:
            if "blgp:4" not in l or "cbsz" in l:
                fail("scaled MFMA is not FP8 (A) x FP4 (B): " + l.strip())
        cvt = [l for l in key_loop if "v_cvt_scalef32_pk_bf16_fp4" in l]
        if len(cvt) != d // 4:
            fail("%d FP4->bf16 conversions in a key loop, expected %d (V only)"
                 % (len(cvt), d // 4))
        in_loops += len(cvt)
        pv = [l for l in key_loop if "v_mfma_f32_16x16x32_bf16" in l]
        if len(pv) != d // 16:
            fail("%d bf16 MFMAs in a key loop, expected %d" %
                 (len(pv), d // 16))
    other = [l for l in body if re.search(r"v_cvt_scalef32\w*fp4", l)
             and "v_cvt_scalef32_pk_bf16_fp4" not in l]
    if other:
        fail("unexpected FP4 conversion: " + other[0].strip())
    total_cvt = [l for l in body if "v_cvt_scalef32_pk_bf16_fp4" in l]
    if len(total_cvt) != in_loops:
        fail("FP4 conversions outside the V tile path")
    meta = re.search(r"\.name:\s+%s\b.*?(?=\n  - |\n\.\.\.|\Z)" %
                     re.escape(kernel), text, re.S)
    if not meta:
        # The name may come after the fields; look at the whole block.
        meta = re.search(r"(?:\n  - [^\n]*\n(?:    [^\n]*\n)*?)", text)
    desc = re.search(r"\.amdhsa_kernel %s\n(.*?)\.end_amdhsa_kernel" %
                     re.escape(kernel), text, re.S)
    if not desc:
        fail("no .amdhsa_kernel block for %s" % kernel)
    pm = re.search(r"\.amdhsa_private_segment_fixed_size (\d+)", desc.group(1))
    if not pm or int(pm.group(1)) != 0:
        fail("the kernel uses scratch")
    print("check_isa: OK: %s: %d scaled MFMA, %d FP4->bf16 cvt (V), %d bf16 "
          "MFMA per 32-token iteration of each of %d key loops" %
          (kernel, len(scaled), len(cvt), len(pv), len(key_loops)))


main()
