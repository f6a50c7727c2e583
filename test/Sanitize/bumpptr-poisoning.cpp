//===- bumpptr-poisoning.cpp - Why ASan runs allow no user poisoning ---===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Built only with -DUQ_SANITIZE=address...: creates uq attributes (their
// storage is allocated by uq's ASan-instrumented code, which poisons each
// new BumpPtrAllocator slab of the MLIRContext's uniquer) next to
// StringAttrs (allocated by Debian's uninstrumented libMLIR from the same
// slabs, never unpoisoned). With ASan's default options the memmove under
// StringAttr::get is reported as use-after-poison although the memory is
// live; with allow_user_poisoning=0 (what test/lit.cfg.py sets) the run is
// clean. test/Sanitize/bumpptr-poisoning.test checks both.
//
//===----------------------------------------------------------------------===//

#include "uq/Dialect/UQ/IR/UQ.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace mlir;

int main() {
  MLIRContext ctx;
  ctx.disableMultithreading();
  ctx.loadDialect<uq::UQDialect>();
  size_t chars = 0;
  for (int i = 0; i < 20000; ++i) {
    auto format = uq::KVFormatAttr::get(
        &ctx, uq::ElementCode::fp4_e2m1, 32, uq::ScaleEncoding::ue8m0,
        llvm::APFloat(float(i) * 1e-3f), uq::Rotation::none,
        uq::Rounding::nearest_even, uq::ScaleRule::log_round);
    StringAttr name =
        StringAttr::get(&ctx, "a string made by libMLIR " + std::to_string(i));
    chars += (format ? 1 : 0) + name.size();
  }
  llvm::outs() << "20000 attributes of each kind, " << chars << " chars\n";
  return 0;
}
