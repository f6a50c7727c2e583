//===- TimingModelTest.cpp - The gfx950 timing model ----------------------===//
//
// Small instruction streams whose cycle counts follow by hand from the
// documented constants (docs/timing-model.md):
//   pass = 4 cycles (a wave64 VALU instruction on a 16-lane SIMD; the unit
//          of LLVM's gfx950 scheduling model), v_add_f32 = 1 pass,
//   scaled 16x16x128 MFMA = 4 passes (FP4 x FP4) or 8 (an FP8 operand),
//   LDS (docs/timing-model.md, "LDS bank model"): an access holds the LDS
//          for max(issue, data) cycles; issue = 4 (64 addresses, 16 a cycle)
//          plus, for a write, 4 per dword a lane writes (rocRoller); data =
//          the sum over phases of the most distinct dwords one bank serves.
//          Banks of 4 bytes: 64 for ds_read_b64/b128, 32 for everything
//          else (rocRoller). Read phases (amd-shark-ai, MI350X): b32 one
//          phase of 64 lanes, b64 two of 32, b128 four of 16 made of lane
//          blocks {0-3,12-15,20-23,24-27}, {32-35,44-47,52-55,56-59},
//          {4-11,16-19,28-31}, {36-43,48-51,60-63}; writes: 16 consecutive
//          lanes a phase for b32, 8 for b64, 4 for b96/b128 (rocRoller),
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
  // v1 = 4 * lane. ds_read_b32 is one phase of 64 lanes over 32 banks, and
  // takes at least the 4 address cycles. Stride 4 B: 2 dwords a bank (data
  // 2, so 4 cycles); 8 B: 16 banks of 4 dwords (4); 16 B: 8 banks of 8
  // dwords (8, of which 4 from conflicts: 64 dwords need 2 data cycles, the
  // access 4); 64 B: banks 0 and 16 with 32 dwords each (32, 28 from
  // conflicts; 64 banks would give 16); one address for all lanes is a
  // broadcast (4). ds_write_b32 at stride 4 B:
  // 4 + 4 x 1 = 8 cycles, its 4 phases of 16 lanes conflict-free.
  auto p = profile(R"(
  v_lshlrev_b32 v7, 1, v1
  v_lshlrev_b32 v8, 2, v1
  v_lshlrev_b32 v6, 4, v1
  v_mov_b32 v9, 0
  ds_read_b32 v10, v1
  ds_read_b32 v11, v7
  ds_read_b32 v12, v8
  ds_read_b32 v14, v6
  ds_read_b32 v13, v9
  ds_write_b32 v1, v2
  s_waitcnt lgkmcnt(0)
  s_endpgm)");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].ldsCycles, 4u + 4 + 8 + 32 + 4 + 8);
  EXPECT_EQ(p[0].ldsConflictCycles, 0u + 0 + 4 + 28 + 0 + 0);
}

namespace {
/// A full-wave DS access of `bytes` per lane at `addr[lane]`.
TraceEvent dsAccess(const std::vector<uint64_t> &addr, unsigned bytes,
                    bool store, uint64_t exec = ~0ull) {
  TraceEvent e;
  e.exec = exec;
  e.bytesPerAddress = bytes;
  e.store = store;
  e.addresses = addr;
  return e;
}
std::vector<uint64_t> strided(uint64_t stride, unsigned lanes = 64) {
  std::vector<uint64_t> a;
  for (unsigned l = 0; l < lanes; ++l)
    a.push_back(stride * l);
  return a;
}
} // namespace

TEST(TimingModel, LdsReadWidthsUseTheirBanks) {
  const TimingParams P = TimingParams::gfx950();
  auto cost = [&](const std::vector<uint64_t> &a, unsigned bytes) {
    std::vector<uint64_t> keep = a;
    return TimingRecorder::ldsCost(dsAccess(keep, bytes, false), P);
  };
  // b32 over 32 banks: stride 128 B puts all 64 lanes in bank 0 (64 cycles;
  // 64 banks would give 32).
  EXPECT_EQ(cost(strided(4), 4).cycles, 4u);
  EXPECT_EQ(cost(strided(128), 4).cycles, 64u);
  // b64 over 64 banks in two phases of 32 lanes. Consecutive: 64 dwords
  // fill the banks once per phase (data 2, the access 4 cycles). Stride
  // 128 B: lane l reads dwords 32l and 32l + 1, so a phase's 32 lanes put
  // 16 dwords each in banks 0, 1, 32 and 33: 16 a phase, 32 in all (32
  // banks would give 64).
  EXPECT_EQ(cost(strided(8), 8).cycles, 4u);
  EXPECT_EQ(cost(strided(128), 8).cycles, 32u);
  EXPECT_EQ(cost(strided(128), 8).conflictFree, 4u);
  // b128 consecutive: each measured phase of 16 lanes covers the 64 banks
  // once (4 phases, 4 cycles: 1024 bytes at 256 a cycle).
  EXPECT_EQ(cost(strided(16), 16).cycles, 4u);
  // All lanes at one address: a broadcast, the 4 address cycles.
  EXPECT_EQ(cost(std::vector<uint64_t>(64, 0), 4).cycles, 4u);
}

