//===- Output.cpp - Whole-or-nothing writing of uq's output files ---------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "uq/Support/Output.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {
Error cannotWrite(StringRef path, std::error_code ec) {
  std::string name = path == "-" ? std::string("standard output")
                                 : "'" + path.str() + "'";
  return createStringError(ec, "cannot write %s: %s", name.c_str(),
                           ec.message().c_str());
}

/// Writes \p f to \p os and closes or flushes it. The stream's error is
/// returned and cleared: a raw_fd_ostream destroyed with an error pending
/// aborts the process (LLVM's "IO failure on output stream").
std::error_code writeTo(raw_fd_ostream &os, const uq::OutputFile &f,
                        bool close) {
  os << f.prefix << f.data;
  if (close)
    os.close();
  else
    os.flush();
  std::error_code ec = os.error();
  os.clear_error();
  return ec;
}
} // namespace

Error uq::writeOutputFiles(ArrayRef<OutputFile> files) {
  struct Temp {
    SmallString<256> path;
    const OutputFile *file;
  };
  SmallVector<Temp, 2> temps;
  SmallVector<const OutputFile *> inPlace;
  auto fail = [&](StringRef path, std::error_code ec) {
    for (Temp &t : temps)
      sys::fs::remove(t.path);
    return cannotWrite(path, ec);
  };

  // Regular (or new) files: a temporary next to each.
  for (const OutputFile &f : files) {
    sys::fs::file_status st;
    if (f.path == "-" ||
        (!sys::fs::status(f.path, st) &&
         st.type() != sys::fs::file_type::regular_file)) {
      inPlace.push_back(&f);
      continue;
    }
    int fd = -1;
    Temp t{{}, &f};
    if (std::error_code ec = sys::fs::createUniqueFile(
            f.path + ".tmp-%%%%%%", fd, t.path,
            f.text ? sys::fs::OF_Text : sys::fs::OF_None))
      return fail(f.path, ec);
    temps.push_back(t);
    raw_fd_ostream os(fd, /*shouldClose=*/true);
    if (std::error_code ec = writeTo(os, f, /*close=*/true))
      return fail(f.path, ec);
  }
  // Standard output and devices, written in place once every temporary is
  // complete.
  for (const OutputFile *f : inPlace) {
    if (f->path == "-") {
      if (std::error_code ec = writeTo(outs(), *f, /*close=*/false))
        return fail("-", ec);
      continue;
    }
    std::error_code ec;
    raw_fd_ostream os(f->path, ec,
                      f->text ? sys::fs::OF_Text : sys::fs::OF_None);
    if (!ec)
      ec = writeTo(os, *f, /*close=*/true);
    if (ec)
      return fail(f->path, ec);
  }
  // Every file is written: the temporaries replace their targets.
  for (size_t i = 0; i < temps.size(); ++i)
    if (std::error_code ec =
            sys::fs::rename(temps[i].path, temps[i].file->path)) {
      for (size_t j = i; j < temps.size(); ++j)
        sys::fs::remove(temps[j].path);
      return cannotWrite(temps[i].file->path, ec);
    }
  return Error::success();
}
