//===- TimingModel.cpp - A gfx950 timing model fed by the emulator --------===//
//
// Per traced workgroup: resource busy cycles summed over its waves, and the
// critical path of its waves alone on a CU (an in-order issue model with
// asynchronous memory, s_waitcnt and s_barrier). Per launch: the busiest
// CU's share of the grid, occupancy, a lower bound (the busiest resource)
// and a latency-aware estimate. docs/timing-model.md states every formula
// and constant.
//
//===----------------------------------------------------------------------===//

#include "uq/Emulator/TimingModel.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace llvm;
using namespace uq::emu;

namespace {
Error usage(const Twine &m) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           m);
}

/// The count N of `KEY(N)` in printed `s_waitcnt` text, or -1 if absent.
int waitCount(StringRef text, StringRef key) {
  size_t at = text.find(key);
  if (at == StringRef::npos)
    return -1;
  StringRef rest = text.drop_front(at + key.size());
  if (!rest.consume_front("("))
    return -1;
  unsigned v = 0;
  if (rest.take_until([](char c) { return c == ')'; }).getAsInteger(10, v))
    return -1;
  return (int)v;
}

/// The operand N of `s_nop N` (wait states N + 1).
unsigned nopCount(StringRef text) {
  StringRef rest = text.drop_front(std::min<size_t>(text.size(), 5)).trim();
  unsigned v = 0;
  if (rest.starts_with("0x"))
    rest.drop_front(2).getAsInteger(16, v);
  else
    rest.getAsInteger(10, v);
  return v;
}
} // namespace

//===----------------------------------------------------------------------===//
// Per-instruction costs
//===----------------------------------------------------------------------===//

unsigned TimingRecorder::mfmaPasses(const TraceEvent &e) {
  // SISchedule.td, SIDPGFX950FullSpeedModel: the f8f6f4 MFMAs take twice the
  // passes when either operand is FP8 or BF8 (cbsz/blgp 0 or 1); LLVM's MC
  // layer cannot resolve that variant, so it is applied here.
  if (e.mnemonic.contains("f8f6f4")) {
    unsigned base = e.mnemonic.contains("16x16x128") ? 4 : 8;
    return (e.cbsz <= 1 || e.blgp <= 1) ? 2 * base : base;
  }
  return std::max<unsigned>(1, e.schedThroughput);
}

