//===- KernelsAttr.cpp - The uq.kernels launch description in IR ----------===//

#include "uq/Codegen/KernelsAttr.h"

#include "uq/Codegen/StageAttrs.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace uq;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

Type uq::dtypeToType(MLIRContext *ctx, llvm::StringRef dtype) {
  Builder b(ctx);
  return llvm::StringSwitch<Type>(dtype)
      .Case("bf16", b.getBF16Type())
      .Case("f16", b.getF16Type())
      .Case("f32", b.getF32Type())
      .Case("i32", b.getI32Type())
      .Case("i64", b.getI64Type())
      .Case("u8", b.getI8Type())
      .Default(Type());
}

std::string uq::typeToDtype(Type type) {
  if (type.isBF16())
    return "bf16";
  if (type.isF16())
    return "f16";
  if (type.isF32())
    return "f32";
  if (type.isInteger(32))
    return "i32";
  if (type.isInteger(64))
    return "i64";
  if (type.isInteger(8))
    return "u8";
  return "";
}

SmallVector<Type> uq::kernelArgumentTypes(const KernelDescription &kernel,
                                          MLIRContext *ctx) {
  SmallVector<Type> types;
  for (const KernelArgDescription &a : kernel.args) {
    Type elem = dtypeToType(ctx, a.dtype);
    if (a.isBuffer())
      types.push_back(MemRefType::get({ShapedType::kDynamic}, elem));
    else
      types.push_back(elem);
  }
  return types;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

DictionaryAttr uq::kernelDescriptionToAttr(const KernelDescription &k,
                                           MLIRContext *ctx) {
  Builder b(ctx);
  auto dims = [&](ArrayRef<KernelDim> ds) {
    SmallVector<Attribute> out;
    for (const KernelDim &d : ds)
      out.push_back(d.isSymbolic() ? Attribute(b.getStringAttr(d.name))
                                   : Attribute(b.getI64IntegerAttr(d.value)));
    return b.getArrayAttr(out);
  };
  SmallVector<Attribute> argAttrs;
  for (const KernelArgDescription &a : k.args) {
    SmallVector<NamedAttribute> f = {
        b.getNamedAttr("name", b.getStringAttr(a.name)),
        b.getNamedAttr("kind", b.getStringAttr(a.kind)),
        b.getNamedAttr("dtype", b.getStringAttr(a.dtype)),
        b.getNamedAttr("shape", dims(a.shape)),
        b.getNamedAttr("access", b.getStringAttr(a.access)),
        b.getNamedAttr("meaning", b.getStringAttr(a.meaning))};
    argAttrs.push_back(b.getDictionaryAttr(f));
  }
  SmallVector<NamedAttribute> ps;
  for (auto &[key, value] : k.params)
    ps.push_back(b.getNamedAttr(key, b.getI64IntegerAttr(value)));
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("name", b.getStringAttr(k.name)),
      b.getNamedAttr("op", b.getStringAttr(k.op)),
      b.getNamedAttr("grid", dims(k.grid)),
      b.getNamedAttr("grid_rule", b.getStringAttr(k.gridRule)),
      b.getNamedAttr("block", b.getDenseI64ArrayAttr(k.block)),
      b.getNamedAttr("params", b.getDictionaryAttr(ps)),
      b.getNamedAttr("args", b.getArrayAttr(argAttrs))};
  return b.getDictionaryAttr(fields);
}

void uq::appendKernelDescriptions(ModuleOp module,
                                  ArrayRef<KernelDescription> kernels) {
  MLIRContext *ctx = module.getContext();
  SmallVector<Attribute> all;
  if (ArrayAttr existing = stage_attrs::kernels.get(module))
    all.append(existing.begin(), existing.end());
  for (const KernelDescription &k : kernels)
    all.push_back(kernelDescriptionToAttr(k, ctx));
  stage_attrs::kernels.set(module, ArrayAttr::get(ctx, all));
}

bool uq::hasKernelDescriptions(ModuleOp module) {
  return module->hasAttr(stage_attrs::kernels.getName());
}

//===----------------------------------------------------------------------===//
// Reading: the verifier
//===----------------------------------------------------------------------===//

