//===- KernelsJson.h - Argument descriptions from OUT.hsaco.json -*- C++ -*-===//
//
// uq-compile writes OUT.hsaco.json next to each code object
// (docs/uq-compile.md): per kernel its block and, per explicit argument, its
// kind, dtype and shape. The one reader of that file is
// uq::parseKernelDescriptionsJson (uq/Codegen/KernelDescription.h); this
// turns what it reads into the emulator's launch view, ArgSpecs with the
// symbolic sizes resolved to argument indices, so a launch can be checked
// before it runs (exact buffer sizes, sizes from by-value arguments).
//
//===----------------------------------------------------------------------===//

#ifndef UQ_EMULATOR_KERNELSJSON_H
#define UQ_EMULATOR_KERNELSJSON_H

#include "uq/Emulator/Emulator.h"

#include <map>

namespace uq {
struct KernelDescription;
} // namespace uq

namespace uq::emu {

/// One kernel of the JSON as the emulator launches it (launchView of the
/// shared description).
struct KernelDescription {
  std::string name;
  /// The `block` the kernel is compiled for, when the JSON gives one.
  std::optional<std::array<uint32_t, 3>> block;
  /// Explicit arguments in order.
  std::vector<ArgSpec> args;
  /// Workgroups per grid dimension, when the JSON gives them: integers or
  /// by-value arguments (`["num_partitions", 1, "num_seqs"]`).
  std::optional<std::array<DimSpec, 3>> grid;
  /// The uq op the kernel implements (`op`: "cache_write",
  /// "decode_attention_partial", ...), or "" when not given.
  std::string op;
  /// The compiled-in constants (`params`: head_dim, block_size,
  /// partition_size, tokens_per_tile, ...).
  std::map<std::string, int64_t> params;
};

/// The grid of \p kernel for the by-value arguments in \p args (in the
/// JSON's order); an error if the JSON has no grid, a named argument is not
/// a non-negative integer scalar, or a dimension exceeds 2^32 - 1.
llvm::Expected<std::array<uint32_t, 3>>
resolveGrid(const KernelDescription &kernel,
            const std::vector<KernelArg> &args);

/// Buffers and by-value arguments by argument name.
using BufferMap = std::map<std::string, std::vector<uint8_t>>;
using ScalarMap = std::map<std::string, int64_t>;

/// The explicit arguments of \p kernel in the JSON's order, bound by name:
/// a buffer argument takes buffers[name] (moved out of the map when
/// \p move, else copied), a by-value one scalars[name] as an i32. An error
/// names the first argument that has no entry.
llvm::Expected<std::vector<KernelArg>>
bindArguments(const KernelDescription &kernel, BufferMap &buffers,
              const ScalarMap &scalars, bool move);

/// The launch of \p kernel as its JSON describes it: the grid from its rule
/// for \p args (resolveGrid), its block (64 x 1 x 1 when the JSON gives
/// none), and the JSON's argument specs and block as the launch's checks.
llvm::Expected<LaunchConfig> launchConfig(const KernelDescription &kernel,
                                          const std::vector<KernelArg> &args);

/// Moves each buffer argument's bytes (as the launch left them) back into
/// buffers[name].
void returnBuffers(const KernelDescription &kernel,
                   std::vector<KernelArg> &args, BufferMap &buffers);

/// Bytes of one element of `dtype` ("bf16", "f32", "i64", "u8", ...), or 0
/// for an unknown name (uq::dtypeBytes).
unsigned dtypeSize(llvm::StringRef dtype);

/// The launch view of a description that obeys
/// uq::verifyKernelDescription's rules (every name it uses resolves).
KernelDescription launchView(const uq::KernelDescription &kernel);

/// Parses the JSON text with uq::parseKernelDescriptionsJson. Errors name
/// the kernel and argument at fault.
llvm::Expected<std::vector<KernelDescription>>
parseKernelsJson(llvm::StringRef text);

/// Reads and parses a JSON file (a regular file of at most 64 MiB).
llvm::Expected<std::vector<KernelDescription>>
loadKernelsJson(llvm::StringRef path);

} // namespace uq::emu

#endif // UQ_EMULATOR_KERNELSJSON_H
