//===- AiterLaunch.h - Launching AMD's AITER code objects in tests -*- C++ -*-===//
//
// Where the AITER code objects live ($UQ_SHARED_DIR/peers/aiter) and a
// launch whose arguments are given by kernarg offset (the layout of AITER's
// host structs, every field in a 16-byte slot), through
// uq::emu::argsByOffset. Shared by the correctness and the timing tests.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_TEST_UNITTESTS_EMULATOR_AITERLAUNCH_H
#define UQ_TEST_UNITTESTS_EMULATOR_AITERLAUNCH_H

#include "uq/Emulator/Emulator.h"

#include "llvm/Support/FileSystem.h"

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace uq::emu::test {

/// The AITER folder, with a trailing slash.
inline std::string aiterDir() {
  return std::string(UQ_SHARED_DIR) + "/peers/aiter/";
}
inline bool aiterAvailable() {
  return llvm::sys::fs::exists(aiterDir() + "fwd_hd128_bf16.co");
}

/// Arguments by kernarg offset: buffers (in and out), u32 and f32 scalars.
struct AiterLaunch {
  std::map<uint32_t, std::vector<uint8_t>> buffers;
  std::map<uint32_t, uint32_t> u32;
  std::map<uint32_t, float> f32;
};

/// Runs the only kernel of the code object at `path`; returns the buffers
/// (by offset) after the launch. `info` receives the kernel's metadata.
inline llvm::Expected<std::map<uint32_t, std::vector<uint8_t>>>
launchAiter(const std::string &path, const LaunchConfig &cfg,
            const AiterLaunch &L, KernelInfo *info = nullptr) {
  auto co = CodeObject::loadFile(path);
  if (!co)
    return co.takeError();
  const KernelInfo &K = (*co)->kernels().at(0);
  if (info)
    *info = K;
  std::map<uint32_t, KernelArg> byOffset;
  for (const auto &[o, b] : L.buffers)
    byOffset[o] = KernelArg::buffer(b);
  for (const auto &[o, v] : L.u32)
    byOffset[o] = KernelArg::value<uint32_t>(v);
  for (const auto &[o, v] : L.f32)
    byOffset[o] = KernelArg::value<float>(v);
  auto args = argsByOffset(K, byOffset);
  if (!args)
    return args.takeError();
  Emulator emu(**co);
  if (llvm::Error e = emu.launch(K.name, cfg, *args))
    return std::move(e);
  std::map<uint32_t, std::vector<uint8_t>> out;
  unsigned i = 0;
  for (const ArgInfo &A : K.args) {
    if (!A.isExplicit())
      continue;
    if (L.buffers.count(A.offset))
      out[A.offset] = (*args)[i].bytes;
    ++i;
  }
  return out;
}

} // namespace uq::emu::test

#endif // UQ_TEST_UNITTESTS_EMULATOR_AITERLAUNCH_H
