//===- TimingModelTest.cpp - The gfx950 timing model ----------------------===//
//
// Small instruction streams whose cycle counts follow by hand from the
// documented constants (docs/timing-model.md):
//   pass = 4 cycles (a wave64 VALU instruction on a 16-lane SIMD; the unit
//          of LLVM's gfx950 scheduling model), v_add_f32 = 1 pass,
//   scaled 16x16x128 MFMA = 4 passes (FP4 x FP4) or 8 (an FP8 operand),
//   LDS: 64 banks of 4 bytes, a wave64 b32 access is one phase of 64 lanes,
//   HBM: 5 TB/s achievable at 2.4 GHz = 5e12 / 2.4e9 bytes a cycle,
//   latencies: SMEM 200, global 800, LDS 64 cycles.
// The shared test prologue (kernel-prologue.inc) issues 3 s_load_dwordx2, 2
// VALU (v_and, v_lshlrev) and an s_waitcnt lgkmcnt(0).
//
//===----------------------------------------------------------------------===//

#include "uq/Emulator/TimingModel.h"

#include "Assemble.h"

#include <gtest/gtest.h>

#include <set>

using namespace uq::emu;
using uq::emu::test::assemble;

namespace {
const double kPass = 4;

/// Runs `body` in `grid` one-wave workgroups (all of them traced, or only
/// `only`) and returns the recorder's profiles.
std::vector<WorkgroupProfile>
profile(const std::string &body, uint32_t grid = 1,
        std::optional<std::vector<uint64_t>> only = std::nullopt,
        KernelInfo *info = nullptr,
        TimingParams params = TimingParams::gfx950()) {
  auto bytes = assemble(body);
  auto co = CodeObject::load(bytes);
  EXPECT_TRUE(bool(co));
  if (!co) {
    llvm::consumeError(co.takeError());
    return {};
  }
  if (info)
    *info = (*co)->kernels()[0];
  Emulator emu(**co);
  TimingRecorder rec(params);
  LaunchConfig cfg;
  cfg.grid = {grid, 1, 1};
  cfg.trace = &rec;
  cfg.workgroupIndices = only;
  std::vector<KernelArg> args = {
      KernelArg::buffer(std::vector<uint8_t>(4096)),
      KernelArg::buffer(std::vector<uint8_t>(4096)),
      KernelArg::buffer(std::vector<uint8_t>(4096))};
  llvm::Error e = emu.launch("k", cfg, args);
  EXPECT_FALSE(bool(e)) << llvm::toString(std::move(e));
  return rec.profiles();
}
} // namespace

TEST(TimingModel, HundredVAddF32InOneWave) {
  auto p = profile(".rept 100\n  v_add_f32 v2, v2, v3\n.endr\n  s_endpgm");
  ASSERT_EQ(p.size(), 1u);
  // 100 v_add_f32 + the prologue's 2 VALU, one pass each.
  EXPECT_EQ(p[0].valuCycles, (100 + 2) * kPass);
  EXPECT_EQ(p[0].mfmaCycles, 0u);
  // Critical path: 3 SMEM issue at 0, 4, 8; lgkmcnt(0) waits for the last
  // (8 + 200); the 100 v_add_f32 take a pass each; s_endpgm one slot.
  EXPECT_EQ(p[0].criticalPath, 8 + 200 + 100 * kPass + kPass);
}

TEST(TimingModel, ScaledMfmaRateDependsOnFormat) {
  std::string fp4 = ".rept 8\n  v_mfma_scale_f32_16x16x128_f8f6f4 v[24:27], "
                    "v[4:7], v[12:15], 0, v20, v21 cbsz:4 blgp:4\n.endr\n"
                    "  s_endpgm";
  std::string fp8 = ".rept 8\n  v_mfma_scale_f32_16x16x128_f8f6f4 v[24:27], "
                    "v[4:11], v[12:15], 0, v20, v21 cbsz:0 blgp:4\n.endr\n"
                    "  s_endpgm";
  auto a = profile(fp4), b = profile(fp8);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].mfmaCycles, 8 * 4 * kPass);  // 16 cycles each
  EXPECT_EQ(b[0].mfmaCycles, 8 * 8 * kPass);  // 32 cycles each
}

