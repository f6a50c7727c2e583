//===- Devices.cpp - The emulator and HIP behind launch::Device -----------===//
//
// The emulator device keeps its allocations in host memory and runs each
// launch on uq::emu. The HIP device loads libamdhip64.so with dlopen and
// calls the HIP module API; the declarations below are the entry points'
// C signatures as HIP's public header hip_runtime_api.h gives them
// (https://github.com/ROCm/HIP, include/hip/hip_runtime_api.h), so no ROCm
// header or library is needed to build.
//
//===----------------------------------------------------------------------===//

#include "uq/Runtime/Launch.h"

#include "llvm/Support/Process.h"

#include <dlfcn.h>
#include <link.h>

using namespace llvm;
using namespace uq;
using namespace uq::launch;

Device::~Device() = default;

namespace {

Error deviceError(const Twine &m) {
  return createStringError(inconvertibleErrorCode(), m);
}

//===----------------------------------------------------------------------===//
// Emulator
//===----------------------------------------------------------------------===//

class EmulatorDevice : public Device {
public:
  std::string name() const override { return "emulator"; }

  Error loadCodeObject(ArrayRef<uint8_t> bytes) override {
    auto co = emu::CodeObject::load(bytes);
    if (!co)
      return co.takeError();
    codeObject = std::move(*co);
    emulator = std::make_unique<emu::Emulator>(*codeObject);
    return Error::success();
  }

  Expected<DevicePtr> allocate(size_t bytes) override {
    DevicePtr p = next;
    // Distinct, aligned addresses; the emulator maps each buffer itself.
    next += (bytes + 0xFFFF) & ~size_t(0xFFFF);
    memory[p].assign(bytes, 0);
    return p;
  }

  Error release(DevicePtr p) override {
    if (!memory.erase(p))
      return deviceError("emulator: release of an unknown buffer");
    return Error::success();
  }

  Expected<std::vector<uint8_t> *> find(DevicePtr p, size_t bytes) {
    auto it = memory.find(p);
    if (it == memory.end())
      return deviceError("emulator: unknown buffer");
    if (bytes > it->second.size())
      return deviceError("emulator: copy of " + Twine(bytes) +
                         " bytes to a buffer of " +
                         Twine(it->second.size()));
    return &it->second;
  }

  Error copyToDevice(DevicePtr dst, const void *src, size_t bytes) override {
    auto buf = find(dst, bytes);
    if (!buf)
      return buf.takeError();
    if (bytes)
      std::memcpy((*buf)->data(), src, bytes);
    return Error::success();
  }

  Error copyToHost(void *dst, DevicePtr src, size_t bytes) override {
    auto buf = find(src, bytes);
    if (!buf)
      return buf.takeError();
    if (bytes)
      std::memcpy(dst, (*buf)->data(), bytes);
    return Error::success();
  }

  Error launch(const emu::KernelDescription &kernel,
               std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block,
               ArrayRef<LaunchArg> args) override {
    if (!emulator)
      return deviceError("emulator: no code object loaded");
    std::vector<emu::KernelArg> kargs;
    for (const LaunchArg &a : args) {
      if (!a.isBuffer) {
        kargs.push_back(emu::KernelArg::value<int32_t>(a.value));
        continue;
      }
      if (a.buffer == 0) {
        kargs.push_back(emu::KernelArg::buffer({}));
        continue;
      }
      auto it = memory.find(a.buffer);
      if (it == memory.end())
        return deviceError("emulator: launch of " + kernel.name +
                           " with an unknown buffer");
      kargs.push_back(emu::KernelArg::buffer(it->second));
    }
    emu::LaunchConfig cfg;
    cfg.grid = grid;
    cfg.block = block;
    cfg.argSpecs = kernel.args;
    cfg.requiredBlock = kernel.block;
    if (Error e = emulator->launch(kernel.name, cfg, kargs))
      return e;
    // Only what the kernel may have written comes back.
    for (size_t i = 0; i < args.size() && i < kernel.args.size(); ++i)
      if (args[i].isBuffer && args[i].buffer != 0 &&
          kernel.args[i].access != "read")
        memory[args[i].buffer] = std::move(kargs[i].bytes);
    return Error::success();
  }

