//===- InlineKernels.cpp - Run wave-level kernels on the host -------------===//
//
// uq-inline-kernels-on-host: every gpu.launch_func of a wave-level kernel
// becomes a loop nest over the grid (z, y, x) whose body is the kernel's,
// with gpu.block_id / gpu.grid_dim replaced by the loop indices / grid sizes.
// A wave-level kernel is one tile program per workgroup (no lane ids), so
// this is its whole meaning on the CPU: the tiling, paging, split-K and
// softmax of the GPU path run and are tested before any lane layout exists.
//
//===----------------------------------------------------------------------===//

#include "uq/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace uq {
#define GEN_PASS_DEF_INLINEKERNELSONHOSTPASS
#include "uq/Conversion/Passes.h.inc"
} // namespace uq

using namespace mlir;

namespace {

/// Index of a gpu::Dimension.
unsigned dimIndex(gpu::Dimension d) { return static_cast<unsigned>(d); }

LogicalResult inlineLaunch(gpu::LaunchFuncOp launch, gpu::GPUFuncOp kernel) {
  if (!kernel.getBody().hasOneBlock())
    return launch.emitOpError()
           << "cannot run kernel @" << kernel.getName()
           << " on the host: its body has more than one block (wave-level "
              "kernels use structured control flow)";
  // A workgroup of several waves (the paged prefill kernel with
  // prefill-waves > 1) shares LDS between its waves and meets barriers: the
  // host runs one wave per workgroup only.
  if (std::optional<ArrayRef<int32_t>> known = kernel.getKnownBlockSize();
      known && (*known)[0] * (*known)[1] * (*known)[2] > 64)
    return launch.emitOpError()
           << "cannot run kernel @" << kernel.getName()
           << " on the host: its workgroup is " << (*known)[0] << "x"
           << (*known)[1] << "x" << (*known)[2]
           << " work-items, the host runs one 64-lane wave per workgroup "
              "(build paged attention with convert-uq-to-wave "
              "prefill-waves=1, as uq-cpu-pipeline does)";
  if (!kernel.getWorkgroupAttributions().empty() ||
      !kernel.getPrivateAttributions().empty())
    return launch.emitOpError()
           << "cannot run kernel @" << kernel.getName()
           << " on the host: it has workgroup/private attributions (a "
              "distributed kernel, not a wave-level one)";
  OpBuilder b(launch);
  Location loc = launch.getLoc();
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  std::array<Value, 3> gridSizes = {grid.x, grid.y, grid.z};
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  std::array<Value, 3> ids;
  // z outermost, x innermost.
  for (int d = 2; d >= 0; --d) {
    auto loop = scf::ForOp::create(b, loc, c0, gridSizes[d], c1);
    ids[d] = loop.getInductionVar();
    b.setInsertionPoint(loop.getBody()->getTerminator());
  }
  IRMapping map;
  Block &body = kernel.getBody().front();
  for (auto [arg, operand] :
       llvm::zip(body.getArguments(), launch.getKernelOperands()))
    map.map(arg, operand);
  for (Operation &op : body) {
    if (isa<gpu::ReturnOp>(op))
      continue;
    // Lane-free kernels: one tile program per workgroup.
    if (auto id = dyn_cast<gpu::BlockIdOp>(op)) {
      map.map(id.getResult(), ids[dimIndex(id.getDimension())]);
      continue;
    }
    if (auto gd = dyn_cast<gpu::GridDimOp>(op)) {
      map.map(gd.getResult(), gridSizes[dimIndex(gd.getDimension())]);
      continue;
    }
    Operation *clone = b.clone(op, map);
    // Nested uses of block ids.
    WalkResult walk = clone->walk([&](Operation *inner) {
      if (auto id = dyn_cast<gpu::BlockIdOp>(inner)) {
        id.getResult().replaceAllUsesWith(ids[dimIndex(id.getDimension())]);
        id.erase();
        return WalkResult::skip();
      }
      if (isa<gpu::ThreadIdOp, gpu::LaneIdOp, gpu::BarrierOp,
              gpu::ShuffleOp>(inner)) {
        inner->emitOpError()
            << "has no host meaning: wave-level kernels have no lanes";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  launch.erase();
  return success();
}

struct InlineKernelsOnHostPass
    : public uq::impl::InlineKernelsOnHostPassBase<InlineKernelsOnHostPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTableCollection symbols;
    SmallVector<gpu::LaunchFuncOp> launches;
    module.walk([&](gpu::LaunchFuncOp l) { launches.push_back(l); });
    for (gpu::LaunchFuncOp l : launches) {
      auto kernel = symbols.lookupNearestSymbolFrom<gpu::GPUFuncOp>(
          l, l.getKernel());
      if (!kernel) {
        l.emitOpError() << "launches an unknown kernel " << l.getKernel();
        return signalPassFailure();
      }
      if (failed(inlineLaunch(l, kernel)))
        return signalPassFailure();
    }
    // The kernels live on in their loops; the device modules are done.
    SmallVector<gpu::GPUModuleOp> modules;
    module.walk([&](gpu::GPUModuleOp m) { modules.push_back(m); });
    for (gpu::GPUModuleOp m : modules)
      m.erase();
    module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  }
};

} // namespace
