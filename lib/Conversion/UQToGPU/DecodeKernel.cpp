//===- DecodeKernel.cpp - Decode attention partition kernel ---------------===//
//
// One wave (64 lanes) computes one split-K partition of one KV head of one
// sequence. Lane l has r = l % 16 and g = l / 16.
//
// QK^T: v_mfma_scale_f32_16x16x128_f8f6f4 with A = the rotated FP8 query
// (row r = query head r of the GQA group, unused rows zero) and B = 16 keys
// as FP4 codes straight from the cache (column r = token r of the 16-token
// half tile); the keys' UE8M0 bytes are the B scale operand. Layouts from
// shared/docs/gfx950-notes.md:
//   FP8 A: lane l holds row r, bytes 0..15 = K 16g..16g+15 and bytes
//          16..31 = K 64+16g..64+16g+15.
//   FP4 B: lane l holds column r, K 32g..32g+31 = 16 bytes of the slot.
//   scale: byte 0 of lane (r + 16 j) = scale of column r, K-block j; for
//          FP4 that is the lane's own group.
//   out:   element i of lane l = D[4g+i][r].
// P.V: v_mfma_f32_16x16x32_bf16; P and the V tile (converted to bf16 with
// v_cvt_scalef32_pk_bf16_fp4) go through LDS, V transposed so that each lane
// reads its 8 K-consecutive bf16 with one load. bf16 operand layout (IREE's
// MFMA_F32_16x16x32_BF16 intrinsic layout): lane l holds A[r][8g..8g+7] and
// B[8g..8g+7][r].
//
//===----------------------------------------------------------------------===//

#include "uq/Conversion/UQToGPU/Kernels.h"

#include "KernelWriter.h"

#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace uq::kernels;

namespace {
/// Tokens per loop iteration: two 16-column halves for the QK MFMAs, one
/// K = 32 step of the PV MFMAs.
constexpr int64_t kTile = 32;

/// Emits `%<out>` = FP8 E4M3FN codes (vector<32xi8>) of the f32 vector
/// `%<in>`: round to nearest even, |x| > 464 and Inf/NaN -> NaN (0x7F with
/// the sign), as uq::ref::fp8e4m3Encode in its NaN-on-overflow mode.
void emitFp8Encode(KernelWriter &w, const std::string &in,
                   const std::string &out) {
  w.set("IN", in.substr(1));
  w.set("OUT", out.substr(1));
  w.emit(R"(
    %$OUT_bits = arith.bitcast %$IN : vector<32xf32> to vector<32xi32>
    %$OUT_sign = arith.andi %$OUT_bits, %v_signbit : vector<32xi32>
    %$OUT_sign8 = arith.shrui %$OUT_sign, %v_24 : vector<32xi32>
    %$OUT_abs = math.absf %$IN : vector<32xf32>
    %$OUT_nan = arith.cmpf uno, %$OUT_abs, %$OUT_abs : vector<32xf32>
    %$OUT_ebits = arith.shrui %$OUT_bits, %v_23 : vector<32xi32>
    %$OUT_eraw = arith.andi %$OUT_ebits, %v_255 : vector<32xi32>
    %$OUT_e = arith.subi %$OUT_eraw, %v_127 : vector<32xi32>
    %$OUT_sub = arith.cmpi slt, %$OUT_e, %v_m6 : vector<32xi32>
    %$OUT_ssc = arith.mulf %$OUT_abs, %v_f512 : vector<32xf32>
    %$OUT_sr = math.roundeven %$OUT_ssc : vector<32xf32>
    %$OUT_sq = arith.fptosi %$OUT_sr : vector<32xf32> to vector<32xi32>
    %$OUT_pe = arith.subi %v_127, %$OUT_e : vector<32xi32>
    %$OUT_pec = arith.maxsi %$OUT_pe, %v_1 : vector<32xi32>
    %$OUT_pb = arith.shli %$OUT_pec, %v_23 : vector<32xi32>
    %$OUT_pow = arith.bitcast %$OUT_pb : vector<32xi32> to vector<32xf32>
    %$OUT_m = arith.mulf %$OUT_abs, %$OUT_pow : vector<32xf32>
    %$OUT_m1 = arith.subf %$OUT_m, %v_f1 : vector<32xf32>
    %$OUT_m8 = arith.mulf %$OUT_m1, %v_f8 : vector<32xf32>
    %$OUT_mr = math.roundeven %$OUT_m8 : vector<32xf32>
    %$OUT_q = arith.fptosi %$OUT_mr : vector<32xf32> to vector<32xi32>
    %$OUT_carry = arith.cmpi eq, %$OUT_q, %v_8 : vector<32xi32>
    %$OUT_q2 = arith.select %$OUT_carry, %v_0, %$OUT_q : vector<32xi1>, vector<32xi32>
    %$OUT_cy = arith.extui %$OUT_carry : vector<32xi1> to vector<32xi32>
    %$OUT_eb = arith.addi %$OUT_e, %v_7 : vector<32xi32>
    %$OUT_en = arith.addi %$OUT_eb, %$OUT_cy : vector<32xi32>
    %$OUT_big = arith.cmpi sgt, %$OUT_en, %v_15 : vector<32xi32>
    %$OUT_top = arith.cmpi eq, %$OUT_en, %v_15 : vector<32xi32>
    %$OUT_q7 = arith.cmpi eq, %$OUT_q2, %v_7 : vector<32xi32>
    %$OUT_topq = arith.andi %$OUT_top, %$OUT_q7 : vector<32xi1>
    %$OUT_ovf = arith.ori %$OUT_big, %$OUT_topq : vector<32xi1>
    %$OUT_ens = arith.shli %$OUT_en, %v_3 : vector<32xi32>
    %$OUT_norm = arith.ori %$OUT_ens, %$OUT_q2 : vector<32xi32>
    %$OUT_c1 = arith.select %$OUT_sub, %$OUT_sq, %$OUT_norm : vector<32xi1>, vector<32xi32>
    %$OUT_bad = arith.ori %$OUT_ovf, %$OUT_nan : vector<32xi1>
    %$OUT_c2 = arith.select %$OUT_bad, %v_127, %$OUT_c1 : vector<32xi1>, vector<32xi32>
    %$OUT_c3 = arith.ori %$OUT_c2, %$OUT_sign8 : vector<32xi32>
    %$OUT = arith.trunci %$OUT_c3 : vector<32xi32> to vector<32xi8>)");
}
} // namespace

