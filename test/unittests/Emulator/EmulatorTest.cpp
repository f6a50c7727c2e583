//===- EmulatorTest.cpp - C++ API of the gfx950 emulator ------------------===//
//
// Exercises the API the compiler tests and the Python bindings use: load a
// code object from bytes, inspect kernel metadata, launch with buffers and
// scalars, read statistics, get errors as llvm::Error.
//
//===----------------------------------------------------------------------===//

#include "uq/Emulator/Emulator.h"
#include "uq/Emulator/KernelsJson.h"
#include "uq/Reference/Reference.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace uq::emu;

#include "Assemble.h"

using uq::emu::test::assemble;

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

TEST(Emulator, ArgSpecsAreCheckedBeforeLaunch) {
  // The kernel stores one word per lane to `out`: a 64-word buffer is
  // right; with a spec, a 63-word one is refused before anything runs.
  auto bytes = assemble("  global_store_dword v1, v0, s[8:9]\n  s_endpgm");
  auto co = CodeObject::load(bytes);
  ASSERT_TRUE(bool(co));
  Emulator emu(**co);
  LaunchConfig cfg;
  cfg.argSpecs = std::vector<ArgSpec>{
      {"a", "u8", true, true, 1, {DimSpec::fixed(0)}},
      {"b", "u8", true, true, 1, {DimSpec::fixed(0)}},
      {"out", "i32", true, true, 4, {DimSpec::fixed(64)}}};
  std::vector<KernelArg> args = {KernelArg::buffer({}), KernelArg::buffer({}),
                                 KernelArg::buffer(std::vector<uint8_t>(252))};
  bool isUsage = false;
  std::string msg = errorMessage(emu.launch("k", cfg, args), isUsage);
  EXPECT_TRUE(isUsage);
  EXPECT_EQ(msg, "argument 2 ('out', i32) [64]: buffer of 252 bytes given, "
                 "256 expected (64 elements of 4 bytes)");
  EXPECT_EQ(emu.stats().waveInstructions, 0u) << "nothing may run";
  args[2] = KernelArg::buffer(std::vector<uint8_t>(256));
  EXPECT_FALSE(bool(emu.launch("k", cfg, args)));
  // Faults of the kernel are not usage errors.
  cfg.argSpecs.reset();
  args[2] = KernelArg::buffer(std::vector<uint8_t>(8));
  errorMessage(emu.launch("k", cfg, args), isUsage);
  EXPECT_FALSE(isUsage);
}

TEST(Emulator, SymbolicDimensionsComeFromScalars) {
  // checkArgs alone, on a described kernel k(n: i64, x: bf16 [n, 3]).
  KernelInfo k;
  k.name = "k";
  k.args = {{"", "by_value", "", 0, 8}, {"", "global_buffer", "global", 8, 8}};
  std::vector<ArgSpec> specs = {
      {"n", "i64", false, true, 8, {}},
      {"x", "bf16", true, false, 2, {DimSpec::arg(0), DimSpec::fixed(3)}}};
  std::vector<KernelArg> args = {KernelArg::value<int64_t>(5),
                                 KernelArg::buffer(std::vector<uint8_t>(30))};
  EXPECT_FALSE(bool(checkArgs(k, specs, args)));
  args[0] = KernelArg::value<int64_t>(6);
  bool isUsage = false;
  EXPECT_EQ(errorMessage(checkArgs(k, specs, args), isUsage),
            "argument 1 ('x', bf16) [6, 3]: buffer of 30 bytes given, 36 "
            "expected (18 elements of 2 bytes)");
  EXPECT_TRUE(isUsage);
  // 2^62 x 3 x 2 bytes overflows 64 bits: an error, not a wrapped size.
  args[0] = KernelArg::value<int64_t>(int64_t(1) << 62);
  EXPECT_NE(errorMessage(checkArgs(k, specs, args), isUsage)
                .find("overflows 64 bits"),
            std::string::npos);
  // Unnamed metadata arguments are labelled by index, or by the spec.
  EXPECT_EQ(argLabel(k, 1), "#1");
  EXPECT_EQ(argLabel(k, 1, &specs), "'x'");
}

