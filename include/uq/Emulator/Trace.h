//===- Trace.h - Per-instruction trace of an emulated launch ----*- C++ -*-===//
//
// A launch with LaunchConfig::trace set reports every executed
// wave-instruction to a TraceSink: what it is, which lanes were active, the
// memory addresses it touched, and the wave and workgroup it belongs to.
// The timing model (TimingModel.h) is the main consumer. Without a sink the
// emulator pays one predictable branch per instruction.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_EMULATOR_TRACE_H
#define UQ_EMULATOR_TRACE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>

namespace uq::emu {

/// Instruction class (the emulator's statistics classes).
enum class InstClass : uint8_t {
  SALU, SMEM, Branch, VALU, Trans, MFMA, LDS, Global, Scratch, Barrier,
  Waitcnt, Nop, Other
};

/// Memory space of an access.
enum class MemSpace : uint8_t { None, Global, Scalar, LDS, Scratch };

/// One executed wave-instruction.
struct TraceEvent {
  llvm::StringRef mnemonic; ///< Normalised (no _e32/_e64/_dpp/_sdwa).
  llvm::StringRef text;     ///< As printed by LLVM's disassembler.
  InstClass cls = InstClass::Other;
  uint64_t pc = 0;   ///< Offset in the code object's image.
  uint8_t size = 4;  ///< Instruction bytes.
  uint64_t exec = 0; ///< Active lanes when it issued.
  /// LLVM's scheduling model for gfx950 (SISchedule.td, read from libLLVM
  /// at decode time): latency and reciprocal throughput in its units (one
  /// unit = one wave64 VALU pass = 4 cycles), before any correction.
  uint16_t schedLatency = 1;
  uint16_t schedThroughput = 1;
  /// MFMA source formats (cbsz / blgp), for the f8f6f4 rate rule.
  uint8_t cbsz = 0, blgp = 0;
  /// Memory: space, store or load, bytes per address, and the addresses
  /// (byte addresses; per lane in lane order, two per lane for read2/write2,
  /// one for scalar accesses).
  MemSpace space = MemSpace::None;
  bool store = false;
  unsigned bytesPerAddress = 0;
  llvm::ArrayRef<uint64_t> addresses;
  /// Where it ran.
  std::array<uint32_t, 3> workgroup = {0, 0, 0};
  uint64_t workgroupIndex = 0; ///< x + y * gx + z * gx * gy.
  unsigned wave = 0;           ///< Wave index inside the workgroup.
};

/// Receives the trace of a launch.
class TraceSink {
public:
  virtual ~TraceSink();
  /// A workgroup of `waves` waves starts.
  virtual void beginWorkgroup(uint64_t index, std::array<uint32_t, 3> id,
                              unsigned waves) {}
  virtual void onInst(const TraceEvent &e) = 0;
  /// The workgroup's waves have all ended.
  virtual void endWorkgroup(uint64_t index) {}
};

} // namespace uq::emu

#endif // UQ_EMULATOR_TRACE_H
