//===- TimingModel.h - A gfx950 timing model fed by the emulator -*- C++ -*-===//
//
// A resource model of MI355X (gfx950) that turns the emulator's trace of a
// launch into a predicted time: per-resource busy cycles (VALU, MFMA, LDS
// with bank conflicts, scalar unit, vector memory, HBM), a lower bound (the
// busiest resource) and a latency-aware estimate (per-wave critical paths,
// latency hidden by the other resident waves up to the occupancy). It is a
// ratio tool: absolute microseconds are labelled "model". Every constant and
// the formulas are in docs/timing-model.md with their sources.
//
// Whole-step use: run a few representative workgroups of each launch with
// LaunchConfig::trace = &recorder and LaunchConfig::workgroupIndices, then
// predictLaunch(kernel, recorder.profiles(), totalWorkgroups, weights), and
// predictStep over the launches of a decode step.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_EMULATOR_TIMINGMODEL_H
#define UQ_EMULATOR_TIMINGMODEL_H

#include "uq/Emulator/Emulator.h"
#include "uq/Emulator/Trace.h"

#include "llvm/Support/JSON.h"

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace uq::emu {

/// The phase of each lane of a wave64 ds_read_b128 on gfx950, measured by
/// amd-shark-ai (docs/empirical-lds/cdna4info.md in nod-ai/amd-shark-ai):
/// lanes go in blocks of four, and the 16 blocks fall into phases
/// {0, 3, 5, 6}, {8, 11, 13, 14}, {1, 2, 4, 7}, {9, 10, 12, 15}.
constexpr std::array<uint8_t, 64> gfx950ReadB128Phases() {
  constexpr uint8_t blockPhase[16] = {0, 2, 2, 0, 2, 0, 0, 2,
                                      1, 3, 3, 1, 3, 1, 1, 3};
  std::array<uint8_t, 64> phase{};
  for (unsigned lane = 0; lane < 64; ++lane)
    phase[lane] = blockPhase[lane / 4];
  return phase;
}

/// The model's constants (docs/timing-model.md gives each one's source).
struct TimingParams {
  double clockGHz = 2.4;        ///< MI355X peak engine clock.
  unsigned numCUs = 256;
  unsigned simdsPerCU = 4;
  unsigned maxWavesPerSimd = 8;
  unsigned registersPerLane = 512; ///< VGPR + AGPR per SIMD lane.
  unsigned registerGranule = 8;
  uint64_t ldsBytesPerCU = 160 * 1024;
  unsigned maxWorkgroupsPerCU = 32;
  /// One wave64 pass on a 16-lane SIMD: the unit of LLVM's gfx950 model.
  unsigned cyclesPerPass = 4;
  /// Whether a SIMD's VALU issues (for any of its waves) while its matrix
  /// core executes an MFMA. Off: the SIMD is busy for the MFMA's passes, as
  /// the calibration against AITER's forward kernel shows
  /// (docs/timing-model.md, "Calibration": the measured time per key tile
  /// is the sum of the VALU and MFMA time, not their maximum).
  bool valuMfmaOverlap = false;
  /// LDS banks of ldsBankBytes each. gfx950 has 64, but only ds_read_b64
  /// and ds_read_b128 (and the 8-byte transposing reads) spread over all of
  /// them; every other access, writes included, resolves its conflicts over
  /// ldsNarrowBanks (rocRoller's LDS bank model, docs/timing-model.md).
  unsigned ldsBanks = 64;
  unsigned ldsNarrowBanks = 32;
  unsigned ldsBankBytes = 4;
  /// The least time an access holds the CU's LDS: sending a wave's 64
  /// addresses, 16 a cycle (rocRoller: 4 cycles for every DS access).
  unsigned ldsAddressCycles = 4;
  /// What a write adds per dword each lane writes: its data leaves the
  /// VGPRs 16 lanes a cycle (rocRoller: a write takes 4 + 4 x dwords).
  unsigned ldsWriteCyclesPerDword = 4;
  /// Lanes checked against each other for conflicts (a phase) in
  /// ds_read_b32 and narrower reads, and in ds_read_b64 (amd-shark-ai's
  /// measurement on MI350X: one phase of 64 lanes, two of 32).
  unsigned ldsReadB32PhaseLanes = 64;
  unsigned ldsReadB64PhaseLanes = 32;
  /// ds_read_b128's phase of each lane, as amd-shark-ai measured on MI350X:
  /// four phases of 16 lanes, made of blocks of four lanes that are not
  /// neighbours (gfx950ReadB128Phases below).
  std::array<uint8_t, 64> ldsReadB128Phase = gfx950ReadB128Phases();
  /// LDS write rate of LDS-DMA loads (bytes a cycle per CU): CDNA4 doubled
  /// the LDS *read* rate to 256 B/clk (docs/timing-model.md); writes are
  /// taken at CDNA3's 128 B/clk.
  unsigned ldsWriteBytesPerClock = 128;
  /// Vector memory (TA/L1) request size and rate per CU.
  unsigned vmemRequestBytes = 64;
  unsigned vmemBytesPerClockPerCU = 64;
  /// L2 line: the unit of HBM traffic.
  unsigned hbmLineBytes = 128;
  /// How a workgroup's HBM traffic is counted. Lines (default, the
  /// pessimistic end): every distinct line it touches, whole, as if no other
  /// workgroup read the rest of it. Bytes (the optimistic end): only the
  /// distinct bytes it reads, as if the rest of each partly read line were
  /// read by a workgroup resident at the same time, in the same transfer
  /// (L2 / the MALL; docs/timing-model.md, "HBM traffic"). Neither counts
  /// reuse of the same bytes by several workgroups.
  enum class HbmTraffic { Lines, Bytes };
  HbmTraffic hbmTraffic = HbmTraffic::Lines;
  double hbmPeakTBs = 8.0;
  double hbmAchievableTBs = 5.0;
  /// An L2 per XCD (MI355X: 8 XCDs of 32 CUs, 4 MiB of L2 each; workgroups
  /// dealt round-robin over the XCDs). When a caller knows the launch's
  /// footprint it sets this to the bytes the XCDs must read at least once
  /// each (the sum over XCDs of the distinct bytes their workgroups touch):
  /// the launch's HBM bytes are then at most this, the traced workgroups'
  /// lines shared with the other workgroups of their XCD crossing HBM once.
  /// 0: no ceiling (every workgroup's lines count, HbmTraffic above).
  double hbmFootprintBytes = 0;
  unsigned numXcds = 8;
  /// Cost of a launch on the device before its first workgroup runs and
  /// after its last ends (dispatch, the first wave's kernarg and descriptor
  /// loads, the end-of-kernel cache writeback), in microseconds. Added to
  /// LaunchEstimate::totalMicroseconds(), not to estimateCycles.
  double launchOverheadUs = 2.0;
  /// Latencies (cycles) assumed for the critical path.
  unsigned globalLatency = 800;
  unsigned ldsLatency = 64;
  unsigned smemLatency = 200;
  unsigned branchCycles = 8;

  static TimingParams gfx950() { return TimingParams(); }
  double hbmBytesPerCycle() const {
    return hbmAchievableTBs * 1e12 / (clockGHz * 1e9);
  }
};

/// What one traced workgroup used (sums over its waves) and how long it
/// took alone on a CU (criticalPath).
struct WorkgroupProfile {
  uint64_t index = 0;
  std::array<uint32_t, 3> id = {0, 0, 0};
  unsigned waves = 0;
  uint64_t instructions = 0;
  uint64_t issueCycles = 0;  ///< One issue slot (a pass) per instruction.
  uint64_t valuCycles = 0;   ///< VALU busy (incl. transcendentals).
  uint64_t mfmaCycles = 0;   ///< Matrix core busy.
  uint64_t ldsCycles = 0;    ///< LDS busy, bank conflicts included.
  uint64_t ldsConflictCycles = 0; ///< Of which: extra cycles from conflicts.
  uint64_t scalarCycles = 0; ///< Scalar unit (SALU, SMEM, branches).
  uint64_t vmemRequests = 0; ///< vmemRequestBytes-sized vector requests.
  uint64_t globalBytes = 0;  ///< Bytes the lanes asked for (global/scratch).
  uint64_t hbmBytes = 0;     ///< Distinct L2 lines touched x line size.
  uint64_t criticalPath = 0; ///< Cycles until its last wave ends, alone.
  /// No vector memory, LDS or MFMA instruction ran: the workgroup exited
  /// early (a decode partition past the end of its sequence, say). A sample
  /// of only such workgroups says nothing about a grid that has work. The
  /// recorder sets it; a profile made by hand is not idle.
  bool idle = false;
};

/// Collects WorkgroupProfiles from the trace of one or more launches.
class TimingRecorder : public TraceSink {
public:
  explicit TimingRecorder(TimingParams p = TimingParams::gfx950());
  void beginWorkgroup(uint64_t index, std::array<uint32_t, 3> id,
                      unsigned waves) override;
  void onInst(const TraceEvent &e) override;
  void endWorkgroup(uint64_t index) override;
  const std::vector<WorkgroupProfile> &profiles() const { return done; }
  void clear() { done.clear(); }

  /// Matrix-core passes of an MFMA (LLVM's gfx950 model, with its
  /// f8f6f4 rule: twice the passes when either operand is FP8/BF8).
  static unsigned mfmaPasses(const TraceEvent &e);
  /// The CU's LDS cycles of one DS access under the bank model, and what it
  /// would take with no bank conflict (the same phases, each at the least
  /// cycles its distinct dwords need).
  struct LdsCost {
    uint64_t cycles = 0;
    uint64_t conflictFree = 0;
  };
  static LdsCost ldsCost(const TraceEvent &e, const TimingParams &p);
  static uint64_t ldsCycles(const TraceEvent &e, const TimingParams &p) {
    return ldsCost(e, p).cycles;
  }

private:
  struct WaveState {
    double t = 0, end = 0;
    std::deque<double> vm, lgkm;
    bool atBarrier = false, done = false;
  };
  /// Busy intervals of one unit of a SIMD (its VALU issue, its matrix core)
  /// shared by the waves on that SIMD: an instruction takes the earliest
  /// free gap at or after its issue time, so one wave's VALU work fills the
  /// time another wave spends waiting for its MFMAs.
  class Calendar {
  public:
    /// Earliest s >= t with [s, s + len) free.
    double firstFree(double t, double len) const;
    void reserve(double s, double len);
    /// Forgets intervals that end at or before t.
    void prune(double t);
    void clear() { busy.clear(); }

  private:
    std::map<double, double> busy; ///< start -> end, disjoint
  };
  struct SimdState {
    Calendar valu, xdl;
  };
  void resolveBarrier();
  TimingParams p;
  WorkgroupProfile cur;
  std::vector<WaveState> wavesState;
  std::vector<SimdState> simds;
  /// The CU's LDS, shared by all waves of the workgroup.
  Calendar ldsUnit;
  std::unordered_set<uint64_t> lines;
  /// Bytes: the bytes read of each line (one bit per byte).
  std::unordered_map<uint64_t, std::vector<uint64_t>> lineBytes;
  std::vector<WorkgroupProfile> done;
  bool active = false;
};

/// Waves per SIMD the registers allow: the unified VGPR+AGPR file of 512
/// per lane, allocated in granules of 8, at most 8 waves (the rule of the
/// `occupancy` field of uq-compile's JSON, docs/uq-compile.md). \p vgprs
/// is the metadata's .vgpr_count, which on gfx90a and later already counts
/// the AGPRs (\p agprs, .agpr_count, at most that).
unsigned wavesPerSimd(unsigned vgprs, unsigned agprs,
                      const TimingParams &p = TimingParams::gfx950());

/// How many workgroups of a kernel fit on one CU, and why.
struct Occupancy {
  unsigned wavesPerWorkgroup = 1;
  unsigned wavesPerSimdByRegisters = 0; ///< VGPR + AGPR.
  unsigned wavesPerSimdBySgprs = 0;
  unsigned workgroupsPerCUByRegisters = 0;
  unsigned workgroupsPerCUByLds = 0;
  unsigned workgroupsPerCU = 0; ///< The minimum of the limits.
  unsigned wavesPerSimd = 0;    ///< Resident waves per SIMD at that count.
  std::string limiter;
};
/// Waves per SIMD the SGPRs allow on gfx9-class targets (LLVM's
/// GCNSubtarget::getOccupancyWithNumSGPRs: <= 80 -> 10, <= 88 -> 9,
/// <= 100 -> 8, else 7), capped at the 8 waves of gfx950.
unsigned wavesPerSimdBySgprs(unsigned sgprs,
                             const TimingParams &p = TimingParams::gfx950());

Occupancy occupancy(const KernelInfo &k, unsigned wavesPerWorkgroup,
                    uint64_t dynamicLds = 0,
                    const TimingParams &p = TimingParams::gfx950());

/// The prediction for one launch. Cycle counts are for the busiest CU
/// except hbmCycles (the whole GPU's HBM traffic over its bandwidth).
struct LaunchEstimate {
  std::string kernel;
  uint64_t workgroups = 0;       ///< In the launch.
  uint64_t tracedWorkgroups = 0; ///< Profiles it was computed from.
  uint64_t workgroupsPerBusiestCU = 0;
  Occupancy occ;
  double valuCycles = 0, mfmaCycles = 0, issueCycles = 0, ldsCycles = 0,
         ldsConflictCycles = 0, scalarCycles = 0, vmemCycles = 0,
         hbmCycles = 0;
  double hbmBytes = 0;             ///< Whole launch.
  double criticalPathCycles = 0;   ///< Mean per workgroup, alone on a CU.
  double boundCycles = 0;
  std::string boundResource;
  double estimateCycles = 0;
  /// What limits the estimate: "HBM", "critical path" (one workgroup's own
  /// latency-bound timeline, its waves sharing their SIMDs) or the resource
  /// a full round of resident workgroups saturates.
  std::string estimateLimiter;
  double clockGHz = 2.4;
  double boundMicroseconds() const { return boundCycles / (clockGHz * 1e3); }
  double estimateMicroseconds() const {
    return estimateCycles / (clockGHz * 1e3);
  }
  /// TimingParams::launchOverheadUs of the launch.
  double launchOverheadUs = 0;
  /// The estimate plus the launch overhead: what a kernel timer measures.
  double totalMicroseconds() const {
    return estimateMicroseconds() + launchOverheadUs;
  }
  /// One line naming the assumptions behind the numbers.
  std::string assumptions;
  std::string str() const;
  llvm::json::Value toJSON() const;
};

/// Predicts a launch of `totalWorkgroups` workgroups of `kernel` from the
/// profiles of sampled workgroups. weights[i] is how many of the launch's
/// workgroups profile i stands for (empty: totalWorkgroups / samples each).
llvm::Expected<LaunchEstimate>
predictLaunch(const KernelInfo &kernel,
              llvm::ArrayRef<WorkgroupProfile> samples,
              uint64_t totalWorkgroups, llvm::ArrayRef<double> weights = {},
              uint64_t dynamicLds = 0,
              const TimingParams &p = TimingParams::gfx950());

/// A sequence of launches run back to back (a decode step).
struct StepEstimate {
  std::vector<LaunchEstimate> launches;
  double boundMicroseconds = 0, estimateMicroseconds = 0;
  std::string str() const;
  llvm::json::Value toJSON() const;
};
StepEstimate predictStep(std::vector<LaunchEstimate> launches);

} // namespace uq::emu

#endif // UQ_EMULATOR_TIMINGMODEL_H