TimingRecorder::LdsCost TimingRecorder::ldsCost(const TraceEvent &e,
                                                const TimingParams &p) {
  // docs/timing-model.md, "LDS bank model". An access holds the CU's LDS for
  // the larger of its issue cycles (addresses, and a write's data, 16 lanes
  // a cycle: rocRoller) and its data cycles: the sum over its phases of the
  // most distinct dwords that one bank serves in the phase.
  LdsCost r;
  if (!e.exec)
    return r;
  if (e.addresses.empty()) {
    // Lane permutes through the LDS crossbar (ds_bpermute/permute/swizzle)
    // touch no bank; they still send 64 addresses (an assumption: neither
    // source covers them).
    r.cycles = r.conflictFree = p.ldsAddressCycles;
    return r;
  }
  const unsigned bankBytes = std::max(1u, p.ldsBankBytes);
  const unsigned dwords =
      std::max(1u, (e.bytesPerAddress + bankBytes - 1) / bankBytes);
  // The lanes behind the addresses: one address per active lane, in lane
  // order, or two (ds_read2/ds_write2: each lane's pair in turn).
  std::vector<unsigned> lanes;
  for (uint64_t x = e.exec; x; x &= x - 1)
    lanes.push_back((unsigned)__builtin_ctzll(x));
  const size_t n = e.addresses.size();
  const unsigned perLane = n == 2 * lanes.size() ? 2 : 1;
  auto laneOf = [&](size_t i) {
    return i < lanes.size() ? lanes[i] : (unsigned)(i % 64);
  };
  // Reads of 8 and 16 bytes spread over all banks; everything else acts as
  // if there were ldsNarrowBanks (rocRoller's getNumLDSBanks for gfx950).
  const bool wide = !e.store && (dwords == 2 || dwords == 4);
  const unsigned banks = std::max(1u, wide ? p.ldsBanks : p.ldsNarrowBanks);
  auto phaseOf = [&](unsigned lane) -> unsigned {
    if (!e.store) {
      // Measured on MI350X (amd-shark-ai).
      if (dwords == 4)
        return p.ldsReadB128Phase[lane % 64];
      if (dwords == 2)
        return lane / std::max(1u, p.ldsReadB64PhaseLanes);
      if (dwords == 1)
        return lane / std::max(1u, p.ldsReadB32PhaseLanes);
    }
    // Writes and b96 reads: rocRoller's lanes a cycle, 16 for b32, 8 for
    // b64, 4 for b96 and b128, consecutive.
    unsigned perPhase = dwords == 1 ? 16 : dwords == 2 ? 8 : 4;
    return lane / perPhase;
  };
  // Each dword an access touches, keyed by its phase: (phase << 48) | dword
  // (LDS addresses are far below 2^48 bytes).
  uint64_t data = 0, dataFree = 0;
  std::vector<uint64_t> keys;
  keys.reserve(n / perLane * dwords);
  std::vector<unsigned> perBank(banks);
  for (unsigned k = 0; k < perLane; ++k) {
    keys.clear();
    for (size_t i = k; i < n; i += perLane) {
      uint64_t ph = phaseOf(laneOf(i / perLane));
      for (unsigned d = 0; d < dwords; ++d)
        keys.push_back(ph << 48 | (e.addresses[i] / bankBytes + d));
    }
    llvm::sort(keys);
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (size_t b = 0; b < keys.size();) {
      size_t end = b;
      std::fill(perBank.begin(), perBank.end(), 0);
      unsigned worst = 0;
      for (; end < keys.size() && keys[end] >> 48 == keys[b] >> 48; ++end) {
        uint64_t dw = keys[end] & ((uint64_t(1) << 48) - 1);
        worst = std::max(worst, ++perBank[dw % banks]);
      }
      data += worst;
      dataFree += (end - b + banks - 1) / banks;
      b = end;
    }
  }
  uint64_t issue = p.ldsAddressCycles;
  if (e.store)
    issue += (uint64_t)p.ldsWriteCyclesPerDword * dwords * perLane;
  r.cycles = std::max(issue, data);
  r.conflictFree = std::max(issue, dataFree);
  return r;
}

//===----------------------------------------------------------------------===//
// SIMD calendars
//===----------------------------------------------------------------------===//

double TimingRecorder::Calendar::firstFree(double t, double len) const {
  auto it = busy.upper_bound(t);
  if (it != busy.begin()) {
    auto prev = std::prev(it);
    if (prev->second > t)
      t = prev->second;
  }
  for (; it != busy.end() && it->first < t + len; ++it)
    t = std::max(t, it->second);
  return t;
}

void TimingRecorder::Calendar::reserve(double s, double len) {
  double e = s + len;
  auto next = busy.lower_bound(s);
  if (next != busy.end() && next->first == e) {
    e = next->second;
    next = busy.erase(next);
  }
  if (next != busy.begin()) {
    auto prev = std::prev(next);
    if (prev->second == s) {
      prev->second = e;
      return;
    }
  }
  busy.emplace(s, e);
}

void TimingRecorder::Calendar::prune(double t) {
  while (!busy.empty() && busy.begin()->second <= t)
    busy.erase(busy.begin());
}

//===----------------------------------------------------------------------===//
// Recording
//===----------------------------------------------------------------------===//

TimingRecorder::TimingRecorder(TimingParams p) : p(p) {}

void TimingRecorder::beginWorkgroup(uint64_t index, std::array<uint32_t, 3> id,
                                    unsigned waves) {
  cur = WorkgroupProfile();
  cur.index = index;
  cur.id = id;
  cur.waves = waves;
  cur.idle = true;
  wavesState.assign(waves, WaveState());
  simds.assign(std::max(1u, p.simdsPerCU), SimdState());
  ldsUnit.clear();
  lines.clear();
  lineBytes.clear();
  active = true;
}

void TimingRecorder::resolveBarrier() {
  // The emulator releases a barrier when every live wave has reached it, so
  // the first event after it finds all of them waiting.
  double t = 0;
  for (WaveState &w : wavesState)
    if (w.atBarrier)
      t = std::max(t, w.t);
  for (WaveState &w : wavesState)
    if (w.atBarrier) {
      w.t = t;
      w.atBarrier = false;
    }
  // Every live wave now issues at t or later: older busy time is history.
  for (SimdState &s : simds) {
    s.valu.prune(t);
    s.xdl.prune(t);
  }
  ldsUnit.prune(t);
}

