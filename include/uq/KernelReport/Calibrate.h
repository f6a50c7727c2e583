//===- Calibrate.h - uq-kernel-report --calibrate ---------------*- C++ -*-===//
//
// The timing model against AMD's measured kernels: AITER's gfx950 forward
// attention and paged-attention code objects ($UQ_SHARED_DIR/peers/aiter)
// emulated at their published shapes (a few sampled workgroups of the real
// grid, scaled to it) and compared with AMD's published MI355X figures.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_KERNELREPORT_CALIBRATE_H
#define UQ_KERNELREPORT_CALIBRATE_H

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace uq::report {

struct CalibrationOptions {
  /// Folder holding AITER's code objects and README.md.
  std::string aiterDir;
  /// Workgroups traced per launch (evenly spaced over the grid).
  unsigned samples = 2;
  /// Only the first forward row and the first paged row, at a reduced
  /// sequence length (for tests).
  bool quick = false;
  /// Also write the rows as JSON.
  std::string jsonPath;
  /// TimingParams::valuMfmaOverlap (off in the calibrated model).
  bool valuMfmaOverlap = false;
};

/// Prints the calibration table to \p os (and writes its JSON when asked).
llvm::Error runCalibration(const CalibrationOptions &o, llvm::raw_ostream &os);

} // namespace uq::report

#endif // UQ_KERNELREPORT_CALIBRATE_H
