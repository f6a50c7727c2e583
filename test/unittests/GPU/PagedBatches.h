//===- PagedBatches.h - Paged-attention batches for the gfx950 tests ------===//
//
// One compiled uq.paged_attention configuration (run-time sizes) run on
// several batches of decodes, prefill chunks and uncovered tokens in the
// emulator, each checked against ref::pagedAttention's derived bound.
// Shared by PagedAttentionTest.cpp and FormatOptionsTest.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_TEST_UNITTESTS_GPU_PAGEDBATCHES_H
#define UQ_TEST_UNITTESTS_GPU_PAGEDBATCHES_H

#include "uq/Harness/EmulatedAttention.h"

#include "gtest/gtest.h"

#include <cmath>
#include <string>
#include <vector>

namespace uq::test {

struct Batch {
  std::vector<int32_t> queryLens, seqLens;
  int64_t leading = 0, trailing = 0;
};

inline std::string describe(const Batch &b) {
  std::string s = "q/len";
  for (size_t i = 0; i < b.queryLens.size(); ++i)
    s += " " + std::to_string(b.queryLens[i]) + "/" +
         std::to_string(b.seqLens[i]);
  return s + " lead " + std::to_string(b.leading) + " trail " +
         std::to_string(b.trailing);
}

/// Compiles \p config once and checks every batch against the reference:
/// no output outside the bound, relative L2 below \p maxRelL2, and (with
/// \p finite) every output finite. Batch i runs with seed 5 + i.
inline void runBatches(const AttentionProblem &config, int64_t window,
                       const std::vector<Batch> &batches,
                       double maxRelL2 = 0.02, bool finite = false) {
  PagedAttentionProblem shape;
  shape.config = config;
  shape.window = window;
  auto compiled = CompiledPagedAttention::compile(shape);
  ASSERT_TRUE(static_cast<bool>(compiled))
      << llvm::toString(compiled.takeError());
  uint64_t seed = 5;
  for (const Batch &b : batches) {
    PagedAttentionProblem pp = shape;
    pp.config.seed = seed++;
    pp.queryLens = b.queryLens;
    pp.seqLens = b.seqLens;
    pp.leadingTokens = b.leading;
    pp.trailingTokens = b.trailing;
    auto report = (*compiled)->run(pp);
    ASSERT_TRUE(static_cast<bool>(report))
        << describe(b) << ": " << llvm::toString(report.takeError());
    EXPECT_EQ(report->outsideBound, 0)
        << describe(b) << ": of " << report->numOutputs
        << " outputs; max abs error " << report->maxAbsError << ", rel L2 "
        << report->relL2;
    EXPECT_LT(report->relL2, maxRelL2) << describe(b);
    EXPECT_GT(report->numOutputs, 0);
    if (finite) {
      for (float x : report->output) {
        ASSERT_TRUE(std::isfinite(x)) << describe(b);
      }
    }
  }
}

} // namespace uq::test

#endif // UQ_TEST_UNITTESTS_GPU_PAGEDBATCHES_H