// One switch over the instruction classes, a case each: every case moves
// the same wave clock (W.t) and books the same CU units (the SIMD's VALU
// and matrix core, the LDS), so the cost rules of all classes are kept
// side by side where they can be compared (docs/timing-model.md).
void TimingRecorder::onInst(const TraceEvent &e) {
  if (!active || e.wave >= wavesState.size())
    return;
  WaveState &W = wavesState[e.wave];
  if (W.atBarrier)
    resolveBarrier();
  ++cur.instructions;
  const double pass = p.cyclesPerPass;
  const double issue = W.t;
  switch (e.cls) {
  case InstClass::Nop: {
    double c = (nopCount(e.text) + 1) * pass;
    cur.issueCycles += (uint64_t)c;
    W.t += c;
    break;
  }
  case InstClass::Waitcnt: {
    int vm = waitCount(e.text, "vmcnt"), lgkm = waitCount(e.text, "lgkmcnt");
    if (vm >= 0)
      while (W.vm.size() > (size_t)vm) {
        W.t = std::max(W.t, W.vm.front());
        W.vm.pop_front();
      }
    if (lgkm >= 0)
      while (W.lgkm.size() > (size_t)lgkm) {
        W.t = std::max(W.t, W.lgkm.front());
        W.lgkm.pop_front();
      }
    break;
  }
  case InstClass::VALU:
  case InstClass::Trans: {
    // LLVM's unit is one wave64 pass. The VALU of the wave's SIMD is busy
    // for the instruction's resource cycles (its reciprocal throughput:
    // SISchedule.td puts WriteTrans32 and WriteFloatCvt on HWVALU for one
    // cycle with latency 4, i.e. one pass of the unit; the latency is that
    // of a dependent instruction, which the kernel's own order hides).
    double c = std::max<unsigned>(1, e.schedThroughput) * pass;
    SimdState &S = simds[e.wave % simds.size()];
    double start = S.valu.firstFree(W.t, c);
    S.valu.reserve(start, c);
    W.t = start + pass;
    cur.valuCycles += (uint64_t)c;
    cur.issueCycles += (uint64_t)pass;
    break;
  }
  case InstClass::MFMA: {
    // Issued through the SIMD's VALU port (one pass), then the matrix core
    // of the SIMD is busy for its passes while VALU work, of this or
    // another wave, proceeds.
    double c = mfmaPasses(e) * pass;
    SimdState &S = simds[e.wave % simds.size()];
    double start = W.t;
    const double port = p.valuMfmaOverlap ? pass : c;
    for (unsigned guard = 0; guard < 1000; ++guard) {
      double x = S.xdl.firstFree(start, c);
      double v = S.valu.firstFree(x, port);
      if (v == x) {
        start = x;
        break;
      }
      start = v;
    }
    S.xdl.reserve(start, c);
    S.valu.reserve(start, p.valuMfmaOverlap ? pass : c);
    W.t = start + pass;
    cur.mfmaCycles += (uint64_t)c;
    cur.issueCycles += (uint64_t)pass;
    cur.idle = false;
    break;
  }
  case InstClass::LDS: {
    LdsCost cost = ldsCost(e, p);
    uint64_t c = cost.cycles;
    cur.ldsCycles += c;
    cur.idle = false;
    cur.ldsConflictCycles += c - std::min(c, cost.conflictFree);
    cur.issueCycles += (uint64_t)pass;
    W.t += pass;
    // The CU's LDS serves one access at a time: this one starts when the
    // LDS is free (other waves' accesses first), and its data is back a
    // latency after its last cycle.
    double start = ldsUnit.firstFree(issue, (double)std::max<uint64_t>(c, 1));
    ldsUnit.reserve(start, (double)std::max<uint64_t>(c, 1));
    W.lgkm.push_back(start + c + p.ldsLatency);
    break;
  }
  case InstClass::Global:
  case InstClass::Scratch: {
    // Coalescing: the distinct request-sized segments the lanes' byte
    // ranges cover; HBM traffic: distinct L2 lines per workgroup.
    std::vector<uint64_t> segs;
    for (uint64_t a : e.addresses) {
      uint64_t last = a + std::max(1u, e.bytesPerAddress) - 1;
      for (uint64_t s = a / p.vmemRequestBytes; s <= last / p.vmemRequestBytes;
           ++s)
        segs.push_back(s);
      for (uint64_t l = a / p.hbmLineBytes; l <= last / p.hbmLineBytes; ++l)
        lines.insert(l);
      if (p.hbmTraffic == TimingParams::HbmTraffic::Bytes)
        for (uint64_t byte = a; byte <= last; ++byte) {
          std::vector<uint64_t> &bits = lineBytes[byte / p.hbmLineBytes];
          if (bits.empty())
            bits.assign((p.hbmLineBytes + 63) / 64, 0);
          uint64_t off = byte % p.hbmLineBytes;
          bits[off / 64] |= uint64_t(1) << (off % 64);
        }
    }
    llvm::sort(segs);
    segs.erase(std::unique(segs.begin(), segs.end()), segs.end());
    cur.vmemRequests += segs.size();
    cur.idle = false;
    cur.globalBytes += (uint64_t)e.addresses.size() * e.bytesPerAddress;
    cur.issueCycles += (uint64_t)pass;
    W.t += pass;
    double serial = segs.size() * (double)p.vmemRequestBytes /
                    p.vmemBytesPerClockPerCU;
    double done = issue + p.globalLatency + serial;
    // An LDS-DMA load (buffer_load ... lds) also writes its bytes into the
    // CU's LDS when they arrive, at the LDS write rate.
    if (e.text.ends_with(" lds") && !e.addresses.empty()) {
      double c = std::ceil((double)e.addresses.size() * e.bytesPerAddress /
                           p.ldsWriteBytesPerClock);
      double start = ldsUnit.firstFree(done, c);
      ldsUnit.reserve(start, c);
      cur.ldsCycles += (uint64_t)c;
      done = start + c;
    }
    W.vm.push_back(done);
    break;
  }
  case InstClass::SMEM:
    cur.scalarCycles += 1;
    cur.issueCycles += (uint64_t)pass;
    W.t += pass;
    W.lgkm.push_back(issue + p.smemLatency);
    break;
  case InstClass::SALU:
    cur.scalarCycles += 1;
    cur.issueCycles += (uint64_t)pass;
    W.t += pass;
    break;
  case InstClass::Branch:
    cur.scalarCycles += 1;
    cur.issueCycles += (uint64_t)pass;
    W.t += std::max<double>(pass, p.branchCycles);
    break;
  case InstClass::Barrier:
    cur.issueCycles += (uint64_t)pass;
    W.t += pass;
    W.atBarrier = true;
    break;
  case InstClass::Other:
    cur.issueCycles += (uint64_t)pass;
    W.t += pass;
    if (e.mnemonic == "s_endpgm") {
      double end = W.t;
      for (double c : W.vm)
        end = std::max(end, c);
      for (double c : W.lgkm)
        end = std::max(end, c);
      W.end = end;
      W.done = true;
    }
    break;
  }
}

