//===- ExecMemory.cpp - Global, flat, buffer and scratch memory -------------===//
//
// Vector memory: global/flat loads, stores and atomics, MUBUF buffer loads
// and stores (with out-of-range records reading 0), and architected flat
// scratch. Every access goes through Exec::translate, which reports
// out-of-bounds addresses with their lane.
//
//===----------------------------------------------------------------------===//

#include "ExecCommon.h"

using namespace uq::emu::detail;
using llvm::StringRef;

namespace {
/// Global/flat address of lane l: vaddr is ops[ai]; saddr ops[ai+k].
struct Addr {
  Src lo, hi, sv;
  bool hasS;
  uint64_t sbase;
  int64_t off;
  uint64_t operator()(unsigned l) const {
    if (hasS)
      return sbase + lo[l] + off;
    return ((uint64_t)lo[l] | ((uint64_t)hi[l] << 32)) + off;
  }
};
inline Addr addrOf(Exec &X, Wave &W, const Inst &I, unsigned vi,
                   unsigned si) {
  Addr a;
  const Operand &v = I.ops[vi];
  const Operand &s = I.ops[si];
  a.hasS = si < I.nOps && s.kind == OpKind::SReg;
  a.sbase = a.hasS ? sval64(X, W, s) : 0;
  a.lo = src(X, W, v, 0);
  a.hi = v.width > 1 ? src(X, W, v, 1) : Src{kZero, 0};
  a.off = I.offset;
  if (v.kind == OpKind::Off) {
    a.lo = {kZero, 0};
    a.hi = {kZero, 0};
  }
  return a;
}

// aux = bytes; aux2: 0 zero-ext, 1 sign-ext, 2 d16 lo, 3 d16 hi.
H(global_load) {
  const Operand &dst = I.ops[0];
  Addr ad = addrOf(X, W, I, 1, 2);
  unsigned bytes = I.aux, mode = I.aux2;
  unsigned n = (bytes + 3) / 4;
  uint32_t *d[4];
  for (unsigned i = 0; i < n; ++i)
    d[i] = vdst(X, W, dst, i);
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t a = ad(l);
    if (X.tracing)
      X.noteMem(MemSpace::Global, false, bytes, a);
    const uint8_t *p = X.translate(a, bytes, false);
    if (!p)
      return X.failLane(I, l, a, bytes, "global load");
    if (bytes >= 4) {
      std::memcpy(X.tmp[3], p, bytes);
      for (unsigned i = 0; i < n; ++i)
        d[i][l] = X.tmp[3][i];
    } else {
      uint32_t v = bytes == 1 ? p[0] : (uint32_t)p[0] | ((uint32_t)p[1] << 8);
      if (mode == 1)
        v = (uint32_t)sext(v, 8 * bytes);
      else if (mode == 2)
        v = (d[0][l] & 0xffff0000u) |
            (I.name.find("sbyte") != std::string::npos ? (uint16_t)(int8_t)v : v);
      else if (mode == 3)
        v = (d[0][l] & 0xffffu) |
            ((I.name.find("sbyte") != std::string::npos ? (uint32_t)(uint16_t)(int8_t)v : v) << 16);
      d[0][l] = v;
    }
  }
  X.stats->globalBytesRead += (uint64_t)bytes * __builtin_popcountll(W.exec());
}
// aux = bytes; aux2 = 1: store the high 16 bits (d16_hi).
H(global_store) {
  Addr ad = addrOf(X, W, I, 0, 2);
  const Operand &data = I.ops[1];
  unsigned bytes = I.aux, n = (bytes + 3) / 4;
  Src s[4];
  for (unsigned i = 0; i < n; ++i)
    s[i] = src(X, W, data, i);
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t a = ad(l);
    if (X.tracing)
      X.noteMem(MemSpace::Global, true, bytes, a);
    uint8_t *p = X.translate(a, bytes, true);
    if (!p)
      return X.failLane(I, l, a, bytes, "global store");
    uint32_t buf[4];
    for (unsigned i = 0; i < n; ++i)
      buf[i] = s[i][l];
    if (I.aux2)
      buf[0] >>= 16;
    std::memcpy(p, buf, bytes);
  }
  X.stats->globalBytesWritten +=
      (uint64_t)bytes * __builtin_popcountll(W.exec());
}
/// Global atomics (32-bit): [vdst,] vaddr, vdata, saddr|off.
H(global_atomic) {
  bool ret = I.glc;
  unsigned vi = ret ? 1 : 0;
  Addr ad = addrOf(X, W, I, vi, vi + 2);
  const Operand &data = I.ops[vi + 1];
  Src s0 = src(X, W, data, 0), s1 = src(X, W, data, 1);
  uint32_t *d = ret ? vdst(X, W, I.ops[0]) : X.tmp[3];
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t a = ad(l);
    if (X.tracing)
      X.noteMem(MemSpace::Global, true, 4, a);
    uint8_t *p = X.translate(a, 4, true);
    if (!p)
      return X.failLane(I, l, a, 4, "global atomic");
    uint32_t old, v = s0[l], r;
    std::memcpy(&old, p, 4);
    switch (I.aux) {
    case 0: r = old + v; break;
    case 1: r = old - v; break;
    case 2: r = v; break;
    case 3: r = old == s1[l] ? v : old; break; // cmpswap: data = {src, cmp}
    case 4: r = (uint32_t)std::max((int32_t)old, (int32_t)v); break;
    case 5: r = std::max(old, v); break;
    case 6: r = (uint32_t)std::min((int32_t)old, (int32_t)v); break;
    case 7: r = std::min(old, v); break;
    case 8: r = old & v; break;
    case 9: r = old | v; break;
    case 10: r = old ^ v; break;
    case 11: r = f2u(u2f(old) + u2f(v)); break;
    case 12: r = old >= v ? 0 : old + 1; break; // inc
    default: r = (old == 0 || old > v) ? v : old - 1; break; // dec
    }
    std::memcpy(p, &r, 4);
    d[l] = old;
  }
}


