//===- ExecScalar.cpp - Scalar ALU, SMEM and control flow -------------------===//
//
// SALU arithmetic with SCC, *_saveexec, scalar compares, branches and
// program control (s_endpgm, s_barrier, waits and no-ops), and the scalar
// memory loads and stores.
//
//===----------------------------------------------------------------------===//

#include "ExecCommon.h"

using namespace uq::emu::detail;
using llvm::StringRef;

namespace {
//===----------------------------------------------------------------------===//
// SALU
//===----------------------------------------------------------------------===//

#define S1(NAME, EXPR, SCCEXPR)                                                \
  H(NAME) {                                                                    \
    uint32_t A = sval(X, W, I.ops[1]);                                         \
    uint32_t R = (EXPR);                                                       \
    (void)A;                                                                   \
    SCCEXPR;                                                                   \
    setS(W, I.ops[0], R);                                                      \
  }
#define S2(NAME, EXPR, SCCEXPR)                                                \
  H(NAME) {                                                                    \
    uint32_t A = sval(X, W, I.ops[1]), B = sval(X, W, I.ops[2]);               \
    uint32_t R = (EXPR);                                                       \
    SCCEXPR;                                                                   \
    setS(W, I.ops[0], R);                                                      \
  }
#define S2Q(NAME, EXPR, SCCEXPR)                                               \
  H(NAME) {                                                                    \
    uint64_t A = sval64(X, W, I.ops[1]), B = sval64(X, W, I.ops[2]);           \
    uint64_t R = (EXPR);                                                       \
    SCCEXPR;                                                                   \
    setS64(W, I.ops[0], R);                                                    \
  }
#define S1Q(NAME, EXPR, SCCEXPR)                                               \
  H(NAME) {                                                                    \
    uint64_t A = sval64(X, W, I.ops[1]);                                       \
    uint64_t R = (EXPR);                                                       \
    SCCEXPR;                                                                   \
    setS64(W, I.ops[0], R);                                                    \
  }
#define NZ W.scc = R != 0
#define NOSCC (void)0

S1(s_mov_b32, A, NOSCC)
S1(s_not_b32, ~A, NZ)
S1(s_brev_b32, llvm::reverseBits<uint32_t>(A), NOSCC)
S1(s_bcnt1_i32_b32, (uint32_t)__builtin_popcount(A), NZ)
S1(s_bcnt0_i32_b32, (uint32_t)__builtin_popcount(~A), NZ)
S1(s_ff1_i32_b32, A ? (uint32_t)__builtin_ctz(A) : ~0u, NOSCC)
S1(s_flbit_i32_b32, A ? (uint32_t)__builtin_clz(A) : ~0u, NOSCC)
S1(s_sext_i32_i8, (uint32_t)(int32_t)(int8_t)A, NOSCC)
S1(s_sext_i32_i16, (uint32_t)(int32_t)(int16_t)A, NOSCC)
S1(s_abs_i32, (uint32_t)((int32_t)A < 0 ? -(int64_t)(int32_t)A : A), NZ)
S1Q(s_mov_b64, A, NOSCC)
S1Q(s_not_b64, ~A, NZ)
H(s_bcnt1_i32_b64) {
  uint32_t R = __builtin_popcountll(sval64(X, W, I.ops[1]));
  W.scc = R != 0;
  setS(W, I.ops[0], R);
}
H(s_ff1_i32_b64) {
  uint64_t A = sval64(X, W, I.ops[1]);
  setS(W, I.ops[0], A ? (uint32_t)__builtin_ctzll(A) : ~0u);
}
H(s_flbit_i32_b64) {
  uint64_t A = sval64(X, W, I.ops[1]);
  setS(W, I.ops[0], A ? (uint32_t)__builtin_clzll(A) : ~0u);
}
H(s_movk_i32) { setS(W, I.ops[0], (uint32_t)(int32_t)(int16_t)I.ops[1].imm[0]); }
H(s_cmovk_i32) {
  if (W.scc)
    setS(W, I.ops[0], (uint32_t)(int32_t)(int16_t)I.ops[1].imm[0]);
}
H(s_addk_i32) {
  uint32_t A = sval(X, W, I.ops[0]);
  int32_t B = (int16_t)I.ops[1].imm[0];
  uint32_t R = A + (uint32_t)B;
  W.scc = ((int32_t)A >= 0) == (B >= 0) && ((int32_t)R >= 0) != (B >= 0);
  setS(W, I.ops[0], R);
}
H(s_mulk_i32) {
  setS(W, I.ops[0],
       sval(X, W, I.ops[0]) * (uint32_t)(int32_t)(int16_t)I.ops[1].imm[0]);
}
H(s_cmov_b32) {
  if (W.scc)
    setS(W, I.ops[0], sval(X, W, I.ops[1]));
}
H(s_cmov_b64) {
  if (W.scc)
    setS64(W, I.ops[0], sval64(X, W, I.ops[1]));
}
S2(s_add_u32, A + B, W.scc = (uint64_t)A + B > 0xffffffffull)
S2(s_sub_u32, A - B, W.scc = B > A)
S2(s_addc_u32, A + B + W.scc,
   W.scc = (uint64_t)A + B + W.scc > 0xffffffffull)
S2(s_subb_u32, A - B - W.scc, W.scc = (uint64_t)B + W.scc > A)
S2(s_add_i32, A + B,
   W.scc = ((int32_t)A >= 0) == ((int32_t)B >= 0) &&
           ((int32_t)R >= 0) != ((int32_t)A >= 0))
S2(s_sub_i32, A - B,
   W.scc = ((int32_t)A >= 0) != ((int32_t)B >= 0) &&
           ((int32_t)R >= 0) != ((int32_t)A >= 0))
S2(s_mul_i32, A *B, NOSCC)
S2(s_mul_hi_u32, (uint32_t)(((uint64_t)A * B) >> 32), NOSCC)
S2(s_mul_hi_i32, (uint32_t)(((int64_t)(int32_t)A * (int32_t)B) >> 32), NOSCC)
S2(s_lshl_b32, A << (B & 31), NZ)
S2(s_lshr_b32, A >> (B & 31), NZ)
S2(s_ashr_i32, (uint32_t)((int32_t)A >> (B & 31)), NZ)
S2(s_lshl1_add_u32, (A << 1) + B, W.scc = ((uint64_t)A << 1) + B > 0xffffffffull)
S2(s_lshl2_add_u32, (A << 2) + B, W.scc = ((uint64_t)A << 2) + B > 0xffffffffull)
S2(s_lshl3_add_u32, (A << 3) + B, W.scc = ((uint64_t)A << 3) + B > 0xffffffffull)
S2(s_lshl4_add_u32, (A << 4) + B, W.scc = ((uint64_t)A << 4) + B > 0xffffffffull)
S2(s_and_b32, A &B, NZ)
S2(s_or_b32, A | B, NZ)
S2(s_xor_b32, A ^ B, NZ)
S2(s_andn2_b32, A & ~B, NZ)
S2(s_orn2_b32, A | ~B, NZ)
S2(s_nand_b32, ~(A & B), NZ)
S2(s_nor_b32, ~(A | B), NZ)
S2(s_xnor_b32, ~(A ^ B), NZ)
S2(s_min_i32, (uint32_t)std::min((int32_t)A, (int32_t)B), W.scc = (int32_t)A < (int32_t)B)
S2(s_max_i32, (uint32_t)std::max((int32_t)A, (int32_t)B), W.scc = (int32_t)A > (int32_t)B)
S2(s_min_u32, std::min(A, B), W.scc = A < B)
S2(s_max_u32, std::max(A, B), W.scc = A > B)
S2(s_cselect_b32, W.scc ? A : B, NOSCC)
S2(s_bfe_u32, bfeU(A, B & 31, (B >> 16) & 0x7f), NZ)
S2(s_bfe_i32, (uint32_t)bfeI(A, B & 31, (B >> 16) & 0x7f), NZ)
S2(s_bfm_b32, ((1u << (A & 31)) - 1) << (B & 31), NOSCC)
S2(s_pack_ll_b32_b16, (A & 0xffff) | (B << 16), NOSCC)
S2(s_pack_lh_b32_b16, (A & 0xffff) | (B & 0xffff0000u), NOSCC)
S2(s_pack_hh_b32_b16, (A >> 16) | (B & 0xffff0000u), NOSCC)
S2(s_absdiff_i32, (uint32_t)std::abs((int64_t)(int32_t)A - (int32_t)B), NZ)
S2Q(s_and_b64, A &B, NZ)
S2Q(s_or_b64, A | B, NZ)
S2Q(s_xor_b64, A ^ B, NZ)
S2Q(s_andn2_b64, A & ~B, NZ)
S2Q(s_orn2_b64, A | ~B, NZ)
S2Q(s_nand_b64, ~(A & B), NZ)
S2Q(s_nor_b64, ~(A | B), NZ)
S2Q(s_xnor_b64, ~(A ^ B), NZ)
S2Q(s_cselect_b64, W.scc ? A : B, NOSCC)
H(s_lshl_b64) {
  uint64_t R = sval64(X, W, I.ops[1]) << (sval(X, W, I.ops[2]) & 63);
  W.scc = R != 0;
  setS64(W, I.ops[0], R);
}
H(s_lshr_b64) {
  uint64_t R = sval64(X, W, I.ops[1]) >> (sval(X, W, I.ops[2]) & 63);
  W.scc = R != 0;
  setS64(W, I.ops[0], R);
}
H(s_ashr_i64) {
  uint64_t R = (uint64_t)((int64_t)sval64(X, W, I.ops[1]) >>
                          (sval(X, W, I.ops[2]) & 63));
  W.scc = R != 0;
  setS64(W, I.ops[0], R);
}
H(s_bfe_u64) {
  uint64_t A = sval64(X, W, I.ops[1]);
  uint32_t B = sval(X, W, I.ops[2]), off = B & 63, w = (B >> 16) & 0x7f;
  uint64_t R = w == 0 ? 0 : (A >> off) & (w >= 64 ? ~0ull : (1ull << w) - 1);
  W.scc = R != 0;
  setS64(W, I.ops[0], R);
}
H(s_bfe_i64) {
  uint64_t A = sval64(X, W, I.ops[1]);
  uint32_t B = sval(X, W, I.ops[2]), off = B & 63, w = (B >> 16) & 0x7f;
  uint64_t R = 0;
  if (w) {
    uint64_t f = (A >> off) & (w >= 64 ? ~0ull : (1ull << w) - 1);
    R = w >= 64 ? f : (uint64_t)(((int64_t)(f << (64 - w))) >> (64 - w));
  }
  W.scc = R != 0;
  setS64(W, I.ops[0], R);
}
H(s_bfm_b64) {
  uint32_t A = sval(X, W, I.ops[1]) & 63, B = sval(X, W, I.ops[2]) & 63;
  setS64(W, I.ops[0], ((A ? (1ull << A) : 0) - 1 + (A == 0)) << B);
}

// s_*_saveexec_b64 sdst, ssrc: sdst = exec; exec = op(ssrc, exec).
template <int K> void saveexec(Exec &X, Wave &W, const Inst &I) {
  uint64_t s = sval64(X, W, I.ops[1]), e = W.exec(), r;
  switch (K) {
  case 0: r = s & e; break;
  case 1: r = s | e; break;
  case 2: r = s ^ e; break;
  case 3: r = s & ~e; break; // andn2: s0 & ~exec
  case 4: r = s | ~e; break;
  case 5: r = ~(s & e); break;
  case 6: r = ~(s | e); break;
  case 7: r = ~(s ^ e); break;
  case 8: r = ~s & e; break; // andn1
  default: r = ~s | e; break; // orn1
  }
  setS64(W, I.ops[0], e);
  W.setExec(r);
  W.scc = r != 0;
}
H(s_and_saveexec_b64) { saveexec<0>(X, W, I); }
H(s_or_saveexec_b64) { saveexec<1>(X, W, I); }
H(s_xor_saveexec_b64) { saveexec<2>(X, W, I); }
H(s_andn2_saveexec_b64) { saveexec<3>(X, W, I); }
H(s_orn2_saveexec_b64) { saveexec<4>(X, W, I); }
H(s_nand_saveexec_b64) { saveexec<5>(X, W, I); }
H(s_nor_saveexec_b64) { saveexec<6>(X, W, I); }
H(s_xnor_saveexec_b64) { saveexec<7>(X, W, I); }
H(s_andn1_saveexec_b64) { saveexec<8>(X, W, I); }
H(s_orn1_saveexec_b64) { saveexec<9>(X, W, I); }

template <class T> void scmp(Exec &X, Wave &W, const Inst &I) {
  T A, B;
  if (sizeof(T) == 8) {
    A = (T)sval64(X, W, I.ops[0]);
    B = (T)sval64(X, W, I.ops[1]);
  } else {
    A = (T)sval(X, W, I.ops[0]);
    B = (T)sval(X, W, I.ops[1]);
  }
  W.scc = cmpInt<T>(I.aux, A, B);
}
H(s_cmp_i32) { scmp<int32_t>(X, W, I); }
H(s_cmp_u32) { scmp<uint32_t>(X, W, I); }
H(s_cmp_u64) { scmp<uint64_t>(X, W, I); }
H(s_cmpk_i32) {
  int32_t A = (int32_t)sval(X, W, I.ops[0]);
  int32_t B = (int16_t)I.ops[1].imm[0];
  W.scc = cmpInt<int32_t>(I.aux, A, B);
}
H(s_cmpk_u32) {
  uint32_t A = sval(X, W, I.ops[0]);
  uint32_t B = (uint16_t)I.ops[1].imm[0];
  W.scc = cmpInt<uint32_t>(I.aux, A, B);
}
H(s_bitcmp0_b32) {
  W.scc = !((sval(X, W, I.ops[0]) >> (sval(X, W, I.ops[1]) & 31)) & 1);
}
H(s_bitcmp1_b32) {
  W.scc = (sval(X, W, I.ops[0]) >> (sval(X, W, I.ops[1]) & 31)) & 1;
}
H(s_bitcmp0_b64) {
  W.scc = !((sval64(X, W, I.ops[0]) >> (sval(X, W, I.ops[1]) & 63)) & 1);
}
H(s_bitcmp1_b64) {
  W.scc = (sval64(X, W, I.ops[0]) >> (sval(X, W, I.ops[1]) & 63)) & 1;
}
H(s_bitset0_b32) {
  setS(W, I.ops[0],
       sval(X, W, I.ops[0]) & ~(1u << (sval(X, W, I.ops[1]) & 31)));
}
H(s_bitset1_b32) {
  setS(W, I.ops[0],
       sval(X, W, I.ops[0]) | (1u << (sval(X, W, I.ops[1]) & 31)));
}

// Branches: target = pc + 4 + simm16 * 4.
inline void branch(Wave &W, const Inst &I) {
  W.pc = I.pc + 4 + (int64_t)(int16_t)I.ops[0].imm[0] * 4;
}
H(s_branch) { branch(W, I); }
H(s_cbranch_scc0) { if (!W.scc) branch(W, I); }
H(s_cbranch_scc1) { if (W.scc) branch(W, I); }
H(s_cbranch_vccz) { if (!W.vcc()) branch(W, I); }
H(s_cbranch_vccnz) { if (W.vcc()) branch(W, I); }
H(s_cbranch_execz) { if (!W.exec()) branch(W, I); }
H(s_cbranch_execnz) { if (W.exec()) branch(W, I); }
H(s_getpc_b64) { setS64(W, I.ops[0], I.pc + 4); }
H(s_setpc_b64) { W.pc = sval64(X, W, I.ops[0]); }
H(s_swappc_b64) {
  uint64_t t = sval64(X, W, I.ops[1]);
  setS64(W, I.ops[0], I.pc + 4);
  W.pc = t;
}
H(s_endpgm) { W.done = true; }
H(s_barrier) { W.atBarrier = true; }
H(s_noop) {}
/// s_waitcnt: the vmcnt part (I.aux, decoded from the text; 63 when absent)
/// completes the wave's older vector memory instructions (LDS-DMA writes
/// land). lgkmcnt needs nothing: LDS and scalar results are immediate.
H(s_waitcnt) { retireVm(X, W, (unsigned)I.aux); }
H(s_getreg_b32) { setS(W, I.ops[0], 0); }
H(s_trap) { X.fail(I, "s_trap executed (kernel trap / abort)"); }

//===----------------------------------------------------------------------===//
// Scalar memory
//===----------------------------------------------------------------------===//


/// s_load_dword* / s_buffer_load_dword*: sdst, sbase, soffset|imm [offset:].
H(s_load) {
  const Operand &dst = I.ops[0];
  uint64_t base;
  bool isBuf = I.aux;
  if (isBuf)
    base = sval64(X, W, I.ops[1]) & 0xffffffffffffull;
  else
    base = sval64(X, W, I.ops[1]);
  uint64_t off = 0;
  if (I.nOps > 2 && I.ops[2].kind != OpKind::None)
    off = I.ops[2].kind == OpKind::Imm ? (uint64_t)(int64_t)I.ops[2].immValue()
                                       : sval(X, W, I.ops[2]);
  uint64_t addr = (base + off + I.offset) & ~3ull;
  unsigned n = dst.width;
  if (X.tracing)
    X.noteMem(MemSpace::Scalar, false, 4 * n, addr);
  const uint8_t *p = X.translate(addr, 4 * n, false);
  if (!p)
    return X.failLane(I, 0, addr, 4 * n, "scalar load");
  for (unsigned i = 0; i < n; ++i) {
    uint32_t v;
    std::memcpy(&v, p + 4 * i, 4);
    setS(W, dst, v, i);
  }
  X.stats->globalBytesRead += 4 * n;
}
H(s_store) {
  const Operand &data = I.ops[0];
  uint64_t addr =
      (sval64(X, W, I.ops[1]) +
       (I.ops[2].kind == OpKind::Imm ? I.ops[2].immValue() : sval(X, W, I.ops[2])) +
       I.offset) &
      ~3ull;
  unsigned n = data.width;
  if (X.tracing)
    X.noteMem(MemSpace::Scalar, true, 4 * n, addr);
  uint8_t *p = X.translate(addr, 4 * n, true);
  if (!p)
    return X.failLane(I, 0, addr, 4 * n, "scalar store");
  for (unsigned i = 0; i < n; ++i) {
    uint32_t v = sval(X, W, data, i);
    std::memcpy(p + 4 * i, &v, 4);
  }
  X.stats->globalBytesWritten += 4 * n;
}

} // namespace