void TimingRecorder::endWorkgroup(uint64_t index) {
  if (!active)
    return;
  double crit = 0;
  for (const WaveState &w : wavesState)
    crit = std::max(crit, w.done ? w.end : w.t);
  cur.criticalPath = (uint64_t)std::ceil(crit);
  cur.hbmBytes = (uint64_t)lines.size() * p.hbmLineBytes;
  if (p.hbmTraffic == TimingParams::HbmTraffic::Bytes) {
    cur.hbmBytes = 0;
    for (const auto &[line, bits] : lineBytes)
      for (uint64_t w : bits)
        cur.hbmBytes += (uint64_t)llvm::popcount(w);
  }
  done.push_back(cur);
  active = false;
}

//===----------------------------------------------------------------------===//
// Occupancy and launch prediction
//===----------------------------------------------------------------------===//

unsigned uq::emu::wavesPerSimd(unsigned vgprs, unsigned agprs,
                               const TimingParams &p) {
  // The metadata's .vgpr_count is already the unified count on gfx90a and
  // later (LLVM AMDGPUBaseInfo getTotalNumVGPRs: alignTo(arch VGPRs, 4) +
  // AGPRs when AGPRs are used), so .agpr_count is part of it, not added to
  // it; it can only raise the count of a producer that leaves it out.
  unsigned g = p.registerGranule;
  unsigned regs = std::max(vgprs, agprs);
  unsigned total = (regs + g - 1) / g * g;
  if (total == 0)
    return p.maxWavesPerSimd;
  return std::min(p.maxWavesPerSimd, p.registersPerLane / total);
}