std::string uq::kernels::decodePartialKernel(const DecodeKernelParams &p) {
  KernelWriter w;
  const int64_t d = p.headDim;
  const int64_t group = p.numQHeads / p.numKVHeads;
  const int64_t numChunks = (d + 127) / 128; // K = 128 per scaled MFMA
  const int64_t numDimTiles = d / 16;        // N = 16 per PV MFMA
  w.set("NAME", p.name);
  w.set("QT", p.queryType);
  w.set("QN", p.numSeqs * p.numQHeads * d);
  w.set("CN", p.numBlocks * p.blockSize * p.numKVHeads * p.slotBytes);
  w.set("BTN", p.numSeqs * p.maxBlocks);
  w.set("S", p.numSeqs);
  w.set("ON", p.numSeqs * p.numQHeads * p.numPartitions * d);
  w.set("MN", p.numSeqs * p.numQHeads * p.numPartitions);
  w.set("VTN", d * kTile);
  w.set("D", d);
  w.set("G", group);
  w.set("HQ", p.numQHeads);
  w.set("HKV", p.numKVHeads);
  w.set("BS", p.blockSize);
  w.set("SB", p.slotBytes);
  w.set("MB", p.maxBlocks);
  w.set("PS", p.partitionSize);
  w.set("P", p.numPartitions);
  w.set("CAP", p.maxBlocks * p.blockSize);
  w.set("KSCALE", d / 2);
  w.set("VCODE", d / 2 + d / 32);
  w.set("VSCALE", d + d / 32);
  w.set("SCALE2",
        f32Literal(static_cast<float>(p.softmaxScale / std::log(2.0))));
  w.set("INVSQRT", f64Literal(1.0 / std::sqrt(static_cast<double>(d))));
  w.set("LN2", f32Literal(static_cast<float>(std::log(2.0))));

  w.emit(R"(
  gpu.func @$NAME(%q: memref<$QNx$QT>, %cache: memref<$CNxi8>,
                  %bt: memref<$BTNxi32>, %lens: memref<$Sxi32>,
                  %out: memref<$ONxf32>, %mx: memref<$MNxf32>,
                  %sm: memref<$MNxf32>)
      workgroup(%plds: memref<512xbf16, #gpu.address_space<workgroup>>,
                %vt: memref<$VTNxbf16, #gpu.address_space<workgroup>>)
      kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %lane = gpu.thread_id x
    %part = gpu.block_id x
    %kvh = gpu.block_id y
    %seq = gpu.block_id z
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %cD = arith.constant $D : index
    %cG = arith.constant $G : index
    %cHQ = arith.constant $HQ : index
    %cHKV = arith.constant $HKV : index
    %cBS = arith.constant $BS : index
    %cSB = arith.constant $SB : index
    %cMB = arith.constant $MB : index
    %cPS = arith.constant $PS : index
    %cP = arith.constant $P : index
    %cCAP = arith.constant $CAP : index
    %i32_0 = arith.constant 0 : i32
    %i32_127 = arith.constant 127 : i32
    %f0 = arith.constant 0.0 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %scale2 = arith.constant $SCALE2 : f32
    %ln2 = arith.constant $LN2 : f32
    %v4_0 = arith.constant dense<0.0> : vector<4xf32>
    %v4_ninf = arith.constant dense<0xFF800000> : vector<4xf32>
    %v4_scale2 = arith.constant dense<$SCALE2> : vector<4xf32>
    %r = arith.remui %lane, %c16 : index
    %g = arith.divui %lane, %c16 : index
    %len32 = memref.load %lens[%seq] : memref<$Sxi32>
    %len0 = arith.index_cast %len32 : i32 to index
    // Tokens beyond the block table's capacity are not read.
    %len = arith.minsi %len0, %cCAP : index
    %start = arith.muli %part, %cPS : index
    %pend = arith.addi %start, %cPS : index
    %end = arith.minsi %pend, %len : index
    %nonempty = arith.cmpi slt, %start, %end : index
    %g4 = arith.muli %g, %c4 : index
    %kvg = arith.muli %kvh, %cG : index
    %seqhq = arith.muli %seq, %cHQ : index
    %btrow = arith.muli %seq, %cMB : index
    scf.if %nonempty {)");

  // --- Query: rotate (f64, exact for bf16 inputs), round to FP8, place by
  // the FP8 operand layout.
  w.emit(R"(
      %qvalid = arith.cmpi ult, %r, %cG : index
      %qrow = arith.select %qvalid, %r, %c0 : index
      %qh = arith.addi %kvg, %qrow : index
      %qh1 = arith.addi %seqhq, %qh : index
      %qbase = arith.muli %qh1, %cD : index
      %g16 = arith.muli %g, %c16 : index
      %g16i = arith.index_cast %g16 : index to i32
      %vg16 = vector.broadcast %g16i : i32 to vector<32xi32>
      %v_signbit = arith.constant dense<-2147483648> : vector<32xi32>
      %v_24 = arith.constant dense<24> : vector<32xi32>
      %v_23 = arith.constant dense<23> : vector<32xi32>
      %v_255 = arith.constant dense<255> : vector<32xi32>
      %v_127 = arith.constant dense<127> : vector<32xi32>
      %v_m6 = arith.constant dense<-6> : vector<32xi32>
      %v_15 = arith.constant dense<15> : vector<32xi32>
      %v_8 = arith.constant dense<8> : vector<32xi32>
      %v_7 = arith.constant dense<7> : vector<32xi32>
      %v_3 = arith.constant dense<3> : vector<32xi32>
      %v_1 = arith.constant dense<1> : vector<32xi32>
      %v_0 = arith.constant dense<0> : vector<32xi32>
      %v_f512 = arith.constant dense<512.0> : vector<32xf32>
      %v_f1 = arith.constant dense<1.0> : vector<32xf32>
      %v_f8 = arith.constant dense<8.0> : vector<32xf32>
      %v_d0 = arith.constant dense<0.0> : vector<32xf64>
      %v_f0 = arith.constant dense<0.0> : vector<32xf32>
      %v_invsqrt = arith.constant dense<$INVSQRT> : vector<32xf64>
      %v_dlim = arith.constant dense<$D> : vector<32xi32>
      %scaleA = arith.constant dense<127> : vector<4xi8>
      %scaleA8 = vector.bitcast %scaleA : vector<4xi8> to vector<4xf8E8M0FNU>)");
  // Lane (r, g) holds, for chunk c and byte j of the FP8 operand, logical
  // K = 128c + 64 [j >= 16] + 16g + j % 16: bits 0-3 and 6-7 of K are in
  // the lane, bits 4-5 (g) are across lanes (xor 16 and xor 32). The
  // butterfly's f64 sums are exact for bf16 inputs, so its order does not
  // change the result: it equals the reference's ExactF64 rotation.
  const int64_t logD = llvm::Log2_64(d);
  auto held = [&](int64_t j) { return d >= 128 || j < 16; };
  auto kOf = [&](int64_t c, int64_t j) {
    return 128 * c + (j >= 16 ? 64 : 0) + (j % 16); // + 16g
  };
  w.emit(R"(
      %qbase_g = arith.addi %qbase, %g16 : index)");
  for (int64_t c = 0; c < numChunks; ++c)
    for (int64_t j = 0; j < 32; ++j) {
      if (!held(j))
        continue;
      w.set("C", c);
      w.set("J", j);
      w.set("KOFF", kOf(c, j));
      w.emit(R"(
      %qk$C_$J = arith.constant $KOFF : index
      %qa$C_$J = arith.addi %qbase_g, %qk$C_$J : index
      %qe$C_$J = memref.load %q[%qa$C_$J] : memref<$QNx$QT>)");
      if (p.queryType == "f32")
        w.emit("      %qs0_$C_$J = arith.extf %qe$C_$J : f32 to f64");
      else
        w.emit("      %qs0_$C_$J = arith.extf %qe$C_$J : $QT to f64");
    }
  w.emit(R"(
      %c32_i64 = arith.constant 32 : i64
      %w64q = arith.constant 64 : i32)");
  // Position of K bit b: in-lane partner (j or c changes) or lane xor.
  for (int64_t b = 0; b < logD; ++b) {
    w.set("B", b);
    w.set("B1", b + 1);
    if (b == 4 || b == 5) {
      int64_t laneXor = b == 4 ? 16 : 32;
      w.set("LX", laneXor);
      w.set("GB", b - 4);
      w.emit(R"(
      %qlx$B = arith.constant $LX : i32
      %qgb$B = arith.constant $GB : index
      %qgs$B = arith.shrui %g, %qgb$B : index
      %qgu$B = arith.andi %qgs$B, %c1 : index
      %qup$B = arith.cmpi ne, %qgu$B, %c0 : index)");
      for (int64_t c = 0; c < numChunks; ++c)
        for (int64_t j = 0; j < 32; ++j) {
          if (!held(j))
            continue;
          w.set("C", c);
          w.set("J", j);
          std::string tag = std::to_string(b) + "_" + std::to_string(c) + "_" +
                            std::to_string(j);
          emitButterflyXorF64(w, "%qs" + tag, "%qlx" + std::to_string(b),
                              "%w64q", "%c32_i64", "%qup" + std::to_string(b),
                              "%qs" + std::to_string(b + 1) + "_" +
                                  std::to_string(c) + "_" + std::to_string(j));
        }
      continue;
    }
    for (int64_t c = 0; c < numChunks; ++c)
      for (int64_t j = 0; j < 32; ++j) {
        if (!held(j))
          continue;
        int64_t pc = c, pj = j;
        bool upper;
        if (b < 4) {
          pj = j ^ (int64_t(1) << b);
          upper = (j >> b) & 1;
        } else if (b == 6) {
          pj = j ^ 16;
          upper = j >= 16;
        } else { // b == 7: the second 128-chunk
          pc = c ^ 1;
          upper = c & 1;
        }
        w.set("C", c);
        w.set("J", j);
        w.set("PC", pc);
        w.set("PJ", pj);
        if (upper)
          w.emit("      %qs$B1_$C_$J = arith.subf %qs$B_$PC_$PJ, %qs$B_$C_$J "
                 ": f64");
        else
          w.emit("      %qs$B1_$C_$J = arith.addf %qs$B_$C_$J, %qs$B_$PC_$PJ "
                 ": f64");
      }
  }
  w.set("LAST", logD);
  w.emit(R"(
      %qinvsqrt = arith.constant $INVSQRT : f64
      %qzero = arith.constant 0.0 : f32
      %qvb = vector.broadcast %qvalid : i1 to vector<32xi1>)");
  for (int64_t c = 0; c < numChunks; ++c) {
    std::string elems;
    for (int64_t j = 0; j < 32; ++j) {
      w.set("C", c);
      w.set("J", j);
      if (held(j)) {
        w.emit(R"(
      %qn$C_$J = arith.mulf %qs$LAST_$C_$J, %qinvsqrt : f64
      %qf$C_$J = arith.truncf %qn$C_$J : f64 to f32)");
        elems += std::string(j ? ", " : "") + "%qf" + std::to_string(c) + "_" +
                 std::to_string(j);
      } else {
        elems += std::string(j ? ", " : "") + "%qzero";
      }
    }
    w.set("C", c);
    w.set("ELEMS", elems);
    w.emit(R"(
      %qrot$C = vector.from_elements $ELEMS : vector<32xf32>
      %qsel$C = arith.select %qvb, %qrot$C, %v_f0 : vector<32xi1>, vector<32xf32>)");
    std::string in = "%qsel" + std::to_string(c);
    std::string out = "%qcode" + std::to_string(c);
    emitFp8Encode(w, in, out);
    w.emit(R"(
      %qa8_$C = vector.bitcast %qcode$C : vector<32xi8> to vector<32xf8E4M3FN>)");
  }

  // --- Key loop.
  std::string oTypes, oInit, oArgs, oYield;
  for (int64_t t = 0; t < numDimTiles; ++t) {
    oTypes += ", vector<4xf32>";
    oInit += ", %o" + std::to_string(t) + " = %v4_0";
    oArgs += (t ? ", " : "") + std::string("%o") + std::to_string(t);
  }
  w.set("OTYPES", oTypes);
  w.set("OINIT", oInit);
  w.set("NRES", 2 + numDimTiles);
  w.emit(R"(
      %loop:$NRES = scf.for %t0 = %start to %end step %c32
          iter_args(%m = %v4_ninf, %l = %v4_0$OINIT)
          -> (vector<4xf32>, vector<4xf32>$OTYPES) {)");
  for (int64_t n = 0; n < 2; ++n) {
    w.set("N", n);
    w.set("N16", 16 * n);
    std::string ifTypes, zeroYield, kYield;
    for (int64_t c = 0; c < numChunks; ++c) {
      ifTypes += std::string(c ? ", " : "") + "vector<16xi8>, i32";
      zeroYield += std::string(c ? ", " : "") + "%zk, %i32_127";
    }
    w.set("IFTYPES", ifTypes);
    w.set("ZY", zeroYield);
    w.set("NIF", 2 * numChunks);
    w.emit(R"(
        %tn$N_a = arith.addi %t0, %r : index
        %cN$N = arith.constant $N16 : index
        %tn$N = arith.addi %tn$N_a, %cN$N : index
        %valid$N = arith.cmpi slt, %tn$N, %end : index
        %kld$N:$NIF = scf.if %valid$N -> ($IFTYPES) {
          %bi = arith.divui %tn$N, %cBS : index
          %bo = arith.remui %tn$N, %cBS : index
          %bta = arith.addi %btrow, %bi : index
          %blk32 = memref.load %bt[%bta] : memref<$BTNxi32>
          %blk = arith.index_cast %blk32 : i32 to index
          %s0 = arith.muli %blk, %cBS : index
          %s1 = arith.addi %s0, %bo : index
          %s2 = arith.muli %s1, %cHKV : index
          %s3 = arith.addi %s2, %kvh : index
          %slot = arith.muli %s3, %cSB : index
          %zkk = arith.constant dense<0> : vector<16xi8>)");
    std::string yield;
    for (int64_t c = 0; c < numChunks; ++c) {
      w.set("C", c);
      w.set("CB", 64 * c);
      w.set("CS", d / 2 + 4 * c);
      // With D < 128 the loaded values are filtered below.
      w.set("RAW", d < 128 ? "_raw" : "");
      w.emit(R"(
          %cb$C = arith.constant $CB : index
          %ko$C_a = arith.addi %slot, %cb$C : index
          %ko$C = arith.addi %ko$C_a, %g16 : index
          %kb$C$RAW = vector.load %cache[%ko$C] : memref<$CNxi8>, vector<16xi8>
          %cs$C = arith.constant $CS : index
          %kso$C_a = arith.addi %slot, %cs$C : index
          %kso$C = arith.addi %kso$C_a, %g : index
          %ks$C_b = memref.load %cache[%kso$C] : memref<$CNxi8>
          %ks$C$RAW = arith.extui %ks$C_b : i8 to i32)");
      if (d < 128) {
        // Only lane groups g < D/32 hold real K-blocks; the others feed
        // zero codes (and a neutral scale) to the K = 128 instruction.
        w.set("NBLK", d / 32);
        w.emit(R"(
          %cnb$C = arith.constant $NBLK : index
          %gin$C = arith.cmpi ult, %g, %cnb$C : index
          %kb$C = arith.select %gin$C, %kb$C_raw, %zkk : vector<16xi8>
          %ks$C = arith.select %gin$C, %ks$C_raw, %i32_127 : i32)");
      }
      yield += std::string(c ? ", " : "") + "%kb" + std::to_string(c) +
               ", %ks" + std::to_string(c);
    }
    w.set("KY", yield);
    w.emit(R"(
          scf.yield $KY : $IFTYPES
        } else {
          %zk = arith.constant dense<0> : vector<16xi8>
          scf.yield $ZY : $IFTYPES
        })");
    std::string acc = "%v4_0";
    for (int64_t c = 0; c < numChunks; ++c) {
      w.set("C", c);
      w.set("KI", 2 * c);
      w.set("SI", 2 * c + 1);
      w.set("ACC", acc);
      w.emit(R"(
        %b$N_$C = vector.bitcast %kld$N#$KI : vector<16xi8> to vector<32xf4E2M1FN>
        %sbv$N_$C = vector.broadcast %kld$N#$SI : i32 to vector<1xi32>
        %sb4$N_$C = vector.bitcast %sbv$N_$C : vector<1xi32> to vector<4xi8>
        %sb$N_$C = vector.bitcast %sb4$N_$C : vector<4xi8> to vector<4xf8E8M0FNU>
        %s$N_$C = amdgpu.scaled_mfma 16x16x128 (%scaleA8[0] * %qa8_$C) * (%sb$N_$C[0] * %b$N_$C) + $ACC
            : vector<4xf8E8M0FNU>, vector<32xf8E4M3FN>, vector<4xf8E8M0FNU>, vector<32xf4E2M1FN>, vector<4xf32>)");
      acc = "%s" + std::to_string(n) + "_" + std::to_string(c);
    }
    w.set("ACC", acc);
    w.emit(R"(
        %xs$N = arith.mulf $ACC, %v4_scale2 : vector<4xf32>
        %vb$N = vector.broadcast %valid$N : i1 to vector<4xi1>
        %x$N = arith.select %vb$N, %xs$N, %v4_ninf : vector<4xi1>, vector<4xf32>)");
  }

  // --- Online softmax over the 32 tokens of the tile: row i of this lane is
  // query head 4g+i; its 16 tokens live in the 16 lanes of lane group g.
  w.emit(R"(
        %mt0 = arith.maximumf %x0, %x1 : vector<4xf32>
        %ps0 = arith.constant 0 : index)");
  // Written out explicitly (shuffles per element, xor 1, 2, 4, 8).
  auto emitReduce = [&](const std::string &in, const std::string &out,
                        const std::string &op) {
    std::string cur = in;
    for (int off : {1, 2, 4, 8}) {
      std::string next = out + "_" + std::to_string(off);
      w.set("CUR", cur.substr(1));
      w.set("NEXT", next.substr(1));
      w.set("OFF", off);
      w.set("ROP", op);
      w.emit(R"(
        %$NEXT_off = arith.constant $OFF : i32
        %$NEXT_w = arith.constant 64 : i32)");
      for (int e = 0; e < 4; ++e) {
        w.set("E", e);
        w.emit(R"(
        %$NEXT_x$E = vector.extract %$CUR[$E] : f32 from vector<4xf32>
        %$NEXT_y$E, %$NEXT_ok$E = gpu.shuffle xor %$NEXT_x$E, %$NEXT_off, %$NEXT_w : f32
        %$NEXT_z$E = $ROP %$NEXT_x$E, %$NEXT_y$E : f32)");
      }
      w.emit(R"(
        %$NEXT = vector.from_elements %$NEXT_z0, %$NEXT_z1, %$NEXT_z2, %$NEXT_z3 : vector<4xf32>)");
      cur = next;
    }
    return cur;
  };
  std::string mt = emitReduce("%mt0", "%mtr", "arith.maximumf");
  w.set("MT", mt);
  w.emit(R"(
        %mnew = arith.maximumf %m, $MT : vector<4xf32>
        %mdiff = arith.subf %m, %mnew : vector<4xf32>
        %d0 = arith.subf %x0, %mnew : vector<4xf32>
        %d1 = arith.subf %x1, %mnew : vector<4xf32>)");
  // exp2 through the hardware instruction (v_exp_f32), element by element.
  for (const char *v : {"mdiff", "d0", "d1"}) {
    w.set("V", v);
    for (int e = 0; e < 4; ++e) {
      w.set("E", e);
      w.emit(R"(
        %$V_x$E = vector.extract %$V[$E] : f32 from vector<4xf32>
        %$V_e$E = rocdl.exp2 %$V_x$E f32 -> f32)");
    }
    w.emit(R"(
        %$V_exp = vector.from_elements %$V_e0, %$V_e1, %$V_e2, %$V_e3 : vector<4xf32>)");
  }
  w.emit(R"(
        %psum0 = arith.addf %d0_exp, %d1_exp : vector<4xf32>)");
  std::string ps = emitReduce("%psum0", "%psr", "arith.addf");
  w.set("PSUM", ps);
  w.emit(R"(
        %lsc = arith.mulf %l, %mdiff_exp : vector<4xf32>
        %lnew = arith.addf %lsc, $PSUM : vector<4xf32>)");
  // P -> LDS as bf16, [16 heads][32 tokens].
  for (int n = 0; n < 2; ++n) {
    for (int e = 0; e < 4; ++e) {
      w.set("N", n);
      w.set("E", e);
      w.set("N16", 16 * n);
      w.emit(R"(
        %pv$N_$E = vector.extract %d$N_exp[$E] : f32 from vector<4xf32>
        %pb$N_$E = arith.truncf %pv$N_$E : f32 to bf16
        %ce$N_$E = arith.constant $E : index
        %prow$N_$E = arith.addi %g4, %ce$N_$E : index
        %pi$N_$E_a = arith.muli %prow$N_$E, %c32 : index
        %cn$N_$E = arith.constant $N16 : index
        %pi$N_$E_b = arith.addi %pi$N_$E_a, %cn$N_$E : index
        %pi$N_$E = arith.addi %pi$N_$E_b, %r : index
        memref.store %pb$N_$E, %plds[%pi$N_$E] : memref<512xbf16, #gpu.address_space<workgroup>>)");
    }
  }
  // V tile -> LDS as bf16, transposed: vt[dim][token]. Lane l converts
  // tokens 4p .. 4p+3 (p = l % 8) of dims [q D/8, (q+1) D/8) (q = l / 8),
  // one FP4 byte (two dims) per v_cvt_scalef32_pk_bf16_fp4, and stores the
  // four tokens of each dim with one 8-byte LDS write. The four tokens share
  // a cache block (block sizes are multiples of 4) and a scale byte (D/8
  // dims lie in one 32-channel group).
  const int64_t sliceDims = d / 8;
  const int64_t sliceBytes = sliceDims / 2;
  const int64_t sliceWords = sliceBytes / 4;
  w.set("SLD", sliceDims);
  w.set("SLB", sliceBytes);
  w.set("SLW", sliceWords);
  w.emit(R"(
        %vp = arith.remui %lane, %c8 : index
        %vq = arith.divui %lane, %c8 : index
        %vp4 = arith.muli %vp, %c4 : index
        %vtok0 = arith.addi %t0, %vp4 : index
        %csld = arith.constant $SLD : index
        %vd0 = arith.muli %vq, %csld : index
        %csh = arith.constant 5 : index
        %vgrp = arith.shrui %vd0, %csh : index
        %cslb = arith.constant $SLB : index
        %vqb = arith.muli %vq, %cslb : index
        %vbi = arith.divui %vtok0, %cBS : index
        %vbo0 = arith.remui %vtok0, %cBS : index
        %vany = arith.cmpi slt, %vtok0, %end : index
        %vblk = scf.if %vany -> (index) {
          %bta = arith.addi %btrow, %vbi : index
          %blk32 = memref.load %bt[%bta] : memref<$BTNxi32>
          %blk = arith.index_cast %blk32 : i32 to index
          scf.yield %blk : index
        } else {
          scf.yield %c0 : index
        }
        %vs0 = arith.muli %vblk, %cBS : index
        %cvcode = arith.constant $VCODE : index
        %cvscale = arith.constant $VSCALE : index
        %c23 = arith.constant 23 : i32
        %vzw = arith.constant dense<0> : vector<$SLWxi32>
        %vzs = arith.constant 0.0 : f32)");
  // The four slots are consecutive slots of one block, in bounds whenever
  // the block is (the block id is 0 for a group past the end); tokens past
  // the end get zero codes and a zero scale (garbage bytes could be E8M0
  // 255, an infinite scale), so no branch per token.
  w.emit(R"(
        %vs1 = arith.addi %vs0, %vbo0 : index
        %vs2 = arith.muli %vs1, %cHKV : index
        %vs3 = arith.addi %vs2, %kvh : index
        %vslotb = arith.muli %vs3, %cSB : index
        %vstride = arith.muli %cHKV, %cSB : index)");
  for (int64_t i = 0; i < 4; ++i) {
    w.set("I", i);
    w.emit(R"(
        %vci$I = arith.constant $I : index
        %vtk$I = arith.addi %vtok0, %vci$I : index
        %vvalid$I = arith.cmpi slt, %vtk$I, %end : index
        %vso$I_a = arith.muli %vci$I, %vstride : index
        %vslot$I = arith.addi %vslotb, %vso$I_a : index
        %vco$I_a = arith.addi %vslot$I, %cvcode : index
        %vco$I = arith.addi %vco$I_a, %vqb : index
        %vbytes$I = vector.load %cache[%vco$I] {alignment = 4 : i64} : memref<$CNxi8>, vector<$SLBxi8>
        %vwr$I = vector.bitcast %vbytes$I : vector<$SLBxi8> to vector<$SLWxi32>
        %vsc$I_a = arith.addi %vslot$I, %cvscale : index
        %vsc$I = arith.addi %vsc$I_a, %vgrp : index
        %vsb$I = memref.load %cache[%vsc$I] : memref<$CNxi8>
        %vsi$I = arith.extui %vsb$I : i8 to i32
        %vss$I = arith.shli %vsi$I, %c23 : i32
        %vsr$I = arith.bitcast %vss$I : i32 to f32
        %vld$I_0 = arith.select %vvalid$I, %vwr$I, %vzw : vector<$SLWxi32>
        %vld$I_1 = arith.select %vvalid$I, %vsr$I, %vzs : f32)");
    for (int64_t b = 0; b < sliceBytes; ++b) {
      w.set("B", b);
      w.set("W", b / 4);
      w.set("SEL", b % 4);
      w.emit(R"(
        %vw$I_$B = vector.extract %vld$I_0[$W] : i32 from vector<$SLWxi32>
        %vpk$I_$B = rocdl.cvt.scalef32.pk.bf16.fp4 %vw$I_$B[$SEL], %vld$I_1 : vector<2xbf16>
        %ve$I_$B_0 = vector.extract %vpk$I_$B[0] : bf16 from vector<2xbf16>
        %ve$I_$B_1 = vector.extract %vpk$I_$B[1] : bf16 from vector<2xbf16>)");
    }
  }
  for (int64_t j = 0; j < sliceDims; ++j) {
    w.set("J", j);
    w.set("JB", j / 2);
    w.set("JH", j % 2);
    w.emit(R"(
        %vcol$J = vector.from_elements %ve0_$JB_$JH, %ve1_$JB_$JH, %ve2_$JB_$JH, %ve3_$JB_$JH : vector<4xbf16>
        %vcj$J = arith.constant $J : index
        %vdim$J = arith.addi %vd0, %vcj$J : index
        %vsa$J_a = arith.muli %vdim$J, %c32 : index
        %vsa$J = arith.addi %vsa$J_a, %vp4 : index
        vector.store %vcol$J, %vt[%vsa$J] {alignment = 8 : i64} : memref<$VTNxbf16, #gpu.address_space<workgroup>>, vector<4xbf16>)");
  }
  w.emit(R"(
        gpu.barrier
        %g8 = arith.muli %g, %c8 : index
        %par = arith.muli %r, %c32 : index
        %pa = arith.addi %par, %g8 : index
        %pA = vector.load %plds[%pa] {alignment = 16 : i64} : memref<512xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
        )");
  std::string yield;
  for (int64_t t = 0; t < numDimTiles; ++t) {
    w.set("T", t);
    w.set("T16", 16 * t);
    w.emit(R"(
        %ct$T = arith.constant $T16 : index
        %vrow$T = arith.addi %ct$T, %r : index
        %vba$T_a = arith.muli %vrow$T, %c32 : index
        %vba$T = arith.addi %vba$T_a, %g8 : index
        %vB$T = vector.load %vt[%vba$T] {alignment = 16 : i64} : memref<$VTNxbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
        %os$T = arith.mulf %o$T, %mdiff_exp : vector<4xf32>
        %on$T = amdgpu.mfma 16x16x32 %pA * %vB$T + %os$T blgp = none : vector<8xbf16>, vector<8xbf16>, vector<4xf32>)");
    yield += ", %on" + std::to_string(t);
  }
  w.set("OY", yield);
  w.emit(R"(
        gpu.barrier
        scf.yield %mnew, %lnew$OY : vector<4xf32>, vector<4xf32>$OTYPES
      })");

  // --- Rows 4g+e (e < 4) of the group that are real query heads write
  // out[.., 16t + r] for every 16-wide tile t and, from lane r = 0, max (in
  // natural-log units) and sum: the loop's normalised results, or for an
  // empty partition zeros, -inf and 0.
  auto emitRowWrites = [&](bool computed) {
    for (int e = 0; e < 4; ++e) {
      w.set("E", e);
      w.emit(R"(
      %we$E = arith.constant $E : index
      %wrow$E = arith.addi %g4, %we$E : index
      %wvalid$E = arith.cmpi ult, %wrow$E, %cG : index
      scf.if %wvalid$E {
        %wh = arith.addi %kvg, %wrow$E : index
        %wsh = arith.addi %seqhq, %wh : index
        %wsp = arith.muli %wsh, %cP : index
        %wbase = arith.addi %wsp, %part : index
        %wob = arith.muli %wbase, %cD : index)");
      if (computed)
        w.emit(R"(
        %wsum = vector.extract %loop#1[$E] : f32 from vector<4xf32>
        %wm2 = vector.extract %loop#0[$E] : f32 from vector<4xf32>
        %wmax = arith.mulf %wm2, %ln2 : f32
        %one = arith.constant 1.0 : f32
        %inv = arith.divf %one, %wsum : f32)");
      for (int64_t t = 0; t < numDimTiles; ++t) {
        w.set("T", t);
        w.set("T16", 16 * t);
        w.set("LI", 2 + t);
        if (computed)
          w.emit(R"(
        %wo$T = vector.extract %loop#$LI[$E] : f32 from vector<4xf32>
        %wv$T = arith.mulf %wo$T, %inv : f32)");
        w.set("VAL", computed ? "%wv" + std::to_string(t) : "%f0");
        w.emit(R"(
        %wc$T = arith.constant $T16 : index
        %wa$T_a = arith.addi %wob, %wc$T : index
        %wa$T = arith.addi %wa$T_a, %r : index
        memref.store $VAL, %out[%wa$T] : memref<$ONxf32>)");
      }
      w.set("MAXV", computed ? "%wmax" : "%ninf");
      w.set("SUMV", computed ? "%wsum" : "%f0");
      w.emit(R"(
        %r0 = arith.cmpi eq, %r, %c0 : index
        scf.if %r0 {
          memref.store $MAXV, %mx[%wbase] : memref<$MNxf32>
          memref.store $SUMV, %sm[%wbase] : memref<$MNxf32>
        }
      })");
    }
  };
  emitRowWrites(/*computed=*/true);
  w.emit(R"(
    } else {)");
  emitRowWrites(/*computed=*/false);
  w.emit(R"(
    }
    gpu.return
  })");
  return w.str();
}
