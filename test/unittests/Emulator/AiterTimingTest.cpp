//===- AiterTimingTest.cpp - Sampled timing of AITER's kernels --------------===//
//
// `uq-kernel-report --calibrate` predicts AMD's forward attention kernel at
// full size from a few sampled workgroups of the real grid. Here the same
// sampling (evenly spaced workgroups, scaled to the grid) is checked against
// a whole emulation of a reduced problem of the same grid structure (query
// tiles x heads x batch): the sampled and the whole estimates must agree.
// Skipped when $UQ_SHARED_DIR/peers/aiter is missing.
//
//===----------------------------------------------------------------------===//

#include "AiterLaunch.h"

#include "uq/Emulator/TimingModel.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace uq::emu;
using namespace uq::emu::test;

namespace {

/// fwd_hd128_bf16 at b, hq, hk, s (zero inputs: the instruction stream of
/// the kernel does not depend on the values).
AiterLaunch forwardArgs(unsigned b, unsigned hq, unsigned hk, unsigned s) {
  const unsigned D = 128, es = 2;
  AiterLaunch L;
  L.buffers[0] = std::vector<uint8_t>((size_t)b * s * hq * D * 2);
  L.buffers[16] = std::vector<uint8_t>((size_t)b * s * hq * D * es);
  L.buffers[32] = std::vector<uint8_t>((size_t)b * s * hk * D * es);
  L.buffers[48] = std::vector<uint8_t>((size_t)b * s * hk * D * es);
  L.f32[80] = 1.0f / std::sqrt((float)D);
  L.u32[96] = s;
  L.u32[112] = hq * D * es;
  L.u32[128] = 256 * hq * D * es;
  L.u32[144] = D * es;
  L.u32[160] = s * hq * D * es;
  L.u32[176] = hq / hk;
  L.u32[192] = hk * D * es;
  L.u32[208] = D * es;
  L.u32[224] = s * hk * D * es;
  L.u32[240] = 5;
  L.u32[272] = s;
  L.u32[288] = D;
  L.u32[304] = D;
  L.u32[320] = hq;
  L.u32[336] = hk * D * es;
  L.u32[352] = D * es;
  L.u32[368] = s * hk * D * es;
  L.u32[384] = hq * D * 2;
  L.u32[400] = D * 2;
  L.u32[416] = s * hq * D * 2;
  return L;
}

TEST(AiterTiming, SampledForwardMatchesWholeEmulation) {
  if (!aiterAvailable())
    GTEST_SKIP() << "no AITER code objects at " << aiterDir();
  // Grid (2 query tiles, 4 heads, 1): 8 workgroups, all traced, or 2 of
  // them (0 and 4, what evenly spaced sampling picks).
  const unsigned b = 1, hq = 4, hk = 1, s = 512;
  LaunchConfig cfg;
  cfg.grid = {2, hq, b};
  cfg.block = {512, 1, 1};
  auto predict = [&](std::optional<std::vector<uint64_t>> only)
      -> llvm::Expected<LaunchEstimate> {
    TimingRecorder rec;
    LaunchConfig c = cfg;
    c.trace = &rec;
    c.workgroupIndices = only;
    KernelInfo info;
    auto out = launchAiter(aiterDir() + "fwd_hd128_bf16.co", c,
                           forwardArgs(b, hq, hk, s), &info);
    if (!out)
      return out.takeError();
    return predictLaunch(info, rec.profiles(), 2 * hq * b);
  };
  auto whole = predict(std::nullopt);
  ASSERT_TRUE(bool(whole)) << llvm::toString(whole.takeError());
  auto sampled = predict(std::vector<uint64_t>{0, 4});
  ASSERT_TRUE(bool(sampled)) << llvm::toString(sampled.takeError());
  EXPECT_EQ(whole->tracedWorkgroups, 8u);
  EXPECT_EQ(sampled->tracedWorkgroups, 2u);
  // The workgroups of a non-causal forward launch do alike work: the
  // sample's per-workgroup means, and so the prediction, are the whole's
  // within 2%.
  EXPECT_NEAR(sampled->estimateCycles, whole->estimateCycles,
              0.02 * whole->estimateCycles);
  EXPECT_NEAR(sampled->mfmaCycles, whole->mfmaCycles, 0.02 * whole->mfmaCycles);
  EXPECT_NEAR(sampled->valuCycles, whole->valuCycles, 0.02 * whole->valuCycles);
  EXPECT_NEAR(sampled->hbmBytes, whole->hbmBytes, 0.02 * whole->hbmBytes);
  EXPECT_EQ(sampled->boundResource, whole->boundResource);
  EXPECT_GT(whole->mfmaCycles, 0.0);
}

} // namespace
