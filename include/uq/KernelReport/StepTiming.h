//===- StepTiming.h - Timing-model prediction of a decode step --*- C++ -*-===//
//
// Predicts the time of one decode-attention step (the query, partial and
// merge launches of one layer) of a kernel configuration compiled ONCE with
// run-time sizes, for any batch of sequence lengths, with the gfx950 timing
// model (docs/timing-model.md). Large steps are sampled: only representative
// workgroups are emulated and traced, each with the weight of the
// workgroups it stands for (docs/performance.md, "Sampling"); small steps
// can be emulated whole to check the sampling.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_KERNELREPORT_STEPTIMING_H
#define UQ_KERNELREPORT_STEPTIMING_H

#include "uq/Emulator/TimingModel.h"
#include "uq/Harness/EmulatedAttention.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace uq::report {

/// One compiled decode-attention configuration (everything but the run-time
/// sizes: sequences, lengths, block-table width, cache blocks).
struct KernelConfig {
  KVCacheKind format = KVCacheKind::UltraQuant;
  /// uq4 values with FP8 E4M3 group scales (--v-scale-e4m3).
  bool vScaleE4M3 = false;
  int64_t headDim = 128;
  int64_t numQHeads = 64;
  int64_t numKVHeads = 8;
  int64_t blockSize = 16;
  int64_t partitionSize = 256;
  /// uq.decode_attention's partition rule (uq-compile
  /// --max-partition-tokens, --min-partition-tokens, --decode-workgroups).
  int64_t maxPartitionTokens = 2048;
  int64_t minPartitionTokens = 64;
  int64_t decodeWorkgroups = 1024;
  /// The cache in #uq.cache_layout<head_major> (--cache-layout=head-major).
  bool headMajor = false;
  /// Partitions the compiled host code picks for \p numSeqs sequences whose
  /// block tables hold \p capacity tokens.
  int64_t partitions(int64_t numSeqs, int64_t capacity) const;
  /// How the timing model counts HBM traffic (--hbm-traffic).
  emu::TimingParams::HbmTraffic hbmTraffic =
      emu::TimingParams::HbmTraffic::Lines;
  emu::TimingParams params() const {
    emu::TimingParams p = emu::TimingParams::gfx950();
    p.hbmTraffic = hbmTraffic;
    return p;
  }
  int64_t gqa() const { return numQHeads / numKVHeads; }
};

/// How a launch was sampled.
struct LaunchSampling {
  std::string kernel;
  uint64_t workgroups = 0; ///< Of the real launch.
  uint64_t traced = 0;     ///< Emulated and traced.
};

/// The prediction of one step.
struct StepPrediction {
  /// query, partial, merge (model); query, single with one partition.
  emu::StepEstimate step;
  /// The cache write of the step's new tokens (one per sequence).
  emu::LaunchEstimate cacheWrite;
  /// query, partial, merge, cache write.
  std::vector<LaunchSampling> sampling;
  uint64_t sequences = 0, totalTokens = 0, numPartitions = 0;
  /// KV-cache bytes the step must read at least (tokens x KV heads x slot)
  /// and the time to stream them at the model's achievable HBM bandwidth.
  double cacheBytes = 0, floorMicroseconds = 0;
  /// HBM bytes the model counts for the partial launch per token per KV
  /// head (distinct 128-B lines touched, summed over workgroups).
  double partialHbmBytesPerTokenHead = 0;
  /// Host seconds spent emulating the step.
  double emulatedSeconds = 0;
  /// Full emulation only: the output against the reference library.
  bool checked = false;
  double relL2 = 0;
};

/// Predicts decode steps of one compiled configuration.
class StepPredictor {
public:
  /// Compiles \p cfg with run-time sizes (one code object for every batch).
  static llvm::Expected<std::unique_ptr<StepPredictor>>
  create(const KernelConfig &cfg);
  ~StepPredictor();

  /// Predicts the step of a batch whose sequence s has seqLens[s] tokens
  /// (the new one included). With \p sample, only representative
  /// workgroups run (at most \p fullSamples per group of alike partitions);
  /// without, every workgroup of the real batch runs and the output is
  /// checked against the reference library.
  llvm::Expected<StepPrediction> predict(llvm::ArrayRef<int32_t> seqLens,
                                         bool sample,
                                         unsigned fullSamples = 3) const;
  /// Sampled predictions of batches of \p batches[i] sequences of \p seqLen
  /// tokens each, from one emulated sequence (traced once).
  llvm::Expected<std::vector<StepPrediction>>
  predictUniform(int32_t seqLen, llvm::ArrayRef<uint64_t> batches,
                 unsigned fullSamples = 3) const;

  const KernelConfig &config() const;
  /// Host seconds the compile took.
  double compileSeconds() const;
  /// Cache bytes per token per KV head (the slot).
  int64_t slotBytes() const;
  /// Registers, LDS and occupancy of a kernel, one line.
  std::string resources(llvm::StringRef kernel) const;

private:
  StepPredictor();
  struct Traced;
  /// Emulates the batch \p emuLens (block-table width for \p maxLen
  /// tokens), sampled or whole, tracing every launch.
  llvm::Expected<Traced> trace(llvm::ArrayRef<int32_t> emuLens, int64_t maxLen,
                               int64_t numPartitions, bool sample,
                               unsigned fullSamples) const;
  /// The prediction when emulated sequence e stands for mult[e] sequences.
  llvm::Expected<StepPrediction> estimate(const Traced &tr,
                                          llvm::ArrayRef<uint64_t> mult,
                                          uint64_t totalTokens) const;
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// "bf16", "fp8", "uq4".
inline const char *formatName(KVCacheKind k) { return kvCacheKindName(k); }

} // namespace uq::report

#endif // UQ_KERNELREPORT_STEPTIMING_H
