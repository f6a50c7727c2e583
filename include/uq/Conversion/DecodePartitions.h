//===- DecodePartitions.h - Split-K partitions of a decode step -*- C++ -*-===//
//
// The partition-count rule of uq.decode_attention's GPU launch
// (docs/uq-compile.md, "Partitions per launch"). The host code that
// convert-uq-to-wave writes computes the same rule with arith ops; callers
// that launch the kernels from the JSON (the emulated harness,
// uq-kernel-report) use this function.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_CONVERSION_DECODEPARTITIONS_H
#define UQ_CONVERSION_DECODEPARTITIONS_H

#include <algorithm>
#include <cstdint>

namespace uq {

/// The constants of the rule (uq-compile --max-partition-tokens,
/// --min-partition-tokens, --decode-workgroups; the partial kernel's JSON
/// params max_partition_tokens, min_partition_tokens, target_workgroups).
struct DecodePartitionRule {
  /// The most tokens one partition takes.
  int64_t maxTokens = 2048;
  /// The fewest tokens a partition is given when more workgroups are wanted.
  int64_t minTokens = 64;
  /// Partial workgroups a launch aims at (num_partitions x KV heads x
  /// sequences).
  int64_t targetWorkgroups = 1024;
};

inline int64_t ceilDivPositive(int64_t a, int64_t b) {
  return b <= 0 ? 0 : (a + b - 1) / b;
}

/// Partitions of a launch over \p numSeqs sequences of \p numKVHeads KV
/// heads whose block tables hold \p capacity tokens (max_blocks x
/// block_size):
///   P = max(1, ceil(C / maxTokens), min(ceil(target / (S x Hkv)),
///                                       ceil(C / minTokens)))
/// - enough partitions that none exceeds maxTokens (one workgroup's
///   critical path stays below the launch's bandwidth time);
/// - more, down to minTokens each, while the launch has fewer than
///   targetWorkgroups workgroups (small batches, short contexts);
/// - one (the single-pass kernel, no merge) when neither asks for more.
inline int64_t decodePartitionCount(const DecodePartitionRule &r,
                                    int64_t numSeqs, int64_t numKVHeads,
                                    int64_t capacity) {
  capacity = std::max<int64_t>(capacity, 0);
  int64_t least = ceilDivPositive(capacity, r.maxTokens);
  int64_t rows = std::max<int64_t>(1, numSeqs * numKVHeads);
  int64_t fill = ceilDivPositive(r.targetWorkgroups, rows);
  int64_t most = ceilDivPositive(capacity, r.minTokens);
  return std::max<int64_t>({int64_t(1), least, std::min(fill, most)});
}

} // namespace uq

#endif // UQ_CONVERSION_DECODEPARTITIONS_H
