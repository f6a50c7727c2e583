//===- CPUPipeline.cpp - uq ops on tensors to LLVM for the host -----------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "uq/Pipelines/Pipelines.h"

#include "uq/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void uq::buildCPUPipeline(OpPassManager &pm,
                          const CPUPipelineOptions &options) {
  // No vector or constant past uq's input bound reaches a pass: the vector
  // lowering below unrolls an n-D vector into one op per row and turns
  // vector.step into a constant of every element (docs/robustness.md).
  pm.addPass(createCheckInputSizesPass());
  // With wave-kernels: the GPU path's tiling stage, its launches run as
  // loops, its tile ops as host vector code (uq ops left over still go
  // through linalg below).
  if (options.waveKernels) {
    ConvertUQToWavePassOptions toWave;
    toWave.partitionSize = options.partitionSize;
    // One wave per prefill workgroup: the host runs a workgroup as one
    // wave-level program (no LDS, no barriers; docs/gpu-compiler.md).
    toWave.prefillWaves = 1;
    pm.addPass(createConvertUQToWavePass(toWave));
    pm.addPass(createInlineKernelsOnHostPass());
    pm.addPass(createLowerTileOpsPass());
  }
  // uq ops -> linalg/tensor/arith/math/scf on tensors; first, since every
  // later pass knows nothing of uq.
  ConvertUQToLinalgPassOptions toLinalg;
  toLinalg.rotationArithmetic = options.rotationArithmetic;
  pm.addPass(createConvertUQToLinalgPass(toLinalg));
  // Ordinary tensor code next to the uq ops (arith/math on whole tensors,
  // e.g. `arith.mulf %a, %b : tensor<...>`) has no bufferization; as
  // linalg.generic it has (upstream's convert-elementwise-to-linalg).
  pm.addPass(createConvertElementwiseToLinalgPass());
  // Share the lowering's constants; no canonicalization on tensors, which
  // would fold the copying generics that let bufferization write slots and
  // row tiles in place (it runs after bufferization instead).
  pm.addPass(createCSEPass());

  // Tensors -> buffers, module-wide so that function arguments and results
  // become plain (identity-layout) memrefs the runner can describe.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Frees temporaries; must follow bufferization and precede the lowering
  // of scf (it reasons about structured control flow).
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  // The clones and deallocs it inserts -> memref.alloc/copy/dealloc.
  pm.addPass(createConvertBufferizationToMemRefPass());
  // Fold reshapes, subviews and constants on buffers.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // linalg on buffers -> scf loops in iterator order (keeps the reference's
  // summation order), then affine/strided metadata -> arith.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  // Arith ops without a direct LLVM lowering (min/max, ceildiv) first.
  pm.addPass(arith::createArithExpandOpsPass());

  // Vector code (wave-level kernels on the host): multi-dim reductions to
  // 1-D ones, then everything vector -> llvm.
  pm.addNestedPass<func::FuncOp>(vector::createLowerVectorMultiReductionPass());
  pm.addPass(createConvertVectorToLLVMPass());
  // The vector lowering's placeholders (ub.poison).
  pm.addPass(createUBToLLVMConversionPass());
  // C wrappers must be requested on func.func, before func -> llvm.
  if (options.emitCInterface)
    pm.addNestedPass<func::FuncOp>(LLVM::createLLVMRequestCWrappersPass());
  // memref before func (descriptors), everything before the cast cleanup.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void uq::registerCPUPipeline() {
  PassPipelineRegistration<CPUPipelineOptions>(
      "uq-cpu-pipeline",
      "Lower uq ops on tensors to the LLVM dialect for the host CPU "
      "(convert-uq-to-linalg, bufferize, loops, LLVM)",
      buildCPUPipeline);
}