TEST(TimingModel, LdsBankConflicts) {
  // v1 = 4 * lane. Stride 4 B: 64 lanes hit 64 banks (1 cycle); 8 B: lanes
  // l and l+32 share a bank (2-way, 2 cycles); 16 B: 4-way (4 cycles); one
  // address for all lanes is a broadcast (1 cycle).
  auto p = profile(R"(
  v_lshlrev_b32 v7, 1, v1
  v_lshlrev_b32 v8, 2, v1
  v_mov_b32 v9, 0
  ds_read_b32 v10, v1
  ds_read_b32 v11, v7
  ds_read_b32 v12, v8
  ds_read_b32 v13, v9
  s_waitcnt lgkmcnt(0)
  s_endpgm)");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].ldsCycles, 1u + 2 + 4 + 1);
  EXPECT_EQ(p[0].ldsConflictCycles, 0u + 1 + 3 + 0);

  // ds_read_b128 without conflicts: 16 lanes x 4 dwords fill the 64 banks,
  // so a wave takes 4 phases = 4 cycles (256 bytes a cycle).
  TraceEvent e;
  std::vector<uint64_t> addr;
  for (unsigned l = 0; l < 64; ++l)
    addr.push_back(16 * l);
  e.exec = ~0ull;
  e.bytesPerAddress = 16;
  e.addresses = addr;
  EXPECT_EQ(TimingRecorder::ldsCycles(e, TimingParams::gfx950()), 4u);
}

TEST(TimingModel, GlobalLoadsOfALargeGridAreHbmBound) {
  // Each workgroup loads 64 lanes x 16 B = 1 KiB = 8 lines of 128 B.
  KernelInfo info;
  auto p = profile(R"(
  v_lshlrev_b32 v2, 2, v1
  global_load_dwordx4 v[4:7], v2, s[4:5]
  s_waitcnt vmcnt(0)
  s_endpgm)",
                   4, std::nullopt, &info);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].hbmBytes, 1024u);
  EXPECT_EQ(p[0].vmemRequests, 1024u / 64);
  // Sampled: the 4 traced workgroups stand for 256000.
  const uint64_t W = 256 * 1000;
  auto est = predictLaunch(info, p, W);
  ASSERT_TRUE(bool(est)) << llvm::toString(est.takeError());
  double bytesPerCycle = 5e12 / 2.4e9;
  EXPECT_NEAR(est->hbmCycles, W * 1024.0 / bytesPerCycle, 1e-6);
  EXPECT_EQ(est->boundResource, "HBM");
  EXPECT_NEAR(est->boundCycles, W * 1024.0 / bytesPerCycle, 1e-6);
  EXPECT_GE(est->estimateCycles, est->boundCycles);
  EXPECT_NEAR(est->boundMicroseconds(), W * 1024.0 / 5e12 * 1e6, 1e-9);
}

TEST(TimingModel, OccupancyFromRegistersAndLds) {
  // 512 registers per lane in granules of 8, at most 8 waves per SIMD.
  EXPECT_EQ(wavesPerSimd(128, 64), 512u / (128 + 64));
  EXPECT_EQ(wavesPerSimd(96, 0), 512u / 96);
  EXPECT_EQ(wavesPerSimd(100, 0), 512u / 104);
  EXPECT_EQ(wavesPerSimd(0, 0), 8u);
  EXPECT_EQ(wavesPerSimd(8, 0), 8u);
  EXPECT_EQ(wavesPerSimd(512, 0), 1u);
  KernelInfo k;
  k.vgprCount = 256; // 2 waves per SIMD
  k.groupSegmentSize = 4096;
  Occupancy o = occupancy(k, 1);
  EXPECT_EQ(o.wavesPerSimdByRegisters, 2u);
  EXPECT_EQ(o.workgroupsPerCUByRegisters, 4u * 2);
  EXPECT_EQ(o.workgroupsPerCUByLds, 160u * 1024 / 4096);
  EXPECT_EQ(o.workgroupsPerCU, 8u);
  EXPECT_EQ(o.limiter, "registers");
  Occupancy o2 = occupancy(k, 1, /*dynamicLds=*/60000);
  EXPECT_EQ(o2.workgroupsPerCU, 160u * 1024 / (4096 + 60000));
  EXPECT_EQ(o2.limiter, "LDS");
  // SGPRs (LLVM's gfx9 rule): <= 100 allow 8 waves, more only 7.
  EXPECT_EQ(wavesPerSimdBySgprs(100), 8u);
  EXPECT_EQ(wavesPerSimdBySgprs(104), 7u);
  KernelInfo ks;
  ks.vgprCount = 32; // 8 waves by VGPRs
  ks.sgprCount = 104;
  EXPECT_EQ(occupancy(ks, 1).workgroupsPerCU, 4u * 7);
  // Four-wave workgroups: 8 wave slots per CU hold 2 of them.
  EXPECT_EQ(occupancy(k, 4).workgroupsPerCU, 4u * 2 / 4);
}