/// buffer_load/store_*: vdata, vaddr, srsrc, soffset [offen idxen offset:]
/// [lds]. The descriptor (gfx9 V#, CDNA3/CDNA4 ISA "Buffer Resource"): base
/// = word0 | word1[15:0] << 32, stride = word1[29:16], swizzle_enable =
/// word1[31], num_records = word2, add_tid_enable = word3[23].
///
/// Range checking (CDNA3/CDNA4 ISA, "Buffer Addressing" range checks; the
/// gfx9 rules as modelled by AMD's rocjitsu simulator, ROCm/rocm-systems
/// PR 10928): with idxen and a non-zero stride the buffer is structured and
/// an index >= num_records (or an offset past the stride) is out of range;
/// otherwise (raw: no idxen, whatever the stride field holds) the byte
/// range soffset + offset .. + size is checked against num_records, dword
/// by dword for multi-dword accesses. Out-of-range dwords read 0 and are not
/// written, as hardware does; an in-range access outside every buffer is an
/// error. Swizzled and add_tid buffers are not modelled and are refused.
///
/// `lds` (LDS-DMA, CDNA3/CDNA4 ISA section 9.1.9 "Memory Buffer Load to
/// LDS"): no data register; lane l's bytes go to LDS at
/// M0 + inst_offset + l * size (the guide: LDS_ADDR = LDSbase + LDS_offset
/// (M0) + inst_offset + TIDinWave * 4 for dwords; the wider gfx950 forms
/// use their size per lane), and out-of-range dwords write 0.
template <bool Store> void bufferOp(Exec &X, Wave &W, const Inst &I) {
  const Operand &data = I.ops[0], &va = I.ops[1], &rs = I.ops[2],
                &so = I.ops[3];
  uint32_t w1 = sval(X, W, rs, 1), w3 = sval(X, W, rs, 3);
  uint64_t base = sval64(X, W, rs) & 0xffffffffffffull;
  uint32_t stride = (w1 >> 16) & 0x3fff;
  uint32_t numRecords = sval(X, W, rs, 2);
  if ((w1 >> 31) & 1)
    return X.fail(I, "buffer descriptor with swizzle_enable is not modelled");
  if ((w3 >> 23) & 1)
    return X.fail(I, "buffer descriptor with add_tid_enable is not modelled");
  uint32_t soff = sval(X, W, so);
  unsigned bytes = I.aux, n = (bytes + 3) / 4;
  bool lds = !Store && I.lds;
  bool structured = I.idxen && stride != 0;
  uint32_t m0 = W.s[kM0];
  std::unique_ptr<DmaWrite> dma;
  if (lds) {
    dma = std::make_unique<DmaWrite>();
    dma->bytes = bytes;
  }
  Src vidx = src(X, W, va, 0), voff = src(X, W, va, (I.idxen && I.offen) ? 1 : 0);
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t off = (uint64_t)(I.offen ? voff[l] : 0) + (uint32_t)I.offset;
    uint64_t idx = I.idxen ? vidx[l] : 0;
    uint64_t a = base + soff + off + idx * stride;
    // Which dwords (bit i: dword i) are in range.
    unsigned inRange = 0;
    if (structured) {
      if (!(idx >= numRecords || off + bytes > stride))
        inRange = (1u << n) - 1;
    } else {
      uint64_t at = (uint64_t)soff + off;
      for (unsigned i = 0; i < n; ++i)
        if (at + 4 * i + std::min(4u, bytes - 4 * i) <= numRecords)
          inRange |= 1u << i;
      if (bytes < 4 && !(at + bytes <= numRecords))
        inRange = 0;
    }
    uint32_t buf[4] = {0, 0, 0, 0};
    if (inRange) {
      // The bytes actually transferred: from the first to the last
      // in-range dword (in range dwords are a prefix of the access).
      unsigned got = std::min(bytes, 4u * (unsigned)__builtin_popcount(inRange));
      if (X.tracing)
        X.noteMem(MemSpace::Global, Store, got, a);
      uint8_t *p = X.translate(a, got, Store);
      if (!p)
        return X.failLane(I, l, a, got,
                          Store ? "buffer store" : "buffer load");
      if (Store) {
        uint32_t all[4];
        for (unsigned i = 0; i < n; ++i)
          all[i] = src(X, W, data, i)[l];
        if (I.aux2 == 3)
          all[0] >>= 16;
        std::memcpy(p, all, got);
        X.stats->globalBytesWritten += got;
        continue;
      }
      std::memcpy(buf, p, got);
      X.stats->globalBytesRead += got;
    } else if (Store) {
      continue;
    }
    if (lds) {
      uint64_t la = (uint64_t)m0 + (uint32_t)I.offset + (uint64_t)l * bytes;
      if (la > X.lds.size() || bytes > X.lds.size() - la)
        return X.failLane(I, l, la, bytes, "LDS write of a buffer load to LDS");
      dma->lanes |= 1ull << l;
      dma->addr[l] = (uint32_t)la;
      std::memcpy(dma->data + 16 * l, buf, bytes);
      X.stats->ldsBytesWritten += bytes;
      continue;
    }
    loadToLane(X, W, I, data, l, (const uint8_t *)buf, bytes);
  }
  if (lds) {
    W.vmq.push_back(std::move(dma));
    W.dmaQueued = true;
  }
}
H(buffer_load) { bufferOp<false>(X, W, I); }
H(buffer_store) { bufferOp<true>(X, W, I); }

