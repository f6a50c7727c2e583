//===- CacheWriteKernel.cpp - Quantize K/V into the paged cache -----------===//
//
// One wave per (token, KV head, K or V). Lane l holds the E = D/64
// consecutive elements l*E .. l*E+E-1 of the row.
//  - Rotation: the Sylvester butterfly, stages of span 1, 2, ..., D/2,
//    (a, b) -> (a + b, a - b), in f64, then one multiply by 1/sqrt(D) in f64
//    and one rounding to f32: the reference's ExactF64 arithmetic step for
//    step (bf16 inputs make every f64 sum exact). Spans below E stay in the
//    lane; larger spans exchange with lane l ^ (span / E).
//  - Scale: absmax of 32 elements by xor-shuffles inside the 32/E lanes of
//    the group; s = f32(c) * absmax; e = E_s + (mantissa(s) >= 0x3504F4)
//    (s >= sqrt(2) * 2^E_s, i.e. floor(log2 s + 0.5)), clamped to
//    [-126, 127]; byte 0 when absmax is 0 or not finite.
//  - Codes: ldexp(x, -e) (exact power-of-two scaling), then the 14-midpoint
//    ties-down rule of the format (strictly greater moves up for x >= 0,
//    greater-or-equal moves down for x < 0); zero is code 0.
// Tokens with a negative slot or a slot beyond the cache are skipped.
//
//===----------------------------------------------------------------------===//

#include "uq/Conversion/UQToGPU/Kernels.h"

#include "KernelWriter.h"

#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <vector>

using namespace uq::kernels;

