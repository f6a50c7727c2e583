//===- Internal.h - Emulator internals shared by its sources ----*- C++ -*-===//
//
// Pre-decoded instruction form, wave state and the execution context.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_EMULATOR_INTERNAL_H
#define UQ_LIB_EMULATOR_INTERNAL_H

#include "uq/Emulator/Emulator.h"
#include "uq/Emulator/Trace.h"

#include "llvm/ADT/StringMap.h"

#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace uq::emu::detail {

/// Hardware SGPR encodings used as indices into Wave::s (gfx9 operand
/// encoding, AMD CDNA3/CDNA4 ISA "SSRC" table).
enum : unsigned {
  kFlatScrLo = 102,
  kXnackLo = 104,
  kVccLo = 106,
  kVccHi = 107,
  kTtmp0 = 108,
  kM0 = 124,
  kNull = 125,
  kExecLo = 126,
  kExecHi = 127,
  kNumS = 128,
};

enum class OpKind : uint8_t {
  None,
  SReg,  ///< reg = hardware SGPR encoding (incl. vcc/exec/m0/ttmp).
  VReg,  ///< reg = VGPR index.
  AReg,  ///< reg = AGPR index.
  Imm,   ///< imm[0..1] hold the 64-bit pattern.
  Scc,   ///< src_scc
  ExecZ, ///< src_execz
  VccZ,  ///< src_vccz
  Off,   ///< "off"
  Tmp,   ///< reg = Exec::tmp slot (DPP/SDWA pre-processed operand).
};

struct Operand {
  OpKind kind = OpKind::None;
  uint8_t width = 1; ///< In dwords.
  bool neg = false, abs = false;
  bool literal = false; ///< A 32-bit literal (not an inline constant).
  bool sext = false;    ///< SDWA sext(...) modifier.
  bool inlineFloat = false; ///< An inline float constant (0.5, 1.0, ...).
  uint16_t reg = 0;
  uint32_t imm[2] = {0, 0};
  int64_t immValue() const {
    return (int64_t)((uint64_t)imm[0] | ((uint64_t)imm[1] << 32));
  }
};

/// Instruction class for statistics.
enum class Cls : uint8_t {
  SALU, SMEM, Branch, VALU, Trans, MFMA, LDS, Global, Scratch, Barrier,
  Waitcnt, Nop, Other
};

/// Type of the float modifiers / inline float constants of an opcode.
enum class FT : uint8_t { None, F16, BF16, F32, F64, PkF16, PkF32 };

struct Exec;
struct Wave;
struct Inst;
using ExecFn = void (*)(Exec &, Wave &, const Inst &);

