//===- CPURunner.cpp - Run uq functions on the host CPU -------------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "uq/Runtime/CPURunner.h"

#include "uq/InitAll.h"
#include "uq/Support/Diagnostics.h"
#include "uq/Support/Input.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

using namespace mlir;
using namespace uq::runtime;

namespace {
llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string typeText(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

std::optional<DType> dtypeOf(Type t) {
  if (t.isF32())
    return DType::F32;
  if (t.isF64())
    return DType::F64;
  if (t.isF16())
    return DType::F16;
  if (t.isBF16())
    return DType::BF16;
  if (t.isIndex())
    return DType::I64;
  if (auto i = dyn_cast<IntegerType>(t)) {
    switch (i.getWidth()) {
    case 1:
      return DType::I1;
    case 8:
      return DType::I8;
    case 16:
      return DType::I16;
    case 32:
      return DType::I32;
    case 64:
      return DType::I64;
    default:
      return std::nullopt;
    }
  }
  if (auto f = dyn_cast<FloatType>(t)) {
    if (f.getWidth() == 8)
      return DType::F8;
    if (f.getWidth() == 4)
      return DType::F4;
  }
  return std::nullopt;
}

/// A memref descriptor of rank r as the C wrapper sees it:
/// {allocated, aligned, offset, sizes[r], strides[r]}, all 8-byte words.
struct Descriptor {
  std::vector<int64_t> words;
  explicit Descriptor(size_t rank) : words(3 + 2 * rank, 0) {}
  static size_t wordCount(size_t rank) { return 3 + 2 * rank; }
};

void initNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}
} // namespace

int64_t uq::runtime::storageBytes(DType t) {
  switch (t) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
    return 2;
  case DType::I1:
  case DType::I8:
  case DType::F8:
  case DType::F4:
    return 1;
  }
  return 1;
}

const char *uq::runtime::dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I1:
    return "i1";
  case DType::I8:
    return "i8";
  case DType::I16:
    return "i16";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::F8:
    return "f8";
  case DType::F4:
    return "f4";
  }
  return "?";
}

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

HostTensor HostTensor::zeros(DType dtype, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data.assign(static_cast<size_t>(t.numElements() * storageBytes(dtype)), 0);
  return t;
}

struct CPUProgram::Impl {
  std::unique_ptr<MLIRContext> context;
  std::unique_ptr<ExecutionEngine> engine;
};

CPUProgram::CPUProgram() : impl(std::make_unique<Impl>()) {}
CPUProgram::~CPUProgram() = default;

llvm::Expected<std::unique_ptr<CPUProgram>>
CPUProgram::compileFile(llvm::StringRef path, llvm::StringRef entry,
                        const CPURunOptions &options) {
  auto buf = uq::readInputFile(path, uq::InputLimits::kMaxSourceBytes, "IR");
  if (!buf)
    return buf.takeError();
  return compile((*buf)->getBuffer(), entry, options, path);
}

