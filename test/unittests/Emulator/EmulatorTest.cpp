//===- EmulatorTest.cpp - C++ API of the gfx950 emulator ------------------===//
//
// Exercises the API the compiler tests and the Python bindings use: load a
// code object from bytes, inspect kernel metadata, launch with buffers and
// scalars, read statistics, get errors as llvm::Error.
//
//===----------------------------------------------------------------------===//

#include "uq/Emulator/Emulator.h"
#include "uq/Reference/Reference.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <gtest/gtest.h>

using namespace uq::emu;

namespace {
/// Assembles `body` between the shared test prologue/epilogue.
std::vector<uint8_t> assemble(const std::string &body) {
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
  if (!buf)
    return {};
  return std::vector<uint8_t>((*buf)->getBufferStart(),
                              (*buf)->getBufferEnd());
}
} // namespace

TEST(Emulator, LoadLaunchAndStats) {
  // out[x] = cvt_scalef32_pk_f32_fp4(in0[x], scale = in1 byte) low half.
  auto bytes = assemble(R"(
  global_load_dword v2, v1, s[4:5]
  global_load_dword v3, v1, s[6:7]
  s_waitcnt vmcnt(0)
  v_lshlrev_b32 v3, 23, v3
  v_cvt_scalef32_pk_f32_fp4 v[4:5], v2, v3
  global_store_dword v1, v4, s[8:9]
  s_endpgm)");
  auto co = CodeObject::load(bytes);
  ASSERT_TRUE(bool(co)) << llvm::toString(co.takeError());
  ASSERT_EQ((*co)->kernels().size(), 1u);
  const KernelInfo &k = (*co)->kernels()[0];
  EXPECT_EQ(k.name, "k");
  EXPECT_EQ(k.numExplicitArgs(), 3u);
  EXPECT_EQ(k.groupSegmentSize, 4096u);

  std::vector<uint8_t> codes(256), scales(256);
  for (unsigned l = 0; l < 64; ++l) {
    codes[4 * l] = (uint8_t)(l * 37 + 5); // low nibble is the value used
    scales[4 * l] = (uint8_t)(120 + l % 15);
  }
  std::vector<KernelArg> args = {KernelArg::buffer(codes, "codes"),
                                 KernelArg::buffer(scales, "scales"),
                                 KernelArg::buffer(std::vector<uint8_t>(256))};
  Emulator emu(**co);
  LaunchConfig cfg;
  cfg.block = {64, 1, 1};
  ASSERT_FALSE(bool(emu.launch("k", cfg, args)));
  for (unsigned l = 0; l < 64; ++l) {
    float got;
    std::memcpy(&got, args[2].bytes.data() + 4 * l, 4);
    float want = uq::ref::fp4Decode(codes[4 * l] & 15) *
                 uq::ref::e8m0Decode(scales[4 * l]);
    EXPECT_EQ(got, want) << "lane " << l;
  }
  EXPECT_EQ(emu.stats().waves, 1u);
  EXPECT_GT(emu.stats().valu, 0u);
  EXPECT_EQ(emu.stats().globalBytesWritten, 256u);
  EXPECT_GT(Emulator::numImplementedOpcodes(), 300u);
}

TEST(Emulator, ErrorsAreLlvmErrors) {
  auto bytes = assemble("  global_store_dword v1, v0, s[8:9]\n  s_endpgm");
  auto co = CodeObject::load(bytes);
  ASSERT_TRUE(bool(co));
  Emulator emu(**co);
  LaunchConfig cfg;
  std::vector<KernelArg> two = {KernelArg::buffer({}), KernelArg::buffer({})};
  llvm::Error e = emu.launch("k", cfg, two);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("takes 3 arguments"),
            std::string::npos);
  std::vector<KernelArg> small = {KernelArg::buffer({}), KernelArg::buffer({}),
                                  KernelArg::buffer(std::vector<uint8_t>(8))};
  e = emu.launch("k", cfg, small);
  ASSERT_TRUE(bool(e));
  std::string msg = llvm::toString(std::move(e));
  EXPECT_NE(msg.find("out-of-bounds global store"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(lane 2)"), std::string::npos) << msg;
  auto bad = CodeObject::load(std::vector<uint8_t>(100, 0));
  EXPECT_FALSE(bool(bad));
  llvm::consumeError(bad.takeError());
}
