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
  /// Waves per workgroup of the paged-attention prefill kernel.
  int64_t prefillWaves = 4;
  /// MFMA rows per wave of the paged-attention prefill kernel.
  int64_t prefillRows = 16;
  /// Partitions per step of the decode merge kernel's loop.
  int64_t mergeChunk = 32;
  /// The prefill kernel converts FP4 value tiles once per workgroup into
  /// LDS (the default; false: in every wave).
  bool prefillSharedV = true;
  /// Partitions per step of the paged-attention merge kernel's loop.
  int64_t prefillMergeChunk = 8;
  /// uq.decode_attention's partition rule (DecodePartitions.h).
  int64_t maxPartitionTokens = 2048;
  int64_t minPartitionTokens = 64;
  int64_t decodeWorkgroups = 1024;
};

/// Stage 1 (tiling): uq ops -> wave-level gpu.func kernels (whole-wave
/// vectors, no lane layouts) and host launches (on a builtin.module).
void buildWavePipeline(mlir::OpPassManager &pm,
                       const GPUPipelineOptions &options);

/// Stage 2 (distribution, gfx950): lane layouts, per-lane code with
/// amdgpu/rocdl/gpu ops, kernel buffer arguments as global pointers.
/// \p stopAfterLayouts ends after uq-assign-lane-layouts.
void buildLanePipeline(mlir::OpPassManager &pm,
                       const GPUPipelineOptions &options,
                       bool stopAfterLayouts = false);

/// Both: uq ops -> per-lane gpu.func kernels.
void buildKernelPipeline(mlir::OpPassManager &pm,
                         const GPUPipelineOptions &options);

/// The kernels' gpu.module -> llvm/rocdl dialects (on a builtin.module).
void buildROCDLPipeline(mlir::OpPassManager &pm,
                        const GPUPipelineOptions &options);

/// Registers the pipelines (uq-gpu-wave, uq-gpu-lanes, uq-gpu-kernels,
/// uq-gpu-to-rocdl) with the pass registry.
void registerGPUPipelines();

} // namespace uq

#endif // UQ_PIPELINES_GPUPIPELINE_H
