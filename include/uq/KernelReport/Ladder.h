//===- Ladder.h - The kernel ladder and the serving kernel table -*- C++ -*-===//
//
// `uq-kernel-report --ladder`: predicted decode-step times of the BF16-KV,
// FP8-KV and UltraQuant kernels over a grid of head dims, GQA ratios,
// contexts and batches, with each format's HBM floor and the ratios
// UQ/FP8 and UQ/BF16 (docs/performance.md). `--table FILE`: the same
// predictions on the serving simulator's grid, written in the kernel-table
// format of docs/serving.md, with prefill points from the compiled
// prefill kernels (PrefillReport.h).
//
//===----------------------------------------------------------------------===//

#ifndef UQ_KERNELREPORT_LADDER_H
#define UQ_KERNELREPORT_LADDER_H

#include "uq/KernelReport/StepTiming.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace uq::report {

/// One compiled shape of the ladder: head dim, GQA ratio, KV heads.
struct LadderShape {
  int64_t headDim = 128, gqa = 8, kvHeads = 8;
};

struct LadderOptions {
  std::vector<LadderShape> shapes;
  std::vector<int64_t> contexts;
  std::vector<uint64_t> batches;
  std::vector<KVCacheKind> formats = {KVCacheKind::BF16, KVCacheKind::FP8,
                                      KVCacheKind::UltraQuant};
  int64_t blockSize = 16, partitionSize = 256;
  /// The decode's partition rule (DecodePartitions.h).
  int64_t maxPartitionTokens = 2048, minPartitionTokens = 64,
          decodeWorkgroups = 1024;
  /// The cache in #uq.cache_layout<head_major> (--cache-layout).
  bool headMajor = false;
  /// The uq4 kernels with E4M3 value scales (--v-scale-e4m3).
  bool vScaleE4M3 = false;
  /// How the timing model counts HBM traffic (--hbm-traffic).
  emu::TimingParams::HbmTraffic hbmTraffic =
      emu::TimingParams::HbmTraffic::Lines;
  /// Traced workgroups per group of alike partitions.
  unsigned samples = 3;
  /// The sampled-vs-whole check: sequence lengths of its batch (empty: no
  /// check), run on the first shape.
  std::vector<int32_t> checkLens;
  /// The command line, for the outputs.
  std::string command;
  /// Where to write the JSON of the ladder (empty: none).
  std::string jsonPath;

  /// --table's prefill entries: one per (shape of prefillShapes, format),
  /// from the compiled uq.paged_attention kernels (PrefillReport.h). A
  /// point is one chunk of n new tokens over a context of c tokens (the new
  /// ones included), alone in its call: for each n of prefillNewTokens, the
  /// contexts n and every c of prefillContexts above n. No prefill entries
  /// when prefillShapes is empty.
  std::vector<LadderShape> prefillShapes;
  std::vector<int64_t> prefillNewTokens, prefillContexts;
  /// Cached tokens drawn and quantized per prefill point; later tokens
  /// repeat their bytes (PagedAttentionProblem::distinctTokens; 0: all).
  int64_t prefillDistinctTokens = 4096;
};

/// Runs the ladder, prints its tables to \p os and writes the JSON.
llvm::Error runLadder(const LadderOptions &opts, llvm::raw_ostream &os);

/// Writes the serving simulator's kernel table (docs/serving.md, "Kernel
/// table") for the shapes, contexts and batches of \p opts to \p path, and
/// a summary to \p os.
llvm::Error writeKernelTable(const LadderOptions &opts, llvm::StringRef path,
                             llvm::raw_ostream &os);

} // namespace uq::report

#endif // UQ_KERNELREPORT_LADDER_H