namespace {

/// An error at \p module's location (not at the op: an op's diagnostic
/// prints the whole module as a note).
InFlightDiagnostic errorAt(ModuleOp module) {
  return mlir::emitError(module.getLoc());
}

/// Reads one description; diagnostics at \p module's location.
class DescriptionReader {
public:
  DescriptionReader(ModuleOp module, std::string where)
      : module(module), where(std::move(where)) {}

  FailureOr<KernelDescription> read(Attribute attr);

private:
  InFlightDiagnostic error(const Twine &what) {
    return errorAt(module) << where << ": " << what;
  }
  /// The string field \p key of \p dict (required).
  FailureOr<std::string> string(DictionaryAttr dict, StringRef key,
                                const std::string &at);
  /// An array of integers or argument names (\p what names it in errors).
  LogicalResult dims(Attribute attr, SmallVectorImpl<KernelDim> &out,
                     const std::string &what);

  ModuleOp module;
  std::string where;
};

FailureOr<std::string> DescriptionReader::string(DictionaryAttr dict,
                                                 StringRef key,
                                                 const std::string &at) {
  Attribute a = dict.get(key);
  if (!a)
    return errorAt(module) << at << ": no \"" << key << "\"";
  auto s = dyn_cast<StringAttr>(a);
  if (!s)
    return errorAt(module) << at << ": \"" << key
                           << "\" is not a string: " << a;
  return s.str();
}

LogicalResult DescriptionReader::dims(Attribute attr,
                                      SmallVectorImpl<KernelDim> &out,
                                      const std::string &what) {
  if (auto dense = dyn_cast<DenseI64ArrayAttr>(attr)) {
    for (int64_t v : dense.asArrayRef())
      out.push_back(KernelDim(v));
    return success();
  }
  auto arr = dyn_cast<ArrayAttr>(attr);
  if (!arr)
    return errorAt(module) << what << " is not an array: " << attr;
  for (Attribute e : arr) {
    if (auto i = dyn_cast<IntegerAttr>(e); i && !i.getType().isInteger(1))
      out.push_back(KernelDim(i.getInt()));
    else if (auto s = dyn_cast<StringAttr>(e))
      out.push_back(KernelDim(s.str()));
    else
      return errorAt(module)
             << what << " entries must be integers or argument names, not "
             << e;
  }
  return success();
}

FailureOr<KernelDescription> DescriptionReader::read(Attribute attr) {
  auto dict = dyn_cast<DictionaryAttr>(attr);
  if (!dict)
    return error("is not a dictionary: ") << attr;
  KernelDescription k;
  FailureOr<std::string> name = string(dict, "name", where);
  if (failed(name))
    return failure();
  k.name = *name;
  where += " ('" + k.name + "')";
  for (auto [key, field] : {std::pair<StringRef, std::string *>{"op", &k.op},
                            {"grid_rule", &k.gridRule}}) {
    FailureOr<std::string> s = string(dict, key, where);
    if (failed(s))
      return failure();
    *field = *s;
  }

  k.grid.clear();
  Attribute grid = dict.get("grid");
  if (!grid)
    return error("no \"grid\"");
  if (failed(dims(grid, k.grid, where + ": \"grid\"")))
    return failure();
  if (k.grid.empty() || k.grid.size() > 3)
    return error("\"grid\" is not an array of 1 to 3 entries");

  k.block.clear();
  Attribute block = dict.get("block");
  if (!block)
    return error("no \"block\"");
  SmallVector<KernelDim> blockDims;
  if (failed(dims(block, blockDims, where + ": \"block\"")))
    return failure();
  if (blockDims.empty() || blockDims.size() > 3)
    return error("\"block\" is not an array of 1 to 3 integers");
  for (const KernelDim &d : blockDims) {
    if (d.isSymbolic())
      return error("\"block\" entries must be integers, not '")
             << d.name << "'";
    k.block.push_back(d.value);
  }

  if (Attribute params = dict.get("params")) {
    auto pd = dyn_cast<DictionaryAttr>(params);
    if (!pd)
      return error("\"params\" is not a dictionary: ") << params;
    for (NamedAttribute p : pd) {
      auto i = dyn_cast<IntegerAttr>(p.getValue());
      if (!i || i.getType().isInteger(1))
        return error("\"params\" entry '")
               << p.getName().strref()
               << "' is not an integer: " << p.getValue();
      k.params.push_back({p.getName().str(), i.getInt()});
    }
  }

  Attribute args = dict.get("args");
  if (!args)
    return error("no \"args\"");
  auto argArray = dyn_cast<ArrayAttr>(args);
  if (!argArray)
    return error("\"args\" is not an array: ") << args;
  for (auto [i, a] : llvm::enumerate(argArray)) {
    std::string at = where + ", argument " + std::to_string(i);
    auto ad = dyn_cast<DictionaryAttr>(a);
    if (!ad)
      return errorAt(module) << at << " is not a dictionary: " << a;
    KernelArgDescription arg;
    for (auto [key, field] :
         {std::pair<StringRef, std::string *>{"name", &arg.name},
          {"kind", &arg.kind},
          {"dtype", &arg.dtype},
          {"access", &arg.access},
          {"meaning", &arg.meaning}}) {
      FailureOr<std::string> s = string(ad, key, at);
      if (failed(s))
        return failure();
      *field = *s;
      if (key == "name")
        at += " '" + arg.name + "'";
    }
    Attribute shape = ad.get("shape");
    if (!shape)
      return errorAt(module) << at << ": no \"shape\"";
    if (failed(dims(shape, arg.shape, at + ": \"shape\"")))
      return failure();
    k.args.push_back(std::move(arg));
  }
  if (llvm::Error e = verifyKernelDescription(k, where))
    return errorAt(module) << llvm::toString(std::move(e));
  // What the tiling stage writes for a scalar, which the shared rules leave
  // to the reader.
  for (auto [i, a] : llvm::enumerate(k.args))
    if (!a.isBuffer() && (!a.shape.empty() || a.access != "value"))
      return errorAt(module)
             << where << ", argument " << i << " '" << a.name
             << "': a by_value argument has the shape [] and the access "
                "\"value\"";
  return k;
}

/// The kernel function \p name of the module's gpu.modules (a gpu.func at
/// the wave and lane stages, an llvm.func once lowered to ROCDL).
FunctionOpInterface findKernel(ModuleOp module, StringRef name) {
  FunctionOpInterface found;
  module.walk([&](gpu::GPUModuleOp m) {
    if (auto f = m.lookupSymbol<FunctionOpInterface>(name))
      found = f;
  });
  return found;
}

} // namespace

