//===- PrefillReport.h - uq-kernel-report --prefill -------------*- C++ -*-===//

#ifndef UQ_TOOLS_UQKERNELREPORT_PREFILLREPORT_H
#define UQ_TOOLS_UQKERNELREPORT_PREFILLREPORT_H

#include <cstdint>

namespace uq {

struct PrefillReportOptions {
  int64_t numQHeads = 8, numKVHeads = 1, headDim = 128, blockSize = 16;
  int64_t partitionSize = 256;
  int64_t newTokens = 4096, prefix = 32768;
  unsigned samples = 4;
  /// Waves per prefill workgroup (uq-compile --prefill-waves).
  int64_t prefillWaves = 4;
};

/// Prints the timing model's figures of a long prefill for the uq4 and fp8
/// caches; returns the exit status (1 on an error or a wrong result).
int runPrefillReport(const PrefillReportOptions &o);

} // namespace uq

#endif // UQ_TOOLS_UQKERNELREPORT_PREFILLREPORT_H
