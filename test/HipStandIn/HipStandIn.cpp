//===- HipStandIn.cpp - A libamdhip64.so over the gfx950 emulator ---------===//
//
// Built only for the tests (never installed): the HIP module-API entry
// points that uq's HIP device (lib/Launch/Devices.cpp) loads with dlopen,
// implemented over uq::emu, so that the runtime's real loading, allocation,
// copy and launch code runs where there is no AMD GPU. The signatures and
// error codes are those of HIP's public hip_runtime_api.h
// (https://github.com/ROCm/HIP, include/hip/hip_runtime_api.h).
//
// Like a real runtime it knows nothing of uq's kernel JSON: a code object
// is an ELF image whose size it reads from the ELF headers, arguments come
// as kernelParams laid out by the code object's metadata, and device memory
// is only reachable through hipMemcpy. Device pointers are checked: a host
// pointer, a freed buffer or a copy past an allocation is an error, and a
// new allocation holds garbage (0xA5) until written, as device memory
// does.
//
//===----------------------------------------------------------------------===//

#include "uq/Emulator/Emulator.h"

#include <cstring>
#include <elf.h>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

// hip_runtime_api.h's hipError_t values used here.
enum : int {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorInvalidDevicePointer = 17,
  hipErrorInvalidImage = 200,
  hipErrorInvalidResourceHandle = 400,
  hipErrorNotFound = 500,
  hipErrorLaunchFailure = 719,
};
// hipMemcpyKind.
enum : int {
  hipMemcpyHostToHost = 0,
  hipMemcpyHostToDevice = 1,
  hipMemcpyDeviceToHost = 2,
  hipMemcpyDeviceToDevice = 3,
  hipMemcpyDefault = 4,
};

struct Module {
  std::unique_ptr<uq::emu::CodeObject> code;
  std::unique_ptr<uq::emu::Emulator> emulator;
};
struct Function {
  Module *module;
  const uq::emu::KernelInfo *info;
};

struct State {
  std::mutex mu;
  /// Device memory: base address -> bytes (as many as hipMalloc was asked
  /// for; the host block behind it is at least 1 byte).
  std::map<uintptr_t, std::vector<uint8_t>> memory;
  std::map<Module *, std::unique_ptr<Module>> modules;
  std::map<Function *, std::unique_ptr<Function>> functions;
  std::string lastError;
  /// Calls per entry point (uqHipStandInCalls).
  std::map<std::string, long> calls;
  /// Next device address: far from any host pointer, never 0.
  uintptr_t next = uintptr_t(0x7e57) << 32;
};

State &state() {
  static State s;
  return s;
}

int fail(State &s, int code, const std::string &why) {
  s.lastError = why;
  return code;
}

/// The allocation holding [p, p + n), or null.
std::vector<uint8_t> *lookup(State &s, const void *p, size_t n,
                             size_t *offset) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = s.memory.upper_bound(a);
  if (it == s.memory.begin())
    return nullptr;
  --it;
  if (a - it->first > it->second.size() ||
      n > it->second.size() - (a - it->first))
    return nullptr;
  *offset = a - it->first;
  return &it->second;
}

/// The extent of an ELF64 image from its headers (hipModuleLoadData gets
/// only a pointer): the end of the section header table or of the last
/// segment, whichever is later.
size_t elfSize(const void *image) {
  const auto *eh = static_cast<const Elf64_Ehdr *>(image);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_ident[EI_CLASS] != ELFCLASS64)
    return 0;
  size_t end = eh->e_shoff + size_t(eh->e_shnum) * eh->e_shentsize;
  end = std::max<size_t>(end, eh->e_phoff + size_t(eh->e_phnum) *
                                                eh->e_phentsize);
  const auto *ph = reinterpret_cast<const Elf64_Phdr *>(
      static_cast<const char *>(image) + eh->e_phoff);
  for (unsigned i = 0; i < eh->e_phnum; ++i)
    end = std::max<size_t>(end, ph[i].p_offset + ph[i].p_filesz);
  return std::min<size_t>(end, uq::emu::kMaxCodeObjectBytes);
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) const char *
hipGetErrorString(int error) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  static thread_local std::string text;
  text = error == hipSuccess ? "hipSuccess"
                             : "uq HIP stand-in: " + s.lastError;
  return text.c_str();
}

__attribute__((visibility("default"))) int
hipModuleLoadData(void **module, const void *image) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.calls["hipModuleLoadData"];
  if (!module || !image)
    return fail(s, hipErrorInvalidValue, "null module or image");
  size_t n = elfSize(image);
  if (!n)
    return fail(s, hipErrorInvalidImage, "the image is no ELF64 file");
  auto co = uq::emu::CodeObject::load(
      llvm::ArrayRef<uint8_t>(static_cast<const uint8_t *>(image), n));
  if (!co)
    return fail(s, hipErrorInvalidImage, llvm::toString(co.takeError()));
  auto m = std::make_unique<Module>();
  m->code = std::move(*co);
  m->emulator = std::make_unique<uq::emu::Emulator>(*m->code);
  *module = m.get();
  s.modules[m.get()] = std::move(m);
  return hipSuccess;
}

__attribute__((visibility("default"))) int hipModuleUnload(void *module) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.calls["hipModuleUnload"];
  if (!s.modules.erase(static_cast<Module *>(module)))
    return fail(s, hipErrorInvalidResourceHandle, "unknown module");
  return hipSuccess;
}