  Error synchronize() override { return Error::success(); }

private:
  std::unique_ptr<emu::CodeObject> codeObject;
  std::unique_ptr<emu::Emulator> emulator;
  std::map<DevicePtr, std::vector<uint8_t>> memory;
  DevicePtr next = 0x10000;
};

//===----------------------------------------------------------------------===//
// HIP
//===----------------------------------------------------------------------===//

// hip_runtime_api.h: hipError_t is an int enum (hipSuccess = 0), modules,
// functions and streams are opaque pointers, hipMemcpyKind's
// hipMemcpyHostToDevice = 1 and hipMemcpyDeviceToHost = 2.
using hipError_t = int;
using hipModule_t = struct ihipModule_t *;
using hipFunction_t = struct ihipModuleSymbol_t *;
using hipStream_t = struct ihipStream_t *;
constexpr int hipMemcpyHostToDevice = 1, hipMemcpyDeviceToHost = 2;

struct HipApi {
  hipError_t (*moduleLoadData)(hipModule_t *, const void *) = nullptr;
  hipError_t (*moduleGetFunction)(hipFunction_t *, hipModule_t,
                                  const char *) = nullptr;
  hipError_t (*moduleLaunchKernel)(hipFunction_t, unsigned, unsigned,
                                   unsigned, unsigned, unsigned, unsigned,
                                   unsigned, hipStream_t, void **,
                                   void **) = nullptr;
  hipError_t (*malloc)(void **, size_t) = nullptr;
  hipError_t (*free)(void *) = nullptr;
  hipError_t (*memcpy)(void *, const void *, size_t, int) = nullptr;
  hipError_t (*streamSynchronize)(hipStream_t) = nullptr;
  // Optional.
  const char *(*getErrorString)(hipError_t) = nullptr;
  hipError_t (*moduleUnload)(hipModule_t) = nullptr;
};

class HipDevice : public Device {
public:
  ~HipDevice() override {
    if (module && api.moduleUnload)
      api.moduleUnload(module);
    if (handle)
      dlclose(handle);
  }

