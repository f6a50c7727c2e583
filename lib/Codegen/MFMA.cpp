//===- MFMA.cpp - The gfx950 MFMA intrinsics the stages use ---------------===//

#include "uq/Codegen/MFMA.h"

#include "mlir/IR/Types.h"

#include "llvm/Support/raw_ostream.h"

using namespace uq::gfx950;

namespace {
constexpr Intrinsic kAll[] = {kScaled16x16x128, k16x16x32};

std::string typeName(mlir::Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

/// 32-bit registers per lane of a [rows x cols] tile of \p bits-bit
/// elements spread over the wave (rounded up).
int64_t registers(int64_t rows, int64_t cols, int64_t bits) {
  int64_t laneBits = (rows * cols * bits + kWaveLanes - 1) / kWaveLanes;
  return (laneBits + 31) / 32;
}
} // namespace

llvm::ArrayRef<Intrinsic> uq::gfx950::intrinsics() { return kAll; }

const OperandForm *Intrinsic::formOf(mlir::Type elementType) const {
  std::string name = typeName(elementType);
  for (const OperandForm &f : operandForms())
    if (f.type == name)
      return &f;
  return nullptr;
}

std::optional<std::string> uq::gfx950::tileError(const Intrinsic &mfma,
                                                 int64_t m, int64_t n,
                                                 int64_t k, mlir::Type a,
                                                 mlir::Type b) {
  std::string shape =
      std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  std::string name = std::string(mfma.mnemonic) + " (" +
                     std::to_string(mfma.m) + "x" + std::to_string(mfma.n) +
                     "x" + std::to_string(mfma.k) + ")";
  const OperandForm *fa = mfma.formOf(a), *fb = mfma.formOf(b);
  for (auto [what, form, type] : {std::tuple{"A", fa, a}, {"B", fb, b}})
    if (!form)
      return std::string("the ") + what + " operand's element type " +
             typeName(type) + " is not one " + name + " takes";
  if (!mfma.isScaled() && fa != fb)
    return "the operands' element types " + typeName(a) + " and " +
           typeName(b) + " differ; " + name + " takes one type for both";
  if (m <= 0 || n <= 0 || k <= 0 || m % mfma.m || n % mfma.n || k % mfma.k)
    return "the " + shape + " tile is not made of whole " + name +
           " instructions (M a multiple of " + std::to_string(mfma.m) +
           ", N of " + std::to_string(mfma.n) + ", K of " +
           std::to_string(mfma.k) + ")";
  int64_t regs = registers(m, k, fa->bits) + registers(n, k, fb->bits) +
                 registers(m, n, 32);
  if (mfma.isScaled())
    regs += registers(m + n, k / mfma.scaleBlock, 8);
  if (regs > kRegistersPerLane)
    return "the " + shape + " tile's operands, scales and accumulator need " +
           std::to_string(regs) + " registers per lane, more than the " +
           std::to_string(kRegistersPerLane) + " of a gfx950 lane";
  return std::nullopt;
}
