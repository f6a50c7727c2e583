//===- Output.h - Whole-or-nothing writing of uq's output files -*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Every file uq's tools write (code objects, kernel and timing JSON, IR,
/// emulator buffers) goes through writeOutputFiles, so that a failed write
/// (a full disk, `/dev/full`, a file-size limit, a missing folder) is the
/// tool's own one-line error, never LLVM's fatal "IO failure on output
/// stream", and leaves no partial file behind:
///
/// - a regular file (or a new one) is written to a temporary file in the
///   same folder, which replaces the target only after every file of the
///   call was written and closed without an error; on any error all the
///   temporaries are removed and no target is touched;
/// - a path that exists and is not a regular file (`/dev/null`,
///   `/dev/full`, a FIFO) cannot be replaced and is written in place, after
///   the regular files' temporaries were written; its error is reported
///   the same way;
/// - "-" is standard output, flushed and checked.
///
/// docs/robustness.md ("Output files").
///
//===----------------------------------------------------------------------===//

#ifndef UQ_SUPPORT_OUTPUT_H
#define UQ_SUPPORT_OUTPUT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace uq {

/// One file to write: its path ("-" for standard output) and contents.
struct OutputFile {
  std::string path;
  llvm::StringRef data;
  /// Text mode (OF_Text) rather than binary; the same on POSIX.
  bool text = false;
  /// Written before `data` (a header), so that large data need not be
  /// copied to prepend it.
  llvm::StringRef prefix = {};
};

/// Writes every file of \p files, whole or not at all (see the file
/// comment). The error names the path and the reason: "cannot write 'P':
/// No space left on device".
llvm::Error writeOutputFiles(llvm::ArrayRef<OutputFile> files);

/// One file; see writeOutputFiles.
inline llvm::Error writeOutputFile(llvm::StringRef path, llvm::StringRef data,
                                   bool text = false) {
  OutputFile f{path.str(), data, text};
  return writeOutputFiles(f);
}

} // namespace uq

#endif // UQ_SUPPORT_OUTPUT_H
