//===- ExecMfma.cpp - MFMA semantics ----------------------------------------===//
//
// Matrix fused multiply-add: the plain single-block MFMAs and the gfx950
// f8f6f4 (optionally scaled) ones, with operand and output lane layouts from
// gfx950-notes.md (see docs/emulator.md, "Semantics"). Products and sums are
// accumulated in f64 and rounded once to f32.
//
//===----------------------------------------------------------------------===//

#include "ExecCommon.h"

#include <vector>

using namespace uq::emu::detail;
using llvm::StringRef;

namespace {
//===----------------------------------------------------------------------===//
// MFMA
//===----------------------------------------------------------------------===//

/// Operand format of a plain MFMA source.
enum MF { MF_BF16, MF_F16, MF_FP8, MF_BF8, MF_F32 };

unsigned elemBits(MF f) {
  return f == MF_F32 ? 32 : (f == MF_FP8 || f == MF_BF8) ? 8 : 16;
}
double elemDecode(MF f, uint32_t bits) {
  switch (f) {
  case MF_BF16:
    return bf16ToF32((uint16_t)bits);
  case MF_F16:
    return f16ToF32((uint16_t)bits);
  case MF_FP8:
    return smallDecode(SmallFmt::FP8, bits);
  case MF_BF8:
    return smallDecode(SmallFmt::BF8, bits);
  default:
    return u2f(bits);
  }
}

/// Reads element `k` (within the lane) of a packed MFMA operand.
inline uint32_t laneElem(Exec &X, Wave &W, const Operand &op, unsigned lane,
                         unsigned k, unsigned bits) {
  unsigned bit = k * bits;
  uint32_t dw = src(X, W, op, bit / 32)[lane];
  return bits == 32 ? dw : (dw >> (bit % 32)) & ((1u << bits) - 1);
}

/// Output register index and lane of D[m][n] for an MxN (16 or 32) MFMA.
inline void outPos(unsigned M, unsigned m, unsigned n, unsigned &reg,
                   unsigned &lane) {
  if (M == 16) {
    reg = m % 4;
    lane = n + 16 * (m / 4);
  } else {
    // 32x32: VGPR i of lane l holds D[8*(i/4) + 4*(l/32) + i%4][l%32].
    reg = 4 * (m / 8) + m % 4;
    lane = n + 32 * ((m / 4) % 2);
  }
}

void storeAcc(Exec &X, Wave &W, const Inst &I, unsigned M,
              const std::vector<double> &acc) {
  // C is ops[3]; D is ops[0]. Read all of C before writing D.
  const Operand &C = I.ops[3], &D = I.ops[0];
  std::vector<float> out(M * M);
  for (unsigned m = 0; m < M; ++m)
    for (unsigned n = 0; n < M; ++n) {
      unsigned reg, lane;
      outPos(M, m, n, reg, lane);
      float c = C.kind == OpKind::Imm ? u2f(C.imm[0])
                                      : u2f(src(X, W, C, reg)[lane]);
      out[m * M + n] = (float)((double)c + acc[m * M + n]);
    }
  for (unsigned m = 0; m < M; ++m)
    for (unsigned n = 0; n < M; ++n) {
      unsigned reg, lane;
      outPos(M, m, n, reg, lane);
      vdst(X, W, D, reg)[lane] = f2u(out[m * M + n]);
    }
}

/// Plain MFMA, single block: M = N in {16, 32}; lane l (r = l % M,
/// g = l / M) holds A[r][kpl*g .. kpl*g+kpl-1] and B[same k][r].
void mfmaPlain(Exec &X, Wave &W, const Inst &I) {
  unsigned M = I.aux & 0xff, K = (I.aux >> 8) & 0xfff;
  MF fa = (MF)(I.aux2 & 0xf), fb = (MF)((I.aux2 >> 4) & 0xf);
  if (I.cbsz || I.abid || I.blgp)
    return X.fail(I, "MFMA broadcast controls (cbsz/abid/blgp) unsupported");
  unsigned groups = 64 / M, kpl = K / groups;
  std::vector<double> A(M * K), B(K * M), acc(M * M, 0.0);
  const Operand &oa = I.ops[1], &ob = I.ops[2];
  for (unsigned l = 0; l < 64; ++l) {
    unsigned r = l % M, g = l / M;
    for (unsigned i = 0; i < kpl; ++i) {
      unsigned k = kpl * g + i;
      A[r * K + k] = elemDecode(fa, laneElem(X, W, oa, l, i, elemBits(fa)));
      B[k * M + r] = elemDecode(fb, laneElem(X, W, ob, l, i, elemBits(fb)));
    }
  }
  for (unsigned m = 0; m < M; ++m)
    for (unsigned n = 0; n < M; ++n) {
      double s = 0;
      for (unsigned k = 0; k < K; ++k)
        s += A[m * K + k] * B[k * M + n];
      acc[m * M + n] = s;
    }
  storeAcc(X, W, I, M, acc);
}

/// Logical K index of element i (0..31) held by lane group g for the
/// f8f6f4 MFMAs (gfx950-notes.md).
inline unsigned f8f6f4K(unsigned M, SmallFmt f, unsigned g, unsigned i) {
  bool is8 = f == SmallFmt::FP8 || f == SmallFmt::BF8;
  if (!is8)
    return 32 * g + i;
  unsigned half = M == 16 ? 64 : 32;
  return i < 16 ? 16 * g + i : half + 16 * g + (i - 16);
}

/// v_mfma[_scale]_f32_{16x16x128,32x32x64}_f8f6f4.
void mfmaF8F6F4(Exec &X, Wave &W, const Inst &I) {
  unsigned M = I.aux;
  bool scaled = I.aux2;
  unsigned K = M == 16 ? 128 : 64, KB = K / 32, groups = 64 / M;
  if (I.cbsz > 4 || I.blgp > 4)
    return X.fail(I, "bad f8f6f4 format (cbsz/blgp > 4)");
  SmallFmt fa = (SmallFmt)I.cbsz, fb = (SmallFmt)I.blgp;
  unsigned ba = fmtDesc(fa).bits, bb = fmtDesc(fb).bits;
  std::vector<double> A(M * K), B(K * M), sa(M * KB, 1.0), sb(M * KB, 1.0);
  const Operand &oa = I.ops[1], &ob = I.ops[2];
  for (unsigned l = 0; l < 64; ++l) {
    unsigned r = l % M, g = l / M;
    for (unsigned i = 0; i < 32; ++i) {
      A[r * K + f8f6f4K(M, fa, g, i)] =
          smallDecode(fa, laneElem(X, W, oa, l, i, ba));
      B[f8f6f4K(M, fb, g, i) * M + r] =
          smallDecode(fb, laneElem(X, W, ob, l, i, bb));
    }
  }
  (void)groups;
  if (scaled) {
    unsigned selA = (I.opSel & 1) | ((I.opSelHi & 1) << 1);
    unsigned selB = ((I.opSel >> 1) & 1) | (((I.opSelHi >> 1) & 1) << 1);
    Src sA = src(X, W, I.ops[4]), sB = src(X, W, I.ops[5]);
    for (unsigned r = 0; r < M; ++r)
      for (unsigned j = 0; j < KB; ++j) {
        sa[r * KB + j] = e8m0(sA[r + M * j] >> (8 * selA));
        sb[r * KB + j] = e8m0(sB[r + M * j] >> (8 * selB));
      }
  }
  std::vector<double> acc(M * M);
  for (unsigned m = 0; m < M; ++m)
    for (unsigned n = 0; n < M; ++n) {
      double total = 0;
      for (unsigned j = 0; j < KB; ++j) {
        double s = 0;
        for (unsigned k = 32 * j; k < 32 * j + 32; ++k)
          s += A[m * K + k] * B[k * M + n];
        total += s * sa[m * KB + j] * sb[n * KB + j];
      }
      acc[m * M + n] = total;
    }
  storeAcc(X, W, I, M, acc);
}

} // namespace

