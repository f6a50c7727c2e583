//===- PrefillReport.h - uq-kernel-report --prefill -------------*- C++ -*-===//
//
// The timing model's figures of one long prefill (uq.paged_attention: a
// chunk of new tokens over a cached prefix, optionally with decodes in the
// same batch) for each cache format, after a check of the same batch shape
// reduced and emulated whole (PrefillReport.cpp says how).
//
//===----------------------------------------------------------------------===//

#ifndef UQ_KERNELREPORT_PREFILLREPORT_H
#define UQ_KERNELREPORT_PREFILLREPORT_H

#include "uq/Harness/EmulatedAttention.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <vector>

namespace uq::report {

struct PrefillReportOptions {
  int64_t numQHeads = 8, numKVHeads = 1, headDim = 128, blockSize = 16;
  int64_t partitionSize = 256;
  int64_t newTokens = 4096, prefix = 32768;
  /// Decodes in the same batch: sequences of one new token over `prefix`
  /// cached tokens (a mixed batch).
  int64_t decodes = 0;
  /// Split-K partitions of the prefill launch (0: the compiler's rule,
  /// ceil(context / partition size)).
  int64_t partitions = 1;
  unsigned samples = 4;
  /// The caches reported (uq4 and fp8 unless given); the ratio line needs
  /// uq4 and fp8 among them.
  std::vector<KVCacheKind> formats = {KVCacheKind::UltraQuant,
                                      KVCacheKind::FP8};
  /// Waves per prefill workgroup (uq-compile --prefill-waves).
  int64_t prefillWaves = 4;
  /// MFMA rows per prefill wave (uq-compile --prefill-rows).
  int64_t prefillRows = 16;
  /// The FP4 value tile converted once per workgroup
  /// (uq-compile --prefill-shared-v).
  bool prefillSharedV = true;
  /// The check: the same batch shape (decodes, one chunk, KV heads) reduced
  /// to checkNewTokens over checkPrefix, emulated whole (output against the
  /// reference) and sampled; the relative difference of the prefill
  /// launch's estimate must stay within checkTolerance.
  int64_t checkNewTokens = 64, checkPrefix = 448;
  double checkTolerance = 0.1;
  /// Cached tokens drawn and quantized (0: all; PagedAttentionProblem::
  /// distinctTokens): the kernel table's long contexts.
  int64_t distinctTokens = 0;
};

/// One chunk of the kernel table's prefill entries: `newTokens` new tokens
/// over `context` tokens (the new ones included), and its prediction.
struct PrefillChunkTiming {
  int64_t newTokens = 0, context = 0;
  PagedAttentionTiming timing;
};

/// The prefill kernel of \p o's shape and \p format, checked as the
/// report checks it (the reduced batch emulated whole against the reference
/// and sampled; a failed check is an error here, not a warning), then the
/// prediction of each chunk of \p chunks ((new tokens, context) pairs,
/// each alone in its call, after o.decodes decodes) with o.partitions
/// split-K partitions. \p compileSeconds, when given, receives the
/// compile time.
llvm::Expected<std::vector<PrefillChunkTiming>>
predictPrefillChunks(const PrefillReportOptions &o, KVCacheKind format,
                     llvm::ArrayRef<std::pair<int64_t, int64_t>> chunks,
                     double *compileSeconds = nullptr);

/// Prints the timing model's figures of a long prefill for each of
/// \p o's cache formats to \p os. A failed check (outputs outside the
/// bound, or the sampled prediction off the whole emulation by more than
/// the tolerance) is passed to \p warn ("<format>: the check failed ...")
/// and the report goes on; returns whether every check passed. An error
/// (compiling, emulating) names the format and stops the report.
llvm::Expected<bool>
runPrefillReport(const PrefillReportOptions &o, llvm::raw_ostream &os,
                 llvm::function_ref<void(const llvm::Twine &)> warn);

} // namespace uq::report

#endif // UQ_KERNELREPORT_PREFILLREPORT_H
