//===- GPUPipeline.cpp - The gfx950 pass pipelines ------------------------===//

#include "uq/Pipelines/GPUPipeline.h"

#include "uq/Conversion/Passes.h"
#include "uq/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace {
/// Most elements of one vector in per-lane code. A lane has 512 32-bit
/// registers (VGPRs and AGPRs); uq's own per-lane kernels use at most 64
/// elements per vector (D = 128). Wave-level code handed over as per-lane
/// code (`uq-compile --from=lanes`) has whole-tile vectors, and a tile of
/// 2^31 rows made the upstream ROCDL lowering run for minutes.
constexpr int64_t kMaxLaneVectorElements = 4096;

/// The first step of the ROCDL pipeline: the kernels are per-lane code, as
/// uq-distribute-to-lanes and uq-lower-kernel-abi leave them (no vector of
/// more than kMaxLaneVectorElements elements; kernel arguments that are
/// memrefs have a static shape and the identity layout, as the bare-pointer
/// calling convention needs, instead of the upstream lowering's unlocated
/// error). Located errors, so that stage IR from another compiler
/// (`--from=lanes`) fails fast and clearly (docs/robustness.md).
struct CheckLaneCodePass
    : public PassWrapper<CheckLaneCodePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckLaneCodePass)
  StringRef getArgument() const override { return "uq-check-lane-code"; }
  StringRef getDescription() const override {
    return "Check that gpu.module kernels are per-lane code before the "
           "ROCDL lowering";
  }
  void runOnOperation() override {
    bool failedAny = false;
    auto tooWide = [&](Operation *op, Type t) {
      auto v = dyn_cast<VectorType>(t);
      if (!v || v.getNumElements() <= kMaxLaneVectorElements)
        return false;
      op->emitOpError() << "is not per-lane code: " << t << " has "
                        << v.getNumElements()
                        << " elements, more than a lane holds ("
                        << kMaxLaneVectorElements
                        << "); wave-level kernels compile --from=wave";
      return true;
    };
    getOperation().walk([&](gpu::GPUModuleOp m) {
      m.walk([&](Operation *op) {
        if (auto f = dyn_cast<gpu::GPUFuncOp>(op); f && f.isKernel())
          for (BlockArgument a : f.getArguments())
            if (auto t = dyn_cast<MemRefType>(a.getType());
                t && (!t.hasStaticShape() || !t.getLayout().isIdentity())) {
              f.emitOpError()
                  << "is not per-lane code: kernel argument "
                  << a.getArgNumber() << " is " << t
                  << "; per-lane kernels take buffers as bare pointers "
                     "(uq-lower-kernel-abi) or static identity memrefs";
              failedAny = true;
              return WalkResult::interrupt();
            }
        for (Type t : op->getResultTypes())
          if (tooWide(op, t)) {
            failedAny = true;
            return WalkResult::interrupt();
          }
        for (Region &r : op->getRegions())
          for (Block &b : r)
            for (BlockArgument a : b.getArguments())
              if (tooWide(op, a.getType())) {
                failedAny = true;
                return WalkResult::interrupt();
              }
        return WalkResult::advance();
      });
    });
    if (failedAny)
      signalPassFailure();
  }
};
} // namespace

void uq::buildWavePipeline(OpPassManager &pm,
                           const GPUPipelineOptions &options) {
  // Every stage entry point first checks uq's input bound on vector and
  // constant sizes (docs/robustness.md): whatever IR a pipeline is given
  // (uq-opt takes any), no pass of it sees a value past the bound.
  pm.addPass(createCheckInputSizesPass());
  ConvertUQToWavePassOptions opts;
  opts.partitionSize = options.partitionSize;
  opts.prefillWaves = options.prefillWaves;
  opts.prefillRows = options.prefillRows;
  opts.mergeChunk = options.mergeChunk;
  opts.prefillSharedV = options.prefillSharedV;
  opts.prefillMergeChunk = options.prefillMergeChunk;
  opts.maxPartitionTokens = options.maxPartitionTokens;
  opts.minPartitionTokens = options.minPartitionTokens;
  opts.decodeWorkgroups = options.decodeWorkgroups;
  // Tile every uq op into wave-level kernels and host launches.
  pm.addPass(createConvertUQToWavePass(opts));
  // Fold constant index arithmetic (kernels) and static sizes (host
  // launches) before layouts are chosen.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void uq::buildLanePipeline(OpPassManager &pm,
                           const GPUPipelineOptions &options,
                           bool stopAfterLayouts) {
  // Wave-level IR from another compiler enters here (uq-compile
  // --from=wave, uq-opt --uq-gpu-lanes).
  pm.addPass(createCheckInputSizesPass());
  // A lane layout for every whole-wave vector (MFMA operand layouts of
  // gfx950-notes.md); then per-lane code from them.
  AssignLaneLayoutsPassOptions layouts;
  layouts.chip = options.chip;
  pm.addPass(createAssignLaneLayoutsPass(layouts));
  if (stopAfterLayouts)
    return;
  DistributeToLanesPassOptions lanes;
  lanes.chip = options.chip;
  pm.addPass(createDistributeToLanesPass(lanes));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  // Buffer arguments as bare global pointers (the kernel JSON's ABI); last,
  // so that every earlier stage sees memrefs.
  pm.addPass(createLowerKernelABIPass());
}

