//===- KernelDescription.h - The launch description of a kernel -*- C++ -*-===//
//
// The one definition of what a caller needs to launch a uq kernel: its
// arguments (name, kind, dtype, symbolic shape, access, meaning), its grid
// and the rule that picks it, its block and its compiled-in parameters
// (docs/uq-compile.md, "The JSON"). The tiling stage fills it, the module
// attribute `uq.kernels` carries it between the stages (KernelsAttr.h),
// uq-compile writes it as JSON next to the code object (toJson), and the
// emulator and the compile-emulate harness read that JSON back
// (parseKernelDescriptionsJson). Both readers check it with
// verifyKernelDescription, so the attribute and the JSON obey the same rules.
//
// This header needs LLVM's Support library only (the emulator links no MLIR).
//
//===----------------------------------------------------------------------===//

#ifndef UQ_CODEGEN_KERNELDESCRIPTION_H
#define UQ_CODEGEN_KERNELDESCRIPTION_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace uq {

/// `kind` of a buffer argument: one 8-byte global pointer.
inline constexpr llvm::StringLiteral kGlobalBufferKind = "global_buffer";
/// `kind` of a scalar argument passed by value.
inline constexpr llvm::StringLiteral kByValueKind = "by_value";
/// The largest workgroup gfx950 launches (work-items, all dimensions).
inline constexpr int64_t kMaxWorkgroupSize = 1024;

/// One dimension of a kernel argument's shape or of the grid: a size fixed
/// at compile time, or the name of the scalar argument that holds it.
struct KernelDim {
  int64_t value = 0;
  std::string name;
  KernelDim(int64_t v) : value(v) {}
  KernelDim(const char *n) : name(n) {}
  KernelDim(std::string n) : name(std::move(n)) {}
  bool isSymbolic() const { return !name.empty(); }
};

/// One explicit kernel argument.
struct KernelArgDescription {
  std::string name;
  /// kGlobalBufferKind or kByValueKind.
  std::string kind;
  /// An element type name of dtypeBytes ("bf16", "f32", "i32", "u8", ...).
  std::string dtype;
  /// Buffers: the dense row-major shape; empty for by-value arguments.
  llvm::SmallVector<KernelDim> shape;
  /// read, write, read_write (buffers); value (scalars).
  std::string access;
  std::string meaning;

  bool isBuffer() const { return kind == kGlobalBufferKind; }
  /// A by-value integer can size other arguments and the grid.
  bool isInteger() const;
};

/// The launch description of one kernel.
struct KernelDescription {
  std::string name;
  /// The uq op it implements a part of ("decode_attention_partial", ...).
  std::string op;
  /// Explicit arguments in the kernel's order.
  std::vector<KernelArgDescription> args;
  /// Workgroups per grid dimension (1 to 3 entries; none: not given, as a
  /// hand-written JSON may leave it out).
  llvm::SmallVector<KernelDim, 3> grid = {KernelDim(1), KernelDim(1),
                                          KernelDim(1)};
  /// How the grid follows from the problem sizes, in words.
  std::string gridRule;
  /// Work-items per workgroup dimension (1 to 3 entries; none: not given).
  llvm::SmallVector<int64_t, 3> block = {64, 1, 1};
  /// Sizes compiled into the kernel that a caller needs to size its
  /// buffers and grid (head_dim, block_size, partition_size, ...).
  std::vector<std::pair<std::string, int64_t>> params;

  /// The index of the argument named \p argName, if any.
  std::optional<unsigned> argIndex(llvm::StringRef argName) const;
};

/// Bytes of one element of \p dtype ("bf16", "f32", "i64", "u8", ...), or 0
/// for a name that is no dtype.
unsigned dtypeBytes(llvm::StringRef dtype);

/// Checks the rules every description obeys, whoever wrote it: kinds and
/// dtypes are known names, buffers have a shape of non-negative sizes or
/// names of by-value integer arguments and an access of read, write or
/// read_write (or none), the grid and block have 1 to 3 entries (grid entries non-negative
/// or by-value integer names; block entries 1..1024 with at most 1024
/// work-items in all), argument names are unique. Errors begin with
/// \p where (the kernel named by the caller, e.g. "kernel JSON, kernel 'k'")
/// and name the argument at fault.
llvm::Error verifyKernelDescription(const KernelDescription &kernel,
                                    llvm::StringRef where);

/// The JSON object of one kernel (docs/uq-compile.md): name, op, grid,
/// grid_rule, block, params and args (with their index). uq-compile adds
/// what the code object's metadata says.
llvm::json::Object toJson(const KernelDescription &kernel);

/// Reads one kernel object of the JSON; name, args and each argument's name,
/// kind and dtype are required, the rest optional (a hand-written JSON for
/// the emulator may give no grid or block). Checked with
/// verifyKernelDescription.
llvm::Expected<KernelDescription> kernelFromJson(const llvm::json::Value &v);

/// The kernels of a whole JSON document (`{"kernels": [...]}`). Errors begin
/// with "kernel JSON" and name the kernel and argument at fault.
llvm::Expected<std::vector<KernelDescription>>
parseKernelDescriptionsJson(llvm::StringRef text);

} // namespace uq

#endif // UQ_CODEGEN_KERNELDESCRIPTION_H