TEST(TimingModel, LatencyAwareEstimate) {
  // Hand-made profiles, no emulation: one-wave workgroups with 400 VALU
  // cycles. vgpr 128 -> 4 waves per SIMD -> 16 resident per CU.
  KernelInfo k;
  k.name = "k";
  k.vgprCount = 128;
  WorkgroupProfile w;
  w.waves = 1;
  w.valuCycles = 400;
  w.criticalPath = 1000;
  // 16 workgroups per CU: one round, 4 waves per SIMD.
  auto e1 = predictLaunch(k, {w}, 256 * 16);
  ASSERT_TRUE(bool(e1));
  EXPECT_EQ(e1->boundResource, "VALU");
  EXPECT_DOUBLE_EQ(e1->boundCycles, 4 * 400.0);
  // The round lasts max(critical path 1000, 4 waves x 400) = 1600.
  EXPECT_DOUBLE_EQ(e1->estimateCycles, 1600.0);
  // A latency-bound workgroup: the round lasts its critical path, and two
  // rounds run back to back.
  w.criticalPath = 5000;
  auto e2 = predictLaunch(k, {w}, 256 * 32);
  ASSERT_TRUE(bool(e2));
  EXPECT_DOUBLE_EQ(e2->boundCycles, 8 * 400.0);
  EXPECT_DOUBLE_EQ(e2->estimateCycles, 2 * 5000.0);
  // A partial last round: 20 workgroups = 16 + 4 -> 5000 + max(5000, 400).
  auto e3 = predictLaunch(k, {w}, 256 * 20);
  ASSERT_TRUE(bool(e3));
  EXPECT_DOUBLE_EQ(e3->estimateCycles, 5000.0 + 5000.0);
  // Weights: a sample standing for 3/4 of the grid with twice the VALU.
  WorkgroupProfile heavy = w;
  heavy.valuCycles = 800;
  heavy.criticalPath = 0;
  w.criticalPath = 0;
  auto e4 = predictLaunch(k, {w, heavy}, 256 * 16, {256 * 4, 256 * 12});
  ASSERT_TRUE(bool(e4));
  EXPECT_DOUBLE_EQ(e4->valuCycles, 4 * (400 * 0.25 + 800 * 0.75));
  // A decode step is its launches back to back.
  StepEstimate s = predictStep({*e1, *e2});
  EXPECT_DOUBLE_EQ(s.estimateMicroseconds,
                   (1600.0 + 10000.0) / (2.4 * 1e3));
  // Bad input is an error, not a crash.
  EXPECT_FALSE(bool(predictLaunch(k, {}, 10)));
  llvm::consumeError(predictLaunch(k, {}, 10).takeError());
  auto bad = predictLaunch(k, {w}, 10, {1, 2});
  EXPECT_FALSE(bool(bad));
  llvm::consumeError(bad.takeError());
}

TEST(TimingModel, SampledWorkgroupsOnly) {
  auto p = profile("  s_endpgm", 100, std::vector<uint64_t>{3, 50, 99});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].index, 3u);
  EXPECT_EQ(p[1].index, 50u);
  EXPECT_EQ(p[2].index, 99u);
  // An index outside the grid is a usage error.
  auto bytes = assemble("  s_endpgm");
  auto co = CodeObject::load(bytes);
  ASSERT_TRUE(bool(co));
  Emulator emu(**co);
  LaunchConfig cfg;
  cfg.grid = {4, 1, 1};
  cfg.workgroupIndices = std::vector<uint64_t>{4};
  std::vector<KernelArg> args = {KernelArg::buffer({}), KernelArg::buffer({}),
                                 KernelArg::buffer({})};
  bool isUsage = false;
  std::string msg = errorMessage(emu.launch("k", cfg, args), isUsage);
  EXPECT_TRUE(isUsage);
  EXPECT_NE(msg.find("outside the grid"), std::string::npos) << msg;
}

