//===- GPUPipeline.cpp - The gfx950 pass pipelines ------------------------===//

#include "uq/Pipelines/GPUPipeline.h"

#include "uq/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void uq::buildKernelPipeline(OpPassManager &pm,
                             const GPUPipelineOptions &options) {
  ConvertUQToGPUPassOptions opts;
  opts.partitionSize = options.partitionSize;
  opts.chip = options.chip;
  // Instantiate the kernel templates for the ops' static sizes.
  pm.addPass(createConvertUQToGPUPass(opts));
  // Fold the templates' constant arithmetic before lowering.
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
}

void uq::buildROCDLPipeline(OpPassManager &pm,
                            const GPUPipelineOptions &options) {
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  // Structured control flow first: the GPU-to-ROCDL conversion expects cf.
  kernels.addPass(createSCFToControlFlowPass());
  // math ops become LLVM intrinsics (not __ocml calls, which need ROCm's
  // device libraries that do not exist here).
  kernels.addPass(createConvertMathToLLVMPass());
  // gpu/amdgpu/vector/memref/arith -> llvm + rocdl; bare pointers: every
  // buffer argument is one 8-byte pointer in the kernarg segment.
  ConvertGpuOpsToROCDLOpsOptions rocdl;
  rocdl.chipset = options.chip;
  rocdl.useBarePtrCallConv = true;
  kernels.addPass(createConvertGpuOpsToROCDLOps(rocdl));
  kernels.addPass(createReconcileUnrealizedCastsPass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
}

namespace {
struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Target chip (gfx950)"),
                           llvm::cl::init("gfx950")};
  Option<int64_t> partitionSize{
      *this, "partition-size",
      llvm::cl::desc("Tokens per split-K partition (multiple of 32)"),
      llvm::cl::init(256)};
  uq::GPUPipelineOptions get() const {
    uq::GPUPipelineOptions o;
    o.chip = chip;
    o.partitionSize = partitionSize;
    return o;
  }
};
} // namespace

void uq::registerGPUPipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "uq-gpu-kernels", "uq ops to gfx950 gpu.func kernels",
      [](OpPassManager &pm, const PipelineOptions &o) {
        buildKernelPipeline(pm, o.get());
      });
  PassPipelineRegistration<PipelineOptions>(
      "uq-gpu-to-rocdl", "uq kernels' gpu.module to the llvm/rocdl dialects",
      [](OpPassManager &pm, const PipelineOptions &o) {
        buildROCDLPipeline(pm, o.get());
      });
}