/// scratch_load/store: per-lane private memory (architected flat scratch):
/// address = vaddr + saddr + offset inside the lane's private segment.
template <bool Store> void scratchOp(Exec &X, Wave &W, const Inst &I) {
  unsigned dataIdx = Store ? 1 : 0, vi = Store ? 0 : 1;
  const Operand &data = I.ops[dataIdx], &va = I.ops[vi], &sa = I.ops[vi + (Store ? 2 : 1)];
  uint32_t sbase = sa.kind == OpKind::SReg ? sval(X, W, sa) : 0;
  Src v = va.kind == OpKind::VReg ? src(X, W, va) : Src{kZero, 0};
  unsigned bytes = I.aux;
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t a = (uint64_t)(uint32_t)(v[l] + sbase + I.offset);
    if (a > X.privateSize || bytes > X.privateSize - a)
      return X.failLane(I, l, a, bytes,
                        Store ? "scratch store" : "scratch load");
    // Scratch is swizzled per dword across the wave's lanes (AMDGPU
    // private segment, element size 4): the address the memory system sees.
    if (X.tracing)
      X.noteMem(MemSpace::Scratch, Store, bytes,
                (a / 4) * 256 + (uint64_t)l * 4 + a % 4);
    uint8_t *p = W.scratch.data() + (uint64_t)l * X.privateSize + a;
    if (Store) {
      storeFromLane(X, W, I, data, l, p, bytes);
    } else {
      loadToLane(X, W, I, data, l, p, bytes);
    }
  }
}
H(scratch_load) { scratchOp<false>(X, W, I); }
H(scratch_store) { scratchOp<true>(X, W, I); }

} // namespace

