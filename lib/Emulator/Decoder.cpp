//===- Decoder.cpp - gfx950 instruction decoding via LLVM MC --------------===//
//
// Each instruction is disassembled once by LLVM's AMDGPU MC disassembler and
// printed by its MCInstPrinter; the printed operand syntax (documented in
// LLVM's AMDGPUUsage / AMDGPUOperandSyntax pages) is then parsed into the
// compact Inst form. The printed form names every modifier explicitly
// (op_sel, neg_lo, DPP controls, SDWA selects, cbsz/blgp ...), which is
// what makes this robust without the non-public AMDGPU operand enums.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCDisassembler/MCDisassembler.h"
#include "llvm/MC/MCInst.h"
#include "llvm/MC/MCInstPrinter.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCSchedule.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

#include <mutex>

extern "C" void LLVMInitializeAMDGPUTargetInfo();
extern "C" void LLVMInitializeAMDGPUTargetMC();
extern "C" void LLVMInitializeAMDGPUDisassembler();

using namespace llvm;
using namespace uq::emu::detail;

struct Decoder::Impl {
  std::unique_ptr<MCRegisterInfo> mri;
  std::unique_ptr<MCAsmInfo> mai;
  std::unique_ptr<MCSubtargetInfo> sti;
  std::unique_ptr<MCInstrInfo> mii;
  std::unique_ptr<MCContext> ctx;
  std::unique_ptr<MCDisassembler> dis;
  std::unique_ptr<MCInstPrinter> printer;
  std::string initError;
};

Decoder::Decoder() : impl(std::make_unique<Impl>()) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUDisassembler();
  });
  Triple tt("amdgcn-amd-amdhsa");
  std::string err;
  const Target *t = TargetRegistry::lookupTarget(tt, err);
  if (!t) {
    impl->initError = err;
    return;
  }
  MCTargetOptions opts;
  impl->mri.reset(t->createMCRegInfo(tt));
  impl->mai.reset(t->createMCAsmInfo(*impl->mri, tt, opts));
  impl->sti.reset(t->createMCSubtargetInfo(tt, "gfx950", ""));
  impl->mii.reset(t->createMCInstrInfo());
  impl->ctx = std::make_unique<MCContext>(tt, impl->mai.get(), impl->mri.get(),
                                          impl->sti.get());
  impl->dis.reset(t->createMCDisassembler(*impl->sti, *impl->ctx));
  impl->printer.reset(
      t->createMCInstPrinter(tt, 0, *impl->mai, *impl->mii, *impl->mri));
  if (!impl->dis || !impl->printer)
    impl->initError = "AMDGPU MC disassembler unavailable in libLLVM";
}

Decoder::~Decoder() = default;

