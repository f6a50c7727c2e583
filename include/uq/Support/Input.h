//===- Input.h - Bounded, checked reading of uq's inputs --------*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Every file uq's tools and libraries read (IR, .npy arrays, precision
/// policies) goes through readInputFile, and every piece of IR text through
/// checkSourceText before MLIR's parser sees it, so that bad input is a clear
/// error rather than a hang, an exhausted memory or an overflowed stack:
///
/// - only regular files are read (a device such as /dev/zero, a FIFO or a
///   directory is refused before any byte is read);
/// - every kind of input has a size limit (InputLimits);
/// - IR text may not nest brackets deeper than InputLimits::kMaxNesting,
///   since MLIR's parser, printer and walkers recurse once per level and a
///   few thousand levels overflow an 8 MiB stack;
/// - once parsed, no vector type and no constant may have more
///   elements than InputLimits::kMaxVectorElements and
///   kMaxConstantElements (checkValueSizes), since lowerings materialise
///   such values element by element.
///
/// The limits are documented in docs/robustness.md.
///
//===----------------------------------------------------------------------===//

#ifndef UQ_SUPPORT_INPUT_H
#define UQ_SUPPORT_INPUT_H

#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <optional>

namespace mlir {
class MLIRContext;
class ModuleOp;
class Operation;
} // namespace mlir

namespace uq {

/// Limits on what uq reads (docs/robustness.md).
struct InputLimits {
  /// MLIR text or bytecode (uq-opt, uq-compile, uq-run, the C API, Python).
  static constexpr uint64_t kMaxSourceBytes = uint64_t(256) << 20;
  /// A precision-policy JSON (uq-apply-precision-policy).
  static constexpr uint64_t kMaxPolicyBytes = uint64_t(16) << 20;
  /// One .npy file (uq-run, uq-emu).
  static constexpr uint64_t kMaxNpyBytes = uint64_t(16) << 30;
  /// Brackets (`{ [ ( <`) open at once in IR text, and operations nested in
  /// each other's regions. Real uq programs stay under 30.
  static constexpr unsigned kMaxNesting = 256;
  /// Operators in one affine map, set or affine-op subscript list.
  static constexpr unsigned kMaxAffineTerms = 1024;
  /// Elements of one vector type anywhere in the IR (checkValueSizes).
  /// Lowerings work per element or per row of a vector at compile time:
  /// the CPU pipeline's vector lowering unrolls an n-D vector into one op
  /// per row and turns `vector.step` into a constant of one number per
  /// element (2^31 elements: out of memory), so the cost of compiling a
  /// vector grows with its size, not with the text that names it. The
  /// largest vector uq's own kernels make is a 32x256 tile (8192
  /// elements), and a gfx950 wave holds at most 64 lanes x 512 registers
  /// = 32768 32-bit values; 65536 is above both.
  static constexpr int64_t kMaxVectorElements = int64_t(1) << 16;
  /// Elements of one constant (an elements attribute: dense, sparse or
  /// resource; checkValueSizes). A splat or sparse constant costs a few
  /// bytes of text whatever its type, but the host program
  /// holds every element (LLVM materialises the array when uq-run
  /// translates the module: a splat or a sparse constant of 2^31 f32 ran
  /// out of memory). 2^24 elements are 64 MiB of f32.
  static constexpr int64_t kMaxConstantElements = int64_t(1) << 24;
};

/// Reads the whole file `path` into memory (NUL-terminated, as MLIR's parser
/// wants, unless `nullTerminated` is false). `what` names the kind of input in
/// messages ("IR", ".npy file", "policy"). Refuses, with an error naming the
/// path:
/// - a path that is not a regular file (directory, device, FIFO, socket);
/// - a file larger than `maxBytes`.
/// With `allowStdin`, "-" reads standard input, at most `maxBytes` (a
/// standard input redirected from a device other than a terminal is refused
/// as a file would be).
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readInputFile(llvm::StringRef path, uint64_t maxBytes, llvm::StringRef what,
              bool allowStdin = false, bool nullTerminated = true);

/// A place in IR text that uq refuses before parsing.
struct TextViolation {
  /// Byte offset, 1-based line and column of the offending token.
  size_t offset;
  unsigned line, column;
  /// What is wrong, with the limit (shared by every entry point).
  std::string message;
};

/// Scans IR text like MLIR's lexer (string literals and `//` comments are
/// skipped; `->` and `>=` are not brackets) and returns the first token that
/// MLIR's recursive parser and IR walkers could not take without risking the
/// stack:
/// - a bracket that opens nesting level kMaxNesting + 1, counting
///   `{ [ ( <` together;
/// - the (kMaxAffineTerms + 1)-th operator (`+ - * floordiv ceildiv mod`) of
///   one affine context (the brackets after `affine_map` or `affine_set`, or
///   on the line of an `affine.` op): MLIR parses and simplifies a chain of
///   N terms with recursion N deep (100,000 terms overflow an 8 MiB stack).
/// MLIR bytecode is not text and is never reported (see checkOpNesting).
std::optional<TextViolation> checkIRText(llvm::StringRef source);

/// Checks IR text before it is parsed: size (kMaxSourceBytes) and
/// checkIRText. On failure emits a located error (`bufferName`,
/// line, column) through `ctx`'s diagnostics and returns failure.
mlir::LogicalResult checkSourceText(llvm::StringRef source,
                                    llvm::StringRef bufferName,
                                    mlir::MLIRContext *ctx);

/// Checks, without recursion, that no operation under `root` is nested more
/// than `limit` regions deep (bytecode skips the text check); emits an error
/// at the first operation too deep.
mlir::LogicalResult checkOpNesting(mlir::Operation *root,
                                   unsigned limit = InputLimits::kMaxNesting);

/// Checks that no type under `root` (op results, block arguments, types in
/// attributes such as a function's signature, also nested in other types:
/// `memref<4xvector<...>>`) is a vector of more than `maxVectorElements`
/// elements, and that no elements attribute (dense, sparse or resource: a
/// constant, a global's initial value) has more than `maxConstantElements`. Emits a located
/// error at the first operation that has one (naming the type, its element
/// count and the bound) and returns failure. Element counts past 2^64 are
/// reported as such, not wrapped. Walks regions recursively: call it after
/// checkOpNesting (or the text check) bounded the nesting.
mlir::LogicalResult
checkValueSizes(mlir::Operation *root,
                int64_t maxVectorElements = InputLimits::kMaxVectorElements,
                int64_t maxConstantElements =
                    InputLimits::kMaxConstantElements);

/// checkSourceText, then MLIR's parser (text or bytecode), then
/// checkOpNesting, the verifiers and checkValueSizes. Diagnostics go to
/// `ctx`'s handlers; null on failure.
mlir::OwningOpRef<mlir::ModuleOp> parseSourceChecked(llvm::StringRef source,
                                                     llvm::StringRef bufferName,
                                                     mlir::MLIRContext *ctx);

} // namespace uq

#endif // UQ_SUPPORT_INPUT_H