unsigned uq::emu::wavesPerSimdBySgprs(unsigned sgprs, const TimingParams &p) {
  unsigned w = sgprs <= 80 ? 10 : sgprs <= 88 ? 9 : sgprs <= 100 ? 8 : 7;
  return std::min(p.maxWavesPerSimd, w);
}

Occupancy uq::emu::occupancy(const KernelInfo &k, unsigned wavesPerWorkgroup,
                             uint64_t dynamicLds, const TimingParams &p) {
  Occupancy o;
  o.wavesPerWorkgroup = std::max(1u, wavesPerWorkgroup);
  o.wavesPerSimdByRegisters = wavesPerSimd(k.vgprCount, k.agprCount, p);
  o.wavesPerSimdBySgprs = wavesPerSimdBySgprs(k.sgprCount, p);
  o.workgroupsPerCUByRegisters =
      p.simdsPerCU *
      std::min(o.wavesPerSimdByRegisters, o.wavesPerSimdBySgprs) /
      o.wavesPerWorkgroup;
  uint64_t lds = k.groupSegmentSize + dynamicLds;
  o.workgroupsPerCUByLds =
      lds ? (unsigned)std::min<uint64_t>(p.ldsBytesPerCU / lds, 1u << 20)
          : o.workgroupsPerCUByRegisters;
  o.workgroupsPerCU =
      std::min(o.workgroupsPerCUByRegisters, o.workgroupsPerCUByLds);
  o.limiter = o.workgroupsPerCUByLds < o.workgroupsPerCUByRegisters
                  ? "LDS"
                  : "registers";
  o.wavesPerSimd = (o.workgroupsPerCU * o.wavesPerWorkgroup + p.simdsPerCU -
                    1) /
                   p.simdsPerCU;
  return o;
}

/// The model's assumptions as the estimates print them.
static std::string assumptionsText(const TimingParams &p) {
  return formatv(
      "model, not measured: gfx950 at {0} GHz, {1} CUs x {2} SIMDs; VALU/MFMA "
      "passes from LLVM's gfx950 scheduling model (4 cycles a pass); LDS {3} "
      "banks x {4} B for b64/b128 reads, {15} for other accesses, at least "
      "{16} cycles an access, writes {16} + {17} a dword; vector memory {5} B/clk/CU in {6} B requests; HBM {7} of "
      "{8} TB/s achievable, traffic = {13}; latencies global {10}, LDS {11}, "
      "SMEM {12} cycles; {14} (docs/timing-model.md)",
      p.clockGHz, p.numCUs, p.simdsPerCU, p.ldsBanks, p.ldsBankBytes,
      p.vmemBytesPerClockPerCU, p.vmemRequestBytes, p.hbmAchievableTBs,
      p.hbmPeakTBs, p.hbmLineBytes, p.globalLatency, p.ldsLatency,
      p.smemLatency,
      p.hbmTraffic == TimingParams::HbmTraffic::Lines
          ? formatv("distinct {0} B lines per workgroup (no L2/MALL reuse "
                    "across workgroups)",
                    p.hbmLineBytes)
                .str()
          : std::string("distinct bytes per workgroup (the rest of each line "
                        "shared with co-resident workgroups: one HBM read "
                        "for all)"),
      (p.hbmFootprintBytes > 0
           ? formatv("at most {0:f0} bytes from HBM (each of {1} XCDs' L2 "
                     "reads the launch's footprint once); ",
                     p.hbmFootprintBytes, p.numXcds)
                 .str()
           : std::string()) +
          formatv("launch overhead {0:f1} us outside the estimate",
                  p.launchOverheadUs)
              .str(),
      p.ldsNarrowBanks, p.ldsAddressCycles, p.ldsWriteCyclesPerDword);
}