void uq::buildKernelPipeline(OpPassManager &pm,
                             const GPUPipelineOptions &options) {
  buildWavePipeline(pm, options);
  buildLanePipeline(pm, options);
}

void uq::buildROCDLPipeline(OpPassManager &pm,
                            const GPUPipelineOptions &options) {
  pm.addPass(createCheckInputSizesPass());
  pm.addPass(std::make_unique<CheckLaneCodePass>());
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
  Option<int64_t> prefillWaves{
      *this, "prefill-waves",
      llvm::cl::desc("Waves per workgroup of the paged-attention prefill "
                     "kernel (1, 2, 4 or 8)"),
      llvm::cl::init(4)};
  Option<int64_t> prefillRows{
      *this, "prefill-rows",
      llvm::cl::desc("MFMA rows per wave of the paged-attention prefill "
                     "kernel (16 or 32)"),
      llvm::cl::init(16)};
  Option<int64_t> mergeChunk{
      *this, "merge-chunk",
      llvm::cl::desc("Partitions per step of the decode merge kernel's loop "
                     "(8, 16, 32 or 64)"),
      llvm::cl::init(32)};
  Option<bool> prefillSharedV{
      *this, "prefill-shared-v",
      llvm::cl::desc("Paged-attention prefill with FP4 values: convert each "
                     "value tile once per workgroup into LDS (default "
                     "true; false: in every wave)"),
      llvm::cl::init(true)};
  Option<int64_t> prefillMergeChunk{
      *this, "prefill-merge-chunk",
      llvm::cl::desc("Partitions per step of the paged-attention merge "
                     "kernel's loop (8, 16, 32 or 64)"),
      llvm::cl::init(8)};
  Option<int64_t> maxPartitionTokens{
      *this, "max-partition-tokens",
      llvm::cl::desc("uq.decode_attention's partition rule: the most tokens "
                     "per partition (multiple of 32)"),
      llvm::cl::init(2048)};
  Option<int64_t> minPartitionTokens{
      *this, "min-partition-tokens",
      llvm::cl::desc("uq.decode_attention's partition rule: the fewest "
                     "tokens per partition (multiple of 32)"),
      llvm::cl::init(64)};
  Option<int64_t> decodeWorkgroups{
      *this, "decode-workgroups",
      llvm::cl::desc("uq.decode_attention's partition rule: the partial "
                     "workgroups a launch aims at"),
      llvm::cl::init(1024)};
  uq::GPUPipelineOptions get() const {
    uq::GPUPipelineOptions o;
    o.chip = chip;
    o.partitionSize = partitionSize;
    o.prefillWaves = prefillWaves;
    o.prefillRows = prefillRows;
    o.mergeChunk = mergeChunk;
    o.prefillSharedV = prefillSharedV;
    o.prefillMergeChunk = prefillMergeChunk;
    o.maxPartitionTokens = maxPartitionTokens;
    o.minPartitionTokens = minPartitionTokens;
    o.decodeWorkgroups = decodeWorkgroups;
    return o;
  }
};
} // namespace

void uq::registerGPUPipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "uq-gpu-wave", "uq ops to wave-level gpu.func kernels (tiling stage)",
      [](OpPassManager &pm, const PipelineOptions &o) {
        buildWavePipeline(pm, o.get());
      });
  PassPipelineRegistration<PipelineOptions>(
      "uq-gpu-lanes",
      "wave-level kernels to per-lane gfx950 code (distribution stage)",
      [](OpPassManager &pm, const PipelineOptions &o) {
        buildLanePipeline(pm, o.get());
      });
  PassPipelineRegistration<PipelineOptions>(
      "uq-gpu-kernels", "uq ops to gfx950 gpu.func kernels (both stages)",
      [](OpPassManager &pm, const PipelineOptions &o) {
        buildKernelPipeline(pm, o.get());
      });
  PassPipelineRegistration<PipelineOptions>(
      "uq-gpu-to-rocdl", "uq kernels' gpu.module to the llvm/rocdl dialects",
      [](OpPassManager &pm, const PipelineOptions &o) {
        buildROCDLPipeline(pm, o.get());
      });
}