namespace {

/// Splits on spaces outside brackets/parens/bars.
SmallVector<std::string, 12> tokenize(StringRef s) {
  SmallVector<std::string, 12> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[' || c == '(')
      ++depth;
    else if (c == ']' || c == ')')
      --depth;
    if ((c == ' ' || c == '\t') && depth == 0) {
      if (!cur.empty())
        out.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (!cur.empty())
    out.push_back(cur);
  return out;
}

/// Parses "[a,b,c]" into a bit mask (bit i = element i).
uint8_t parseBits(StringRef s) {
  s = s.trim("[]");
  uint8_t m = 0;
  SmallVector<StringRef, 4> parts;
  s.split(parts, ',');
  for (unsigned i = 0; i < parts.size(); ++i)
    if (parts[i].trim() == "1")
      m |= 1u << i;
  return m;
}

int64_t parseInt(StringRef s) {
  bool neg = s.consume_front("-");
  uint64_t v = 0;
  if (s.starts_with("0x") || s.starts_with("0X"))
    s.drop_front(2).getAsInteger(16, v);
  else
    s.getAsInteger(10, v);
  return neg ? -(int64_t)v : (int64_t)v;
}

/// Bit patterns of the inline float constants (AMD ISA "inline constants"):
/// 0.5, 1.0, 2.0, 4.0 and their negations, and 1/(2*pi).
bool inlineFloat(StringRef tok, FT ft, uint64_t &out) {
  static const struct {
    const char *txt;
    uint16_t h, bf;
    uint32_t f;
    uint64_t d;
  } table[] = {
      {"0.5", 0x3800, 0x3f00, 0x3f000000, 0x3fe0000000000000ull},
      {"-0.5", 0xb800, 0xbf00, 0xbf000000, 0xbfe0000000000000ull},
      {"1.0", 0x3c00, 0x3f80, 0x3f800000, 0x3ff0000000000000ull},
      {"-1.0", 0xbc00, 0xbf80, 0xbf800000, 0xbff0000000000000ull},
      {"2.0", 0x4000, 0x4000, 0x40000000, 0x4000000000000000ull},
      {"-2.0", 0xc000, 0xc000, 0xc0000000, 0xc000000000000000ull},
      {"4.0", 0x4400, 0x4080, 0x40800000, 0x4010000000000000ull},
      {"-4.0", 0xc400, 0xc080, 0xc0800000, 0xc010000000000000ull},
      {"0.15915494", 0x3118, 0x3e22, 0x3e22f983, 0x3fc45f306dc9c882ull},
  };
  for (const auto &e : table) {
    if (tok != e.txt)
      continue;
    switch (ft) {
    case FT::F16:
    case FT::PkF16:
      out = e.h;
      return true;
    case FT::BF16:
      out = e.bf;
      return true;
    case FT::F64:
      out = e.d;
      return true;
    case FT::PkF32:
      // Packed f32 operands are 64-bit; the constant is used for both
      // halves (see docs/emulator.md, "uncertain").
      out = (uint64_t)e.f | ((uint64_t)e.f << 32);
      return true;
    default:
      out = e.f;
      return true;
    }
  }
  return false;
}

bool parseRegRange(StringRef body, unsigned &lo, unsigned &width) {
  if (body.consume_front("[")) {
    body = body.drop_back(); // ']'
    auto [a, b] = body.split(':');
    unsigned x = 0, y = 0;
    if (a.getAsInteger(10, x))
      return false;
    if (b.empty())
      y = x;
    else if (b.getAsInteger(10, y))
      return false;
    lo = x;
    width = y - x + 1;
    return true;
  }
  if (body.getAsInteger(10, lo))
    return false;
  width = 1;
  return true;
}

/// Parses one printed operand. Returns false if it is not an operand.
bool parseOperand(StringRef tok, FT ft, Operand &op) {
  op = Operand();
  // Modifiers: -x, |x|, -|x|, neg(x), abs(x).
  if (tok.consume_front("sext(")) {
    tok = tok.drop_back();
    op.sext = true;
  }
  if (tok.consume_front("neg(")) {
    tok = tok.drop_back();
    op.neg = true;
  }
  if (tok.size() > 1 && tok[0] == '-' && !isDigit(tok[1])) {
    op.neg = true;
    tok = tok.drop_front();
  }
  if (tok.consume_front("abs(")) {
    tok = tok.drop_back();
    op.abs = true;
  }
  if (tok.size() > 1 && tok.front() == '|' && tok.back() == '|') {
    op.abs = true;
    tok = tok.drop_front().drop_back();
  }
  unsigned lo = 0, w = 1;
  auto sreg = [&](unsigned r, unsigned width) {
    op.kind = OpKind::SReg;
    op.reg = r;
    op.width = width;
    return true;
  };
  if (tok == "vcc")
    return sreg(kVccLo, 2);
  if (tok == "vcc_lo")
    return sreg(kVccLo, 1);
  if (tok == "vcc_hi")
    return sreg(kVccHi, 1);
  if (tok == "exec")
    return sreg(kExecLo, 2);
  if (tok == "exec_lo")
    return sreg(kExecLo, 1);
  if (tok == "exec_hi")
    return sreg(kExecHi, 1);
  if (tok == "m0")
    return sreg(kM0, 1);
  if (tok == "null")
    return sreg(kNull, 1);
  if (tok == "flat_scratch")
    return sreg(kFlatScrLo, 2);
  if (tok == "flat_scratch_lo")
    return sreg(kFlatScrLo, 1);
  if (tok == "flat_scratch_hi")
    return sreg(kFlatScrLo + 1, 1);
  if (tok == "xnack_mask")
    return sreg(kXnackLo, 2);
  if (tok == "src_scc" || tok == "scc") {
    op.kind = OpKind::Scc;
    return true;
  }
  if (tok == "src_execz" || tok == "execz") {
    op.kind = OpKind::ExecZ;
    return true;
  }
  if (tok == "src_vccz" || tok == "vccz") {
    op.kind = OpKind::VccZ;
    return true;
  }
  if (tok == "off") {
    op.kind = OpKind::Off;
    return true;
  }
  if (tok.starts_with("ttmp") && parseRegRange(tok.drop_front(4), lo, w))
    return sreg(kTtmp0 + lo, w);
  if ((tok[0] == 'v' || tok[0] == 's' || tok[0] == 'a') && tok.size() > 1 &&
      (isDigit(tok[1]) || tok[1] == '[') &&
      parseRegRange(tok.drop_front(), lo, w)) {
    op.kind = tok[0] == 'v'   ? OpKind::VReg
              : tok[0] == 'a' ? OpKind::AReg
                              : OpKind::SReg;
    op.reg = lo;
    op.width = w;
    return true;
  }
  uint64_t bits = 0;
  if (inlineFloat(tok, ft, bits)) {
    op.kind = OpKind::Imm;
    op.inlineFloat = true;
    op.imm[0] = (uint32_t)bits;
    op.imm[1] = (uint32_t)(bits >> 32);
    op.width = ft == FT::F64 || ft == FT::PkF32 ? 2 : 1;
    return true;
  }
  if (!tok.empty() && (isDigit(tok[0]) || tok[0] == '-')) {
    op.kind = OpKind::Imm;
    if (tok.starts_with("0x")) {
      uint64_t v = 0;
      tok.drop_front(2).getAsInteger(16, v);
      op.literal = v <= 0xffffffffull;
      if (ft == FT::F64 && v <= 0xffffffffull)
        v <<= 32; // a 32-bit literal of an f64 operand is its high half
      op.imm[0] = (uint32_t)v;
      op.imm[1] = (uint32_t)(v >> 32);
    } else {
      int64_t v = parseInt(tok);
      op.imm[0] = (uint32_t)v;
      op.imm[1] = (uint32_t)((uint64_t)v >> 32);
      if (ft == FT::PkF32)
        op.imm[1] = op.imm[0];
    }
    op.width = 1;
    return true;
  }
  return false;
}

/// Strips the encoding suffix the printer adds.
std::string normalise(StringRef m) {
  for (StringRef suf : {"_e32", "_e64", "_dpp", "_sdwa", "_vop3"})
    if (m.consume_back(suf))
      break;
  return m.str();
}

uint8_t parseSel(StringRef s) {
  if (s == "BYTE_0")
    return 0;
  if (s == "BYTE_1")
    return 1;
  if (s == "BYTE_2")
    return 2;
  if (s == "BYTE_3")
    return 3;
  if (s == "WORD_0")
    return 4;
  if (s == "WORD_1")
    return 5;
  return 6; // DWORD
}

/// LLVM's scheduling model for gfx950 (SIDPGFX950FullSpeedModel in
/// SISchedule.td): latency and reciprocal throughput, for the timing model.
void setSchedInfo(Inst &I, const MCInst &mi, const MCSubtargetInfo &sti,
                  const MCInstrInfo &mii) {
  const MCSchedModel &sm = sti.getSchedModel();
  if (!sm.hasInstrSchedModel())
    return;
  unsigned sc = mii.get(mi.getOpcode()).getSchedClass();
  const MCSchedClassDesc *d = sm.getSchedClassDesc(sc);
  for (unsigned guard = 0; d && d->isVariant() && guard < 8; ++guard) {
    sc = sti.resolveVariantSchedClass(sc, &mi, &mii, sm.getProcessorID());
    d = sc ? sm.getSchedClassDesc(sc) : nullptr;
  }
  if (d && d->isValid() && !d->isVariant()) {
    int lat = MCSchedModel::computeInstrLatency(sti, *d);
    double thr = MCSchedModel::getReciprocalThroughput(sti, *d);
    I.schedLatency = (uint16_t)std::clamp(lat, 0, 4096);
    I.schedThroughput = (uint16_t)std::clamp(thr, 0.0, 4096.0);
  }
}

/// One modifier token of \p I (mnemonic \p n). Every token must be one
/// the emulator models; anything else is recorded and refused when the
/// instruction executes (a dropped token would silently change the meaning
/// of the others, as `lds` once did).
void parseModifier(Inst &I, StringRef tok, StringRef n) {
  auto [key, val] = tok.split(':');
  if (key == "clamp")
    I.clamp = true;
  else if (key == "mul")
    I.omod = val == "2" ? 1 : 2;
  else if (key == "div")
    I.omod = 3;
  else if (key == "op_sel")
    I.opSel = parseBits(val);
  else if (key == "op_sel_hi")
    I.opSelHi = parseBits(val);
  else if (key == "neg_lo")
    I.negLo = parseBits(val);
  else if (key == "neg_hi")
    I.negHi = parseBits(val);
  else if (key == "offset")
    I.offset = (int32_t)parseInt(val), I.hasOffsetReg = true;
  else if (key == "offset0")
    I.offset0 = (int32_t)parseInt(val);
  else if (key == "offset1")
    I.offset1 = (int32_t)parseInt(val);
  else if (key == "offen")
    I.offen = true;
  else if (key == "idxen")
    I.idxen = true;
  else if (key == "glc" || key == "sc0")
    I.glc = true;
  else if (key == "cbsz")
    I.cbsz = (uint8_t)parseInt(val);
  else if (key == "abid")
    I.abid = (uint8_t)parseInt(val);
  else if (key == "blgp")
    I.blgp = (uint8_t)parseInt(val);
  else if (key == "bitop3")
    I.bitop3 = (uint8_t)parseInt(val);
  else if (key == "fi")
    I.fi = val == "1";
  else if (key == "row_mask")
    I.rowMask = (uint8_t)parseInt(val);
  else if (key == "bank_mask")
    I.bankMask = (uint8_t)parseInt(val);
  else if (key == "bound_ctrl")
    I.boundCtrl = true; // bound_ctrl:0 and :1 both mean the bit is set
  else if (key == "quad_perm") {
    I.dppKind = 1;
    SmallVector<StringRef, 4> p;
    val.trim("[]").split(p, ',');
    for (unsigned i = 0; i < 4 && i < p.size(); ++i)
      I.quadPerm[i] = (uint8_t)parseInt(p[i]);
  } else if (key == "row_shl")
    I.dppKind = 2, I.dppArg = (uint8_t)parseInt(val);
  else if (key == "row_shr")
    I.dppKind = 3, I.dppArg = (uint8_t)parseInt(val);
  else if (key == "row_ror")
    I.dppKind = 4, I.dppArg = (uint8_t)parseInt(val);
  else if (key == "wave_shl")
    I.dppKind = 5;
  else if (key == "wave_rol")
    I.dppKind = 6;
  else if (key == "wave_shr")
    I.dppKind = 7;
  else if (key == "wave_ror")
    I.dppKind = 8;
  else if (key == "row_mirror")
    I.dppKind = 9;
  else if (key == "row_half_mirror")
    I.dppKind = 10;
  else if (key == "row_bcast")
    I.dppKind = val == "15" ? 11 : 12;
  else if (key == "dst_sel")
    I.dstSel = parseSel(val);
  else if (key == "dst_unused")
    I.dstUnused = val == "UNUSED_SEXT" ? 1 : val == "UNUSED_PRESERVE" ? 2 : 0;
  else if (key == "src0_sel")
    I.src0Sel = parseSel(val);
  else if (key == "src1_sel")
    I.src1Sel = parseSel(val);
  else if (key == "row_newbcast")
    // gfx90a+ DPP control 0x150 + n: every lane of a row reads lane n of
    // its row (LLVM SIDefines.h DppCtrl::ROW_NEWBCAST_FIRST..LAST; the
    // same encoding is row_share on gfx10+).
    I.dppKind = 13, I.dppArg = (uint8_t)(parseInt(val) & 15);
  else if (key == "lds" && val.empty() &&
           (n == "buffer_load_dword" || n == "buffer_load_dwordx3" ||
            n == "buffer_load_dwordx4"))
    I.lds = true; // The sub-dword lds forms are not modelled.
  else if ((key == "sc1" || key == "nt" || key == "slc") && val.empty())
    ; // Cache-policy hints: no effect on the values a kernel sees.
  else if (n.starts_with("s_waitcnt") &&
           (tok.starts_with("vmcnt(") || tok.starts_with("lgkmcnt(") ||
            tok.starts_with("expcnt(") || tok.starts_with("vscnt(")))
    ; // Counter waits: the timing model reads them from the text.
  else if (n.starts_with("s_setreg") || n.starts_with("s_getreg"))
    ; // hwreg(...) operands: mode writes are ignored (docs/emulator.md).
  else if (I.decodeError.empty())
    I.decodeError =
        (Twine("unmodelled operand or modifier '") + tok + "'").str();
}

/// The operand fix-ups of the forms whose printed operands are not the
/// handlers' (\p n: the mnemonic); false (with I.decodeError) when the
/// instruction cannot be executed.
bool fixUpOperands(Inst &I, StringRef n) {
  // The LDS-DMA form prints no data register: keep vaddr, srsrc, soffset at
  // the places the buffer handlers read them from.
  if (I.lds) {
    if (I.nOps >= 8) {
      I.decodeError = "too many operands for the lds form";
      return false;
    }
    for (unsigned i = I.nOps; i > 0; --i)
      I.ops[i] = I.ops[i - 1];
    I.ops[0] = Operand();
    ++I.nOps;
  }
  // s_waitcnt: the vmcnt to wait for (63, the counter's maximum, when the
  // printed form has no vmcnt); s_waitcnt_vmcnt null, N: its immediate.
  if (n == "s_waitcnt") {
    I.aux = 63;
    size_t at = StringRef(I.text).find("vmcnt(");
    if (at != StringRef::npos)
      I.aux = (int)parseInt(StringRef(I.text).drop_front(at + 6).take_until(
          [](char c) { return c == ')'; }));
  } else if (n == "s_waitcnt_vmcnt" && I.nOps == 2 &&
             I.ops[1].kind == OpKind::Imm) {
    I.aux = (int)(I.ops[1].imm[0] & 0xffff);
  }
  // v_fmac_* / v_mac_*: vdst is also the addend (D = S0 * S1 + D). They share
  // the 3-source fma/mad handlers, so the old vdst becomes source 2.
  if ((n.starts_with("v_fmac_") || n.starts_with("v_mac_")) && I.nOps == 3) {
    I.ops[3] = I.ops[0];
    I.ops[3].neg = I.ops[3].abs = false;
    I.nOps = 4;
  }
  return true;
}

/// DPP and SDWA forms: the handler runs on temporaries (Tmp operands) that
/// dppWrapper / sdwaWrapper fill from the original operands, then call it.
void wrapDppSdwa(Inst &I) {
  unsigned s0 = I.src0Idx;
  I.inner = I.fn;
  I.orig[0] = I.ops[s0];
  I.orig[1] = s0 + 1 < I.nOps ? I.ops[s0 + 1] : Operand();
  I.orig[2] = I.ops[0];
  I.src0Sext = I.orig[0].sext;
  I.src1Sext = I.orig[1].sext;
  Operand tmp;
  tmp.kind = OpKind::Tmp;
  tmp.reg = 0;
  I.ops[s0] = tmp;
  I.ops[s0].neg = I.orig[0].neg;
  I.ops[s0].abs = I.orig[0].abs;
  if (I.isSdwa) {
    if (s0 + 1 < I.nOps && I.orig[1].kind == OpKind::VReg) {
      tmp.reg = 1;
      I.ops[s0 + 1] = tmp;
      I.ops[s0 + 1].neg = I.orig[1].neg;
      I.ops[s0 + 1].abs = I.orig[1].abs;
    }
    if (I.orig[2].kind == OpKind::VReg) {
      tmp.reg = 2;
      tmp.width = I.orig[2].width;
      I.ops[0] = tmp;
    }
    I.fn = sdwaWrapper();
  } else {
    I.fn = dppWrapper();
  }
}

} // namespace

Inst Decoder::decode(ArrayRef<uint8_t> bytes, uint64_t pc) {
  Inst I;
  I.pc = pc;
  I.fn = execUnimplemented;
  if (!impl->initError.empty()) {
    I.text = "<" + impl->initError + ">";
    return I;
  }
  MCInst mi;
  uint64_t size = 0;
  auto st = impl->dis->getInstruction(mi, size, bytes, pc, nulls());
  if (st != MCDisassembler::Success || size == 0) {
    I.size = 4;
    I.text = "<undecodable>";
    I.name = "<undecodable>";
    return I;
  }
  I.size = (uint8_t)size;
  setSchedInfo(I, mi, *impl->sti, *impl->mii);
  std::string text;
  raw_string_ostream os(text);
  impl->printer->printInst(&mi, pc, "", *impl->sti, os);
  os.flush();
  StringRef t = StringRef(text).trim();
  I.text = t.str();
  auto [mn, rest] = t.split(' ');
  std::string raw = mn.str();
  I.name = normalise(mn);
  I.isDpp = StringRef(raw).ends_with("_dpp");
  I.isSdwa = StringRef(raw).ends_with("_sdwa");
  // First immediate operand of the MCInst (the DS offset field).
  for (const MCOperand &o : mi)
    if (o.isImm()) {
      I.rawOffset = (uint32_t)o.getImm();
      break;
    }

  const auto &table = opTable();
  auto it = table.find(I.name);
  FT ft = FT::None;
  if (it != table.end()) {
    ft = it->second.ft;
    I.cls = it->second.cls;
    I.aux = it->second.aux;
    I.aux2 = it->second.aux2;
  }
  I.ft = ft;
  StringRef n(I.name);
  // The printer omits op_sel_hi when it has its default: all ones for packed
  // ops, all zeros (f32 sources) for the mix ops (llvm-objdump prints
  // `v_fma_mix_f32 v12, v2, v2, v2` for op_sel_hi bits 0, fma-mix.s).
  bool vop3p = n.starts_with("v_pk_") || n.starts_with("v_dot");
  if (vop3p)
    I.opSelHi = 0xf;

  SmallVector<std::string, 12> toks = tokenize(rest);
  bool inOperands = true;
  for (std::string &tokStr : toks) {
    StringRef tok(tokStr);
    if (inOperands) {
      bool more = tok.consume_back(",");
      Operand op;
      if (parseOperand(tok, ft, op)) {
        if (I.nOps < 8)
          I.ops[I.nOps++] = op;
        if (!more)
          inOperands = false;
        continue;
      }
      inOperands = false;
    }
    parseModifier(I, tok, n);
  }
  if (it == table.end())
    return I; // "unimplemented instruction" says more than its modifiers.
  if (!I.decodeError.empty()) {
    I.fn = execUnimplemented;
    return I;
  }
  if (!fixUpOperands(I, n))
    return I;
  I.fn = it->second.fn;
  I.src0Idx = it->second.nDst;
  if (I.isDpp || I.isSdwa)
    wrapDppSdwa(I);
  return I;
}