Expected<LaunchEstimate>
uq::emu::predictLaunch(const KernelInfo &k, ArrayRef<WorkgroupProfile> samples,
                       uint64_t total, ArrayRef<double> weights,
                       uint64_t dynamicLds, const TimingParams &p) {
  if (samples.empty())
    return usage("timing model: no traced workgroups");
  if (total == 0)
    return usage("timing model: a launch of 0 workgroups");
  if (!weights.empty() && weights.size() != samples.size())
    return usage(formatv("timing model: {0} weights for {1} sampled "
                         "workgroups",
                         weights.size(), samples.size()));
  LaunchEstimate r;
  r.kernel = k.name;
  r.workgroups = total;
  r.tracedWorkgroups = samples.size();
  r.clockGHz = p.clockGHz;
  double wsum = 0, valu = 0, mfma = 0, issue = 0, lds = 0, ldsConf = 0,
         scalar = 0, vmem = 0, crit = 0, hbm = 0;
  unsigned n = 1;
  for (size_t i = 0; i < samples.size(); ++i) {
    double w = weights.empty() ? (double)total / samples.size() : weights[i];
    if (!(w >= 0))
      return usage("timing model: negative or NaN weight");
    const WorkgroupProfile &s = samples[i];
    wsum += w;
    valu += w * s.valuCycles;
    mfma += w * s.mfmaCycles;
    issue += w * s.issueCycles;
    lds += w * s.ldsCycles;
    ldsConf += w * s.ldsConflictCycles;
    scalar += w * s.scalarCycles;
    vmem += w * s.vmemRequests;
    crit += w * s.criticalPath;
    hbm += w * s.hbmBytes;
    n = std::max(n, s.waves);
  }
  if (wsum <= 0)
    return usage("timing model: the weights sum to 0");
  if (samples.size() < total &&
      llvm::all_of(samples, [](const WorkgroupProfile &s) { return s.idle; }))
    return usage(formatv(
        "timing model: all {0} traced workgroups of the {1} in kernel '{2}' "
        "were idle (no vector memory, LDS or MFMA instruction: they exited "
        "early), so the sample says nothing about the work of the grid; "
        "trace workgroups that have work",
        samples.size(), total, k.name));
  // Means per workgroup.
  valu /= wsum, mfma /= wsum, issue /= wsum, lds /= wsum, ldsConf /= wsum,
      scalar /= wsum, vmem /= wsum, crit /= wsum;
  // The traced workgroups stand for the whole grid: HBM bytes scale with it.
  r.hbmBytes = hbm * (total / wsum);
  if (p.hbmFootprintBytes > 0)
    r.hbmBytes = std::min(r.hbmBytes, p.hbmFootprintBytes);
  r.launchOverheadUs = p.launchOverheadUs;
  r.occ = occupancy(k, n, dynamicLds, p);
  if (r.occ.workgroupsPerCU == 0)
    return usage(formatv("timing model: a workgroup of kernel '{0}' does not "
                         "fit on a CU ({1} waves, {2} waves per SIMD by "
                         "registers, {3} bytes of LDS)",
                         k.name, n, r.occ.wavesPerSimdByRegisters,
                         k.groupSegmentSize + dynamicLds));
  // The busiest CU gets ceil(total / CUs) workgroups; its waves spread over
  // the SIMDs; per-wave demands are the workgroup means over its waves.
  uint64_t wgBusy = (total + p.numCUs - 1) / p.numCUs;
  r.workgroupsPerBusiestCU = wgBusy;
  auto wavesPerSimdFor = [&](uint64_t wgs) {
    return (double)((wgs * n + p.simdsPerCU - 1) / p.simdsPerCU);
  };
  double perWaveValu = valu / n, perWaveMfma = mfma / n, perWaveIssue =
                                                             issue / n;
  double vmemPerWg = vmem * p.vmemRequestBytes / p.vmemBytesPerClockPerCU;
  r.valuCycles = wavesPerSimdFor(wgBusy) * perWaveValu;
  r.mfmaCycles = wavesPerSimdFor(wgBusy) * perWaveMfma;
  // Without VALU/MFMA overlap a SIMD is busy for the sum of both; the term
  // keeps the name of the larger part.
  const bool sumSimd = !p.valuMfmaOverlap;
  double simdPerWave = sumSimd ? perWaveValu + perWaveMfma : 0;
  const char *simdName = perWaveMfma > perWaveValu ? "MFMA" : "VALU";
  r.issueCycles = wavesPerSimdFor(wgBusy) * perWaveIssue;
  r.ldsCycles = wgBusy * lds;
  r.ldsConflictCycles = wgBusy * ldsConf;
  r.scalarCycles = wgBusy * scalar;
  r.vmemCycles = wgBusy * vmemPerWg;
  r.hbmCycles = r.hbmBytes / p.hbmBytesPerCycle();
  r.criticalPathCycles = crit;
  // The issue slots are not a resource of their own (the sequencer issues
  // up to one instruction of each type per SIMD visit, from different
  // waves); they bound each wave's own timeline, in the critical path.
  std::pair<double, const char *> terms[] = {
      {sumSimd ? wavesPerSimdFor(wgBusy) * simdPerWave : r.valuCycles,
       sumSimd ? simdName : "VALU"},
      {sumSimd ? 0.0 : r.mfmaCycles, "MFMA"},
      {r.ldsCycles, "LDS"},       {r.scalarCycles, "scalar"},
      {r.vmemCycles, "vector memory"}, {r.hbmCycles, "HBM"}};
  for (auto &[c, name] : terms)
    if (c > r.boundCycles || r.boundResource.empty()) {
      r.boundCycles = c;
      r.boundResource = name;
    }
  // Latency-aware: the busiest CU runs its workgroups in rounds of
  // occ.workgroupsPerCU resident ones; a round lasts as long as the longer
  // of one workgroup's critical path (latency not hidden below it) and the
  // round's summed demand on each resource (latency hidden by the other
  // resident waves).
  auto roundTime = [&](uint64_t wgs) {
    double simdWaves = wavesPerSimdFor(wgs);
    double simd = sumSimd ? simdWaves * simdPerWave
                          : std::max(simdWaves * perWaveValu,
                                     simdWaves * perWaveMfma);
    return std::max({crit, simd, wgs * lds, wgs * scalar, wgs * vmemPerWg});
  };
  uint64_t full = wgBusy / r.occ.workgroupsPerCU,
           rem = wgBusy % r.occ.workgroupsPerCU;
  double cu = full * roundTime(r.occ.workgroupsPerCU) +
              (rem ? roundTime(rem) : 0.0);
  r.estimateCycles = std::max(cu, r.hbmCycles);
  {
    uint64_t wgs = std::min<uint64_t>(wgBusy, r.occ.workgroupsPerCU);
    double simdWaves = wavesPerSimdFor(wgs);
    std::pair<double, const char *> round[] = {
        {crit, "critical path"},
        {sumSimd ? simdWaves * simdPerWave : simdWaves * perWaveValu,
         sumSimd ? simdName : "VALU"},
        {sumSimd ? 0.0 : simdWaves * perWaveMfma, "MFMA"},
        {wgs * lds, "LDS"},
        {wgs * scalar, "scalar"},
        {wgs * vmemPerWg, "vector memory"}};
    double best = -1;
    for (auto &[c, name] : round)
      if (c > best)
        best = c, r.estimateLimiter = name;
    if (r.hbmCycles >= cu)
      r.estimateLimiter = "HBM";
  }
  r.assumptions = assumptionsText(p);
  return r;
}

