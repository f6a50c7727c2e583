//===- Compiler.h - uq IR to gfx950 code objects ----------------*- C++ -*-===//
//
// The library behind uq-compile, the C API and the Python package: parse uq
// IR, run the GPU pipeline up to a chosen stage, and produce a code object
// plus the JSON description of every kernel's arguments.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_TARGET_COMPILER_H
#define UQ_TARGET_COMPILER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir {
class MLIRContext;
class ModuleOp;
} // namespace mlir

namespace uq {

/// Where compilation stops; each stage's output is printable.
enum class EmitStage {
  Linalg,  ///< after convert-uq-to-linalg (tensors; the CPU meaning)
  Wave,    ///< wave-level kernels: whole-wave vectors + uq tile ops, host
           ///< launches (the tiling stage)
  Layouts, ///< the wave-level kernels with a lane layout on every vector
  Kernel,  ///< per-lane gpu.func kernels with amdgpu/rocdl ops (the
           ///< distribution stage; "lanes" or "kernel")
  ROCDL,  ///< after lowering to the rocdl/llvm dialects
  LLVMIR, ///< LLVM IR text of the device module
  ISA,    ///< gfx950 assembly text
  HSACO,  ///< linked code object (ELF bytes)
};

/// Parses "linalg", "wave", "layouts", "lanes" (or "kernel"), "rocdl",
/// "llvmir", "isa" or "hsaco".
std::optional<EmitStage> parseEmitStage(llvm::StringRef name);

/// The stage the input is at. Auto: uq ops -> Ops; a `gpu.module` of
/// kernels with the `uq.kernels` launch description and no uq op -> Wave
/// (whole-wave vectors), Kernel (per-lane code) or ROCDL (llvm.func) by
/// what the kernels contain.
enum class InputStage { Auto, Ops, Wave, Kernel, ROCDL };

/// Parses "auto", "uq", "wave", "lanes" (or "kernel"), "rocdl".
std::optional<InputStage> parseInputStage(llvm::StringRef name);

/// Options of the GPU compilation; every field is a documented option of
/// uq-compile (see docs/uq-compile.md).
struct CompileOptions {
  /// Where the input is in the pipeline (another compiler may hand over
  /// wave-level or per-lane kernels with their launch description).
  InputStage from = InputStage::Auto;
  /// Target chip; only gfx950 has the scaled MFMA the kernels need.
  std::string chip = "gfx950";
  EmitStage emit = EmitStage::HSACO;
  /// Tokens per split-K partition of decode attention (a multiple of the
  /// 32-token tile).
  int64_t partitionSize = 256;
  /// Occupancy the register allocator aims at: waves per SIMD of each kernel
  /// ("amdgpu-waves-per-eu"); a kernel that would need scratch to reach it
  /// is compiled again without the hint (uq kernels never use scratch).
  /// 0: no hint.
  int64_t wavesPerSimd = 4;
  /// Waves per workgroup of the paged-attention prefill kernel (1, 2, 4
  /// or 8).
  int64_t prefillWaves = 4;
  /// MFMA rows per wave of the paged-attention prefill kernel (16 or 32).
  int64_t prefillRows = 16;
  /// Partitions per step of the decode merge kernel's loop (8, 16, 32 or
  /// 64). 0: 32, and 16 for a merge kernel that would need scratch at 32
  /// (the whole input is compiled again; docs/uq-compile.md).
  int64_t mergeChunk = 0;
  /// The prefill kernel converts FP4 value tiles once per workgroup into
  /// LDS (the default; false: in every wave; the same results).
  bool prefillSharedV = true;
  /// Partitions per step of the paged-attention (prefill) merge kernel's
  /// loop (8, 16, 32 or 64): its launches have few partitions and one
  /// workgroup per query row and head.
  int64_t prefillMergeChunk = 8;
  /// uq.decode_attention's partition rule (uq/Conversion/DecodePartitions.h,
  /// docs/uq-compile.md): the most and the fewest tokens per partition and
  /// the partial workgroups a launch aims at.
  int64_t maxPartitionTokens = 2048;
  int64_t minPartitionTokens = 64;
  int64_t decodeWorkgroups = 1024;
};

/// Result of a compilation: `output` holds text for textual stages and the
/// ELF bytes for HSACO; `kernelsJson` describes every kernel (arguments in
/// order with offsets, workgroup size, grid rule, LDS, register counts) once
/// the stage is HSACO, and is empty otherwise.
struct CompileResult {
  std::string output;
  std::string kernelsJson;
};

/// Compiles uq IR text. Diagnostics (with locations) are returned in the
/// error's message.
llvm::Expected<CompileResult> compileSource(llvm::StringRef source,
                                            llvm::StringRef bufferName,
                                            const CompileOptions &options);

/// Parses IR text, runs a textual pass pipeline (as `uq-opt
/// --pass-pipeline=...` would) and prints the result.
llvm::Expected<std::string> runPipeline(llvm::StringRef source,
                                        llvm::StringRef pipeline);

} // namespace uq

#endif // UQ_TARGET_COMPILER_H