/// One pre-decoded instruction.
struct Inst {
  ExecFn fn = nullptr;
  uint64_t pc = 0;
  uint8_t size = 4;
  Cls cls = Cls::Other;
  FT ft = FT::None;
  uint8_t nOps = 0;
  Operand ops[8];
  std::string name; ///< Normalised mnemonic (no _e32/_e64/_dpp/_sdwa).
  std::string text; ///< The printed instruction.
  // Modifiers.
  bool clamp = false;
  uint8_t omod = 0; ///< 0 none, 1 mul:2, 2 mul:4, 3 div:2
  uint8_t opSel = 0, opSelHi = 0, negLo = 0, negHi = 0;
  int32_t offset = 0, offset0 = 0, offset1 = 0;
  bool offen = false, idxen = false, glc = false, hasOffsetReg = false;
  /// MUBUF `lds`: the LDS-DMA form of buffer_load (no data register; the
  /// bytes go to LDS at M0 + offset + lane * size). The decoder then puts a
  /// None operand in ops[0] so vaddr, srsrc, soffset keep their places.
  bool lds = false;
  uint8_t cbsz = 0, abid = 0, blgp = 0;
  uint8_t bitop3 = 0; ///< v_bitop3 truth table (bitop3:0xNN).
  bool fi = false;    ///< fi:1 (fetch inactive) of v_permlane*_swap.
  // DPP.
  bool isDpp = false, boundCtrl = false;
  uint8_t dppKind = 0; ///< see dppExec in ExecLane.cpp
  uint8_t dppArg = 0;
  uint8_t quadPerm[4] = {0, 1, 2, 3};
  uint8_t rowMask = 0xf, bankMask = 0xf;
  // SDWA.
  bool isSdwa = false;
  uint8_t dstSel = 6, dstUnused = 0, src0Sel = 6, src1Sel = 6;
  bool src0Sext = false, src1Sext = false;
  uint32_t rawOffset = 0; ///< ds_swizzle pattern (from the MCInst).
  /// Set when the printed instruction has an operand or modifier the
  /// emulator does not model: the instruction then fails when executed,
  /// naming it, instead of running with the token ignored.
  std::string decodeError;
  int aux = 0, aux2 = 0;  ///< Opcode-specific parameters set by the decoder.
  uint8_t src0Idx = 1;    ///< Index of src0 in ops (after the destinations).
  ExecFn inner = nullptr; ///< The real handler when fn is a DPP/SDWA wrapper.
  Operand orig[3];        ///< Original src0, src1, dst of DPP/SDWA forms.
  /// LLVM's gfx950 scheduling model for this instruction (units of one
  /// wave64 pass; see Trace.h).
  uint16_t schedLatency = 1, schedThroughput = 1;
  // Dynamic counters.
  mutable uint64_t count = 0, lanes = 0;
};

/// The LDS side of one LDS-DMA instruction (buffer_load ... lds): what each
/// active lane's bytes write where. The write does not land at issue:
/// kernels issue the load of the next tile into a buffer that the other
/// waves are still reading, relying on the memory latency, then wait for it
/// (s_waitcnt vmcnt) and synchronise (s_barrier) before anyone reads it.
/// Since the emulator runs each wave up to its barrier in turn, a write
/// retired by a vmcnt wait lands when the workgroup's next barrier releases
/// (all waves have done their reads before it), or at the wait itself in a
/// workgroup of one wave, or when the workgroup ends (docs/emulator.md).
struct DmaWrite {
  uint64_t lanes = 0;
  unsigned bytes = 0;
  uint32_t addr[64];
  uint8_t data[64 * 16];
};

/// Architectural state of one wave64.
struct Wave {
  uint32_t s[kNumS];
  uint32_t scc = 0;
  uint32_t cst[8]; ///< Scratch slots for computed operands (src_execz ...).
  std::vector<uint32_t> v, a; ///< [reg * 64 + lane]
  uint64_t pc = 0;
  bool done = false, atBarrier = false;
  unsigned id = 0;           ///< Wave index inside the workgroup.
  unsigned firstThread = 0;  ///< Flat id of lane 0 inside the workgroup.
  std::vector<uint8_t> scratch; ///< privateSegmentSize * 64 bytes.
  /// Outstanding vector memory instructions in issue order (what vmcnt
  /// counts on gfx9: loads and stores): null for those whose effect is
  /// already visible, the pending LDS write of an LDS-DMA load otherwise.
  std::deque<std::unique_ptr<DmaWrite>> vmq;
  /// Set by an LDS-DMA handler that queued its write (Emulator.cpp queues
  /// a null entry for every other vector memory instruction).
  bool dmaQueued = false;
  uint64_t exec() const { return s[kExecLo] | ((uint64_t)s[kExecHi] << 32); }
  void setExec(uint64_t e) {
    s[kExecLo] = (uint32_t)e;
    s[kExecHi] = (uint32_t)(e >> 32);
  }
  uint64_t vcc() const { return s[kVccLo] | ((uint64_t)s[kVccHi] << 32); }
  uint64_t s64(unsigned r) const { return s[r] | ((uint64_t)s[r + 1] << 32); }
};

/// A device memory region (a buffer, the kernarg segment, the code image).
struct Region {
  uint64_t base = 0;
  uint64_t size = 0;
  uint8_t *data = nullptr;
  bool writable = true;
  std::string label;
};

