//===- Pipelines.h - uq pass pipelines --------------------------*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// The pass pipelines of uq as library functions with an options struct,
// registered once (uq::registerAllPasses) and reused unchanged by uq-opt,
// uq-run and the Python bindings.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_PIPELINES_PIPELINES_H
#define UQ_PIPELINES_PIPELINES_H

#include "uq/Conversion/UQToLinalg/UQToLinalg.h"

#include "mlir/Pass/PassOptions.h"

#include <memory>

namespace mlir {
class OpPassManager;
class Pass;
} // namespace mlir

namespace uq {

/// Options of the CPU pipeline (`uq-cpu-pipeline`).
struct CPUPipelineOptions
    : public mlir::PassPipelineOptions<CPUPipelineOptions> {
  PassOptions::Option<RotationArithmetic> rotationArithmetic{
      *this, "rotation-arithmetic",
      llvm::cl::desc("Arithmetic of the Walsh-Hadamard rotation"),
      llvm::cl::init(RotationArithmetic::ExactF64),
      llvm::cl::values(
          clEnumValN(RotationArithmetic::ExactF64, "exact-f64",
                     "f64 butterfly, one rounding (the reference's default)"),
          clEnumValN(RotationArithmetic::ButterflyF32, "butterfly-f32",
                     "f32 butterfly rounded per stage"))};
  PassOptions::Option<bool> waveKernels{
      *this, "wave-kernels",
      llvm::cl::desc("Run cache writes and attention through the GPU path's "
                     "wave-level kernels (convert-uq-to-wave, launches "
                     "inlined as loops) instead of convert-uq-to-linalg"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> partitionSize{
      *this, "partition-size",
      llvm::cl::desc("Split-K partition of the wave-level attention kernels "
                     "(tokens; with wave-kernels)"),
      llvm::cl::init(256)};
  PassOptions::Option<bool> emitCInterface{
      *this, "emit-c-interface",
      llvm::cl::desc("Give every function a _mlir_ciface_ wrapper that takes "
                     "memref descriptors by pointer (what uq-run calls)"),
      llvm::cl::init(true)};
};

/// `uq-check-input-sizes`: uq::checkValueSizes as a pass (any op), the first
/// pass of every uq pipeline (CPU, uq-gpu-wave, uq-gpu-lanes,
/// uq-gpu-kernels, uq-gpu-to-rocdl): no vector of more than
/// InputLimits::kMaxVectorElements elements and no constant of more
/// than kMaxConstantElements reaches a pass (options `max-vector-elements`,
/// `max-constant-elements`).
std::unique_ptr<mlir::Pass> createCheckInputSizesPass();
void registerCheckInputSizesPass();

/// Lowers uq ops on tensors in a module to the LLVM dialect for the host
/// CPU: the input size check (createCheckInputSizesPass),
/// convert-uq-to-linalg, one-shot bufferization across function
/// boundaries (identity layouts), buffer deallocation, loops, LLVM.
void buildCPUPipeline(mlir::OpPassManager &pm,
                      const CPUPipelineOptions &options);

/// Registers `uq-cpu-pipeline` with the global pipeline registry.
void registerCPUPipeline();

} // namespace uq

#endif // UQ_PIPELINES_PIPELINES_H