TEST(Emulator, WrappingAddressesAreFaults) {
  // 16 bytes at 2^64 - 4: the range wraps around; it must be reported,
  // not translated into a host pointer.
  auto bytes = assemble(R"(
  s_mov_b32 s10, 0xfffffffc
  s_mov_b32 s11, -1
  v_mov_b32 v3, 0
  global_load_dwordx4 v[4:7], v3, s[10:11]
  s_endpgm)");
  auto co = CodeObject::load(bytes);
  ASSERT_TRUE(bool(co));
  Emulator emu(**co);
  std::vector<KernelArg> args = {KernelArg::buffer(std::vector<uint8_t>(64)),
                                 KernelArg::buffer({}), KernelArg::buffer({})};
  bool isUsage = true;
  std::string msg = errorMessage(emu.launch("k", LaunchConfig(), args),
                                 isUsage);
  EXPECT_FALSE(isUsage);
  EXPECT_NE(msg.find("out-of-bounds global load of 16 bytes at address "
                     "0xfffffffffffffffc (lane 0)"),
            std::string::npos)
      << msg;
}

TEST(Emulator, MalformedMetadataIsAnError) {
  auto bytes = assemble("  s_endpgm");
  // Replace the first map key header of the metadata note (".amdhsa..."
  // strings start with a fixstr byte) by an empty-array header: before the
  // loader read the note itself, msgpack::Document hit llvm_unreachable.
  std::string s(bytes.begin(), bytes.end());
  size_t at = s.find("amdhsa.kernels");
  ASSERT_NE(at, std::string::npos);
  bytes[at - 1] = 0x90;
  auto co = CodeObject::load(bytes);
  ASSERT_FALSE(bool(co));
  EXPECT_NE(llvm::toString(co.takeError()).find("malformed AMDGPU metadata"),
            std::string::npos);
}

// Launches by name from the kernel JSON (KernelsJson.h): arguments bound in
// the JSON's order from name-keyed maps (copied or moved), the grid from the
// JSON's rule and the block from its `block`, buffers given back; a missing
// name is an error that moves nothing out of the maps.
TEST(KernelsJson, BindArgumentsLaunchConfigReturnBuffers) {
  KernelDescription k;
  k.name = "demo";
  k.block = std::array<uint32_t, 3>{128, 1, 1};
  ArgSpec out;
  out.name = "out";
  out.dtype = "f32";
  out.elementSize = 4;
  out.shape = {DimSpec::arg(1)};
  ArgSpec n;
  n.name = "n";
  n.dtype = "i32";
  n.isBuffer = false;
  n.isInteger = true;
  n.elementSize = 4;
  k.args = {out, n};
  k.grid = std::array<DimSpec, 3>{DimSpec::arg(1), DimSpec::fixed(2),
                                  DimSpec::fixed(1)};

  BufferMap buffers = {{"out", std::vector<uint8_t>(12, 7)}};
  ScalarMap scalars = {{"n", 3}};
  auto copied = bindArguments(k, buffers, scalars, /*move=*/false);
  ASSERT_TRUE(static_cast<bool>(copied)) << llvm::toString(copied.takeError());
  ASSERT_EQ(copied->size(), 2u);
  EXPECT_EQ((*copied)[0].bytes, std::vector<uint8_t>(12, 7));
  EXPECT_EQ(buffers["out"].size(), 12u); // copied: still there
  int32_t v = 0;
  std::memcpy(&v, (*copied)[1].bytes.data(), 4);
  EXPECT_EQ(v, 3);

  auto cfg = launchConfig(k, *copied);
  ASSERT_TRUE(static_cast<bool>(cfg)) << llvm::toString(cfg.takeError());
  EXPECT_EQ(cfg->grid, (std::array<uint32_t, 3>{3, 2, 1}));
  EXPECT_EQ(cfg->block, (std::array<uint32_t, 3>{128, 1, 1}));
  ASSERT_TRUE(cfg->argSpecs.has_value());
  EXPECT_EQ(cfg->argSpecs->size(), 2u);
  EXPECT_EQ(cfg->requiredBlock, k.block);

  auto moved = bindArguments(k, buffers, scalars, /*move=*/true);
  ASSERT_TRUE(static_cast<bool>(moved)) << llvm::toString(moved.takeError());
  EXPECT_TRUE(buffers["out"].empty()); // moved out
  (*moved)[0].bytes.assign(12, 9);     // what a launch would leave
  returnBuffers(k, *moved, buffers);
  EXPECT_EQ(buffers["out"], std::vector<uint8_t>(12, 9));

  // A missing by-value argument: an error naming it; the buffer stays.
  ScalarMap none;
  auto bad = bindArguments(k, buffers, none, /*move=*/true);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("no value for argument 'n' of demo"),
            std::string::npos);
  EXPECT_EQ(buffers["out"], std::vector<uint8_t>(12, 9));
  BufferMap noBuffers;
  auto bad2 = bindArguments(k, noBuffers, scalars, /*move=*/false);
  ASSERT_FALSE(static_cast<bool>(bad2));
  EXPECT_NE(llvm::toString(bad2.takeError()).find("no buffer for argument 'out'"),
            std::string::npos);
}