std::string LaunchEstimate::str() const {
  std::string s;
  raw_string_ostream os(s);
  os << formatv("timing model: kernel '{0}', {1} workgroups ({2} traced), "
                "{3} on the busiest CU\n",
                kernel, workgroups, tracedWorkgroups, workgroupsPerBusiestCU);
  os << formatv("  occupancy: {0} waves per workgroup; waves/SIMD by "
                "registers {1}, by SGPRs {7}; workgroups/CU by registers {2}, "
                "by LDS {3} -> {4} resident ({5} waves/SIMD, limited by "
                "{6})\n",
                occ.wavesPerWorkgroup, occ.wavesPerSimdByRegisters,
                occ.workgroupsPerCUByRegisters, occ.workgroupsPerCUByLds,
                occ.workgroupsPerCU, occ.wavesPerSimd, occ.limiter,
                occ.wavesPerSimdBySgprs);
  os << formatv("  cycles (busiest CU): VALU {0:f0}  MFMA {1:f0}  (issue "
                "slots {2:f0})  LDS {3:f0} (bank conflicts {4:f0})  scalar {5:f0}  "
                "vector memory {6:f0}  HBM (whole GPU, {7:f0} bytes) {8:f0}\n",
                valuCycles, mfmaCycles, issueCycles, ldsCycles,
                ldsConflictCycles, scalarCycles, vmemCycles, hbmBytes,
                hbmCycles);
  os << formatv("  critical path of a workgroup alone: {0:f0} cycles\n",
                criticalPathCycles);
  os << formatv("  lower bound: {0:f0} cycles = {1:f3} us (model), bound by "
                "{2}\n",
                boundCycles, boundMicroseconds(), boundResource);
  os << formatv("  estimate: {0:f0} cycles = {1:f3} us (model), limited by "
                "{3}; with the launch overhead {2:f3} us (model)\n",
                estimateCycles, estimateMicroseconds(), totalMicroseconds(),
                estimateLimiter);
  os << "  assumptions: " << assumptions << "\n";
  return s;
}

