//===- ExecLds.cpp - LDS (DS) instructions ----------------------------------===//
//
// LDS reads and writes (incl. read2/write2 and atomics) with bounds checks
// against the workgroup's LDS, and the DS-encoded lane permutes
// (ds_bpermute_b32, ds_permute_b32, ds_swizzle_b32).
//
//===----------------------------------------------------------------------===//

#include "ExecCommon.h"

using namespace uq::emu::detail;
using llvm::StringRef;

namespace {
// LDS. ds_read: vdst, vaddr; ds_write: vaddr, vdata[, vdata1].
inline uint8_t *ldsPtr(Exec &X, const Inst &I, unsigned l, uint64_t a,
                       unsigned n) {
  if (a > X.lds.size() || n > X.lds.size() - a) {
    X.failLane(I, l, a, n, "LDS access");
    return nullptr;
  }
  return X.lds.data() + a;
}
// aux = bytes; aux2: 0 zext, 1 sext, 2 d16 lo, 3 d16 hi.
H(ds_read) {
  const Operand &dst = I.ops[0];
  Src va = src(X, W, I.ops[1]);
  unsigned bytes = I.aux;
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t a = (uint64_t)va[l] + (uint32_t)I.offset;
    if (X.tracing)
      X.noteMem(MemSpace::LDS, false, bytes, a);
    uint8_t *p = ldsPtr(X, I, l, a, bytes);
    if (!p)
      return;
    loadToLane(X, W, I, dst, l, p, bytes);
  }
  X.stats->ldsBytesRead += (uint64_t)bytes * __builtin_popcountll(W.exec());
}
H(ds_write) {
  Src va = src(X, W, I.ops[0]);
  const Operand &data = I.ops[1];
  unsigned bytes = I.aux;
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t a = (uint64_t)va[l] + (uint32_t)I.offset;
    if (X.tracing)
      X.noteMem(MemSpace::LDS, true, bytes, a);
    uint8_t *p = ldsPtr(X, I, l, a, bytes);
    if (!p)
      return;
    storeFromLane(X, W, I, data, l, p, bytes);
  }
  X.stats->ldsBytesWritten += (uint64_t)bytes * __builtin_popcountll(W.exec());
}
// ds_read2_b32/b64 (aux = element bytes, aux2 = stride multiplier 1 or 64).
H(ds_read2) {
  const Operand &dst = I.ops[0];
  Src va = src(X, W, I.ops[1]);
  unsigned eb = I.aux, nd = eb / 4, mul = I.aux2 * eb;
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    for (unsigned k = 0; k < 2; ++k) {
      uint64_t a = (uint64_t)va[l] + (uint64_t)(k ? I.offset1 : I.offset0) * mul;
      if (X.tracing)
        X.noteMem(MemSpace::LDS, false, eb, a);
      uint8_t *p = ldsPtr(X, I, l, a, eb);
      if (!p)
        return;
      for (unsigned i = 0; i < nd; ++i) {
        uint32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        vdst(X, W, dst, k * nd + i)[l] = v;
      }
    }
  }
  X.stats->ldsBytesRead += 2ull * eb * __builtin_popcountll(W.exec());
}
H(ds_write2) {
  Src va = src(X, W, I.ops[0]);
  unsigned eb = I.aux, nd = eb / 4, mul = I.aux2 * eb;
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    for (unsigned k = 0; k < 2; ++k) {
      uint64_t a = (uint64_t)va[l] + (uint64_t)(k ? I.offset1 : I.offset0) * mul;
      if (X.tracing)
        X.noteMem(MemSpace::LDS, true, eb, a);
      uint8_t *p = ldsPtr(X, I, l, a, eb);
      if (!p)
        return;
      for (unsigned i = 0; i < nd; ++i) {
        uint32_t v = src(X, W, I.ops[1 + k], i)[l];
        std::memcpy(p + 4 * i, &v, 4);
      }
    }
  }
  X.stats->ldsBytesWritten += 2ull * eb * __builtin_popcountll(W.exec());
}
/// ds_add_u32 etc: [vdst,] vaddr, vdata.
H(ds_atomic) {
  bool ret = I.aux2;
  unsigned vi = ret ? 1 : 0;
  Src va = src(X, W, I.ops[vi]), vd = src(X, W, I.ops[vi + 1]);
  uint32_t *d = ret ? vdst(X, W, I.ops[0]) : X.tmp[3];
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t a = (uint64_t)va[l] + (uint32_t)I.offset;
    if (X.tracing)
      X.noteMem(MemSpace::LDS, true, 4, a);
    uint8_t *p = ldsPtr(X, I, l, a, 4);
    if (!p)
      return;
    uint32_t old, v = vd[l], r;
    std::memcpy(&old, p, 4);
    switch (I.aux) {
    case 0: r = old + v; break;
    case 1: r = old - v; break;
    case 2: r = std::max(old, v); break;
    case 3: r = std::min(old, v); break;
    case 4: r = (uint32_t)std::max((int32_t)old, (int32_t)v); break;
    case 5: r = (uint32_t)std::min((int32_t)old, (int32_t)v); break;
    case 6: r = f2u(u2f(old) + u2f(v)); break;
    case 7: r = f2u(std::fmax(u2f(old), u2f(v))); break;
    default: r = v; break; // wrxchg
    }
    std::memcpy(p, &r, 4);
    d[l] = old;
  }
}
/// ds_bpermute_b32 vdst, vaddr, vdata: dst[l] = data[(addr[l]+off)/4 % 64];
/// ds_permute_b32: dst[(addr[l]+off)/4 % 64] = data[l].
H(ds_bpermute_b32) {
  uint32_t *d = vdst(X, W, I.ops[0]);
  Src va = src(X, W, I.ops[1]), vd = src(X, W, I.ops[2]);
  uint32_t in[64], out[64];
  for (unsigned l = 0; l < 64; ++l)
    in[l] = vd[l];
  forLanes(W.exec(), [&](unsigned l) {
    out[l] = in[((va[l] + (uint32_t)I.offset) >> 2) & 63];
  });
  forLanes(W.exec(), [&](unsigned l) { d[l] = out[l]; });
}
H(ds_permute_b32) {
  uint32_t *d = vdst(X, W, I.ops[0]);
  Src va = src(X, W, I.ops[1]), vd = src(X, W, I.ops[2]);
  uint32_t out[64] = {0};
  forLanes(W.exec(), [&](unsigned l) {
    out[((va[l] + (uint32_t)I.offset) >> 2) & 63] = vd[l];
  });
  forLanes(W.exec(), [&](unsigned l) { d[l] = out[l]; });
}
/// ds_read_b64_tr_b{16,8,4} vdst[2], vaddr [offset:] (gfx950), aux = element
/// bits: each lane reads 64 bits at its address; within each group of 16
/// lanes, with n = 64 / bits elements per lane, lane i's result element e is
/// element i % n of what lane i / n + (16 / n) * e of the group read. That is
/// the 16 x n tile transposed: lane j reading n consecutive N of row j/(16/n)
/// leaves lane i with column i, the rows in order. Source: Triton's AMD
/// backend (chooseLLDsReadB64TrLayout in LinearLayoutConversions.cpp), see
/// docs/emulator.md "Transposing LDS reads". CDNA4 ISA 11.4 requires EXEC
/// all ones and an address aligned to the 8 bytes read; both are checked.
H(ds_read_tr) {
  if (W.exec() != ~0ull)
    return X.fail(I, llvm::formatv("{0} needs EXEC all ones (CDNA4 ISA 11.4; "
                                   "EXEC {1:x})",
                                   I.name, W.exec())
                         .str());
  Src va = src(X, W, I.ops[1]);
  const unsigned bits = I.aux, n = 64 / bits;
  const uint64_t mask = (1ull << bits) - 1;
  uint64_t in[64];
  for (unsigned l = 0; l < 64; ++l) {
    uint64_t a = (uint64_t)va[l] + (uint32_t)I.offset;
    if (a & 7)
      return X.fail(I, llvm::formatv("misaligned LDS address {0:x} (lane {1}; "
                                     "transposing reads need 8-byte "
                                     "alignment)",
                                     a, l)
                           .str());
    if (X.tracing)
      X.noteMem(MemSpace::LDS, false, 8, a);
    uint8_t *p = ldsPtr(X, I, l, a, 8);
    if (!p)
      return;
    std::memcpy(&in[l], p, 8);
  }
  uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);
  for (unsigned l = 0; l < 64; ++l) {
    unsigned group = l & ~15u, i = l & 15;
    uint64_t r = 0;
    for (unsigned e = 0; e < n; ++e) {
      unsigned j = group + i / n + (16 / n) * e;
      r |= ((in[j] >> (bits * (i % n))) & mask) << (bits * e);
    }
    d0[l] = (uint32_t)r;
    d1[l] = (uint32_t)(r >> 32);
  }
  X.stats->ldsBytesRead += 64 * 8;
}
/// ds_swizzle_b32 (offset:swizzle(...) pattern in the raw offset field).
H(ds_swizzle_b32) {
  uint32_t *d = vdst(X, W, I.ops[0]);
  Src vd = src(X, W, I.ops[1]);
  uint32_t pat = I.rawOffset & 0xffff, in[64], out[64];
  for (unsigned l = 0; l < 64; ++l)
    in[l] = vd[l];
  forLanes(W.exec(), [&](unsigned l) {
    unsigned srcLane;
    if (pat & 0x8000) { // quad permute
      unsigned q = l & ~3u, i = l & 3;
      srcLane = q + ((pat >> (2 * i)) & 3);
    } else { // bitmask mode within 32 lanes
      unsigned andM = pat & 31, orM = (pat >> 5) & 31, xorM = (pat >> 10) & 31;
      srcLane = (l & 32) | ((((l & 31) & andM) | orM) ^ xorM);
    }
    out[l] = in[srcLane];
  });
  forLanes(W.exec(), [&](unsigned l) { d[l] = out[l]; });
}

