//===- KernelsJson.cpp - Argument descriptions from OUT.hsaco.json --------===//
//
// Reads the kernel description uq-compile writes (docs/uq-compile.md, "The
// JSON") into ArgSpecs. A buffer's `shape` entries are integers or the names
// of by_value integer arguments of the same kernel.
//
//===----------------------------------------------------------------------===//

#include "uq/Emulator/KernelsJson.h"

#include <cstring>

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
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

unsigned uq::emu::dtypeSize(StringRef dtype) {
  return StringSwitch<unsigned>(dtype)
      .Cases("u8", "i8", "fp8", "bf8", "f8E4M3FN", "f8E5M2", 1)
      .Cases("bf16", "f16", "i16", "u16", 2)
      .Cases("f32", "i32", "u32", 4)
      .Cases("f64", "i64", "u64", 8)
      .Default(0);
}

Expected<std::vector<KernelDescription>>
uq::emu::parseKernelsJson(StringRef text) {
  Expected<json::Value> v = json::parse(text);
  if (!v)
    return err("kernel JSON: " + toString(v.takeError()));
  const json::Object *root = v->getAsObject();
  const json::Array *kernels = root ? root->getArray("kernels") : nullptr;
  if (!kernels)
    return err("kernel JSON: no \"kernels\" array at the top level");
  std::vector<KernelDescription> out;
  for (const json::Value &kv : *kernels) {
    const json::Object *k = kv.getAsObject();
    std::optional<StringRef> name = k ? k->getString("name") : std::nullopt;
    if (!name)
      return err("kernel JSON: a kernel without a \"name\"");
    KernelDescription D;
    D.name = name->str();
    std::string where = "kernel JSON, kernel '" + D.name + "'";
    if (const json::Value *op = k->get("op")) {
      if (!op->getAsString())
        return err(where + ": \"op\" is not a string");
      D.op = op->getAsString()->str();
    }
    if (const json::Value *ps = k->get("params")) {
      const json::Object *po = ps->getAsObject();
      if (!po)
        return err(where + ": \"params\" is not an object");
      for (const auto &[key, val] : *po) {
        std::optional<int64_t> x = val.getAsInteger();
        if (!x)
          return err(where + ": \"params\" entry '" + key.str() +
                     "' is not an integer");
        D.params[key.str()] = *x;
      }
    }
    if (const json::Value *b = k->get("block")) {
      const json::Array *ba = b->getAsArray();
      if (!ba || ba->empty() || ba->size() > 3)
        return err(where + ": \"block\" is not an array of 1 to 3 integers");
      std::array<uint32_t, 3> blk = {1, 1, 1};
      for (size_t i = 0; i < ba->size(); ++i) {
        std::optional<int64_t> x = (*ba)[i].getAsInteger();
        if (!x || *x < 1 || *x > 1024)
          return err(where + ": \"block\" entries must be integers 1..1024");
        blk[i] = (uint32_t)*x;
      }
      D.block = blk;
    }
    const json::Array *args = k->getArray("args");
    if (!args)
      return err(where + ": no \"args\" array");
    const json::Array *grid = k->getArray("grid");
    // Names first, so shapes can refer to any by_value argument.
    std::vector<std::string> names;
    for (const json::Value &av : *args) {
      const json::Object *a = av.getAsObject();
      std::optional<StringRef> an = a ? a->getString("name") : std::nullopt;
      names.push_back(an ? an->str() : "");
    }
    for (size_t i = 0; i < args->size(); ++i) {
      const json::Object *a = (*args)[i].getAsObject();
      std::string aw = where + ", argument " + std::to_string(i);
      if (!a)
        return err(aw + ": not an object");
      ArgSpec S;
      S.name = names[i];
      if (!S.name.empty())
        aw += " '" + S.name + "'";
      std::optional<StringRef> kind = a->getString("kind");
      std::optional<StringRef> dtype = a->getString("dtype");
      if (!kind || (*kind != "global_buffer" && *kind != "by_value"))
        return err(aw + ": \"kind\" must be \"global_buffer\" or "
                        "\"by_value\"");
      if (!dtype || !dtypeSize(*dtype))
        return err(aw + ": unknown \"dtype\" " +
                   (dtype ? "'" + dtype->str() + "'" : std::string("(none)")));
      S.isBuffer = *kind == "global_buffer";
      S.dtype = dtype->str();
      S.elementSize = dtypeSize(*dtype);
      S.isInteger = dtype->starts_with("i") || dtype->starts_with("u");
      if (const json::Value *acc = a->get("access")) {
        std::optional<StringRef> x = acc->getAsString();
        if (!x || (*x != "read" && *x != "write" && *x != "read_write" &&
                   *x != "value"))
          return err(aw + ": \"access\" must be \"read\", \"write\", "
                          "\"read_write\" or \"value\"");
        S.access = x->str();
      }
      if (S.isBuffer) {
        const json::Array *shape = a->getArray("shape");
        if (!shape)
          return err(aw + ": a buffer needs a \"shape\" array");
        for (const json::Value &d : *shape) {
          if (std::optional<int64_t> x = d.getAsInteger()) {
            if (*x < 0)
              return err(aw + ": negative dimension in \"shape\"");
            S.shape.push_back(DimSpec::fixed(*x));
          } else if (std::optional<StringRef> ref = d.getAsString()) {
            auto it = std::find(names.begin(), names.end(), ref->str());
            if (it == names.end())
              return err(aw + ": \"shape\" names '" + *ref +
                         "', which is no argument of the kernel");
            S.shape.push_back(DimSpec::arg(int(it - names.begin())));
          } else {
            return err(aw + ": \"shape\" entries must be integers or "
                            "argument names");
          }
        }
      }
      D.args.push_back(std::move(S));
    }
    if (grid) {
      if (grid->empty() || grid->size() > 3)
        return err(where + ": \"grid\" is not an array of 1 to 3 entries");
      std::array<DimSpec, 3> g = {DimSpec::fixed(1), DimSpec::fixed(1),
                                  DimSpec::fixed(1)};
      for (size_t i = 0; i < grid->size(); ++i) {
        const json::Value &d = (*grid)[i];
        if (std::optional<int64_t> x = d.getAsInteger()) {
          if (*x < 0)
            return err(where + ": negative \"grid\" entry");
          g[i] = DimSpec::fixed(*x);
        } else if (std::optional<StringRef> ref = d.getAsString()) {
          auto it = std::find(names.begin(), names.end(), ref->str());
          if (it == names.end() || D.args[it - names.begin()].isBuffer)
            return err(where + ": \"grid\" names '" + *ref +
                       "', which is no by_value argument of the kernel");
          g[i] = DimSpec::arg(int(it - names.begin()));
        } else {
          return err(where + ": \"grid\" entries must be integers or "
                             "argument names");
        }
      }
      D.grid = g;
    }
    // Symbolic dimensions must name by_value integers.
    for (size_t i = 0; i < D.args.size(); ++i)
      for (const DimSpec &d : D.args[i].shape)
        if (d.argIndex >= 0 && (D.args[d.argIndex].isBuffer ||
                                !D.args[d.argIndex].isInteger))
          return err(where + ", argument " + std::to_string(i) +
                     ": \"shape\" names '" + D.args[d.argIndex].name +
                     "', which is not a by_value integer");
    out.push_back(std::move(D));
  }
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
