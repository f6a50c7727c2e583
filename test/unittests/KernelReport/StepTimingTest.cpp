//===- StepTimingTest.cpp - Step timing and sampling, called directly ----===//
//
// The library behind uq-kernel-report --ladder / --table and `ninja
// kernel-times` (include/uq/KernelReport/StepTiming.h), on one tiny
// compiled configuration (D 128, GQA 4, 2 KV heads, uq4):
//  - a whole emulation of a batch checks its output against the reference
//    and traces every workgroup; the sampled prediction of the same batch
//    traces fewer partial workgroups and stays close to it;
//  - predictUniform (one emulated sequence standing for a batch of equal
//    ones, the table's path) gives what predict gives for the same batch;
//  - configurations and batches it cannot predict are errors, not crashes.
//
//===----------------------------------------------------------------------===//

#include "uq/KernelReport/StepTiming.h"
#include "uq/KernelReport/DecodeReport.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace uq;
using namespace uq::report;

namespace {

KernelConfig tinyConfig() {
  KernelConfig c;
  c.format = KVCacheKind::UltraQuant;
  c.headDim = 128;
  c.numKVHeads = 2;
  c.numQHeads = 8;
  return c;
}

/// One compiled predictor for the tests below (compiling is the slow part).
const StepPredictor &predictor() {
  static std::unique_ptr<StepPredictor> p = [] {
    auto sp = StepPredictor::create(tinyConfig());
    if (!sp) {
      ADD_FAILURE() << llvm::toString(sp.takeError());
      return std::unique_ptr<StepPredictor>();
    }
    return std::move(*sp);
  }();
  return *p;
}

double relDiff(double a, double b) { return std::fabs(b - a) / a; }

TEST(StepTiming, WholeEmulationIsCheckedAndSamplingAgrees) {
  const std::vector<int32_t> lens = {600, 600, 300, 17};
  auto whole = predictor().predict(lens, /*sample=*/false);
  ASSERT_TRUE(bool(whole)) << llvm::toString(whole.takeError());
  auto smp = predictor().predict(lens, /*sample=*/true, 3);
  ASSERT_TRUE(bool(smp)) << llvm::toString(smp.takeError());

  EXPECT_TRUE(whole->checked);
  EXPECT_LT(whole->relL2, 0.05);
  EXPECT_FALSE(smp->checked);
  EXPECT_EQ(whole->sequences, 4u);
  EXPECT_EQ(whole->totalTokens, 600u + 600 + 300 + 17);
  // query, partial (or single), merge (when several partitions), cache
  // write: the same launches, the same real grids.
  ASSERT_EQ(whole->sampling.size(), smp->sampling.size());
  for (size_t i = 0; i < whole->sampling.size(); ++i) {
    EXPECT_EQ(whole->sampling[i].kernel, smp->sampling[i].kernel);
    EXPECT_EQ(whole->sampling[i].workgroups, smp->sampling[i].workgroups);
    EXPECT_EQ(whole->sampling[i].traced, whole->sampling[i].workgroups)
        << whole->sampling[i].kernel;
  }
  // Sequences of equal length are emulated once and the partial launch's
  // partitions sampled: fewer workgroups traced.
  EXPECT_LT(smp->sampling[1].traced, whole->sampling[1].traced);
  // The cache bytes are tokens x KV heads x the slot (136 B at D = 128 for
  // uq4, the format contract).
  EXPECT_EQ(predictor().slotBytes(), 136);
  EXPECT_DOUBLE_EQ(whole->cacheBytes, double(whole->totalTokens) * 2 * 136);
  // The sampled step within 5 % of the whole one (the ladder's check).
  EXPECT_LT(
      relDiff(whole->step.estimateMicroseconds, smp->step.estimateMicroseconds),
      0.05);
  EXPECT_LE(smp->step.boundMicroseconds, smp->step.estimateMicroseconds);
}

TEST(StepTiming, UniformBatchesMatchPredict) {
  const std::vector<uint64_t> batches = {1, 3};
  auto uniform = predictor().predictUniform(700, batches, 3);
  ASSERT_TRUE(bool(uniform)) << llvm::toString(uniform.takeError());
  ASSERT_EQ(uniform->size(), batches.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    std::vector<int32_t> lens(batches[i], 700);
    auto p = predictor().predict(lens, /*sample=*/true, 3);
    ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
    const StepPrediction &u = (*uniform)[i];
    EXPECT_EQ(u.sequences, batches[i]);
    EXPECT_EQ(u.numPartitions, p->numPartitions);
    EXPECT_DOUBLE_EQ(u.step.estimateMicroseconds, p->step.estimateMicroseconds);
    EXPECT_DOUBLE_EQ(u.cacheWrite.estimateMicroseconds(),
                     p->cacheWrite.estimateMicroseconds());
  }
}

TEST(StepTiming, RefusesWhatItCannotPredict) {
  KernelConfig c = tinyConfig();
  c.numQHeads = 6;
  c.numKVHeads = 4;
  auto sp = StepPredictor::create(c);
  ASSERT_FALSE(bool(sp));
  EXPECT_NE(llvm::toString(sp.takeError()).find("not a positive multiple"),
            std::string::npos);

  auto empty = predictor().predict({}, /*sample=*/true);
  ASSERT_FALSE(bool(empty));
  EXPECT_NE(llvm::toString(empty.takeError()).find("at least one sequence"),
            std::string::npos);
  auto negative = predictor().predict({100, -1}, /*sample=*/false);
  ASSERT_FALSE(bool(negative));
  EXPECT_NE(llvm::toString(negative.takeError()).find(">= 0"),
            std::string::npos);
  auto zero = predictor().predictUniform(100, {0});
  ASSERT_FALSE(bool(zero));
  EXPECT_NE(llvm::toString(zero.takeError()).find("a batch of 0"),
            std::string::npos);
}

TEST(DecodeReport, RunsOneSequence) {
  AttentionProblem pb;
  pb.seqLens = {64, 64};
  std::string text;
  llvm::raw_string_ostream os(text);
  auto ok = runDecodeReport(pb, os);
  ASSERT_FALSE(bool(ok));
  EXPECT_NE(llvm::toString(ok.takeError()).find("one sequence"),
            std::string::npos);
  EXPECT_TRUE(text.empty());
}

} // namespace