/// LDS DMA-free "m0" ops etc are not implemented.

} // namespace

void uq::emu::detail::registerLdsOps(OpRegistry &R) {
  REGISTRY_HELPERS(R);
  // LDS.
  static const struct { const char *n; int bytes, mode; } dsr[] = {
      {"ds_read_u8", 1, 0}, {"ds_read_i8", 1, 1}, {"ds_read_u16", 2, 0},
      {"ds_read_i16", 2, 1}, {"ds_read_b32", 4, 0}, {"ds_read_b64", 8, 0},
      {"ds_read_b96", 12, 0}, {"ds_read_b128", 16, 0},
      {"ds_read_u8_d16", 1, 2}, {"ds_read_u8_d16_hi", 1, 3},
      {"ds_read_u16_d16", 2, 2}, {"ds_read_u16_d16_hi", 2, 3}};
  for (const auto &x : dsr)
    add(x.n, ds_read, Cls::LDS, FT::None, x.bytes, x.mode, 1);
  static const struct { const char *n; int bytes, hi; } dsw[] = {
      {"ds_write_b8", 1, 0}, {"ds_write_b16", 2, 0}, {"ds_write_b32", 4, 0},
      {"ds_write_b64", 8, 0}, {"ds_write_b96", 12, 0},
      {"ds_write_b128", 16, 0}, {"ds_write_b8_d16_hi", 1, 3},
      {"ds_write_b16_d16_hi", 2, 3}};
  for (const auto &x : dsw)
    add(x.n, ds_write, Cls::LDS, FT::None, x.bytes, x.hi, 0);
  add("ds_read2_b32", ds_read2, Cls::LDS, FT::None, 4, 1, 1);
  add("ds_read2_b64", ds_read2, Cls::LDS, FT::None, 8, 1, 1);
  add("ds_read2st64_b32", ds_read2, Cls::LDS, FT::None, 4, 64, 1);
  add("ds_read2st64_b64", ds_read2, Cls::LDS, FT::None, 8, 64, 1);
  add("ds_write2_b32", ds_write2, Cls::LDS, FT::None, 4, 1, 0);
  add("ds_write2_b64", ds_write2, Cls::LDS, FT::None, 8, 1, 0);
  add("ds_write2st64_b32", ds_write2, Cls::LDS, FT::None, 4, 64, 0);
  add("ds_write2st64_b64", ds_write2, Cls::LDS, FT::None, 8, 64, 0);
  static const char *dsa[] = {"add_u32", "sub_u32", "max_u32", "min_u32",
                              "max_i32", "min_i32", "add_f32", "max_f32",
                              "wrxchg_rtn_b32"};
  for (int i = 0; i < 9; ++i) {
    std::string n = dsa[i];
    if (i < 8) {
      add("ds_" + n, ds_atomic, Cls::LDS, FT::None, i, 0, 0);
      std::string r = n;
      r.insert(r.find('_'), "_rtn");
      add("ds_" + r, ds_atomic, Cls::LDS, FT::None, i, 1, 1);
    } else
      add("ds_" + n, ds_atomic, Cls::LDS, FT::None, 8, 1, 1);
  }
  add("ds_bpermute_b32", ds_bpermute_b32, Cls::LDS);
  add("ds_permute_b32", ds_permute_b32, Cls::LDS);
  add("ds_swizzle_b32", ds_swizzle_b32, Cls::LDS);
  add("ds_read_b64_tr_b16", ds_read_tr, Cls::LDS, FT::None, 16, 0, 1);
  add("ds_read_b64_tr_b8", ds_read_tr, Cls::LDS, FT::None, 8, 0, 1);
  add("ds_read_b64_tr_b4", ds_read_tr, Cls::LDS, FT::None, 4, 0, 1);
}
