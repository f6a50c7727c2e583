//===- EmulatedAttention.h - Compile, emulate, compare ----------*- C++ -*-===//
//
// The end-to-end check of the GPU path: build uq IR for one problem, compile
// it to a gfx950 code object, run the kernels in the emulator on random
// data, and compare with the reference library. Used by uq-demo, the unit
// tests and the static report benchmark.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_TARGET_EMULATEDATTENTION_H
#define UQ_TARGET_EMULATEDATTENTION_H

#include "uq/Emulator/Emulator.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace uq {

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
  /// Element type of the query and of the new K/V rows: f32, bf16 or f16.
  std::string dtype = "bf16";
  /// Write the cache with the GPU cache-write kernel (and compare its bytes
  /// with the reference's) instead of the reference's cacheWrite.
  bool gpuCacheWrite = true;
  uint64_t seed = 1;
  /// Standard deviation of the random K, V and Q values.
  float scale = 1.0f;
  /// The constant c of the K and V scale rule (0.156: UltraQuant as
  /// published; 0.196 is the measured optimum, docs/accuracy.md).
  double c = 0.156;
  /// The mse_search scale rule (per-group exponent search) for K and V.
  bool mseSearch = false;
  /// Code V in the Hadamard-rotated domain (the output is rotated back).
  bool vRotated = false;
  /// Softmax scale; 0 means 1/sqrt(headDim).
  float softmaxScale = 0.0f;
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
  /// Output against the reference: relative L2 error, largest absolute
  /// error, and the number of elements outside the per-element bound (see
  /// docs/gpu-kernels.md: bf16 rounding of P plus f32 accumulation).
  double relL2 = 0, maxAbsError = 0;
  int64_t outsideBound = 0;
  int64_t numOutputs = 0;
  /// The kernels' output [seqs, q heads, D].
  std::vector<float> output;
  emu::Stats writeStats, partialStats, mergeStats;
  int64_t numPartitions = 0;
};

/// Compiles and emulates `problem`; errors (compile, emulation, reference)
/// come back as llvm::Error.
llvm::Expected<AttentionReport>
runEmulatedAttention(const AttentionProblem &problem);

} // namespace uq

#endif // UQ_TARGET_EMULATEDATTENTION_H