  static Expected<std::unique_ptr<Device>> open(StringRef library) {
    std::string lib = library.str();
    if (lib.empty()) {
      std::optional<std::string> env = sys::Process::GetEnv("UQ_HIP_LIBRARY");
      lib = env && !env->empty() ? *env : "libamdhip64.so";
    }
    void *h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char *why = dlerror();
      return deviceError("cannot load the HIP runtime '" + lib +
                         "': " + (why ? why : "unknown error"));
    }
    std::unique_ptr<HipDevice> d(new HipDevice());
    d->handle = h;
    d->path = lib;
    struct link_map *map = nullptr;
    if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name &&
        *map->l_name)
      d->path = map->l_name;
    // Function pointers of the entry points, each filled by dlsym.
    std::pair<void **, const char *> entries[] = {
        {reinterpret_cast<void **>(&d->api.moduleLoadData),
         "hipModuleLoadData"},
        {reinterpret_cast<void **>(&d->api.moduleGetFunction),
         "hipModuleGetFunction"},
        {reinterpret_cast<void **>(&d->api.moduleLaunchKernel),
         "hipModuleLaunchKernel"},
        {reinterpret_cast<void **>(&d->api.malloc), "hipMalloc"},
        {reinterpret_cast<void **>(&d->api.free), "hipFree"},
        {reinterpret_cast<void **>(&d->api.memcpy), "hipMemcpy"},
        {reinterpret_cast<void **>(&d->api.streamSynchronize),
         "hipStreamSynchronize"}};
    for (auto [slot, sym] : entries) {
      *slot = dlsym(h, sym);
      if (!*slot)
        return deviceError("the HIP runtime '" + d->path + "' has no " + sym);
    }
    d->api.getErrorString = reinterpret_cast<const char *(*)(hipError_t)>(
        dlsym(h, "hipGetErrorString"));
    d->api.moduleUnload =
        reinterpret_cast<hipError_t (*)(hipModule_t)>(
            dlsym(h, "hipModuleUnload"));
    return std::unique_ptr<Device>(std::move(d));
  }

  std::string name() const override { return "hip (" + path + ")"; }

  Error check(hipError_t e, const Twine &what) {
    if (e == 0)
      return Error::success();
    const char *s = api.getErrorString ? api.getErrorString(e) : nullptr;
    return deviceError(what + " failed: HIP error " + Twine(e) +
                       (s ? Twine(" (") + s + ")" : Twine()));
  }

  Error loadCodeObject(ArrayRef<uint8_t> bytes) override {
    if (module)
      return deviceError("hip: a code object is already loaded");
    // hipModuleLoadData reads the ELF's size from its headers.
    image.assign(bytes.begin(), bytes.end());
    return check(api.moduleLoadData(&module, image.data()),
                 "hipModuleLoadData");
  }

  Expected<DevicePtr> allocate(size_t bytes) override {
    void *p = nullptr;
    if (Error e = check(api.malloc(&p, bytes),
                        "hipMalloc(" + Twine(bytes) + ")"))
      return std::move(e);
    return DevicePtr(reinterpret_cast<uintptr_t>(p));
  }

  Error release(DevicePtr p) override {
    return check(api.free(reinterpret_cast<void *>(uintptr_t(p))), "hipFree");
  }

  Error copyToDevice(DevicePtr dst, const void *src, size_t bytes) override {
    return check(api.memcpy(reinterpret_cast<void *>(uintptr_t(dst)), src,
                            bytes, hipMemcpyHostToDevice),
                 "hipMemcpy (host to device)");
  }

  Error copyToHost(void *dst, DevicePtr src, size_t bytes) override {
    return check(api.memcpy(dst, reinterpret_cast<void *>(uintptr_t(src)),
                            bytes, hipMemcpyDeviceToHost),
                 "hipMemcpy (device to host)");
  }

  Error launch(const emu::KernelDescription &kernel,
               std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block,
               ArrayRef<LaunchArg> args) override {
    if (!module)
      return deviceError("hip: no code object loaded");
    auto it = functions.find(kernel.name);
    if (it == functions.end()) {
      hipFunction_t f = nullptr;
      if (Error e = check(api.moduleGetFunction(&f, module,
                                                kernel.name.c_str()),
                          "hipModuleGetFunction(" + kernel.name + ")"))
        return e;
      it = functions.emplace(kernel.name, f).first;
    }
    // kernelParams: one pointer per explicit argument to its value (the
    // device address of a buffer, the i32 of a size); HIP lays them out
    // by the code object's metadata.
    std::vector<void *> pointers(args.size());
    std::vector<int32_t> values(args.size());
    std::vector<void *> params(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].isBuffer) {
        pointers[i] = reinterpret_cast<void *>(uintptr_t(args[i].buffer));
        params[i] = &pointers[i];
      } else {
        values[i] = args[i].value;
        params[i] = &values[i];
      }
    }
    return check(api.moduleLaunchKernel(it->second, grid[0], grid[1], grid[2],
                                        block[0], block[1], block[2],
                                        /*sharedMemBytes=*/0,
                                        /*stream=*/nullptr, params.data(),
                                        /*extra=*/nullptr),
                 "hipModuleLaunchKernel(" + kernel.name + ")");
  }

  Error synchronize() override {
    return check(api.streamSynchronize(nullptr), "hipStreamSynchronize");
  }

private:
  HipDevice() = default;
  void *handle = nullptr;
  std::string path;
  HipApi api;
  hipModule_t module = nullptr;
  std::vector<uint8_t> image;
  std::map<std::string, hipFunction_t> functions;
};

} // namespace

std::unique_ptr<Device> uq::launch::createEmulatorDevice() {
  return std::make_unique<EmulatorDevice>();
}

Expected<std::unique_ptr<Device>>
uq::launch::createHipDevice(StringRef library) {
  return HipDevice::open(library);
}