FailureOr<std::vector<KernelDescription>>
uq::readKernelDescriptions(ModuleOp module) {
  StringRef attrName = stage_attrs::kernels.getName();
  Attribute attr = module->getAttr(attrName);
  if (!attr)
    return errorAt(module)
           << "the input's kernels have no launch description (the module "
              "attribute "
           << attrName << ", docs/uq-compile.md)";
  auto array = dyn_cast<ArrayAttr>(attr);
  if (!array)
    return errorAt(module) << attrName
                           << " is not an array of kernel descriptions: "
                           << attr;
  std::vector<KernelDescription> out;
  llvm::StringMap<unsigned> seen;
  for (auto [i, a] : llvm::enumerate(array)) {
    std::string where = (attrName + "[" + Twine(i) + "]").str();
    FailureOr<KernelDescription> k = DescriptionReader(module, where).read(a);
    if (failed(k))
      return failure();
    where += " ('" + k->name + "')";
    if (auto [it, fresh] = seen.try_emplace(k->name, i); !fresh)
      return errorAt(module) << where << ": kernel '" << k->name
                             << "' is described twice (also " << attrName << "["
                             << it->second << "])";
    FunctionOpInterface f = findKernel(module, k->name);
    if (!f)
      return errorAt(module) << where << ": there is no kernel '" << k->name
                             << "' in the module's gpu.module";
    ArrayRef<Type> types = f.getArgumentTypes();
    if (types.size() != k->args.size())
      return mlir::emitError(f.getLoc())
             << where << " describes " << k->args.size()
             << " arguments; kernel '" << k->name << "' takes " << types.size();
    for (auto [j, arg] : llvm::enumerate(k->args)) {
      bool scalar = types[j].isIntOrFloat();
      if (scalar == arg.isBuffer())
        return mlir::emitError(f.getLoc())
               << where << ", argument " << j << " '" << arg.name
               << "': described as " << arg.kind << ", but kernel '" << k->name
               << "' takes " << types[j];
    }
    out.push_back(std::move(*k));
  }
  return out;
}