void uq::emu::detail::registerScalarOps(OpRegistry &R) {
  REGISTRY_HELPERS(R);
  // SALU.
  SR(s_mov_b32); SR(s_not_b32); SR(s_brev_b32); SR(s_bcnt1_i32_b32);
  SR(s_bcnt0_i32_b32); SR(s_ff1_i32_b32); SR(s_flbit_i32_b32);
  SR(s_sext_i32_i8); SR(s_sext_i32_i16); SR(s_abs_i32); SR(s_mov_b64);
  SR(s_not_b64); SR(s_bcnt1_i32_b64); SR(s_ff1_i32_b64); SR(s_flbit_i32_b64);
  SR(s_movk_i32); SR(s_cmovk_i32); SR(s_addk_i32); SR(s_mulk_i32);
  SR(s_cmov_b32); SR(s_cmov_b64);
  SR(s_add_u32); SR(s_sub_u32); SR(s_addc_u32); SR(s_subb_u32);
  SR(s_add_i32); SR(s_sub_i32); SR(s_mul_i32); SR(s_mul_hi_u32);
  SR(s_mul_hi_i32); SR(s_lshl_b32); SR(s_lshr_b32); SR(s_ashr_i32);
  SR(s_lshl1_add_u32); SR(s_lshl2_add_u32); SR(s_lshl3_add_u32);
  SR(s_lshl4_add_u32); SR(s_and_b32); SR(s_or_b32); SR(s_xor_b32);
  SR(s_andn2_b32); SR(s_orn2_b32); SR(s_nand_b32); SR(s_nor_b32);
  SR(s_xnor_b32); SR(s_min_i32); SR(s_max_i32); SR(s_min_u32);
  SR(s_max_u32); SR(s_cselect_b32); SR(s_bfe_u32); SR(s_bfe_i32);
  SR(s_bfm_b32); SR(s_pack_ll_b32_b16); SR(s_pack_lh_b32_b16);
  SR(s_pack_hh_b32_b16); SR(s_absdiff_i32); SR(s_and_b64); SR(s_or_b64);
  SR(s_xor_b64); SR(s_andn2_b64); SR(s_orn2_b64); SR(s_nand_b64);
  SR(s_nor_b64); SR(s_xnor_b64); SR(s_cselect_b64); SR(s_lshl_b64);
  SR(s_lshr_b64); SR(s_ashr_i64); SR(s_bfe_u64); SR(s_bfe_i64);
  SR(s_bfm_b64);
  SR(s_and_saveexec_b64); SR(s_or_saveexec_b64); SR(s_xor_saveexec_b64);
  SR(s_andn2_saveexec_b64); SR(s_orn2_saveexec_b64);
  SR(s_nand_saveexec_b64); SR(s_nor_saveexec_b64);
  SR(s_xnor_saveexec_b64); SR(s_andn1_saveexec_b64);
  SR(s_orn1_saveexec_b64);
  {
    static const char *conds[] = {nullptr, "lt", "eq", "le",
                                  "gt",    "lg", "ge"};
    for (unsigned c = 1; c < 7; ++c) {
      add(std::string("s_cmp_") + conds[c] + "_i32", s_cmp_i32, Cls::SALU,
          FT::None, c, 0, 0);
      add(std::string("s_cmp_") + conds[c] + "_u32", s_cmp_u32, Cls::SALU,
          FT::None, c, 0, 0);
      add(std::string("s_cmpk_") + conds[c] + "_i32", s_cmpk_i32, Cls::SALU,
          FT::None, c, 0, 0);
      add(std::string("s_cmpk_") + conds[c] + "_u32", s_cmpk_u32, Cls::SALU,
          FT::None, c, 0, 0);
    }
    add("s_cmp_eq_u64", s_cmp_u64, Cls::SALU, FT::None, 2, 0, 0);
    add("s_cmp_lg_u64", s_cmp_u64, Cls::SALU, FT::None, 5, 0, 0);
  }
  S("s_bitcmp0_b32", s_bitcmp0_b32, 0); S("s_bitcmp1_b32", s_bitcmp1_b32, 0);
  S("s_bitcmp0_b64", s_bitcmp0_b64, 0); S("s_bitcmp1_b64", s_bitcmp1_b64, 0);
  SR(s_bitset0_b32); SR(s_bitset1_b32);
  SR(s_getpc_b64); SR(s_getreg_b32);
  auto B = [&](StringRef n, ExecFn f) { add(n, f, Cls::Branch, FT::None, 0, 0, 0); };
  B("s_branch", s_branch); B("s_cbranch_scc0", s_cbranch_scc0);
  B("s_cbranch_scc1", s_cbranch_scc1); B("s_cbranch_vccz", s_cbranch_vccz);
  B("s_cbranch_vccnz", s_cbranch_vccnz);
  B("s_cbranch_execz", s_cbranch_execz);
  B("s_cbranch_execnz", s_cbranch_execnz);
  B("s_setpc_b64", s_setpc_b64);
  add("s_swappc_b64", s_swappc_b64, Cls::Branch, FT::None, 0, 0, 1);
  add("s_endpgm", s_endpgm, Cls::Other, FT::None, 0, 0, 0);
  add("s_barrier", s_barrier, Cls::Barrier, FT::None, 0, 0, 0);
  add("s_trap", s_trap, Cls::Other, FT::None, 0, 0, 0);
  add("s_waitcnt", s_waitcnt, Cls::Waitcnt, FT::None, 63, 0, 0);
  add("s_waitcnt_vscnt", s_noop, Cls::Waitcnt, FT::None, 0, 0, 0);
  add("s_waitcnt_lgkmcnt", s_noop, Cls::Waitcnt, FT::None, 0, 0, 0);
  add("s_waitcnt_vmcnt", s_waitcnt, Cls::Waitcnt, FT::None, 63, 0, 0);
  add("s_nop", s_noop, Cls::Nop, FT::None, 0, 0, 0);
  for (const char *n : {"s_setprio", "s_sleep", "s_sethalt", "s_dcache_wb",
                        "s_dcache_inv", "s_icache_inv", "s_setreg_b32",
                        "s_setreg_imm32_b32", "s_set_gpr_idx_off",
                        "s_ttracedata", "s_denorm_mode", "s_round_mode",
                        "buffer_wbl2", "buffer_inv", "s_wakeup",
                        "s_sched_barrier", "s_code_end"})
    add(n, s_noop, Cls::Other, FT::None, 0, 0, 0);
  // Scalar memory.
  for (auto [n, w] : {std::pair<const char *, int>{"dword", 1},
                      {"dwordx2", 2}, {"dwordx4", 4}, {"dwordx8", 8},
                      {"dwordx16", 16}}) {
    add(std::string("s_load_") + n, s_load, Cls::SMEM, FT::None, 0, 0, 1);
    add(std::string("s_buffer_load_") + n, s_load, Cls::SMEM, FT::None, 1,
        0, 1);
    if (w <= 4)
      add(std::string("s_store_") + n, s_store, Cls::SMEM, FT::None, 0, 0,
          0);
  }
}
