//===- OpTable.cpp - Errors and the handler table -------------------------===//
//
// The mnemonic -> handler table, built once from the per-family registration
// functions (Exec*.cpp, split like LLVM's AMDGPU instruction definitions:
// scalar, vector, conversions, MFMA, memory, LDS, lane ops), and the error
// reporting every handler uses.
//
//===----------------------------------------------------------------------===//

#include "ExecCommon.h"

using namespace uq::emu::detail;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

static std::string where(const Exec &X, const Inst &I) {
  return llvm::formatv("at {0:x} ({1})", I.pc - X.codeBase, I.text).str();
}

void Exec::fail(const Inst &I, const std::string &msg) {
  if (failed)
    return;
  failed = true;
  error = msg + " " + where(*this, I);
}

void Exec::failLane(const Inst &I, unsigned lane, uint64_t addr,
                    unsigned bytes, const char *what) {
  if (failed)
    return;
  failed = true;
  error = llvm::formatv("out-of-bounds {0} of {1} bytes at address {2:x} "
                        "(lane {3}) {4}",
                        what, bytes, addr, lane, where(*this, I))
              .str();
}

void uq::emu::detail::execUnimplemented(Exec &X, Wave &, const Inst &I) {
  if (!I.decodeError.empty())
    return X.fail(I, "'" + I.name + "': " + I.decodeError);
  X.fail(I, "unimplemented instruction '" + I.name + "'");
}
const llvm::StringMap<OpEntry> &uq::emu::detail::opTable() {
  static const llvm::StringMap<OpEntry> table = [] {
    llvm::StringMap<OpEntry> t;
    OpRegistry R{t};
    registerScalarOps(R);
    registerVectorOps(R);
    registerConvertOps(R);
    registerMfmaOps(R);
    registerMemoryOps(R);
    registerLdsOps(R);
    registerLaneOps(R);
    return t;
  }();
  return table;
}
