//===- Diagnostics.cpp - MLIR diagnostics as text -------------------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "uq/Support/Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

void uq::printLocation(llvm::raw_ostream &os, Location loc) {
  if (auto flc = dyn_cast<FileLineColLoc>(loc)) {
    os << flc.getFilename().getValue() << ":" << flc.getLine() << ":"
       << flc.getColumn() << ": ";
    return;
  }
  if (auto named = dyn_cast<NameLoc>(loc)) {
    printLocation(os, named.getChildLoc());
    return;
  }
  if (auto call = dyn_cast<CallSiteLoc>(loc)) {
    printLocation(os, call.getCallee());
    return;
  }
  if (isa<UnknownLoc>(loc)) {
    os << "<unknown>:0: "; // as MLIR's SourceMgrDiagnosticHandler
    return;
  }
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    if (!fused.getLocations().empty()) {
      printLocation(os, fused.getLocations().front());
      return;
    }
  }
  os << loc << ": ";
}

uq::DiagnosticCollector::DiagnosticCollector(MLIRContext &ctx)
    : handler(&ctx, [this](Diagnostic &diag) {
        llvm::raw_string_ostream os(collected);
        printLocation(os, diag.getLocation());
        switch (diag.getSeverity()) {
        case DiagnosticSeverity::Error:
          sawError = true;
          os << "error: ";
          break;
        case DiagnosticSeverity::Warning:
          os << "warning: ";
          break;
        case DiagnosticSeverity::Note:
          os << "note: ";
          break;
        case DiagnosticSeverity::Remark:
          os << "remark: ";
          break;
        }
        os << diag << "\n";
        for (Diagnostic &note : diag.getNotes()) {
          printLocation(os, note.getLocation());
          os << "note: " << note << "\n";
        }
        return success();
      }) {}

llvm::Error uq::DiagnosticCollector::error(llvm::StringRef what) const {
  std::string msg = collected.empty() ? what.str() : collected;
  while (!msg.empty() && msg.back() == '\n')
    msg.pop_back();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Error uq::DiagnosticCollector::locate(Location loc, llvm::Error err) {
  std::string msg = llvm::toString(std::move(err));
  if (!sawError)
    emitError(loc) << msg;
  return error(msg);
}