TEST(TimingModel, HbmTrafficLinesOrBytes) {
  // Lane l loads 8 B at 60 l: runs that straddle 128-B lines now and then,
  // like the 136-B slots of one KV head among 8 (docs/timing-model.md,
  // "HBM traffic").
  const char *body = R"(
  v_mul_u32_u24 v2, 15, v1
  global_load_dwordx2 v[4:5], v2, s[4:5]
  s_waitcnt vmcnt(0)
  s_endpgm)";
  std::set<uint64_t> lines;
  for (uint64_t l = 0; l < 64; ++l)
    for (uint64_t a = 60 * l; a < 60 * l + 8; ++a)
      lines.insert(a / 128);
  auto byLines = profile(body);
  ASSERT_EQ(byLines.size(), 1u);
  // Lines: every line touched, whole.
  EXPECT_EQ(byLines[0].hbmBytes, lines.size() * 128);
  TimingParams p = TimingParams::gfx950();
  p.hbmTraffic = TimingParams::HbmTraffic::Bytes;
  auto byBytes = profile(body, 1, std::nullopt, nullptr, p);
  ASSERT_EQ(byBytes.size(), 1u);
  // Bytes: the 64 x 8 distinct bytes read.
  EXPECT_EQ(byBytes[0].hbmBytes, 64u * 8);
  EXPECT_EQ(byBytes[0].globalBytes, byLines[0].globalBytes);
  // The assumption is part of every estimate's text.
  KernelInfo info;
  (void)profile(body, 1, std::nullopt, &info);
  auto est = predictLaunch(info, byBytes, 1, {}, 0, p);
  ASSERT_TRUE(bool(est)) << llvm::toString(est.takeError());
  EXPECT_NE(est->assumptions.find("distinct bytes per workgroup"),
            std::string::npos);
  auto estLines = predictLaunch(info, byLines, 1);
  ASSERT_TRUE(bool(estLines)) << llvm::toString(estLines.takeError());
  EXPECT_NE(estLines->assumptions.find("distinct 128 B lines"),
            std::string::npos);
}

TEST(TimingModel, SampleOfIdleWorkgroupsIsAnError) {
  // Workgroups 0..2 exit at once (s2 = workgroup id x); workgroup 3 loads
  // and stores: a sample of 0 and 2 saw no work of the grid.
  const char *body = R"(
  s_cmp_lt_u32 s2, 3
  s_cbranch_scc1 .Lend
  global_load_dword v2, v1, s[4:5]
  s_waitcnt vmcnt(0)
  global_store_dword v1, v2, s[8:9]
.Lend:
  s_endpgm)";
  KernelInfo info;
  auto idle = profile(body, 4, std::vector<uint64_t>{0, 2}, &info);
  ASSERT_EQ(idle.size(), 2u);
  EXPECT_TRUE(idle[0].idle && idle[1].idle);
  auto e = predictLaunch(info, idle, 4);
  ASSERT_FALSE(bool(e));
  bool isUsage = false;
  std::string msg = errorMessage(e.takeError(), isUsage);
  EXPECT_NE(msg.find("were idle"), std::string::npos) << msg;
  // A sample that includes the working workgroup gives a number.
  auto some = profile(body, 4, std::vector<uint64_t>{0, 3});
  ASSERT_EQ(some.size(), 2u);
  EXPECT_FALSE(some[1].idle);
  EXPECT_TRUE(bool(predictLaunch(info, some, 4)));
  // So does the whole grid, even if all of it were idle.
  auto all = profile("  s_endpgm", 4);
  EXPECT_TRUE(bool(predictLaunch(info, all, 4)));
}

TEST(TimingModel, WavesShareTheirSimd) {
  // Four waves of 100 v_add_f32 each; wave w runs on SIMD w % simdsPerCU.
  // With 4 SIMDs each wave has its VALU to itself (critical path as for one
  // wave alone). With 2 SIMDs two waves share one: the second's prologue
  // VALU waits behind the first's, and its 100 v_add_f32 start when the
  // first's end, so the workgroup ends after 2 x 100 passes.
  auto bytes = assemble(".rept 100\n  v_add_f32 v2, v2, v3\n.endr\n  s_endpgm");
  auto co = CodeObject::load(bytes);
  ASSERT_TRUE(bool(co));
  auto run = [&](unsigned simds) {
    Emulator emu(**co);
    TimingParams p = TimingParams::gfx950();
    p.simdsPerCU = simds;
    TimingRecorder rec(p);
    LaunchConfig cfg;
    cfg.block = {256, 1, 1};
    cfg.trace = &rec;
    std::vector<KernelArg> args = {
        KernelArg::buffer(std::vector<uint8_t>(4096)),
        KernelArg::buffer(std::vector<uint8_t>(4096)),
        KernelArg::buffer(std::vector<uint8_t>(4096))};
    llvm::Error e = emu.launch("k", cfg, args);
    EXPECT_FALSE(bool(e)) << llvm::toString(std::move(e));
    return rec.profiles().empty() ? 0 : rec.profiles()[0].criticalPath;
  };
  // SMEM at 0, 4, 8; lgkmcnt(0) at 8 + 200; 100 passes; s_endpgm.
  EXPECT_EQ(run(4), 8 + 200 + 100 * kPass + kPass);
  EXPECT_EQ(run(2), 8 + 200 + 2 * 100 * kPass + kPass);
}
