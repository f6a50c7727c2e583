//===- DecodeReport.h - The single-kernel report ----------------*- C++ -*-===//
//
// uq-kernel-report's default mode: compiles decode attention for one model
// shape, prints every kernel's resource use (registers, LDS, occupancy)
// from the kernel JSON, then runs one long sequence in the emulator and
// prints the dynamic instruction counts per 64-token tile by class and the
// global bytes read per token per KV head (the floor is the slot size: 136
// B at D = 128), then the query preparation, merge and cache write.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_KERNELREPORT_DECODEREPORT_H
#define UQ_KERNELREPORT_DECODEREPORT_H

#include "uq/Harness/EmulatedAttention.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace uq::report {

/// Prints the report of \p pb (one sequence, pb.seqLens[0] tokens; the
/// cache write is measured on its own, on 1024 tokens, and the decode's
/// cache written by the reference to keep the run short) to \p os. Returns
/// whether every output was inside the reference's bound and the cache
/// write bit-exact.
llvm::Expected<bool> runDecodeReport(const AttentionProblem &pb,
                                     llvm::raw_ostream &os);

} // namespace uq::report

#endif // UQ_KERNELREPORT_DECODEREPORT_H