llvm::Expected<std::unique_ptr<CPUProgram>>
CPUProgram::compile(llvm::StringRef source, llvm::StringRef entry,
                    const CPURunOptions &options, llvm::StringRef bufferName) {
  initNativeTarget();
  std::unique_ptr<CPUProgram> prog(new CPUProgram());
  prog->entryName = entry.str();
  DialectRegistry registry;
  uq::registerAllDialects(registry);
  prog->impl->context = std::make_unique<MLIRContext>(registry);
  MLIRContext &ctx = *prog->impl->context;
  uq::DiagnosticCollector diags(ctx);

  OwningOpRef<ModuleOp> module =
      uq::parseSourceChecked(source, bufferName, &ctx);
  if (!module)
    return fail("cannot parse '" + bufferName + "':\n" + diags.text());

  auto func = module->lookupSymbol<func::FuncOp>(entry);
  if (!func || func.isExternal()) {
    std::string names;
    module->walk([&](func::FuncOp f) {
      if (!f.isExternal())
        names += (names.empty() ? "@" : ", @") + f.getSymName().str();
    });
    return fail("no function @" + entry + " in '" + bufferName +
                "' (functions: " + (names.empty() ? "none" : names) + ")");
  }
  auto spec = [&](Type t, std::string name) -> llvm::Expected<TensorSpec> {
    auto rt = dyn_cast<RankedTensorType>(t);
    std::optional<DType> dt = rt ? dtypeOf(rt.getElementType()) : std::nullopt;
    if (!rt || !dt)
      return fail("@" + entry + " " + name + " has type " + typeText(t) +
                  "; uq-run handles ranked tensors of f32, f64, f16, bf16, "
                  "8-/4-bit floats and i1/i8/i16/i32/i64/index only");
    return TensorSpec{name, typeText(t), *dt,
                      std::vector<int64_t>(rt.getShape().begin(),
                                           rt.getShape().end())};
  };
  for (auto [i, t] : llvm::enumerate(func.getArgumentTypes())) {
    auto s = spec(t, "argument " + std::to_string(i));
    if (!s)
      return s.takeError();
    prog->inputSpecs.push_back(*s);
  }
  for (auto [i, t] : llvm::enumerate(func.getResultTypes())) {
    auto s = spec(t, "result " + std::to_string(i));
    if (!s)
      return s.takeError();
    prog->outputSpecs.push_back(*s);
  }
  // The entry must stay visible to the JIT.
  func.setPublic();

  PassManager pm(&ctx);
  CPUPipelineOptions pipeline;
  pipeline.rotationArithmetic = options.rotation;
  pipeline.waveKernels = options.waveKernels;
  pipeline.partitionSize = options.partitionSize;
  pipeline.emitCInterface = true;
  uq::buildCPUPipeline(pm, pipeline);
  if (failed(pm.run(*module)) || diags.hasError())
    return fail("lowering '" + bufferName + "' with uq-cpu-pipeline failed:\n" +
                diags.text());

  ExecutionEngineOptions eo;
  auto transformer = makeOptimizingTransformer(options.optLevel, 0, nullptr);
  eo.transformer = transformer;
  eo.jitCodeGenOptLevel = static_cast<llvm::CodeGenOptLevel>(
      std::min(options.optLevel, 3u));
  eo.enableGDBNotificationListener = false;
  eo.enablePerfNotificationListener = false;
  auto engine = ExecutionEngine::create(*module, eo);
  if (!engine)
    return fail("JIT compilation of '" + bufferName + "' failed: " +
                llvm::toString(engine.takeError()) + "\n" + diags.text());
  // memref.copy between non-contiguous buffers calls memrefCopy from
  // mlir_c_runner_utils; hand its address to the JIT directly.
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap map;
    map[interner("memrefCopy")] = {
        llvm::orc::ExecutorAddr::fromPtr(&memrefCopy),
        llvm::JITSymbolFlags::Exported};
    return map;
  });
  (*engine)->initialize();
  prog->impl->engine = std::move(*engine);
  return prog;
}

llvm::Error CPUProgram::checkArgument(size_t index,
                                      const HostTensor &arg) const {
  const TensorSpec &s = inputSpecs[index];
  if (arg.dtype != s.dtype)
    return fail(s.name + " (" + s.type + "): got a " + dtypeName(arg.dtype) +
                " tensor, expected " + dtypeName(s.dtype));
  bool ok = arg.shape.size() == s.shape.size();
  for (size_t i = 0; ok && i < arg.shape.size(); ++i)
    ok = ShapedType::isDynamic(s.shape[i]) || s.shape[i] == arg.shape[i];
  if (!ok) {
    std::string got;
    for (int64_t d : arg.shape)
      got += std::to_string(d) + "x";
    return fail(s.name + " (" + s.type + "): got shape " + got +
                dtypeName(arg.dtype) + " that does not match");
  }
  if (static_cast<int64_t>(arg.data.size()) !=
      arg.numElements() * storageBytes(arg.dtype))
    return fail(s.name + ": data size does not match its shape");
  return llvm::Error::success();
}

