//===- Diagnostics.h - MLIR diagnostics as text -----------------*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The libraries behind uq-compile, uq-run, the C API and Python report
/// failures as text (an llvm::Error's message). DiagnosticCollector collects
/// a context's diagnostics in the form MLIR's own tools print
/// (`file:line:col: error: message`, notes after their diagnostic), and
/// remembers whether any error was emitted, since a pass can emit an error
/// and still report success.
///
//===----------------------------------------------------------------------===//

#ifndef UQ_SUPPORT_DIAGNOSTICS_H
#define UQ_SUPPORT_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace uq {

/// Prints `file:line:col: ` for a location (through name and call-site
/// locations), or the location as MLIR prints it.
void printLocation(llvm::raw_ostream &os, mlir::Location loc);

/// Collects the diagnostics of a context as text while alive.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(mlir::MLIRContext &ctx);

  /// Whether an error diagnostic was emitted.
  bool hasError() const { return sawError; }
  /// Everything collected so far.
  const std::string &text() const { return collected; }
  /// An error carrying what was collected, or `what` when nothing was.
  llvm::Error error(llvm::StringRef what) const;
  /// Turns a failure that is not a diagnostic yet (an LLVM-level error, a
  /// missing kernel) into one located at `loc`, so that every error reads
  /// `file:line:col: error: ...`, and returns error().
  llvm::Error locate(mlir::Location loc, llvm::Error err);

private:
  std::string collected;
  bool sawError = false;
  mlir::ScopedDiagnosticHandler handler;
};

} // namespace uq

#endif // UQ_SUPPORT_DIAGNOSTICS_H
