//===- KernelDescription.cpp - The launch description of a kernel ---------===//
//
// The rules of a kernel description, its JSON writer and its JSON reader
// (docs/uq-compile.md, "The JSON").
//
//===----------------------------------------------------------------------===//

#include "uq/Codegen/KernelDescription.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/Twine.h"

using namespace llvm;
using namespace uq;

namespace {
Error err(const Twine &m) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           m);
}

/// "<where>, argument <i>" plus " '<name>'" when the argument has one.
std::string argWhere(StringRef where, size_t i, StringRef name) {
  std::string s = (where + ", argument " + Twine(i)).str();
  if (!name.empty())
    s += " '" + name.str() + "'";
  return s;
}
} // namespace

bool KernelArgDescription::isInteger() const {
  StringRef d = dtype;
  return dtypeBytes(d) != 0 && (d.starts_with("i") || d.starts_with("u"));
}

std::optional<unsigned> KernelDescription::argIndex(StringRef argName) const {
  for (auto [i, a] : llvm::enumerate(args))
    if (a.name == argName)
      return unsigned(i);
  return std::nullopt;
}

unsigned uq::dtypeBytes(StringRef dtype) {
  return StringSwitch<unsigned>(dtype)
      .Cases("u8", "i8", "fp8", "bf8", "f8E4M3FN", "f8E5M2", 1)
      .Cases("bf16", "f16", "i16", "u16", 2)
      .Cases("f32", "i32", "u32", 4)
      .Cases("f64", "i64", "u64", 8)
      .Default(0);
}

//===----------------------------------------------------------------------===//
// The rules
//===----------------------------------------------------------------------===//