__attribute__((visibility("default"))) int
hipModuleGetFunction(void **function, void *module, const char *name) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.calls["hipModuleGetFunction"];
  auto it = s.modules.find(static_cast<Module *>(module));
  if (it == s.modules.end() || !function || !name)
    return fail(s, hipErrorInvalidResourceHandle, "unknown module");
  auto info = it->second->code->findKernel(name);
  if (!info)
    return fail(s, hipErrorNotFound, llvm::toString(info.takeError()));
  auto f = std::make_unique<Function>(Function{it->second.get(), *info});
  *function = f.get();
  s.functions[f.get()] = std::move(f);
  return hipSuccess;
}

__attribute__((visibility("default"))) int hipMalloc(void **ptr,
                                                     size_t size) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.calls["hipMalloc"];
  if (!ptr)
    return fail(s, hipErrorInvalidValue, "null pointer to the result");
  if (size > (size_t(1) << 34))
    return fail(s, hipErrorOutOfMemory, "more than 16 GiB");
  uintptr_t a = s.next;
  s.next += (size + 0xFFFF) & ~size_t(0xFFFF);
  s.next += 0x10000; // a gap: off-by-one pointers hit no allocation
  s.memory[a].assign(size, 0xA5);
  *ptr = reinterpret_cast<void *>(a);
  return hipSuccess;
}

__attribute__((visibility("default"))) int hipFree(void *ptr) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.calls["hipFree"];
  if (!ptr)
    return hipSuccess;
  if (!s.memory.erase(reinterpret_cast<uintptr_t>(ptr)))
    return fail(s, hipErrorInvalidDevicePointer,
                "hipFree of a pointer hipMalloc did not return");
  return hipSuccess;
}

__attribute__((visibility("default"))) int
hipMemcpy(void *dst, const void *src, size_t bytes, int kind) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.calls["hipMemcpy"];
  if (bytes == 0)
    return hipSuccess;
  size_t off = 0;
  std::vector<uint8_t> *buf = nullptr;
  switch (kind) {
  case hipMemcpyHostToDevice:
    buf = lookup(s, dst, bytes, &off);
    if (!buf)
      return fail(s, hipErrorInvalidDevicePointer,
                  "hipMemcpy to a range outside every device allocation");
    std::memcpy(buf->data() + off, src, bytes);
    return hipSuccess;
  case hipMemcpyDeviceToHost:
    buf = lookup(s, src, bytes, &off);
    if (!buf)
      return fail(s, hipErrorInvalidDevicePointer,
                  "hipMemcpy from a range outside every device allocation");
    std::memcpy(dst, buf->data() + off, bytes);
    return hipSuccess;
  default:
    return fail(s, hipErrorInvalidValue,
                "the stand-in copies only host to device and back");
  }
}

__attribute__((visibility("default"))) int
hipModuleLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz,
                      unsigned sharedMemBytes, void *stream,
                      void **kernelParams, void **extra) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.calls["hipModuleLaunchKernel"];
  auto fit = s.functions.find(static_cast<Function *>(function));
  if (fit == s.functions.end())
    return fail(s, hipErrorInvalidResourceHandle, "unknown function");
  if (stream)
    return fail(s, hipErrorInvalidValue, "the stand-in has only stream 0");
  if (extra || !kernelParams)
    return fail(s, hipErrorInvalidValue,
                "the stand-in takes arguments as kernelParams only");
  if (!gx || !gy || !gz || !bx || !by || !bz)
    return fail(s, hipErrorInvalidValue, "an empty grid or block");
  const uq::emu::KernelInfo &info = *fit->second->info;
  // One kernelParams entry per explicit argument, of the metadata's size;
  // a global buffer's is a device address.
  std::vector<uq::emu::KernelArg> args;
  std::vector<std::vector<uint8_t> *> backing;
  for (unsigned i = 0; i < info.numExplicitArgs(); ++i) {
    const uq::emu::ArgInfo &a = info.args[i];
    if (a.valueKind != "global_buffer") {
      args.push_back(uq::emu::KernelArg::scalar(kernelParams[i], a.size));
      backing.push_back(nullptr);
      continue;
    }
    void *p;
    std::memcpy(&p, kernelParams[i], sizeof(p));
    if (!p) {
      args.push_back(uq::emu::KernelArg::buffer({}));
      backing.push_back(nullptr);
      continue;
    }
    auto mit = s.memory.find(reinterpret_cast<uintptr_t>(p));
    if (mit == s.memory.end())
      return fail(s, hipErrorInvalidDevicePointer,
                  "argument " + std::to_string(i) + " of " + info.name +
                      " is not the start of a device allocation");
    args.push_back(uq::emu::KernelArg::buffer(mit->second));
    backing.push_back(&mit->second);
  }
  uq::emu::LaunchConfig cfg;
  cfg.grid = {gx, gy, gz};
  cfg.block = {bx, by, bz};
  cfg.dynamicLds = sharedMemBytes;
  if (llvm::Error e =
          fit->second->module->emulator->launch(info.name, cfg, args))
    return fail(s, hipErrorLaunchFailure, llvm::toString(std::move(e)));
  for (size_t i = 0; i < args.size(); ++i)
    if (backing[i])
      *backing[i] = std::move(args[i].bytes);
  return hipSuccess;
}

__attribute__((visibility("default"))) int hipStreamSynchronize(void *) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.calls["hipStreamSynchronize"];
  return hipSuccess; // launches run to completion in hipModuleLaunchKernel
}

/// Not HIP: how often the stand-in's entry point \p name was called (the
/// tests' evidence that a launch went through it).
__attribute__((visibility("default"))) long
uqHipStandInCalls(const char *name) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.calls.find(name);
  return it == s.calls.end() ? 0 : it->second;
}

/// Not HIP: device allocations alive now (leak checks).
__attribute__((visibility("default"))) long uqHipStandInLiveAllocations() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return long(s.memory.size());
}

} // extern "C"