json::Value LaunchEstimate::toJSON() const {
  json::Object o;
  o["kernel"] = kernel;
  o["workgroups"] = (int64_t)workgroups;
  o["traced_workgroups"] = (int64_t)tracedWorkgroups;
  o["workgroups_per_busiest_cu"] = (int64_t)workgroupsPerBusiestCU;
  json::Object oc;
  oc["waves_per_workgroup"] = occ.wavesPerWorkgroup;
  oc["waves_per_simd_by_registers"] = occ.wavesPerSimdByRegisters;
  oc["waves_per_simd_by_sgprs"] = occ.wavesPerSimdBySgprs;
  oc["workgroups_per_cu_by_registers"] = occ.workgroupsPerCUByRegisters;
  oc["workgroups_per_cu_by_lds"] = occ.workgroupsPerCUByLds;
  oc["workgroups_per_cu"] = occ.workgroupsPerCU;
  oc["waves_per_simd"] = occ.wavesPerSimd;
  oc["limited_by"] = occ.limiter;
  o["occupancy"] = std::move(oc);
  json::Object c;
  c["valu"] = valuCycles;
  c["mfma"] = mfmaCycles;
  c["issue"] = issueCycles;
  c["lds"] = ldsCycles;
  c["lds_bank_conflicts"] = ldsConflictCycles;
  c["scalar"] = scalarCycles;
  c["vector_memory"] = vmemCycles;
  c["hbm"] = hbmCycles;
  o["cycles"] = std::move(c);
  o["hbm_bytes"] = hbmBytes;
  o["critical_path_cycles"] = criticalPathCycles;
  o["bound_cycles"] = boundCycles;
  o["bound_us_model"] = boundMicroseconds();
  o["bound_resource"] = boundResource;
  o["estimate_cycles"] = estimateCycles;
  o["estimate_us_model"] = estimateMicroseconds();
  o["launch_overhead_us"] = launchOverheadUs;
  o["estimate_limited_by"] = estimateLimiter;
  o["total_us_model"] = totalMicroseconds();
  o["clock_ghz"] = clockGHz;
  o["assumptions"] = assumptions;
  return o;
}

StepEstimate uq::emu::predictStep(std::vector<LaunchEstimate> launches) {
  StepEstimate s;
  for (const LaunchEstimate &l : launches) {
    s.boundMicroseconds += l.boundMicroseconds();
    s.estimateMicroseconds += l.estimateMicroseconds();
  }
  s.launches = std::move(launches);
  return s;
}

std::string StepEstimate::str() const {
  std::string s;
  raw_string_ostream os(s);
  for (const LaunchEstimate &l : launches)
    os << formatv("  {0}: bound {1:f3} us, estimate {2:f3} us (model; {3})\n",
                  l.kernel, l.boundMicroseconds(), l.estimateMicroseconds(),
                  l.boundResource);
  os << formatv("step: bound {0:f3} us, estimate {1:f3} us (model)\n",
                boundMicroseconds, estimateMicroseconds);
  return s;
}

json::Value StepEstimate::toJSON() const {
  json::Array a;
  for (const LaunchEstimate &l : launches)
    a.push_back(l.toJSON());
  json::Object o;
  o["launches"] = std::move(a);
  o["bound_us_model"] = boundMicroseconds;
  o["estimate_us_model"] = estimateMicroseconds;
  return o;
}
