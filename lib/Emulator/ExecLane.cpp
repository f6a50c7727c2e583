//===- ExecLane.cpp - Cross-lane operations ---------------------------------===//
//
// Moves between lanes: v_readfirstlane/readlane/writelane, the gfx950
// v_permlane{16,32}_swap_b32, and the DPP and SDWA operand wrappers that
// pre-process sources before the real handler (Inst::inner) runs.
//
//===----------------------------------------------------------------------===//

#include "ExecCommon.h"

using namespace uq::emu::detail;
using llvm::StringRef;

namespace {
/// v_permlane16_swap_b32 vdst, vsrc: odd rows (16 lanes) of vdst are swapped
/// with even rows of vsrc: vdst[l+16] <-> vsrc[l] for l in rows 0 and 2.
/// v_permlane32_swap_b32: vdst[l+32] <-> vsrc[l] for l = 0..31. Both
/// registers are written. A lane is written only if it is active; if its
/// partner lane is inactive and fi is 0, it reads 0 with bound_ctrl, else it
/// is not written (**uncertain**, from the amdgpu.permlane_swap description).
template <unsigned Half> static void permlaneSwap(Exec &X, Wave &W, const Inst &I) {
  const Operand &od = I.ops[0], &os = I.ops[1];
  if (od.kind != OpKind::VReg || os.kind != OpKind::VReg) {
    X.fail(I, "v_permlane*_swap needs VGPR operands");
    return;
  }
  uint32_t *d = vdst(X, W, od), *s = vdst(X, W, os);
  uint32_t oldD[64], oldS[64];
  std::memcpy(oldD, d, sizeof oldD);
  std::memcpy(oldS, s, sizeof oldS);
  uint64_t exec = W.exec();
  auto active = [&](unsigned l) { return (exec >> l) & 1; };
  for (unsigned l = 0; l < 64; ++l) {
    // Lanes of vsrc that give away their value: rows 0, 2 (16) / lanes 0..31.
    bool low = Half == 16 ? ((l >> 4) & 1) == 0 : l < 32;
    if (!low)
      continue;
    unsigned a = l + Half; // vdst lane receiving vsrc[l]
    if (active(a)) {
      if (active(l) || I.fi)
        d[a] = oldS[l];
      else if (I.boundCtrl)
        d[a] = 0;
    }
    if (active(l)) {
      if (active(a) || I.fi)
        s[l] = oldD[a];
      else if (I.boundCtrl)
        s[l] = 0;
    }
  }
}
H(v_readfirstlane_b32) {
  Src a = src(X, W, I, 0);
  uint64_t e = W.exec();
  unsigned l = e ? __builtin_ctzll(e) : 0;
  setS(W, I.ops[0], a[l]);
}
H(v_readlane_b32) {
  Src a = src(X, W, I, 0);
  unsigned l = sval(X, W, I.ops[I.src0Idx + 1]) & 63;
  setS(W, I.ops[0], a[l]);
}
H(v_writelane_b32) {
  DST0;
  uint32_t v = sval(X, W, I.ops[I.src0Idx]);
  unsigned l = sval(X, W, I.ops[I.src0Idx + 1]) & 63;
  d[l] = v;
}
//===----------------------------------------------------------------------===//
// DPP / SDWA wrappers
//===----------------------------------------------------------------------===//

void dppExec(Exec &X, Wave &W, const Inst &I) {
  const Operand &s0 = I.orig[0];
  unsigned nd = s0.width > 1 ? 2 : 1;
  Src in[2] = {src(X, W, s0, 0), src(X, W, s0, nd > 1 ? 1 : 0)};
  uint64_t exec = W.exec(), valid = 0;
  for (unsigned l = 0; l < 64; ++l) {
    int sl = -1;
    unsigned row = l & ~15u, i = l & 15;
    switch (I.dppKind) {
    case 1:
      sl = (l & ~3u) + I.quadPerm[l & 3];
      break;
    case 2:
      sl = i + I.dppArg < 16 ? (int)(l + I.dppArg) : -1;
      break;
    case 3:
      sl = i >= I.dppArg ? (int)(l - I.dppArg) : -1;
      break;
    case 4:
      sl = row + ((i - I.dppArg) & 15);
      break;
    case 5:
      sl = l < 63 ? (int)l + 1 : -1;
      break;
    case 6:
      sl = (l + 1) & 63;
      break;
    case 7:
      sl = l > 0 ? (int)l - 1 : -1;
      break;
    case 8:
      sl = (l - 1) & 63;
      break;
    case 9:
      sl = row + 15 - i;
      break;
    case 10:
      sl = (l & ~7u) + 7 - (l & 7);
      break;
    case 11: // row_bcast:15
      sl = row ? (int)row - 1 : -1;
      break;
    case 12: // row_bcast:31
      sl = l >= 32 ? 31 : -1;
      break;
    case 13: // row_newbcast:n (gfx90a+): lane n of the lane's own row
      sl = row + (I.dppArg & 15);
      break;
    default:
      sl = l;
    }
    bool rowOn = (I.rowMask >> (l / 16)) & 1;
    bool bankOn = (I.bankMask >> ((l / 4) & 3)) & 1;
    if (!rowOn || !bankOn)
      continue;
    // An invalid or disabled source lane reads 0 with bound_ctrl, else the
    // lane is not written.
    if (sl < 0 || !((exec >> sl) & 1)) {
      if (!I.boundCtrl)
        continue;
      for (unsigned k = 0; k < nd; ++k)
        X.tmp[k][l] = 0;
    } else {
      for (unsigned k = 0; k < nd; ++k)
        X.tmp[k][l] = in[k][sl];
    }
    valid |= 1ull << l;
  }
  W.setExec(exec & valid);
  I.inner(X, W, I);
  W.setExec(exec);
}

uint32_t sdwaSel(uint32_t v, uint8_t sel, bool sx) {
  switch (sel) {
  case 0: case 1: case 2: case 3: {
    uint32_t b = (v >> (8 * sel)) & 0xff;
    return sx ? (uint32_t)(int32_t)(int8_t)b : b;
  }
  case 4: case 5: {
    uint32_t h = (v >> (16 * (sel - 4))) & 0xffff;
    return sx ? (uint32_t)(int32_t)(int16_t)h : h;
  }
  default:
    return v;
  }
}
void sdwaExec(Exec &X, Wave &W, const Inst &I) {
  Src a = src(X, W, I.orig[0]);
  Src b = src(X, W, I.orig[1]);
  bool two = I.ops[I.src0Idx + 1].kind == OpKind::Tmp;
  forLanes(W.exec(), [&](unsigned l) {
    X.tmp[0][l] = sdwaSel(a[l], I.src0Sel, I.src0Sext);
    if (two)
      X.tmp[1][l] = sdwaSel(b[l], I.src1Sel, I.src1Sext);
  });
  bool dstV = I.orig[2].kind == OpKind::VReg;
  I.inner(X, W, I);
  if (!dstV)
    return;
  uint32_t *d = vdst(X, W, I.orig[2]);
  forLanes(W.exec(), [&](unsigned l) {
    uint32_t r = X.tmp[2][l], old = d[l], out;
    unsigned sel = I.dstSel;
    if (sel == 6) {
      out = r;
    } else {
      unsigned sh = sel < 4 ? 8 * sel : 16 * (sel - 4);
      uint32_t m = (sel < 4 ? 0xffu : 0xffffu) << sh;
      uint32_t v = (r << sh) & m;
      if (I.dstUnused == 2)
        out = (old & ~m) | v;
      else if (I.dstUnused == 1) {
        unsigned bits = sel < 4 ? 8 : 16;
        int32_t sx = sext(r & ((1u << bits) - 1), bits);
        uint32_t hiFill = sx < 0 ? ~0u << (sh + bits) : 0;
        if (sh + bits >= 32)
          hiFill = 0;
        out = v | hiFill;
      } else
        out = v;
    }
    d[l] = out;
  });
}
} // namespace

ExecFn uq::emu::detail::dppWrapper() { return dppExec; }
ExecFn uq::emu::detail::sdwaWrapper() { return sdwaExec; }

void uq::emu::detail::registerLaneOps(OpRegistry &R) {
  REGISTRY_HELPERS(R);
  V("v_permlane16_swap_b32", permlaneSwap<16>);
  V("v_permlane32_swap_b32", permlaneSwap<32>);
  VR(v_readfirstlane_b32);
  VR(v_readlane_b32);
  VR(v_writelane_b32);
}
