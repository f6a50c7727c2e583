//===- fuzz-codeobject.cpp - libFuzzer harness: gfx950 code objects -------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Each input is a code object (ELF). It goes through the emulator's public
// loading API only (uq::emu::CodeObject::load, kernels, findKernel, target),
// what uq-emu, uq.kernel_info and uq.emulate do before a launch. The
// emulator's code is its engineer's: findings are reported, not fixed here.
//
//===----------------------------------------------------------------------===//

#include "uq/Emulator/Emulator.h"

#include "llvm/Support/Error.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<std::unique_ptr<uq::emu::CodeObject>> co =
      uq::emu::CodeObject::load(llvm::ArrayRef<uint8_t>(data, size));
  if (!co) {
    llvm::consumeError(co.takeError());
    return 0;
  }
  size_t touched = (*co)->target().size() + (*co)->image().size();
  for (const uq::emu::KernelInfo &k : (*co)->kernels()) {
    llvm::Expected<const uq::emu::KernelInfo *> found =
        (*co)->findKernel(k.name);
    if (!found)
      llvm::consumeError(found.takeError());
    for (const uq::emu::ArgInfo &a : k.args)
      touched += a.name.size() + a.valueKind.size() + a.offset + a.size;
  }
  llvm::Expected<const uq::emu::KernelInfo *> missing =
      (*co)->findKernel("no such kernel");
  if (!missing)
    llvm::consumeError(missing.takeError());
  return touched == 0 ? 0 : 0;
}
