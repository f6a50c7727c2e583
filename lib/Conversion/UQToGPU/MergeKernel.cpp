//===- MergeKernel.cpp - Split-K merge kernel -----------------------------===//
//
// Flash-decoding's second half: one wave per (query head, sequence), lanes
// over head_dim. Partitions whose sum is 0 (empty) are skipped, so -inf
// maxima never meet each other in a subtraction.
//
//===----------------------------------------------------------------------===//

#include "uq/Conversion/UQToGPU/Kernels.h"

#include "KernelWriter.h"

#include <cmath>

using namespace uq::kernels;

std::string uq::kernels::mergeKernel(const MergeKernelParams &p) {
  KernelWriter w;
  w.set("NAME", p.name);
  w.set("S", p.numSeqs);
  w.set("HQ", p.numQHeads);
  w.set("P", p.numPartitions);
  w.set("D", p.headDim);
  w.set("ON", p.numSeqs * p.numQHeads * p.numPartitions * p.headDim);
  w.set("MN", p.numSeqs * p.numQHeads * p.numPartitions);
  w.set("RN", p.numSeqs * p.numQHeads * p.headDim);
  w.set("RT", p.resultType);
  w.set("LOG2E", f32Literal(static_cast<float>(1.0 / std::log(2.0))));
  std::string sinkArg =
      p.hasSinks ? ", %sinks: memref<" + std::to_string(p.numQHeads) + "xf32>"
                 : "";
  w.set("SINKARG", sinkArg);
  w.emit(R"(
  gpu.func @$NAME(%out: memref<$ONxf32>, %mx: memref<$MNxf32>,
                  %sm: memref<$MNxf32>$SINKARG, %res: memref<$RNx$RT>)
      kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %lane = gpu.thread_id x
    %h = gpu.block_id x
    %seq = gpu.block_id y
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %cP = arith.constant $P : index
    %cD = arith.constant $D : index
    %cHQ = arith.constant $HQ : index
    %f0 = arith.constant 0.0 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %log2e = arith.constant $LOG2E : f32
    %sh_a = arith.muli %seq, %cHQ : index
    %sh = arith.addi %sh_a, %h : index
    %pbase = arith.muli %sh, %cP : index)");
  if (p.hasSinks)
    w.emit(R"(
    %sink = memref.load %sinks[%h] : memref<$HQxf32>)");
  else
    w.emit(R"(
    %sink = arith.addf %ninf, %f0 : f32)");
  w.emit(R"(
    // M = max(sink, max over non-empty partitions).
    %gmax = scf.for %p = %c0 to %cP step %c1 iter_args(%acc = %sink) -> (f32) {
      %i = arith.addi %pbase, %p : index
      %s = memref.load %sm[%i] : memref<$MNxf32>
      %m = memref.load %mx[%i] : memref<$MNxf32>
      %nz = arith.cmpf ogt, %s, %f0 : f32
      %mm = arith.maximumf %acc, %m : f32
      %n = arith.select %nz, %mm, %acc : f32
      scf.yield %n : f32
    }
    %finite = arith.cmpf one, %gmax, %ninf : f32
    %mref = arith.select %finite, %gmax, %f0 : f32
    // Denominator: sum_p s_p e^(m_p - M) (+ e^(sink - M)).
    %sdiff = arith.subf %sink, %mref : f32
    %sl = arith.mulf %sdiff, %log2e : f32
    %se = rocdl.exp2 %sl f32 -> f32
    %den0 = scf.for %p = %c0 to %cP step %c1 iter_args(%acc = %se) -> (f32) {
      %i = arith.addi %pbase, %p : index
      %s = memref.load %sm[%i] : memref<$MNxf32>
      %m = memref.load %mx[%i] : memref<$MNxf32>
      %nz = arith.cmpf ogt, %s, %f0 : f32
      %md = arith.subf %m, %mref : f32
      %ml = arith.mulf %md, %log2e : f32
      %e = rocdl.exp2 %ml f32 -> f32
      %w = arith.mulf %s, %e : f32
      %wz = arith.select %nz, %w, %f0 : f32
      %n = arith.addf %acc, %wz : f32
      scf.yield %n : f32
    }
    %dpos = arith.cmpf ogt, %den0, %f0 : f32
    %one = arith.constant 1.0 : f32
    %den = arith.select %dpos, %den0, %one : f32
    %inv = arith.divf %one, %den : f32)");
  // The merged value of dim d = lane + 64 k; its weighted partition sum.
  auto emitValue = [&](const std::string &d, const std::string &r) {
    w.set("DD", d.substr(1));
    w.set("RR", r.substr(1));
    w.emit(R"(
      %$RR_num = scf.for %p = %c0 to %cP step %c1 iter_args(%acc = %f0) -> (f32) {
        %i = arith.addi %pbase, %p : index
        %s = memref.load %sm[%i] : memref<$MNxf32>
        %m = memref.load %mx[%i] : memref<$MNxf32>
        %nz = arith.cmpf ogt, %s, %f0 : f32
        %n = scf.if %nz -> (f32) {
          %md = arith.subf %m, %mref : f32
          %ml = arith.mulf %md, %log2e : f32
          %e = rocdl.exp2 %ml f32 -> f32
          %w = arith.mulf %s, %e : f32
          %oi_a = arith.muli %i, %cD : index
          %oi = arith.addi %oi_a, %$DD : index
          %o = memref.load %out[%oi] : memref<$ONxf32>
          %t = arith.mulf %w, %o : f32
          %a = arith.addf %acc, %t : f32
          scf.yield %a : f32
        } else {
          scf.yield %acc : f32
        }
        scf.yield %n : f32
      }
      %$RR = arith.mulf %$RR_num, %inv : f32)");
  };
  auto emitStore = [&](const std::string &d, const std::string &r) {
    w.set("DD", d.substr(1));
    w.set("RR", r.substr(1));
    w.emit(R"(
      %$RR_ia = arith.muli %sh, %cD : index
      %$RR_i = arith.addi %$RR_ia, %$DD : index)");
    if (p.resultType == "f32")
      w.emit(R"(
      memref.store %$RR, %res[%$RR_i] : memref<$RNxf32>)");
    else
      w.emit(R"(
      %$RR_t = arith.truncf %$RR : f32 to $RT
      memref.store %$RR_t, %res[%$RR_i] : memref<$RNx$RT>)");
  };
  if (!p.rotateOutput) {
    w.emit(R"(
    scf.for %d = %lane to %cD step %c64 {)");
    emitValue("%d", "%r");
    emitStore("%d", "%r");
    w.emit(R"(
    })");
  } else {
    // Values coded in the rotated domain: rotate the merged row back with
    // the reference's butterfly (spans 1, 2, ..., D/2; (a, b) -> (a + b,
    // a - b)) in f64, then one multiply by 1/sqrt(D). Dim d = lane + 64 k:
    // spans below 64 exchange with lane ^ span, larger ones stay in the
    // lane (k ^ span / 64).
    const int64_t perLane = p.headDim / 64;
    w.set("INVSQRT", f64Literal(1.0 / std::sqrt(double(p.headDim))));
    w.emit(R"(
    %c32_i64 = arith.constant 32 : i64
    %w64 = arith.constant 64 : i32
    %invsqrt = arith.constant $INVSQRT : f64)");
    for (int64_t k = 0; k < perLane; ++k) {
      w.set("K", k);
      w.set("K64", 64 * k);
      w.emit(R"(
    %dk$K = arith.constant $K64 : index
    %d$K = arith.addi %lane, %dk$K : index)");
      emitValue("%d" + std::to_string(k), "%r" + std::to_string(k));
      w.emit(R"(
    %b0_$K = arith.extf %r$K : f32 to f64)");
    }
    int stage = 0;
    for (int64_t span = 1; span < p.headDim; span *= 2, ++stage) {
      w.set("ST", stage);
      w.set("ST1", stage + 1);
      if (span < 64) {
        w.set("SPAN", span);
        w.emit(R"(
    %sx$ST = arith.constant $SPAN : i32
    %sxi$ST = arith.constant $SPAN : index
    %sbit$ST = arith.andi %lane, %sxi$ST : index
    %sup$ST = arith.cmpi ne, %sbit$ST, %c0 : index)");
        for (int64_t k = 0; k < perLane; ++k) {
          w.set("K", k);
          std::string tag = std::to_string(stage) + "_" + std::to_string(k);
          emitButterflyXorF64(
              w, "%b" + tag, "%sx" + std::to_string(stage), "%w64", "%c32_i64",
              "%sup" + std::to_string(stage),
              "%b" + std::to_string(stage + 1) + "_" + std::to_string(k));
        }
      } else {
        const int64_t kx = span / 64;
        for (int64_t k = 0; k < perLane; ++k) {
          w.set("K", k);
          w.set("PK", k ^ kx);
          if ((k & kx) == 0)
            w.emit("    %b$ST1_$K = arith.addf %b$ST_$K, %b$ST_$PK : f64");
          else
            w.emit("    %b$ST1_$K = arith.subf %b$ST_$PK, %b$ST_$K : f64");
        }
      }
    }
    w.set("LAST", stage);
    for (int64_t k = 0; k < perLane; ++k) {
      w.set("K", k);
      w.emit(R"(
    %bn$K = arith.mulf %b$LAST_$K, %invsqrt : f64
    %rr$K = arith.truncf %bn$K : f64 to f32)");
      emitStore("%d" + std::to_string(k), "%rr" + std::to_string(k));
    }
  }
  w.emit(R"(
    gpu.return
  })");
  return w.str();
}
