//===- Assemble.h - Test kernels for the emulator's unit tests -*- C++ -*-===//
//
// Assembles a kernel body between test/Emulator/Inputs/kernel-prologue.inc
// and kernel-epilogue.inc with llvm-mc and ld.lld: kernel `k`(in0, in1, out)
// with s[4:5], s[6:7], s[8:9] holding the buffers and v1 = 4 * lane id.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_TEST_UNITTESTS_EMULATOR_ASSEMBLE_H
#define UQ_TEST_UNITTESTS_EMULATOR_ASSEMBLE_H

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace uq::emu::test {
/// Assembles `body` between the shared test prologue/epilogue.
inline std::vector<uint8_t> assemble(const std::string &body) {
  llvm::SmallString<128> dir;
  EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("uq-emu-test", dir));
  std::string inc = std::string(UQ_SOURCE_DIR) + "/test/Emulator/Inputs";
  std::string s = dir.str().str() + "/k.s", o = dir.str().str() + "/k.o",
              h = dir.str().str() + "/k.hsaco";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(s, ec);
    os << ".include \"kernel-prologue.inc\"\n"
       << body << "\n.include \"kernel-epilogue.inc\"\n";
  }
  auto mc = llvm::sys::findProgramByName("llvm-mc", {"/usr/lib/llvm-22/bin"});
  auto ld = llvm::sys::findProgramByName("ld.lld", {"/usr/lib/llvm-22/bin"});
  EXPECT_TRUE(mc && ld);
  EXPECT_EQ(0, llvm::sys::ExecuteAndWait(
                   *mc, {*mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx950",
                         "-filetype=obj", "-I", inc, s, "-o", o}));
  EXPECT_EQ(0, llvm::sys::ExecuteAndWait(*ld, {*ld, "-shared", o, "-o", h}));
  auto buf = llvm::MemoryBuffer::getFile(h);
  EXPECT_TRUE(bool(buf));
  std::vector<uint8_t> bytes;
  if (buf)
    bytes.assign((*buf)->getBufferStart(), (*buf)->getBufferEnd());
  llvm::sys::fs::remove_directories(dir);
  return bytes;
}
} // namespace uq::emu::test

#endif // UQ_TEST_UNITTESTS_EMULATOR_ASSEMBLE_H