namespace {
/// Emits the body for one row kind (K or V) of the cache-write kernel. The
/// row's f32 values are written as `%x<j>`, then the codes and scale byte
/// are stored at slot byte offsets `codeOff` and `scaleOff`.
void emitRow(KernelWriter &w, const CacheWriteKernelParams &p, bool rotate,
             double c, bool search, int64_t codeOff, int64_t scaleOff,
             const std::string &input) {
  const int64_t d = p.headDim;
  const int64_t e = d / 64;
  const int64_t logE = llvm::Log2_64(e);
  const int64_t logD = llvm::Log2_64(d);
  w.set("IN", input);
  w.set("C", f32Literal(static_cast<float>(c)));
  w.set("CODEOFF", codeOff);
  w.set("SCALEOFF", scaleOff);
  w.set("INVSQRT", f64Literal(1.0 / std::sqrt(static_cast<double>(d))));
  for (int64_t j = 0; j < e; ++j) {
    w.set("J", j);
    w.emit(R"(
      %cj$J = arith.constant $J : index
      %ia$J = arith.addi %elem0, %cj$J : index
      %ii$J = arith.addi %rowbase, %ia$J : index
      %in$J = memref.load %$IN[%ii$J] : memref<$INNx$IT>)");
    if (p.inputType == "f32")
      w.emit("      %xf$J = arith.addf %in$J, %zf : f32");
    else
      w.emit("      %xf$J = arith.extf %in$J : $IT to f32");
  }
  if (rotate) {
    for (int64_t j = 0; j < e; ++j) {
      w.set("J", j);
      w.emit("      %r0_$J = arith.extf %xf$J : f32 to f64");
    }
    for (int64_t b = 0; b < logD; ++b) {
      int64_t span = int64_t(1) << b;
      w.set("B", b);
      w.set("B1", b + 1);
      if (b < logE) {
        // Partner in the same lane.
        for (int64_t j = 0; j < e; ++j) {
          int64_t pj = j ^ span;
          w.set("J", j);
          w.set("PJ", pj);
          if ((j & span) == 0)
            w.emit("      %r$B1_$J = arith.addf %r$B_$J, %r$B_$PJ : f64");
          else
            w.emit("      %r$B1_$J = arith.subf %r$B_$PJ, %r$B_$J : f64");
        }
      } else {
        // Partner lane l ^ (span / E); the lower element takes a + b.
        w.set("LX", span / e);
        w.emit(R"(
      %lx$B = arith.constant $LX : i32
      %lxi$B = arith.constant $LX : index
      %lbit$B_a = arith.andi %lane, %lxi$B : index
      %upper$B = arith.cmpi ne, %lbit$B_a, %c0 : index)");
        for (int64_t j = 0; j < e; ++j) {
          w.set("J", j);
          std::string tag = std::to_string(b) + "_" + std::to_string(j);
          emitButterflyXorF64(w, "%r" + tag, "%lx" + std::to_string(b), "%w64",
                              "%c32_i64", "%upper" + std::to_string(b),
                              "%r" + std::to_string(b + 1) + "_" +
                                  std::to_string(j));
        }
      }
    }
    w.set("LAST", logD);
    for (int64_t j = 0; j < e; ++j) {
      w.set("J", j);
      w.emit(R"(
      %rn$J = arith.mulf %r$LAST_$J, %invsqrt : f64
      %x$J = arith.truncf %rn$J : f64 to f32)");
    }
  } else {
    for (int64_t j = 0; j < e; ++j) {
      w.set("J", j);
      w.emit("      %x$J = arith.addf %xf$J, %zf : f32");
    }
  }
  // Group absmax: lane-local, then xor-shuffles inside the group's lanes.
  w.emit(R"(
      %am0 = math.absf %x0 : f32)");
  for (int64_t j = 1; j < e; ++j) {
    w.set("J", j);
    w.set("JM", j - 1);
    w.emit(R"(
      %ab$J = math.absf %x$J : f32
      %am$J = arith.maximumf %am$JM, %ab$J : f32)");
  }
  std::string cur = "%am" + std::to_string(e - 1);
  for (int64_t off = 1; off < 32 / e; off *= 2) {
    w.set("OFF", off);
    w.set("CUR", cur.substr(1));
    w.emit(R"(
      %gofs$OFF = arith.constant $OFF : i32
      %gsh$OFF, %gok$OFF = gpu.shuffle xor %$CUR, %gofs$OFF, %w64 : f32
      %gm$OFF = arith.maximumf %$CUR, %gsh$OFF : f32)");
    cur = "%gm" + std::to_string(off);
  }
  w.set("AMAX", cur);
  w.emit(R"(
      %cc = arith.constant $C : f32
      %s = arith.mulf %cc, $AMAX : f32
      %sbits = arith.bitcast %s : f32 to i32
      %sexp_a = arith.shrui %sbits, %c23_i32 : i32
      %sexp_b = arith.andi %sexp_a, %c255_i32 : i32
      %sexp = arith.subi %sexp_b, %c127_i32 : i32
      %smant = arith.andi %sbits, %cmant_i32 : i32
      %sup = arith.cmpi uge, %smant, %csqrt2_i32 : i32
      %supi = arith.extui %sup : i1 to i32
      %se_a = arith.addi %sexp, %supi : i32
      %se_b = arith.maxsi %se_a, %cm126_i32 : i32
      %se = arith.minsi %se_b, %c127_i32 : i32
      %amaxok_a = arith.cmpf ogt, $AMAX, %zf : f32
      %amaxinf = arith.cmpf oeq, $AMAX, %pinf : f32
      %amaxfin = arith.xori %amaxinf, %true : i1
      %amaxok = arith.andi %amaxok_a, %amaxfin : i1
)");
  // Codes for exponent %e<S> (S a name suffix): %code<j><S>.
  auto emitCodes = [&](const std::string &sfx) {
    w.set("S", sfx);
    w.emit(R"(
      %nse$S = arith.subi %c0_i32, %e$S : i32)");
    for (int64_t j = 0; j < e; ++j) {
      w.set("J", j);
      w.emit(R"(
      %y$J$S = llvm.intr.ldexp(%x$J, %nse$S) : (f32, i32) -> f32
      %ya$J$S = math.absf %y$J$S : f32
      %yneg$J$S = arith.cmpf olt, %y$J$S, %zf : f32
      %mag$J$S_0 = arith.constant 0 : i32)");
      const char *mids[] = {"2.5E-1", "7.5E-1", "1.25", "1.75",
                            "2.5",    "3.5",    "5.0"};
      for (int k = 0; k < 7; ++k) {
        w.set("K", k);
        w.set("K1", k + 1);
        w.set("MID", mids[k]);
        w.emit(R"(
      %mid$J$S_$K = arith.constant $MID : f32
      %gt$J$S_$K = arith.cmpf ogt, %ya$J$S, %mid$J$S_$K : f32
      %ge$J$S_$K = arith.cmpf oge, %ya$J$S, %mid$J$S_$K : f32
      %up$J$S_$K = arith.select %yneg$J$S, %ge$J$S_$K, %gt$J$S_$K : i1
      %upi$J$S_$K = arith.extui %up$J$S_$K : i1 to i32
      %mag$J$S_$K1 = arith.addi %mag$J$S_$K, %upi$J$S_$K : i32)");
      }
      w.emit(R"(
      %nz$J$S = arith.cmpi ne, %mag$J$S_7, %c0_i32 : i32
      %sgn$J$S = arith.andi %yneg$J$S, %nz$J$S : i1
      %sgnb$J$S = arith.select %sgn$J$S, %c8_i32, %c0_i32 : i32
      %code$J$S = arith.ori %mag$J$S_7, %sgnb$J$S : i32)");
    }
  };
  // Squared error of the codes %code<j><S> (ScaleRule mse_search): terms
  // (decoded - x)^2 in f64, summed as a binary tree in element order: the
  // lane's E elements pairwise, then lanes l and l ^ 1, l ^ 2, ... inside
  // the group (a xor butterfly adds the same two numbers in both lanes).
  auto emitError = [&](const std::string &sfx) {
    w.set("S", sfx);
    std::vector<std::string> terms;
    for (int64_t j = 0; j < e; ++j) {
      w.set("J", j);
      w.emit(R"(
      %qmf$J$S = arith.uitofp %mag$J$S_7 : i32 to f32
      %qlin$J$S = arith.mulf %qmf$J$S, %fhalf : f32
      %qi5$J$S = arith.cmpi eq, %mag$J$S_7, %c5_i32 : i32
      %qi6$J$S = arith.cmpi eq, %mag$J$S_7, %c6_i32 : i32
      %qi7$J$S = arith.cmpi eq, %mag$J$S_7, %c7_i32 : i32
      %qv5$J$S = arith.select %qi5$J$S, %lv5, %qlin$J$S : f32
      %qv6$J$S = arith.select %qi6$J$S, %lv6, %qv5$J$S : f32
      %qv$J$S = arith.select %qi7$J$S, %lv7, %qv6$J$S : f32
      %qn$J$S = arith.negf %qv$J$S : f32
      %qs$J$S = arith.select %sgn$J$S, %qn$J$S, %qv$J$S : f32
      %qd$J$S = llvm.intr.ldexp(%qs$J$S, %e$S) : (f32, i32) -> f32
      %qdd$J$S = arith.extf %qd$J$S : f32 to f64
      %qxd$J$S = arith.extf %x$J : f32 to f64
      %qdf$J$S = arith.subf %qdd$J$S, %qxd$J$S : f64
      %qt$J$S = arith.mulf %qdf$J$S, %qdf$J$S : f64)");
      terms.push_back("%qt" + std::to_string(j) + sfx);
    }
    int level = 0;
    while (terms.size() > 1) {
      std::vector<std::string> next;
      for (size_t i = 0; i < terms.size(); i += 2) {
        std::string n = "%qsum" + sfx + "_" + std::to_string(level) + "_" +
                        std::to_string(i / 2);
        w.set("A", terms[i].substr(1));
        w.set("B", terms[i + 1].substr(1));
        w.set("N", n.substr(1));
        w.emit("      %$N = arith.addf %$A, %$B : f64");
        next.push_back(n);
      }
      terms = next;
      ++level;
    }
    std::string cur = terms[0];
    for (int64_t off = 1; off < 32 / e; off *= 2) {
      w.set("OFF", off);
      w.set("CUR", cur.substr(1));
      w.emit(R"(
      %qo$S$OFF = arith.constant $OFF : i32)");
      std::string partner =
          emitShuffleXorF64(w, cur, "%qo" + sfx + std::to_string(off), "%w64",
                            "%c32_i64", "qsh" + sfx + std::to_string(off));
      w.set("PART", partner.substr(1));
      w.emit(R"(
      %qe$S$OFF = arith.addf %$CUR, %$PART : f64)");
      cur = "%qe" + sfx + std::to_string(off);
    }
    w.set("CUR", cur.substr(1));
    w.emit("      %err$S = arith.addf %$CUR, %zd : f64");
  };

  if (!search) {
    w.emit(R"(
      %er = arith.addi %se, %c0_i32 : i32)");
    emitCodes("r");
    w.emit(R"(
      %e = arith.addi %er, %c0_i32 : i32)");
  } else {
    // The three candidates e0 - 1, e0, e0 + 1 (clamped); the smallest error
    // wins, ties to the earlier candidate.
    w.emit(R"(
      %c1_i32 = arith.constant 1 : i32
      %zd = arith.constant 0.0 : f64
      // FP4 magnitude of code m: m / 2 up to 4 (2.0), then 3, 4, 6.
      %fhalf = arith.constant 0.5 : f32
      %c5_i32 = arith.constant 5 : i32
      %c6_i32 = arith.constant 6 : i32
      %c7_i32 = arith.constant 7 : i32
      %lv5 = arith.constant 3.0 : f32
      %lv6 = arith.constant 4.0 : f32
      %lv7 = arith.constant 6.0 : f32)");
    w.emit(R"(
      %em_a = arith.subi %se, %c1_i32 : i32
      %em = arith.maxsi %em_a, %cm126_i32 : i32
      %ez = arith.addi %se, %c0_i32 : i32
      %ep_a = arith.addi %se, %c1_i32 : i32
      %ep = arith.minsi %ep_a, %c127_i32 : i32)");
    for (const char *sfx : {"m", "z", "p"}) {
      emitCodes(sfx);
      emitError(sfx);
    }
    w.emit(R"(
      %zbetter = arith.cmpf olt, %errz, %errm : f64
      %e1 = arith.select %zbetter, %ez, %em : i32
      %err1 = arith.select %zbetter, %errz, %errm : f64
      %pbetter = arith.cmpf olt, %errp, %err1 : f64
      %e = arith.select %pbetter, %ep, %e1 : i32)");
    for (int64_t j = 0; j < e; ++j) {
      w.set("J", j);
      w.emit(R"(
      %code$J_1 = arith.select %zbetter, %code$Jz, %code$Jm : i32
      %code$J_ = arith.select %pbetter, %code$Jp, %code$J_1 : i32)");
    }
  }
  for (int64_t j = 0; j < e; ++j) {
    w.set("J", j);
    w.set("SRC", search ? "_" : "r");
    w.emit(R"(
      %code$J = arith.select %amaxok, %code$J$SRC, %c0_i32 : i32)");
  }
  w.emit(R"(
      %sbyte_a = arith.addi %e, %c127_i32 : i32
      %sbyte = arith.select %amaxok, %sbyte_a, %c0_i32 : i32)");
  // Pack two codes a byte (element 2i low nibble) and store.
  w.emit(R"(
      %cco = arith.constant $CODEOFF : index
      %cso = arith.constant $SCALEOFF : index
      %codebase = arith.addi %dst, %cco : index)");
  if (e == 1) {
    w.emit(R"(
      %one_i32 = arith.constant 1 : i32
      %pc, %pcok = gpu.shuffle xor %code0, %one_i32, %w64 : i32
      %odd_a = arith.andi %lane, %c1 : index
      %even = arith.cmpi eq, %odd_a, %c0 : index
      scf.if %even {
        %hi = arith.shli %pc, %c4_i32 : i32
        %byte = arith.ori %code0, %hi : i32
        %b8 = arith.trunci %byte : i32 to i8
        %half = arith.divui %lane, %c2 : index
        %ba = arith.addi %codebase, %half : index
        memref.store %b8, %cache[%ba] : memref<$CNxi8>
      })");
  } else {
    for (int64_t j = 0; j < e; j += 2) {
      w.set("J", j);
      w.set("J1", j + 1);
      w.set("BI", j / 2);
      w.set("BPL", e / 2);
      w.emit(R"(
      %hi$J = arith.shli %code$J1, %c4_i32 : i32
      %byte$J = arith.ori %code$J, %hi$J : i32
      %b8_$J = arith.trunci %byte$J : i32 to i8
      %cbpl$J = arith.constant $BPL : index
      %lb$J = arith.muli %lane, %cbpl$J : index
      %cbi$J = arith.constant $BI : index
      %lbi$J = arith.addi %lb$J, %cbi$J : index
      %ba$J = arith.addi %codebase, %lbi$J : index
      memref.store %b8_$J, %cache[%ba$J] : memref<$CNxi8>)");
    }
  }
  // One lane per group writes the scale byte.
  w.set("LPG", 32 / e);
  w.emit(R"(
      %clpg = arith.constant $LPG : index
      %gl = arith.remui %lane, %clpg : index
      %gfirst = arith.cmpi eq, %gl, %c0 : index
      scf.if %gfirst {
        %grp = arith.divui %lane, %clpg : index
        %sa_a = arith.addi %dst, %cso : index
        %sa = arith.addi %sa_a, %grp : index
        %sb8 = arith.trunci %sbyte : i32 to i8
        memref.store %sb8, %cache[%sa] : memref<$CNxi8>
      })");
}
} // namespace

