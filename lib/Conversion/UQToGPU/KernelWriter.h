//===- KernelWriter.h - Text builder for kernel templates -------*- C++ -*-===//
//
// A small helper for the kernel templates: appends lines of MLIR in which
// `$name` tokens are replaced by values, and makes fresh SSA names.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_CONVERSION_UQTOGPU_KERNELWRITER_H
#define UQ_LIB_CONVERSION_UQTOGPU_KERNELWRITER_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace uq::kernels {

class KernelWriter {
public:
  /// Sets `$key` to `value` for every later line.
  void set(llvm::StringRef key, llvm::StringRef value) {
    vars[key] = value.str();
  }
  void set(llvm::StringRef key, int64_t value) {
    vars[key] = std::to_string(value);
  }
  /// Appends `text` with `$key` tokens substituted (the longest key that
  /// prefixes the identifier after `$`).
  void emit(llvm::StringRef text);
  /// Appends `text` as it is.
  void emitRaw(llvm::StringRef text) { out.append(text.str()); }
  /// A fresh SSA name `%<prefix><n>`.
  std::string fresh(llvm::StringRef prefix) {
    return "%" + prefix.str() + std::to_string(counter++);
  }
  const std::string &str() const { return out; }

private:
  llvm::StringMap<std::string> vars;
  std::string out;
  int64_t counter = 0;
};

/// Emits the xor-shuffle of the f64 SSA value `value` across lanes (two
/// 32-bit `gpu.shuffle`s of its halves) and returns the name of the value
/// of lane `lane ^ offset`. `offset` and `width` name i32 SSA values and
/// `c32` an i64 constant 32; `prefix` makes the emitted names unique.
std::string emitShuffleXorF64(KernelWriter &w, llvm::StringRef value,
                              llvm::StringRef offset, llvm::StringRef width,
                              llvm::StringRef c32, llvm::StringRef prefix);

/// Emits one Walsh-Hadamard butterfly stage across lanes for the f64 value
/// `value`: with p the value of lane `lane ^ offset`, defines `result` as
/// `p - value` where the i1 `upper` is set (the upper element of the pair)
/// and `value + p` elsewhere.
void emitButterflyXorF64(KernelWriter &w, llvm::StringRef value,
                         llvm::StringRef offset, llvm::StringRef width,
                         llvm::StringRef c32, llvm::StringRef upper,
                         llvm::StringRef result);

/// Hexadecimal bit patterns of an f64 / f32 constant: exact, and accepted by
/// MLIR's parser for float attributes of that width.
std::string f64Literal(double v);
std::string f32Literal(float v);

} // namespace uq::kernels

#endif // UQ_LIB_CONVERSION_UQTOGPU_KERNELWRITER_H
