//===- GPUPipeline.h - The gfx950 pass pipelines ----------------*- C++ -*-===//
//
// Registered once (`uq-gpu-kernels`, `uq-gpu-to-rocdl`) and used unchanged by
// uq-opt, uq-compile, the C API and Python.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_PIPELINES_GPUPIPELINE_H
#define UQ_PIPELINES_GPUPIPELINE_H

#include <cstdint>
#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace uq {

struct GPUPipelineOptions {
  std::string chip = "gfx950";
  /// Tokens per split-K partition of decode attention.
  int64_t partitionSize = 256;
};

/// uq ops -> gpu.func kernels with amdgpu/rocdl ops (on a builtin.module).
void buildKernelPipeline(mlir::OpPassManager &pm,
                         const GPUPipelineOptions &options);

/// The kernels' gpu.module -> llvm/rocdl dialects (on a builtin.module).
void buildROCDLPipeline(mlir::OpPassManager &pm,
                        const GPUPipelineOptions &options);

/// Registers both pipelines with the pass registry.
void registerGPUPipelines();

} // namespace uq

#endif // UQ_PIPELINES_GPUPIPELINE_H