void uq::emu::detail::registerMfmaOps(OpRegistry &R) {
  REGISTRY_HELPERS(R);
  // MFMA.
  {
    struct { const char *n; int M, K, fa, fb; } plain[] = {
        {"v_mfma_f32_16x16x32_bf16", 16, 32, MF_BF16, MF_BF16},
        {"v_mfma_f32_16x16x32_f16", 16, 32, MF_F16, MF_F16},
        {"v_mfma_f32_32x32x16_bf16", 32, 16, MF_BF16, MF_BF16},
        {"v_mfma_f32_32x32x16_f16", 32, 16, MF_F16, MF_F16},
        {"v_mfma_f32_16x16x16_bf16", 16, 16, MF_BF16, MF_BF16},
        {"v_mfma_f32_16x16x16_f16", 16, 16, MF_F16, MF_F16},
        {"v_mfma_f32_32x32x8_bf16", 32, 8, MF_BF16, MF_BF16},
        {"v_mfma_f32_32x32x8_f16", 32, 8, MF_F16, MF_F16},
        {"v_mfma_f32_16x16x32_fp8_fp8", 16, 32, MF_FP8, MF_FP8},
        {"v_mfma_f32_16x16x32_fp8_bf8", 16, 32, MF_FP8, MF_BF8},
        {"v_mfma_f32_16x16x32_bf8_fp8", 16, 32, MF_BF8, MF_FP8},
        {"v_mfma_f32_16x16x32_bf8_bf8", 16, 32, MF_BF8, MF_BF8},
        {"v_mfma_f32_32x32x16_fp8_fp8", 32, 16, MF_FP8, MF_FP8},
        {"v_mfma_f32_32x32x16_fp8_bf8", 32, 16, MF_FP8, MF_BF8},
        {"v_mfma_f32_32x32x16_bf8_fp8", 32, 16, MF_BF8, MF_FP8},
        {"v_mfma_f32_32x32x16_bf8_bf8", 32, 16, MF_BF8, MF_BF8},
        {"v_mfma_f32_16x16x4_f32", 16, 4, MF_F32, MF_F32},
        {"v_mfma_f32_32x32x2_f32", 32, 2, MF_F32, MF_F32},
    };
    for (auto &p : plain)
      add(p.n, mfmaPlain, Cls::MFMA, FT::F32, p.M | (p.K << 8),
          p.fa | (p.fb << 4), 1);
    add("v_mfma_scale_f32_16x16x128_f8f6f4", mfmaF8F6F4, Cls::MFMA, FT::F32,
        16, 1, 1);
    add("v_mfma_scale_f32_32x32x64_f8f6f4", mfmaF8F6F4, Cls::MFMA, FT::F32,
        32, 1, 1);
    add("v_mfma_f32_16x16x128_f8f6f4", mfmaF8F6F4, Cls::MFMA, FT::F32, 16,
        0, 1);
    add("v_mfma_f32_32x32x64_f8f6f4", mfmaF8F6F4, Cls::MFMA, FT::F32, 32, 0,
        1);
  }
}