/// Everything the instruction handlers need while a workgroup runs.
struct Exec {
  std::vector<Region> regions;
  /// LDS-DMA writes retired by a vmcnt wait, landing at the next barrier.
  std::vector<std::unique_ptr<DmaWrite>> dmaAtBarrier;
  unsigned wavesInGroup = 1;
  /// Writes the queued LDS-DMA data into lds.
  void landDma() {
    for (const auto &d : dmaAtBarrier)
      for (uint64_t e = d->lanes; e; e &= e - 1) {
        unsigned l = __builtin_ctzll(e);
        std::memcpy(lds.data() + d->addr[l], d->data + 16 * l, d->bytes);
      }
    dmaAtBarrier.clear();
  }
  const Region *lastRegion = nullptr;
  std::vector<uint8_t> lds;
  uint32_t privateSize = 0;
  bool ftz32 = false; ///< f32 denormals flushed (float_denorm_mode_32 != 3).
  Stats *stats = nullptr;
  bool failed = false;
  std::string error;
  // Geometry of the current dispatch (for s_getreg etc).
  uint64_t codeBase = 0;
  /// Memory accesses of the current instruction, recorded only while a
  /// trace is being taken (Emulator.cpp hands them to the TraceSink).
  bool tracing = false;
  struct MemRecord {
    MemSpace space = MemSpace::None;
    bool store = false;
    unsigned bytes = 0, n = 0;
    uint64_t addr[128];
  } mem;
  void noteMem(MemSpace space, bool store, unsigned bytes, uint64_t a) {
    mem.space = space;
    mem.store = store;
    mem.bytes = bytes;
    if (mem.n < 128)
      mem.addr[mem.n++] = a;
  }
  /// Per-lane temporaries for DPP/SDWA operands (slot 0/1 sources, 2 dst).
  alignas(64) uint32_t tmp[4][128];

  void fail(const Inst &I, const std::string &msg);
  void failLane(const Inst &I, unsigned lane, uint64_t addr, unsigned bytes,
                const char *what);
  /// Host pointer for [addr, addr+n) in some region, or null. Written so
  /// that no sum can wrap around 2^64: an address near 2^64 (an SGPR pair
  /// holding a mask, say) must fail here, not reach host memory.
  static bool contains(const Region &r, uint64_t addr, uint64_t n) {
    return addr >= r.base && addr - r.base <= r.size &&
           n <= r.size - (addr - r.base);
  }
  uint8_t *translate(uint64_t addr, uint64_t n, bool write) {
    const Region *r = lastRegion;
    if (!r || !contains(*r, addr, n)) {
      r = nullptr;
      for (const Region &c : regions)
        if (contains(c, addr, n)) {
          r = &c;
          break;
        }
      if (!r)
        return nullptr;
      lastRegion = r;
    }
    if (write && !r->writable)
      return nullptr;
    return r->data + (addr - r->base);
  }
};

/// Decoder: turns the bytes at `pc` into an Inst (never fails; an
/// undecodable or unknown instruction gets a handler that reports it).
class Decoder {
public:
  Decoder();
  ~Decoder();
  Inst decode(llvm::ArrayRef<uint8_t> bytes, uint64_t pc);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Handler registry (OpTable.cpp): mnemonic -> handler and class.
struct OpEntry {
  ExecFn fn;
  Cls cls;
  FT ft;
  int aux;
  int aux2;
  uint8_t nDst;
};
const llvm::StringMap<OpEntry> &opTable();

/// Wrappers that pre-process DPP / SDWA operands, then call Inst::inner.
ExecFn dppWrapper();
ExecFn sdwaWrapper();

/// Handler used for instructions with no implementation.
void execUnimplemented(Exec &X, Wave &W, const Inst &I);

/// Completes the wave's oldest vector memory instructions until at most
/// `keep` are outstanding, landing their LDS-DMA writes in X.lds.
void retireVm(Exec &X, Wave &W, unsigned keep);

} // namespace uq::emu::detail

#endif // UQ_LIB_EMULATOR_INTERNAL_H