void uq::emu::detail::retireVm(Exec &X, Wave &W, unsigned keep) {
  bool any = false;
  while (W.vmq.size() > keep) {
    if (W.vmq.front()) {
      X.dmaAtBarrier.push_back(std::move(W.vmq.front()));
      any = true;
    }
    W.vmq.pop_front();
  }
  if (any && X.wavesInGroup == 1)
    X.landDma();
}

void uq::emu::detail::registerMemoryOps(OpRegistry &R) {
  REGISTRY_HELPERS(R);
  // Global/flat/buffer/scratch loads and stores.
  static const struct { const char *n; int bytes, mode; } lds[] = {
      {"ubyte", 1, 0}, {"sbyte", 1, 1}, {"ushort", 2, 0}, {"sshort", 2, 1},
      {"dword", 4, 0}, {"dwordx2", 8, 0}, {"dwordx3", 12, 0},
      {"dwordx4", 16, 0}, {"short_d16", 2, 2}, {"short_d16_hi", 2, 3},
      {"ubyte_d16", 1, 2}, {"ubyte_d16_hi", 1, 3}, {"sbyte_d16", 1, 2},
      {"sbyte_d16_hi", 1, 3}};
  for (const auto &x : lds) {
    add(std::string("global_load_") + x.n, global_load, Cls::Global,
        FT::None, x.bytes, x.mode, 1);
    add(std::string("flat_load_") + x.n, global_load, Cls::Global, FT::None,
        x.bytes, x.mode, 1);
    add(std::string("buffer_load_") + x.n, buffer_load, Cls::Global,
        FT::None, x.bytes, x.mode, 1);
    add(std::string("scratch_load_") + x.n, scratch_load, Cls::Scratch,
        FT::None, x.bytes, x.mode, 1);
  }
  static const struct { const char *n; int bytes, hi; } sts[] = {
      {"byte", 1, 0}, {"short", 2, 0}, {"dword", 4, 0}, {"dwordx2", 8, 0},
      {"dwordx3", 12, 0}, {"dwordx4", 16, 0}, {"byte_d16_hi", 1, 1},
      {"short_d16_hi", 2, 1}};
  for (const auto &x : sts) {
    add(std::string("global_store_") + x.n, global_store, Cls::Global,
        FT::None, x.bytes, x.hi, 0);
    add(std::string("flat_store_") + x.n, global_store, Cls::Global,
        FT::None, x.bytes, x.hi, 0);
    add(std::string("buffer_store_") + x.n, buffer_store, Cls::Global,
        FT::None, x.bytes, x.hi ? 3 : 0, 0);
    add(std::string("scratch_store_") + x.n, scratch_store, Cls::Scratch,
        FT::None, x.bytes, x.hi ? 3 : 0, 0);
  }
  static const char *atom[] = {"add", "sub", "swap", "cmpswap", "smax",
                               "umax", "smin", "umin", "and", "or", "xor",
                               "add_f32", "inc", "dec"};
  for (int i = 0; i < 14; ++i) {
    add(std::string("global_atomic_") + atom[i], global_atomic, Cls::Global,
        FT::None, i, 0, 0);
    add(std::string("flat_atomic_") + atom[i], global_atomic, Cls::Global,
        FT::None, i, 0, 0);
  }
}