std::string uq::kernels::cacheWriteKernel(const CacheWriteKernelParams &p) {
  KernelWriter w;
  const int64_t d = p.headDim;
  w.set("NAME", p.name);
  w.set("INN", p.numTokens * p.numKVHeads * d);
  w.set("IT", p.inputType);
  w.set("T", p.numTokens);
  w.set("CN", p.numBlocks * p.blockSize * p.numKVHeads * p.slotBytes);
  w.set("NSLOTS", p.numBlocks * p.blockSize);
  w.set("HKV", p.numKVHeads);
  w.set("D", d);
  w.set("E", d / 64);
  w.set("SB", p.slotBytes);
  w.set("INVSQRT", f64Literal(1.0 / std::sqrt(static_cast<double>(d))));
  w.emit(R"(
  gpu.func @$NAME(%key: memref<$INNx$IT>, %value: memref<$INNx$IT>,
                  %slots: memref<$Txi64>, %cache: memref<$CNxi8>)
      kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %lane = gpu.thread_id x
    %tok = gpu.block_id x
    %kvh = gpu.block_id y
    %which = gpu.block_id z
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %cE = arith.constant $E : index
    %cD = arith.constant $D : index
    %cHKV = arith.constant $HKV : index
    %cSB = arith.constant $SB : index
    %c0_i32 = arith.constant 0 : i32
    %c4_i32 = arith.constant 4 : i32
    %c8_i32 = arith.constant 8 : i32
    %c23_i32 = arith.constant 23 : i32
    %c127_i32 = arith.constant 127 : i32
    %c255_i32 = arith.constant 255 : i32
    %cm126_i32 = arith.constant -126 : i32
    %cmant_i32 = arith.constant 8388607 : i32
    %csqrt2_i32 = arith.constant 3474676 : i32
    %c32_i64 = arith.constant 32 : i64
    %w64 = arith.constant 64 : i32
    %true = arith.constant true
    %zf = arith.constant 0.0 : f32
    %pinf = arith.constant 0x7F800000 : f32
    %invsqrt = arith.constant $INVSQRT : f64
    %slot64 = memref.load %slots[%tok] : memref<$Txi64>
    %c0_i64 = arith.constant 0 : i64
    %cns = arith.constant $NSLOTS : i64
    %nonneg = arith.cmpi sge, %slot64, %c0_i64 : i64
    %inside = arith.cmpi slt, %slot64, %cns : i64
    %ok = arith.andi %nonneg, %inside : i1
    scf.if %ok {
      %slot = arith.index_cast %slot64 : i64 to index
      %dst_a = arith.muli %slot, %cHKV : index
      %dst_b = arith.addi %dst_a, %kvh : index
      %dst = arith.muli %dst_b, %cSB : index
      %rb_a = arith.muli %tok, %cHKV : index
      %rb_b = arith.addi %rb_a, %kvh : index
      %rowbase = arith.muli %rb_b, %cD : index
      %elem0 = arith.muli %lane, %cE : index
      %isk = arith.cmpi eq, %which, %c0 : index
      scf.if %isk {)");
  const int64_t vCode = d / 2 + d / 32;
  emitRow(w, p, p.rotateK, p.kC, p.searchK, /*codeOff=*/0,
          /*scaleOff=*/d / 2, "key");
  w.emit(R"(
      } else {)");
  emitRow(w, p, p.rotateV, p.vC, p.searchV, vCode, vCode + d / 2, "value");
  w.emit(R"(
      }
    }
    gpu.return
  })");
  return w.str();
}
