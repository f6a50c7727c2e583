//===- KernelsJson.cpp - Argument descriptions from OUT.hsaco.json --------===//
//
// The emulator's view of the kernel description uq-compile writes
// (docs/uq-compile.md, "The JSON"; read and checked by the shared reader of
// uq/Codegen/KernelDescription.h): ArgSpecs whose symbolic sizes are
// resolved to argument indices, and the launches built from them.
//
//===----------------------------------------------------------------------===//

#include "uq/Emulator/KernelsJson.h"

#include "uq/Codegen/KernelDescription.h"

#include <cstring>

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;
using namespace uq::emu;

namespace {
Error err(const Twine &m) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           m);
}
constexpr uint64_t kMaxJsonBytes = 64ull << 20;
} // namespace

unsigned uq::emu::dtypeSize(StringRef dtype) { return uq::dtypeBytes(dtype); }

KernelDescription uq::emu::launchView(const uq::KernelDescription &k) {
  KernelDescription D;
  D.name = k.name;
  D.op = k.op;
  for (const auto &[key, value] : k.params)
    D.params[key] = value;
  // The description's rules hold (verifyKernelDescription): every name
  // below is a by-value integer argument of the kernel.
  auto dim = [&](const uq::KernelDim &d) {
    return d.isSymbolic() ? DimSpec::arg(int(*k.argIndex(d.name)))
                          : DimSpec::fixed(d.value);
  };
  if (!k.block.empty()) {
    std::array<uint32_t, 3> blk = {1, 1, 1};
    for (auto [i, b] : llvm::enumerate(k.block))
      blk[i] = uint32_t(b);
    D.block = blk;
  }
  if (!k.grid.empty()) {
    std::array<DimSpec, 3> g = {DimSpec::fixed(1), DimSpec::fixed(1),
                                DimSpec::fixed(1)};
    for (auto [i, d] : llvm::enumerate(k.grid))
      g[i] = dim(d);
    D.grid = g;
  }
  for (const uq::KernelArgDescription &a : k.args) {
    ArgSpec S;
    S.name = a.name;
    S.dtype = a.dtype;
    S.isBuffer = a.isBuffer();
    S.isInteger = a.isInteger();
    S.elementSize = uq::dtypeBytes(a.dtype);
    S.access = a.access;
    for (const uq::KernelDim &d : a.shape)
      S.shape.push_back(dim(d));
    D.args.push_back(std::move(S));
  }
  return D;
}

Expected<std::vector<KernelDescription>>
uq::emu::parseKernelsJson(StringRef text) {
  Expected<std::vector<uq::KernelDescription>> kernels =
      uq::parseKernelDescriptionsJson(text);
  if (!kernels)
    return kernels.takeError();
  std::vector<KernelDescription> out;
  for (const uq::KernelDescription &k : *kernels)
    out.push_back(launchView(k));
  return out;
}

Expected<std::vector<KernelDescription>>
uq::emu::loadKernelsJson(StringRef path) {
  sys::fs::file_status st;
  if (std::error_code ec = sys::fs::status(path, st))
    return err("cannot read kernel JSON '" + path + "': " + ec.message());
  if (st.type() != sys::fs::file_type::regular_file)
    return err("cannot read kernel JSON '" + path + "': not a regular file");
  if (st.getSize() > kMaxJsonBytes)
    return err("kernel JSON '" + path + "' is larger than 64 MiB");
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buf)
    return err("cannot read kernel JSON '" + path +
               "': " + buf.getError().message());
  auto r = parseKernelsJson((*buf)->getBuffer());
  if (!r)
    return err(path + ": " + toString(r.takeError()));
  return r;
}

Expected<std::array<uint32_t, 3>>
uq::emu::resolveGrid(const KernelDescription &kernel,
                     const std::vector<KernelArg> &args) {
  if (!kernel.grid)
    return err("kernel '" + kernel.name + "': the JSON gives no grid");
  std::array<uint32_t, 3> out = {1, 1, 1};
  for (int i = 0; i < 3; ++i) {
    const DimSpec &d = (*kernel.grid)[i];
    int64_t v = d.extent;
    if (d.argIndex >= 0) {
      if (size_t(d.argIndex) >= args.size() ||
          args[d.argIndex].kind != KernelArg::Kind::Scalar)
        return err("kernel '" + kernel.name + "': grid argument #" +
                   std::to_string(d.argIndex) + " is not a scalar");
      const std::vector<uint8_t> &b = args[d.argIndex].bytes;
      v = 0;
      if (b.size() == 4) {
        int32_t x;
        std::memcpy(&x, b.data(), 4);
        v = x;
      } else if (b.size() == 8) {
        std::memcpy(&v, b.data(), 8);
      } else {
        return err("kernel '" + kernel.name + "': grid argument '" +
                   kernel.args[d.argIndex].name + "' is not an integer");
      }
    }
    if (v < 0 || v > int64_t(UINT32_MAX))
      return err("kernel '" + kernel.name + "': grid dimension " +
                 std::to_string(i) + " = " + std::to_string(v) +
                 " is out of range");
    out[i] = uint32_t(v);
  }
  return out;
}

llvm::Expected<std::vector<KernelArg>>
uq::emu::bindArguments(const KernelDescription &kernel, BufferMap &buffers,
                       const ScalarMap &scalars, bool move) {
  // Every name first: a failed binding moves nothing out of the map.
  for (const ArgSpec &a : kernel.args) {
    if (a.isBuffer ? !buffers.count(a.name) : !scalars.count(a.name))
      return err(std::string(a.isBuffer ? "no buffer" : "no value") +
                 " for argument '" + a.name + "' of " + kernel.name);
  }
  std::vector<KernelArg> args;
  for (const ArgSpec &a : kernel.args) {
    if (a.isBuffer) {
      std::vector<uint8_t> &bytes = buffers.find(a.name)->second;
      args.push_back(KernelArg::buffer(
          move ? std::move(bytes) : std::vector<uint8_t>(bytes), a.name));
    } else {
      args.push_back(
          KernelArg::value<int32_t>(int32_t(scalars.find(a.name)->second)));
    }
  }
  return args;
}

llvm::Expected<LaunchConfig>
uq::emu::launchConfig(const KernelDescription &kernel,
                      const std::vector<KernelArg> &args) {
  auto grid = resolveGrid(kernel, args);
  if (!grid)
    return grid.takeError();
  LaunchConfig cfg;
  cfg.grid = *grid;
  cfg.block = kernel.block.value_or(std::array<uint32_t, 3>{64, 1, 1});
  cfg.argSpecs = kernel.args;
  cfg.requiredBlock = kernel.block;
  return cfg;
}

void uq::emu::returnBuffers(const KernelDescription &kernel,
                            std::vector<KernelArg> &args, BufferMap &buffers) {
  for (auto [a, spec] : llvm::zip(args, kernel.args))
    if (spec.isBuffer)
      buffers[spec.name] = std::move(a.bytes);
}
