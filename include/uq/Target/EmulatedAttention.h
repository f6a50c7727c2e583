//===- EmulatedAttention.h - Compile, emulate, compare ----------*- C++ -*-===//
//
// The end-to-end check of the GPU path: build uq IR for one problem (a cache
// write and a decode attention), compile it to a gfx950 code object, run the
// kernels in the emulator on random data, launching them from the kernel
// JSON alone (argument order, shapes and grids by name), and compare with
// the reference library. Used by uq-demo, the unit tests and the report
// benchmark. A code object compiled with run-time (`?`) sizes serves many
// problems of the same configuration without recompiling.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_TARGET_EMULATEDATTENTION_H
#define UQ_TARGET_EMULATEDATTENTION_H

#include "uq/Emulator/Emulator.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace uq {

/// The KV-cache format of a problem (K and V alike).
enum class KVCacheKind {
  /// FP4 E2M1 + UE8M0 per 32, keys rotated (options below).
  UltraQuant,
  /// OCP FP8 E4M3, scale 1 (vLLM's fp8 cache).
  FP8,
  /// bf16.
  BF16,
};

/// "uq4", "fp8", "bf16".
const char *kvCacheKindName(KVCacheKind k);

/// One decode-attention problem.
struct AttentionProblem {
  int64_t numQHeads = 8;
  int64_t numKVHeads = 1;
  int64_t headDim = 128;
  int64_t blockSize = 16;
  /// Tokens of each sequence (the batch is seqLens.size()).
  std::vector<int32_t> seqLens = {1000};
  bool sinks = false;
  int64_t partitionSize = 256;
  /// Element type of the query and of the new K/V rows: f32 or bf16.
  std::string dtype = "bf16";
  /// Element type of the attention result: f32, bf16 or f16.
  std::string outType = "f32";
  KVCacheKind format = KVCacheKind::UltraQuant;
  /// Write the cache with the GPU cache-write kernel (and compare its bytes
  /// with the reference's) instead of the reference's cacheWrite.
  bool gpuCacheWrite = true;
  /// Compile with run-time sizes (`?` for sequences, tokens, cache blocks
  /// and block-table width).
  bool dynamicShapes = false;
  uint64_t seed = 1;
  /// Standard deviation of the random K, V and Q values.
  float scale = 1.0f;
  /// UltraQuant options: the constant c of the scale rule (0.156: as
  /// published; 0.196: the measured optimum, docs/accuracy.md), the
  /// mse_search scale rule, values coded rotated (the output is rotated
  /// back).
  double c = 0.156;
  bool mseSearch = false;
  bool vRotated = false;
  /// Softmax scale; 0 means 1/sqrt(headDim).
  float softmaxScale = 0.0f;
  /// Unused blocks in the cache, unused block-table columns.
  int64_t spareBlocks = 1, spareColumns = 0;
  /// Block-table entries to overwrite after paging: (sequence, column,
  /// block id); ids outside the cache test the input policy (clamped).
  std::vector<std::tuple<int64_t, int64_t, int32_t>> tableOverrides;
  /// Given data instead of random values (each empty = random): the query
  /// [seqs, q heads, D]; keys and values [sum(seqLens), kv heads, D] in
  /// sequence-major token order; sinks [q heads]. With dtype bf16 the values
  /// must be bf16-representable.
  std::vector<float> query, key, value, sinkValues;
};

/// What the run measured.
struct AttentionReport {
  /// The uq IR that was compiled.
  std::string ir;
  std::string kernelsJson;
  /// Cache bytes that differ from the reference's cacheWrite (0 = bit-exact;
  /// only meaningful with gpuCacheWrite).
  int64_t cacheMismatches = 0;
  int64_t cacheBytes = 0;
  /// Output against the reference (ref::pagedAttention): relative L2 error,
  /// largest absolute error, and the number of elements outside the
  /// per-element bound of ref::attentionErrorBounds (the kernels' rounding
  /// of P: bf16, or FP8 for FP8 values).
  double relL2 = 0, maxAbsError = 0;
  int64_t outsideBound = 0;
  int64_t numOutputs = 0;
  /// The kernels' output [seqs, q heads, D] as floats.
  std::vector<float> output;
  emu::Stats writeStats, queryStats, partialStats, mergeStats;
  int64_t numPartitions = 0;
};

/// A compiled problem configuration: one code object and its JSON.
class CompiledAttention {
public:
  /// Compiles \p shape's configuration (heads, D, block size, formats,
  /// sinks, types, partition size; sizes from it unless dynamicShapes).
  static llvm::Expected<std::unique_ptr<CompiledAttention>>
  compile(const AttentionProblem &shape);
  ~CompiledAttention();

  /// Runs \p problem, which must have the compiled configuration (and the
  /// compiled sizes, unless compiled with dynamicShapes).
  llvm::Expected<AttentionReport> run(const AttentionProblem &problem) const;

  const std::string &ir() const;
  const std::string &kernelsJson() const;
  const std::string &codeObject() const;

private:
  CompiledAttention();
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Compiles and emulates `problem`; errors (compile, emulation, reference)
/// come back as llvm::Error.
llvm::Expected<AttentionReport>
runEmulatedAttention(const AttentionProblem &problem);

} // namespace uq

#endif // UQ_TARGET_EMULATEDATTENTION_H
