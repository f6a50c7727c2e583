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
    %inv = arith.divf %one, %den : f32
    scf.for %d = %lane to %cD step %c64 {
      %num = scf.for %p = %c0 to %cP step %c1 iter_args(%acc = %f0) -> (f32) {
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
          %oi = arith.addi %oi_a, %d : index
          %o = memref.load %out[%oi] : memref<$ONxf32>
          %t = arith.mulf %w, %o : f32
          %a = arith.addf %acc, %t : f32
          scf.yield %a : f32
        } else {
          scf.yield %acc : f32
        }
        scf.yield %n : f32
      }
      %r = arith.mulf %num, %inv : f32
      %ri_a = arith.muli %sh, %cD : index
      %ri = arith.addi %ri_a, %d : index)");
  if (p.resultType == "f32")
    w.emit(R"(
      memref.store %r, %res[%ri] : memref<$RNxf32>)");
  else
    w.emit(R"(
      %rt = arith.truncf %r : f32 to $RT
      memref.store %rt, %res[%ri] : memref<$RNx$RT>)");
  w.emit(R"(
    }
    gpu.return
  })");
  return w.str();
}