TEST(TimingModel, LdsReadB128FollowsTheMeasuredPhases) {
  // Block b (lanes 4b..4b+3) reads 64 bytes at 256 b + 64 g(b), lane i of
  // the block 16 bytes at + 16 i: the block covers the 16 banks
  // 16 g(b) .. 16 g(b) + 15. With g(b) = (b % 4) xor (b / 4 % 2), blocks
  // 0-3 use bank groups 0 1 2 3 and blocks 4-7 use 1 0 3 2 (8-15 the same
  // again). Phases of 16 neighbouring lanes (blocks 4p..4p+3) would each
  // cover all 64 banks once: 4 cycles. The measured phases hold blocks
  // {0,3,5,6}, {8,11,13,14}, {1,2,4,7}, {9,10,12,15}, whose bank groups are
  // {0,3,0,3} or {1,2,1,2}: every phase serves two dwords in one bank, 2
  // cycles a phase, 8 in all.
  std::vector<uint64_t> a;
  for (unsigned l = 0; l < 64; ++l) {
    unsigned b = l / 4, i = l % 4, g = (b % 4) ^ (b / 4 % 2);
    a.push_back(256 * b + 64 * g + 16 * i);
  }
  auto c = TimingRecorder::ldsCost(dsAccess(a, 16, false),
                                   TimingParams::gfx950());
  EXPECT_EQ(c.cycles, 8u);
  EXPECT_EQ(c.conflictFree, 4u);
  // The same addresses with the phases of neighbouring lanes (a parameter):
  // conflict-free.
  TimingParams n = TimingParams::gfx950();
  for (unsigned l = 0; l < 64; ++l)
    n.ldsReadB128Phase[l] = l / 16;
  EXPECT_EQ(TimingRecorder::ldsCost(dsAccess(a, 16, false), n).cycles, 4u);
}

TEST(TimingModel, LdsPhasesFollowTheActiveLanes) {
  // Only lanes 0-3 and 20-23 run a ds_read_b128: lanes 0-3 read banks 0-15,
  // lanes 20-23 banks 16-31. They share the first measured phase and no
  // bank, so the data takes one cycle (with the address cycles set to 0 to
  // show it); numbered 0-7, or in phases of neighbouring lanes, they would
  // take two.
  TimingParams P = TimingParams::gfx950();
  P.ldsAddressCycles = 0;
  std::vector<uint64_t> a = {0, 16, 32, 48, 64, 80, 96, 112};
  uint64_t exec = 0xfull | (0xfull << 20);
  EXPECT_EQ(TimingRecorder::ldsCost(dsAccess(a, 16, false, exec), P).cycles,
            1u);
}

TEST(TimingModel, LdsWritesCostTheirData) {
  const TimingParams P = TimingParams::gfx950();
  auto cost = [&](std::vector<uint64_t> a, unsigned bytes) {
    return TimingRecorder::ldsCost(dsAccess(a, bytes, true), P);
  };
  // 4 + 4 x dwords: b32 8, b64 12, b128 20 cycles (conflict-free: their
  // phases of 16, 8 and 4 lanes cover at most 16 of the 32 banks).
  EXPECT_EQ(cost(strided(4), 4).cycles, 8u);
  EXPECT_EQ(cost(strided(8), 8).cycles, 12u);
  EXPECT_EQ(cost(strided(16), 16).cycles, 20u);
  // b32 at stride 128 B: 4 phases of 16 lanes, all in bank 0 of 32: 64.
  auto c = cost(strided(128), 4);
  EXPECT_EQ(c.cycles, 64u);
  EXPECT_EQ(c.conflictFree, 8u);
  // ds_write2_b32, each lane's two dwords next to each other (addresses 8l
  // and 8l + 4): 4 + 4 x 2 = 12 issue cycles; each element's 4 phases of 16
  // lanes use 16 distinct banks (data 8 in all).
  std::vector<uint64_t> two;
  for (unsigned l = 0; l < 64; ++l) {
    two.push_back(8 * l);
    two.push_back(8 * l + 4);
  }
  EXPECT_EQ(cost(two, 4).cycles, 12u);
}

TEST(TimingModel, LdsPermutesSendTheirAddresses) {
  // ds_bpermute/ds_swizzle touch no bank: the 4 address cycles, nothing
  // when no lane runs.
  TraceEvent e;
  e.exec = ~0ull;
  EXPECT_EQ(TimingRecorder::ldsCycles(e, TimingParams::gfx950()), 4u);
  e.exec = 0;
  EXPECT_EQ(TimingRecorder::ldsCycles(e, TimingParams::gfx950()), 0u);
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
  // .vgpr_count counts the AGPRs on gfx950 (alignTo(arch, 4) + AGPRs): a
  // kernel of 256 arch VGPRs and 140 AGPRs reports 396 and 140, and 400 of
  // the 512 registers fit one wave (adding the AGPRs again gave 0).
  EXPECT_EQ(wavesPerSimd(192, 64), 512u / 192);
  EXPECT_EQ(wavesPerSimd(396, 140), 1u);
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