Error uq::verifyKernelDescription(const KernelDescription &k, StringRef where) {
  // Names that size a shape or the grid must be by-value integers.
  auto sizeArg = [&](StringRef name) -> const KernelArgDescription * {
    std::optional<unsigned> i = k.argIndex(name);
    return i ? &k.args[*i] : nullptr;
  };
  for (auto [i, a] : llvm::enumerate(k.args)) {
    std::string aw = argWhere(where, i, a.name);
    if (!a.name.empty())
      if (std::optional<unsigned> first = k.argIndex(a.name); *first != i)
        return err(aw + ": argument " + Twine(*first) + " has the same name");
    if (a.kind != kGlobalBufferKind && a.kind != kByValueKind)
      return err(aw + ": \"kind\" must be \"global_buffer\" or "
                      "\"by_value\"");
    if (!dtypeBytes(a.dtype))
      return err(
          aw + ": unknown \"dtype\" " +
          (a.dtype.empty() ? std::string("(none)") : "'" + a.dtype + "'"));
    // A by-value argument's shape and access are not read (a hand-written
    // JSON may leave them as a buffer's; the attribute reader is stricter).
    if (!a.isBuffer())
      continue;
    if (!a.access.empty() && a.access != "read" && a.access != "write" &&
        a.access != "read_write")
      return err(aw + ": \"access\" '" + a.access +
                 "' is not read, write or read_write");
    for (const KernelDim &d : a.shape) {
      if (!d.isSymbolic()) {
        if (d.value < 0)
          return err(aw + ": negative dimension in \"shape\"");
        continue;
      }
      const KernelArgDescription *ref = sizeArg(d.name);
      if (!ref)
        return err(aw + ": \"shape\" names '" + d.name +
                   "', which is no argument of the kernel");
      if (ref->isBuffer() || !ref->isInteger())
        return err(aw + ": \"shape\" names '" + d.name +
                   "', which is not a by_value integer");
    }
  }
  if (!k.grid.empty()) {
    if (k.grid.size() > 3)
      return err(where + ": \"grid\" is not an array of 1 to 3 entries");
    for (const KernelDim &d : k.grid) {
      if (!d.isSymbolic()) {
        if (d.value < 0)
          return err(where + ": negative \"grid\" entry");
        continue;
      }
      const KernelArgDescription *ref = sizeArg(d.name);
      if (!ref || ref->isBuffer() || !ref->isInteger())
        return err(where + ": \"grid\" names '" + d.name +
                   "', which is no by_value integer argument of the kernel");
    }
  }
  if (!k.block.empty()) {
    if (k.block.size() > 3)
      return err(where + ": \"block\" is not an array of 1 to 3 integers");
    int64_t total = 1;
    for (int64_t b : k.block) {
      if (b < 1 || b > kMaxWorkgroupSize)
        return err(where + ": \"block\" entries must be integers 1..1024");
      total *= b;
    }
    if (total > kMaxWorkgroupSize)
      return err(where + ": \"block\" has " + Twine(total) +
                 " work-items, more than the 1024 of a workgroup");
  }
  return Error::success();
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

namespace {
json::Array dimsToJson(ArrayRef<KernelDim> dims) {
  json::Array out;
  for (const KernelDim &d : dims) {
    if (d.isSymbolic())
      out.push_back(d.name);
    else
      out.push_back(d.value);
  }
  return out;
}

/// Integers or argument names; \p what names the field in errors.
Error dimsFromJson(const json::Array &arr, SmallVectorImpl<KernelDim> &out,
                   const Twine &what) {
  for (const json::Value &d : arr) {
    if (std::optional<int64_t> x = d.getAsInteger())
      out.push_back(KernelDim(*x));
    else if (std::optional<StringRef> s = d.getAsString())
      out.push_back(KernelDim(s->str()));
    else
      return err(what + " entries must be integers or argument names");
  }
  return Error::success();
}

/// The optional string field \p key of \p o into \p out.
Error optionalString(const json::Object &o, StringRef key, std::string &out,
                     const Twine &where) {
  const json::Value *v = o.get(key);
  if (!v)
    return Error::success();
  std::optional<StringRef> s = v->getAsString();
  if (!s)
    return err(where + ": \"" + key + "\" is not a string");
  out = s->str();
  return Error::success();
}
} // namespace

json::Object uq::toJson(const KernelDescription &k) {
  json::Object o;
  o["name"] = k.name;
  o["op"] = k.op;
  if (!k.grid.empty())
    o["grid"] = dimsToJson(k.grid);
  o["grid_rule"] = k.gridRule;
  if (!k.block.empty()) {
    json::Array block;
    for (int64_t b : k.block)
      block.push_back(b);
    o["block"] = std::move(block);
  }
  json::Object params;
  for (const auto &[key, value] : k.params)
    params[key] = value;
  o["params"] = std::move(params);
  json::Array args;
  for (auto [i, a] : llvm::enumerate(k.args)) {
    json::Object arg;
    arg["index"] = static_cast<int64_t>(i);
    arg["name"] = a.name;
    arg["kind"] = a.kind;
    arg["dtype"] = a.dtype;
    arg["shape"] = dimsToJson(a.shape);
    arg["access"] = a.access;
    arg["meaning"] = a.meaning;
    args.push_back(std::move(arg));
  }
  o["args"] = std::move(args);
  return o;
}

Expected<KernelDescription> uq::kernelFromJson(const json::Value &kv) {
  const json::Object *k = kv.getAsObject();
  std::optional<StringRef> name = k ? k->getString("name") : std::nullopt;
  if (!name)
    return err("kernel JSON: a kernel without a \"name\"");
  KernelDescription d;
  d.name = name->str();
  std::string where = "kernel JSON, kernel '" + d.name + "'";
  if (Error e = optionalString(*k, "op", d.op, where))
    return std::move(e);
  if (Error e = optionalString(*k, "grid_rule", d.gridRule, where))
    return std::move(e);

  d.block.clear();
  if (const json::Value *b = k->get("block")) {
    const json::Array *ba = b->getAsArray();
    if (!ba || ba->empty() || ba->size() > 3)
      return err(where + ": \"block\" is not an array of 1 to 3 integers");
    for (const json::Value &x : *ba) {
      std::optional<int64_t> v = x.getAsInteger();
      if (!v)
        return err(where + ": \"block\" entries must be integers 1..1024");
      d.block.push_back(*v);
    }
  }
  d.grid.clear();
  if (const json::Value *g = k->get("grid")) {
    const json::Array *ga = g->getAsArray();
    if (!ga || ga->empty() || ga->size() > 3)
      return err(where + ": \"grid\" is not an array of 1 to 3 entries");
    if (Error e = dimsFromJson(*ga, d.grid, where + ": \"grid\""))
      return std::move(e);
  }
  if (const json::Value *p = k->get("params")) {
    const json::Object *po = p->getAsObject();
    if (!po)
      return err(where + ": \"params\" is not an object");
    for (const auto &[key, value] : *po) {
      std::optional<int64_t> v = value.getAsInteger();
      if (!v)
        return err(where + ": \"params\" entry '" + key.str() +
                   "' is not an integer");
      d.params.push_back({key.str(), *v});
    }
    llvm::sort(d.params);
  }

  const json::Array *args = k->getArray("args");
  if (!args)
    return err(where + ": no \"args\" array");
  for (auto [i, av] : llvm::enumerate(*args)) {
    const json::Object *a = av.getAsObject();
    if (!a)
      return err(argWhere(where, i, "") + ": not an object");
    KernelArgDescription arg;
    if (std::optional<StringRef> an = a->getString("name"))
      arg.name = an->str();
    std::string aw = argWhere(where, i, arg.name);
    // A kind or dtype that is no string is reported as unknown by the rules.
    if (std::optional<StringRef> kind = a->getString("kind"))
      arg.kind = kind->str();
    if (std::optional<StringRef> dtype = a->getString("dtype"))
      arg.dtype = dtype->str();
    if (Error e = optionalString(*a, "access", arg.access, aw))
      return std::move(e);
    if (Error e = optionalString(*a, "meaning", arg.meaning, aw))
      return std::move(e);
    if (const json::Value *s = a->get("shape")) {
      const json::Array *sa = s->getAsArray();
      if (!sa)
        return err(aw + ": \"shape\" is not an array");
      if (Error e = dimsFromJson(*sa, arg.shape, aw + ": \"shape\""))
        return std::move(e);
    } else if (arg.isBuffer()) {
      return err(aw + ": a buffer needs a \"shape\" array");
    }
    d.args.push_back(std::move(arg));
  }
  if (Error e = verifyKernelDescription(d, where))
    return std::move(e);
  return d;
}

Expected<std::vector<KernelDescription>>
uq::parseKernelDescriptionsJson(StringRef text) {
  Expected<json::Value> v = json::parse(text);
  if (!v)
    return err("kernel JSON: " + toString(v.takeError()));
  const json::Object *root = v->getAsObject();
  const json::Array *kernels = root ? root->getArray("kernels") : nullptr;
  if (!kernels)
    return err("kernel JSON: no \"kernels\" array at the top level");
  std::vector<KernelDescription> out;
  for (const json::Value &kv : *kernels) {
    Expected<KernelDescription> k = kernelFromJson(kv);
    if (!k)
      return k.takeError();
    out.push_back(std::move(*k));
  }
  return out;
}