llvm::Expected<std::vector<HostTensor>>
CPUProgram::run(std::vector<HostTensor> &args) {
  if (args.size() != inputSpecs.size())
    return fail("@" + entryName + " takes " +
                llvm::Twine(inputSpecs.size()) + " argument(s), got " +
                llvm::Twine(args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    if (llvm::Error e = checkArgument(i, args[i]))
      return std::move(e);

  // Argument descriptors: contiguous row-major views of the host buffers.
  std::vector<Descriptor> argDescs;
  argDescs.reserve(args.size());
  for (HostTensor &t : args) {
    Descriptor d(t.shape.size());
    auto ptr = reinterpret_cast<int64_t>(t.data.data());
    d.words[0] = d.words[1] = ptr;
    int64_t stride = 1;
    size_t r = t.shape.size();
    for (size_t i = r; i-- > 0;) {
      d.words[3 + i] = t.shape[i];
      d.words[3 + r + i] = stride;
      stride *= t.shape[i];
    }
    argDescs.push_back(std::move(d));
  }
  // The results: one struct of descriptors, filled by the callee.
  size_t resultWords = 0;
  for (const TensorSpec &s : outputSpecs)
    resultWords += Descriptor::wordCount(s.shape.size());
  std::vector<int64_t> results(resultWords, 0);

  std::vector<void *> argPtrs;
  for (Descriptor &d : argDescs)
    argPtrs.push_back(d.words.data());
  void *resultPtr = results.data();
  std::vector<void *> packed;
  if (!outputSpecs.empty())
    packed.push_back(&resultPtr);
  for (void *&p : argPtrs)
    packed.push_back(&p);
  if (llvm::Error e =
          impl->engine->invokePacked("_mlir_ciface_" + entryName, packed))
    return std::move(e);

  // Copy the results out (any strides), then free what the callee
  // allocated: not the arguments (in-place results), not globals
  // (0xdeadbeef), and each buffer once.
  llvm::SmallPtrSet<void *, 8> keep, freed;
  for (HostTensor &t : args)
    keep.insert(t.data.data());
  keep.insert(reinterpret_cast<void *>(0xdeadbeef));
  std::vector<HostTensor> outs;
  size_t at = 0;
  for (const TensorSpec &s : outputSpecs) {
    size_t r = s.shape.size();
    const int64_t *w = results.data() + at;
    at += Descriptor::wordCount(r);
    HostTensor t;
    t.dtype = s.dtype;
    t.shape.assign(w + 3, w + 3 + r);
    int64_t eb = storageBytes(s.dtype);
    t.data.resize(static_cast<size_t>(t.numElements() * eb));
    const auto *base = reinterpret_cast<const uint8_t *>(w[1]) + w[2] * eb;
    bool contiguous = true;
    for (int64_t i = static_cast<int64_t>(r) - 1, stride = 1; i >= 0; --i) {
      if (t.shape[i] != 1 && w[3 + r + i] != stride)
        contiguous = false;
      stride *= t.shape[i];
    }
    std::vector<int64_t> idx(r, 0);
    if (contiguous && !t.data.empty())
      std::memcpy(t.data.data(), base, t.data.size());
    for (int64_t n = 0, e = contiguous ? 0 : t.numElements(); n < e; ++n) {
      int64_t off = 0;
      for (size_t i = 0; i < r; ++i)
        off += idx[i] * w[3 + r + i];
      std::memcpy(t.data.data() + n * eb, base + off * eb, eb);
      for (size_t i = r; i-- > 0;) {
        if (++idx[i] < t.shape[i])
          break;
        idx[i] = 0;
      }
    }
    outs.push_back(std::move(t));
    void *allocated = reinterpret_cast<void *>(w[0]);
    if (allocated && !keep.count(allocated) && freed.insert(allocated).second)
      std::free(allocated);
  }
  return outs;
}
