//===- Npy.h - Minimal .npy reader and writer -------------------*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Reads and writes NumPy `.npy` files (format versions 1.0-3.0, C order,
/// little-endian) and converts them to and from HostTensors:
///
///   f32 <f4, f64 <f8, f16 <f2, bf16 <u2 (bit patterns), i1 |b1,
///   i8 and 8-bit floats |u1 (|i1 accepted on input), i16/i32/i64 <i2/<i4/<i8
///   (unsigned accepted on input), 4-bit floats |u1 packed two per byte
///   (element 2i in the low nibble) with the last dimension halved.
///
//===----------------------------------------------------------------------===//

#ifndef UQ_RUNTIME_NPY_H
#define UQ_RUNTIME_NPY_H

#include "uq/Runtime/CPURunner.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace uq {
namespace runtime {

/// The contents of one .npy file.
struct NpyArray {
  /// NumPy dtype descriptor, e.g. "<f4", "|u1".
  std::string descr;
  std::vector<int64_t> shape;
  /// Raw little-endian element bytes in C order.
  std::vector<uint8_t> data;
};

/// Parses a .npy file held in \p bytes; \p name is used in errors.
llvm::Expected<NpyArray> parseNpy(llvm::StringRef bytes, llvm::StringRef name);
/// Reads and parses the .npy file \p path.
llvm::Expected<NpyArray> readNpy(llvm::StringRef path);
/// Serialises \p array (format 1.0, or 2.0 for a very long header).
std::string serializeNpy(const NpyArray &array);
/// Writes \p array to \p path.
llvm::Error writeNpy(llvm::StringRef path, const NpyArray &array);

/// Converts \p array to a tensor matching \p spec; the error names the spec
/// and \p source (a file name) and says what was expected.
llvm::Expected<HostTensor> npyToTensor(const NpyArray &array,
                                       const TensorSpec &spec,
                                       llvm::StringRef source);
/// Converts \p tensor to the .npy representation of its dtype.
NpyArray tensorToNpy(const HostTensor &tensor);

} // namespace runtime
} // namespace uq

#endif // UQ_RUNTIME_NPY_H
