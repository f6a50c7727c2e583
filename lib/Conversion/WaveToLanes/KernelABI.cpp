//===- KernelABI.cpp - Kernel buffer arguments as bare pointers -----------===//
//
// uq-lower-kernel-abi: the kernels' buffer arguments (memref<?xT>, sizes
// given by scalar arguments) become one global pointer each, as
// docs/uq-compile.md describes the kernarg segment. The body keeps using a
// memref: a descriptor built from the pointer (offset 0, stride 1); its size
// field is not used by any load or store.
//
//===----------------------------------------------------------------------===//

#include "uq/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace uq {
#define GEN_PASS_DEF_LOWERKERNELABIPASS
#include "uq/Conversion/Passes.h.inc"
} // namespace uq

using namespace mlir;

namespace {

struct LowerKernelABIPass
    : public uq::impl::LowerKernelABIPassBase<LowerKernelABIPass> {
  using Base::Base;
  void runOnOperation() override {
    WalkResult r = getOperation()->walk([&](gpu::GPUFuncOp f) {
      if (!f.isKernel())
        return WalkResult::advance();
      if (failed(lower(f)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return signalPassFailure();
    // Host launches (documentation of the launch sequence on the GPU path)
    // pass each buffer's pointer.
    SymbolTableCollection symbols;
    getOperation()->walk([&](gpu::LaunchFuncOp launch) {
      auto kernel = symbols.lookupNearestSymbolFrom<gpu::GPUFuncOp>(
          launch, launch.getKernel());
      if (!kernel)
        return;
      OpBuilder b(launch);
      for (auto [i, t] : llvm::enumerate(kernel.getArgumentTypes())) {
        OpOperand &o = launch.getKernelOperandsMutable()[i];
        if (o.get().getType() == t)
          continue;
        o.set(UnrealizedConversionCastOp::create(b, launch.getLoc(),
                                                 TypeRange{t}, o.get())
                  .getResult(0));
      }
    });
  }

  LogicalResult lower(gpu::GPUFuncOp f) {
    MLIRContext *ctx = f.getContext();
    Block &entry = f.getBody().front();
    OpBuilder b(ctx);
    b.setInsertionPointToStart(&entry);
    Location loc = f.getLoc();
    auto global = LLVM::LLVMPointerType::get(ctx, 1);
    auto flat = LLVM::LLVMPointerType::get(ctx, 0);
    auto i64 = b.getI64Type();
    auto arr = LLVM::LLVMArrayType::get(i64, 1);
    auto desc =
        LLVM::LLVMStructType::getLiteral(ctx, {flat, flat, i64, arr, arr});
    SmallVector<Type> types(f.getArgumentTypes());
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      auto m = dyn_cast<MemRefType>(types[i]);
      if (!m)
        continue;
      if (m.getRank() != 1 || !m.getLayout().isIdentity() ||
          m.getMemorySpace())
        return f.emitOpError() << "argument " << i << " of type " << m
                               << " is not a 1-D global buffer";
      BlockArgument arg = entry.getArgument(i);
      types[i] = global;
      arg.setType(global);
      Value p = LLVM::AddrSpaceCastOp::create(b, loc, flat, arg);
      Value d = LLVM::PoisonOp::create(b, loc, desc);
      d = LLVM::InsertValueOp::create(b, loc, d, p, ArrayRef<int64_t>{0});
      d = LLVM::InsertValueOp::create(b, loc, d, p, ArrayRef<int64_t>{1});
      Value zero = LLVM::ConstantOp::create(b, loc, i64, 0);
      Value one = LLVM::ConstantOp::create(b, loc, i64, 1);
      Value big = LLVM::ConstantOp::create(b, loc, i64, INT32_MAX);
      d = LLVM::InsertValueOp::create(b, loc, d, zero, ArrayRef<int64_t>{2});
      d = LLVM::InsertValueOp::create(b, loc, d, big, ArrayRef<int64_t>{3, 0});
      d = LLVM::InsertValueOp::create(b, loc, d, one, ArrayRef<int64_t>{4, 0});
      Value mem =
          UnrealizedConversionCastOp::create(b, loc, TypeRange{m}, d)
              .getResult(0);
      arg.replaceAllUsesExcept(mem, p.getDefiningOp());
    }
    f.setFunctionTypeAttr(TypeAttr::get(
        FunctionType::get(ctx, types, f.getFunctionType().getResults())));
    return success();
  }
};

} // namespace
